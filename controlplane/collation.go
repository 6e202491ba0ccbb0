package controlplane

import (
	"slices"

	"golang.org/x/text/collate"
)

// asciiWeight orders the characters of typical ids and entity refs ([a-z0-9:-]) as the
// ICU root collation does (punctuation "-" before ":", both before digits before
// letters); 0 means "not in the fast alphabet".
var asciiWeight = func() [256]byte {
	var w [256]byte
	w['-'] = 1
	w[':'] = 2
	for c := '0'; c <= '9'; c++ {
		w[c] = byte(10 + c - '0')
	}
	for c := 'a'; c <= 'z'; c++ {
		w[c] = byte(30 + c - 'a')
	}
	return w
}()

// compareFast compares a and b when both use only [a-z0-9:-]; ok is false otherwise.
func compareFast(a, b string) (cmp int, ok bool) {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		wa, wb := asciiWeight[a[i]], asciiWeight[b[i]]
		if wa == 0 || wb == 0 {
			return 0, false
		}
		if wa != wb {
			if wa < wb {
				return -1, true
			}
			return 1, true
		}
	}
	for _, s := range []string{a[n:], b[n:]} {
		for i := 0; i < len(s); i++ {
			if asciiWeight[s[i]] == 0 {
				return 0, false
			}
		}
	}
	return len(a) - len(b), true
}

// localeCompare orders strings like JavaScript's String.prototype.localeCompare with
// the root locale, with a fast path for plain ids.
func localeCompare(c *collate.Collator, a, b string) int {
	if r, ok := compareFast(a, b); ok {
		return r
	}
	return c.CompareString(a, b)
}

// sortedUnique de-duplicates and sorts by root collation (JavaScript localeCompare).
func (m *Memory) sortedUnique(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) > 1 {
		slices.SortStableFunc(out, func(a, b string) int { return localeCompare(m.coll, a, b) })
	}
	return out
}

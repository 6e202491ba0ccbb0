package catalog

import (
	"slices"
	"strings"
)

// maxSuggestCells bounds the catalogs whose cell ids an unknown --id is compared with
// (each comparison is quadratic in the id's length).
const maxSuggestCells = 20_000

// Suggest returns the known values closest to v, for a "did you mean" hint: those at
// the smallest Levenshtein distance (counted in runes, case-insensitively) when it is
// at most max(1, len(v)/3), else the known values v is a prefix of (v at least 2 runes
// long); sorted, at most 3, nil when none is close.
func Suggest(v string, known []string) []string {
	lv := strings.ToLower(v)
	limit := max(1, len([]rune(v))/3)
	best, out := limit+1, []string(nil)
	for _, k := range known {
		d := distance(lv, strings.ToLower(k))
		switch {
		case d > limit:
		case d < best:
			best, out = d, []string{k}
		case d == best:
			out = append(out, k)
		}
	}
	if out == nil && len([]rune(v)) >= 2 {
		for _, k := range known {
			if strings.HasPrefix(strings.ToLower(k), lv) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > 3 {
		out = out[:3]
	}
	return out
}

// distance is the Levenshtein distance between a and b in runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// didYouMean is " (did you mean x?)" for the unknown values that have suggestions
// ("a → x, b → y or z" when several values are unknown), "" when none has.
func didYouMean(unknown, known []string) string {
	var parts []string
	for _, u := range unknown {
		s := Suggest(u, known)
		if len(s) == 0 {
			continue
		}
		alts := strings.Join(s, " or ")
		if len(unknown) == 1 {
			parts = append(parts, alts)
		} else {
			parts = append(parts, u+" → "+alts)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (did you mean " + strings.Join(parts, ", ") + "?)"
}

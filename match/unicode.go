package match

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/runenames"
)

// Unicode normalisation forms of the text matchers' normalize option (docs/matchers.md
// "Unicode"): both sides of a comparison are put in the same form before they are
// compared. The default, "" or NormalizeNFC, composes characters (an "e" followed by a
// combining acute accent equals "é"); NormalizeNFKC also folds compatibility
// characters (a no-break space becomes a space, "ﬁ" becomes "fi", full-width letters
// become ASCII); NormalizeNone compares code points as they are.
const (
	NormalizeNone = "none"
	NormalizeNFC  = "nfc"
	NormalizeNFKC = "nfkc"
)

// normalizeForms lists the accepted values of Spec.Normalize ("" means NormalizeNFC).
var normalizeForms = []string{NormalizeNone, NormalizeNFC, NormalizeNFKC}

// unicodeForm is a compiled normalize option; its zero value is NFC.
type unicodeForm uint8

const (
	formNFC unicodeForm = iota
	formNone
	formNFKC
	formCount
)

// parseForm maps Spec.Normalize to a form; ok is false for an unknown value.
func parseForm(s string) (unicodeForm, bool) {
	switch s {
	case "", NormalizeNFC:
		return formNFC, true
	case NormalizeNone:
		return formNone, true
	case NormalizeNFKC:
		return formNFKC, true
	}
	return formNFC, false
}

// apply returns s in the form (s itself, uncopied, when it already is).
func (f unicodeForm) apply(s string) string {
	switch f {
	case formNFC:
		return norm.NFC.String(s)
	case formNFKC:
		return norm.NFKC.String(s)
	}
	return s
}

// applyBytes returns b in the form, as a string; b is copied only when it is not
// already in the form.
func (f unicodeForm) applyBytes(b []byte) string {
	switch f {
	case formNFC:
		if norm.NFC.IsNormal(b) {
			return string(b)
		}
		return string(norm.NFC.Bytes(b))
	case formNFKC:
		if norm.NFKC.IsNormal(b) {
			return string(b)
		}
		return string(norm.NFKC.Bytes(b))
	}
	return string(b)
}

// hintRunes is the most characters a hint names per side; hintSpan the longest
// differing stretch (in bytes) of an exact comparison for which a homoglyph hint is
// given; hintMaxBytes bounds the texts a hint is looked for in (a failure on a larger file
// gets no hint: folding it would cost memory in proportion to its size).
const (
	hintRunes    = 8
	hintSpan     = 64
	hintMaxBytes = 64 << 10
)

// unusual reports whether r is a character a reader cannot tell apart on sight: outside
// printable ASCII, other than newline, tab and carriage return.
func unusual(r rune) bool {
	return (r < 0x20 || r > 0x7e) && r != '\n' && r != '\t' && r != '\r'
}

// skeleton folds s for look-alike comparison: printable ASCII, newline, tab and CR are
// kept; spaces (Zs) become " "; format characters (Cf: zero-width spaces and joiners,
// the BOM, the soft hyphen) and combining marks are dropped; any other character
// becomes the ASCII letters and digits of its compatibility decomposition ("é" → "e",
// "ﬁ" → "fi"), or stays itself when it has none. at[i] is the byte offset in s of the
// character folded byte i came from (len(at) == len(out)+1; the last entry is len(s)).
func skeleton(s string) (out string, at []int) {
	var b strings.Builder
	for i, r := range s {
		var fold string
		switch {
		case !unusual(r):
			fold = string(r)
		case unicode.Is(unicode.Zs, r):
			fold = " "
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
			fold = ""
		default:
			var ascii strings.Builder
			for _, d := range norm.NFKD.String(string(r)) {
				if d < 0x80 && !unusual(d) {
					ascii.WriteRune(d)
				}
			}
			fold = ascii.String()
			if fold == "" {
				fold = string(r)
			}
		}
		for range len(fold) {
			at = append(at, i)
		}
		b.WriteString(fold)
	}
	at = append(at, len(s))
	return b.String(), at
}

// describeUnusual names the unusual characters of s[from:to] ("U+00A0 NO-BREAK SPACE at
// offset 6"; offsets are byte offsets in s, as compared), at most hintRunes of them,
// prefixed with side ("expected" or "observed").
func describeUnusual(side, s string, from, to int) []string {
	var out []string
	for i := from; i < to; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unusual(r) {
			if len(out) == hintRunes {
				out = append(out, side+" …")
				break
			}
			name := runenames.Name(r)
			if r == utf8.RuneError && size == 1 {
				name = fmt.Sprintf("invalid UTF-8 byte 0x%02X", s[i])
			} else if name == "" {
				name = "unnamed character"
			}
			out = append(out, fmt.Sprintf("%s U+%04X %s at offset %d", side, r, name, i))
		}
		i += size
	}
	return out
}

// unicodeHint explains a failed text comparison whose two sides differ only in
// characters outside printable ASCII, so that the failure is not two identical-looking
// strings: "the texts differ only in characters outside printable ASCII: expected
// U+FEFF ZERO WIDTH NO-BREAK SPACE at offset 0; observed U+00A0 NO-BREAK SPACE at
// offset 6". exact says the whole of observed must equal expected; otherwise expected
// must occur in observed[from:] (offsets stay those of observed). It returns "" when
// the sides also differ in what they show, or hold no such character where they
// differ.
func unicodeHint(expected, observed string, from int, exact bool) string {
	if len(expected) > hintMaxBytes || len(observed)-from > hintMaxBytes {
		return ""
	}
	se, _ := skeleton(expected)
	var names []string
	if !exact {
		so, ao := skeleton(observed[from:])
		i := strings.Index(so, se)
		if se == "" || i < 0 {
			return ""
		}
		names = append(describeUnusual("expected", expected, 0, len(expected)), describeUnusual("observed", observed, from+ao[i], from+ao[i+len(se)])...)
		if len(names) == 0 {
			return ""
		}
		return "the texts differ only in characters outside printable ASCII: " + strings.Join(names, "; ")
	}
	// The differing stretch: expected[p:ee] against observed[p:oe].
	p, ee, oe := commonPrefix(expected, observed), len(expected), len(observed)
	for ee > p && oe > p {
		r1, n1 := utf8.DecodeLastRuneInString(expected[:ee])
		r2, n2 := utf8.DecodeLastRuneInString(observed[:oe])
		if r1 != r2 || n1 != n2 {
			break
		}
		ee, oe = ee-n1, oe-n2
	}
	names = append(describeUnusual("expected", expected, p, ee), describeUnusual("observed", observed, p, oe)...)
	if len(names) == 0 {
		return ""
	}
	if so, _ := skeleton(observed); so == se {
		return "the texts differ only in characters outside printable ASCII: " + strings.Join(names, "; ")
	}
	// Not look-alikes after folding (a homoglyph such as Cyrillic "а" for "a"): a hint
	// only when the sides differ by substituting a few characters.
	n := utf8.RuneCountInString(expected[p:ee])
	if ee-p > hintSpan || oe-p > hintSpan || n > hintRunes || n != utf8.RuneCountInString(observed[p:oe]) {
		return ""
	}
	return "the texts differ in characters outside printable ASCII: " + strings.Join(names, "; ")
}

// commonPrefix returns the length in bytes of the longest common prefix of a and b that
// ends on a character boundary.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) {
		r1, s1 := utf8.DecodeRuneInString(a[n:])
		r2, s2 := utf8.DecodeRuneInString(b[n:])
		if r1 != r2 || s1 != s2 {
			break
		}
		n += s1
	}
	return n
}

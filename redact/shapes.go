package redact

import (
	"bytes"
	"regexp"
	"sync"
)

// shape is one recognisable secret format, written as flags + (`\b` when word) + body.
// keep is set when the first submatch group (for example a key name before its value)
// is kept verbatim on redaction.
//
// starts are the literals every match begins with (compared ASCII case-insensitively
// when fold is set; a test checks that no fold literal holds a letter with a non-ASCII
// case fold, k or s, so ASCII comparison is exact). Clean text — the common case —
// costs a few substring searches; where a literal occurs, one anchored match decides
// whether a match starts there (word: the pattern begins with `\b`, checked by hand
// against the byte before). The earliest such place is the regular expression's
// leftmost match, found without running the case-insensitive expression over the
// whole text.
type shape struct {
	name   string
	flags  string
	word   bool
	body   string
	keep   bool
	starts []string
	fold   bool
}

// shapeDefs are the secret formats agentproof recognises (docs/secrets.md):
// provider API keys, provider-named key assignments, bearer tokens, JWT-like
// strings and PEM private key blocks. Order matters: the more specific first.
var shapeDefs = []shape{
	{name: "private-key-block", body: `-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`, starts: []string{"-----BEGIN "}},
	{name: "anthropic-key", word: true, body: `sk-ant-[A-Za-z0-9_-]{16,}`, starts: []string{"sk-ant-"}},
	{name: "openai-key", word: true, body: `sk-(?:proj-)?[A-Za-z0-9_-]{16,}`, starts: []string{"sk-"}},
	{name: "provider-key-assignment", flags: "(?i)", body: `((?:openai|anthropic|openrouter|daytona|xai|gemini)[-_]?(?:api)?[-_]?key["'\s:=]+)[A-Za-z0-9._-]{12,}`, keep: true,
		starts: []string{"openai", "anthropic", "openrouter", "daytona", "xai", "gemini"}, fold: true},
	{name: "bearer-token", flags: "(?i)", word: true, body: `(bearer\s+)[A-Za-z0-9._~+/-]{16,}=*`, keep: true, starts: []string{"bearer"}, fold: true},
	{name: "jwt", word: true, body: `eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`, starts: []string{"eyJ"}},
}

// compiledShape is a shape with its expressions: re the whole pattern (redaction),
// at the body anchored at the start of its input (finding).
type compiledShape struct {
	*shape
	re, at *regexp.Regexp
	lits   [][]byte
}

// shapes compiles the shapes on first use: compiling them at package init would cost
// every agentproof process at start.
var shapes = sync.OnceValue(func() []compiledShape {
	out := make([]compiledShape, len(shapeDefs))
	for i := range shapeDefs {
		sh := &shapeDefs[i]
		pat := sh.body
		if sh.word {
			pat = `\b` + pat
		}
		c := compiledShape{shape: sh, re: regexp.MustCompile(sh.flags + pat), at: regexp.MustCompile(sh.flags + `^(?:` + sh.body + `)`)}
		for _, l := range sh.starts {
			c.lits = append(c.lits, []byte(l))
		}
		out[i] = c
	}
	return out
})

// isWordByte reports whether c is a word character of `\b` (ASCII letters, digits, _).
func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// asciiLower returns b with ASCII letters lower-cased (every other byte as is, so
// offsets are b's).
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// first returns the offset of sh's leftmost match in b, or -1. lower is b's ASCII
// lower-cased form, computed on demand.
func (sh *compiledShape) first(b []byte, lower *[]byte) int {
	hay := b
	if sh.fold {
		if *lower == nil {
			*lower = asciiLower(b)
		}
		hay = *lower
	}
	// next[i] is the next occurrence of lits[i] at or after pos (-1: none left).
	next := make([]int, len(sh.lits))
	for i, l := range sh.lits {
		next[i] = bytes.Index(hay, l)
	}
	for {
		p := -1
		for _, n := range next {
			if n >= 0 && (p < 0 || n < p) {
				p = n
			}
		}
		if p < 0 {
			return -1
		}
		if (!sh.word || p == 0 || !isWordByte(b[p-1])) && sh.at.Match(b[p:]) {
			return p
		}
		for i, n := range next {
			if n == p {
				if k := bytes.Index(hay[p+1:], sh.lits[i]); k >= 0 {
					next[i] = p + 1 + k
				} else {
					next[i] = -1
				}
			}
		}
	}
}

// findShape returns the first shape found in b (earliest offset; at one offset, the
// first shape of shapeDefs) and its offset. It looks at b once: only where the two
// bytes there, ASCII lower-cased, begin one of the shapes' literals (shapeStarts) does
// it compare the literals and run the anchored expression of the shapes they begin —
// the leftmost match of each shape's expression, as compiledShape.first finds it,
// without one substring search per literal over the whole text.
func findShape(b []byte) (string, int, bool) {
	list, starts := shapes(), shapeStarts()
	for i := 0; i+1 < len(b); i++ {
		k := uint16(lowerASCII[b[i]])<<8 | uint16(lowerASCII[b[i+1]])
		if starts[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for s := range list {
			if list[s].startsAt(b, i) {
				return list[s].name, i, true
			}
		}
	}
	return "", -1, false
}

// lowerASCII maps a byte to its ASCII lower case (every other byte to itself).
var lowerASCII = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i + 'a' - 'A')
		}
	}
	return t
}()

// shapeStarts is the set (a bit per pair) of the first two bytes, ASCII lower-cased,
// of every shape literal (each is at least two bytes long: TestShapeLiteralsFoldASCII).
var shapeStarts = sync.OnceValue(func() *[1 << 16 / 64]uint64 {
	var set [1 << 16 / 64]uint64
	for _, sh := range shapes() {
		for _, l := range sh.lits {
			k := uint16(lowerASCII[l[0]])<<8 | uint16(lowerASCII[l[1]])
			set[k>>6] |= 1 << (k & 63)
		}
	}
	return &set
})

// startsAt reports whether a match of sh begins at offset p of b: one of its literals
// is there (ASCII case-insensitively when fold), the byte before is not a word byte
// when the pattern begins with a word boundary, and the anchored expression matches.
func (sh *compiledShape) startsAt(b []byte, p int) bool {
	if sh.word && p > 0 && isWordByte(b[p-1]) {
		return false
	}
	for _, l := range sh.lits {
		if len(b)-p < len(l) {
			continue
		}
		if sh.fold && equalLowerASCII(b[p:p+len(l)], l) || !sh.fold && bytes.Equal(b[p:p+len(l)], l) {
			return sh.at.Match(b[p:])
		}
	}
	return false
}

// equalLowerASCII reports whether b, ASCII lower-cased, is lit.
func equalLowerASCII(b, lit []byte) bool {
	for i, c := range lit {
		if lowerASCII[b[i]] != c {
			return false
		}
	}
	return true
}

// redactShapes replaces every secret-shaped value in text.
func redactShapes(text string) string {
	var lower []byte
	b := []byte(text)
	for _, sh := range shapes() {
		if sh.first(b, &lower) < 0 {
			continue
		}
		if sh.keep {
			text = sh.re.ReplaceAllString(text, "${1}"+RedactedShape)
		} else {
			text = sh.re.ReplaceAllLiteralString(text, RedactedShape)
		}
		b, lower = []byte(text), nil
	}
	return text
}

// HasShape reports whether text contains a secret-shaped value (used by catalog
// validation to refuse raw keys in declarative data).
func HasShape(text string) bool {
	_, _, ok := findShape([]byte(text))
	return ok
}

package match

import "strings"

// Normalize applies the message normalisation of spec runner-e2e-harness §5, in this
// order, each as one left-to-right pass: CRLF → LF; the two characters backslash and
// underscore → "_" (renderers escape underscores in Markdown); every run of spaces and
// tabs → one space; then trim leading and trailing whitespace as JavaScript's
// String.prototype.trim does (Unicode White_Space, line terminators and U+FEFF). The
// passes cannot create input for one another, so one scan does them all.
func Normalize(s string) string {
	if !needsRewrite(s) {
		return strings.TrimFunc(s, isJSSpace)
	}
	var b strings.Builder
	b.Grow(len(s))
	start := 0 // s[start:i] is pending, unchanged input
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\r' && i+1 < len(s) && s[i+1] == '\n':
			b.WriteString(s[start:i])
			b.WriteByte('\n')
			i += 2
			start = i
		case c == '\\' && i+1 < len(s) && s[i+1] == '_':
			b.WriteString(s[start:i])
			b.WriteByte('_')
			i += 2
			start = i
		case c == ' ' || c == '\t':
			j := i + 1
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if c == ' ' && j == i+1 {
				i++ // a lone space stays as it is
				continue
			}
			b.WriteString(s[start:i])
			b.WriteByte(' ')
			i = j
			start = i
		default:
			i++
		}
	}
	b.WriteString(s[start:])
	return strings.TrimFunc(b.String(), isJSSpace)
}

// needsRewrite reports whether Normalize must do more than trim s. Each test is a
// vectorised scan, so clean messages cost a few passes of memchr.
func needsRewrite(s string) bool {
	return strings.IndexByte(s, '\t') >= 0 ||
		strings.Contains(s, "  ") ||
		strings.Contains(s, "\r\n") ||
		strings.Contains(s, `\_`)
}

// isJSSpace reports whether r is removed by JavaScript's String.prototype.trim
// (ECMAScript WhiteSpace and LineTerminator).
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

package match

import "strings"

// Normalize applies the message normalisation of spec runner-e2e-harness §5, in this
// order, each as one left-to-right pass: CRLF → LF; the two characters backslash and
// underscore → "_" (renderers escape underscores in Markdown); every run of spaces and
// tabs → one space; then trim leading and trailing whitespace as JavaScript's
// String.prototype.trim does (Unicode White_Space, line terminators and U+FEFF). The
// passes cannot create input for one another, so one scan does them all: it jumps
// between rewrite sites found by vectorised substring search, so a clean message costs
// four memchr-speed scans and no copy.
func Normalize(s string) string {
	n := len(s)
	find := func(pat string, from int) int {
		if k := strings.Index(s[from:], pat); k >= 0 {
			return from + k
		}
		return n
	}
	crlf, esc, tab, spaces := find("\r\n", 0), find(`\_`, 0), find("\t", 0), find("  ", 0)
	if crlf == n && esc == n && tab == n && spaces == n {
		return strings.TrimFunc(s, isJSSpace)
	}
	var b strings.Builder
	b.Grow(n)
	start := 0 // s[start:] is not yet written
	for {
		p := min(crlf, esc, tab, spaces)
		if p == n {
			break
		}
		var end int
		var repl byte
		switch p {
		case crlf:
			end, repl = p+2, '\n'
		case esc:
			end, repl = p+2, '_'
		default: // a tab or two spaces: the whole run of spaces and tabs around it
			for p > start && s[p-1] == ' ' {
				p--
			}
			end = p + 1
			for end < n && (s[end] == ' ' || s[end] == '\t') {
				end++
			}
			repl = ' '
		}
		b.WriteString(s[start:p])
		b.WriteByte(repl)
		start = end
		if crlf < end {
			crlf = find("\r\n", end)
		}
		if esc < end {
			esc = find(`\_`, end)
		}
		if tab < end {
			tab = find("\t", end)
		}
		if spaces < end {
			spaces = find("  ", end)
		}
	}
	b.WriteString(s[start:])
	return strings.TrimFunc(b.String(), isJSSpace)
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

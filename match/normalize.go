package match

import (
	"math/bits"
	"strings"
)

// Normalize applies the message normalisation (docs/matchers.md), in this order, each as one left-to-right pass: CRLF → LF; the two characters backslash and
// underscore → "_" (renderers escape underscores in Markdown); every run of spaces and
// tabs → one space; then trim leading and trailing whitespace as JavaScript's
// String.prototype.trim does (Unicode White_Space, line terminators and U+FEFF). The
// passes cannot create input for one another, so one scan does them all. A message that
// needs no rewrite costs four vectorised substring searches and no copy; otherwise the
// scan copies clean stretches eight bytes at a time.
func Normalize(s string) string {
	n := len(s)
	p := min(index(s, "\r\n"), index(s, `\_`), index(s, "\t"), index(s, "  "))
	if p == n {
		return strings.TrimFunc(s, isJSSpace)
	}
	var b strings.Builder
	b.Grow(n)
	if p > 0 && s[p] == '\t' { // a run may start with spaces before the first tab
		for p > 0 && s[p-1] == ' ' {
			p--
		}
	}
	start := 0 // s[start:i] is pending, unchanged input
	for i := p; i < n; {
		if i+9 <= n {
			off := dirtyOffset(s, i)
			if off == 8 {
				i += 8
				continue
			}
			i += off
		}
		c := s[i]
		switch {
		case c == '\r' && i+1 < n && s[i+1] == '\n':
			b.WriteString(s[start:i])
			b.WriteByte('\n')
			i += 2
			start = i
		case c == '\\' && i+1 < n && s[i+1] == '_':
			b.WriteString(s[start:i])
			b.WriteByte('_')
			i += 2
			start = i
		case c == ' ' || c == '\t':
			j := i + 1
			for j < n && (s[j] == ' ' || s[j] == '\t') {
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

// index is strings.Index returning len(s) when sub is absent.
func index(s, sub string) int {
	if i := strings.Index(s, sub); i >= 0 {
		return i
	}
	return len(s)
}

// Byte-parallel (SWAR) constants: lo has 0x01 in every byte, seven 0x7f in every byte.
const (
	lo    = 0x0101010101010101
	seven = 0x7f7f7f7f7f7f7f7f
)

// zeroBytes returns 0x80 in each byte of x that is zero and 0 elsewhere (exact).
func zeroBytes(x uint64) uint64 {
	return ^(((x & seven) + seven) | x | seven)
}

// dirtyOffset returns the offset in s[i:i+8] of the first byte that may start a
// rewrite (a tab, CR or backslash, or a space followed by a space or tab, also across
// into s[i+8]), or 8 when all eight bytes are copied unchanged. Every byte before the
// returned offset is copied unchanged. The caller guarantees i+9 <= len(s).
func dirtyOffset(s string, i int) int {
	w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	sp := zeroBytes(w ^ (lo * ' '))
	tabs := zeroBytes(w ^ (lo * '\t'))
	dirty := tabs | zeroBytes(w^(lo*'\r')) | zeroBytes(w^(lo*'\\')) | sp&(sp>>8) | sp&(tabs>>8)
	if dirty == 0 {
		if sp>>63 != 0 && (s[i+8] == ' ' || s[i+8] == '\t') {
			return 7
		}
		return 8
	}
	return bits.TrailingZeros64(dirty) / 8
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

package result

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Clean makes untrusted text safe for one line of plain text: invalid UTF-8 bytes and
// control characters (C0, DEL, C1, U+FFFE/U+FFFF) become visible escapes such as `\x1b`,
// and tab, CR and LF become spaces when oneLine is set (kept otherwise), so that
// text from an agent cannot move the cursor, recolour a terminal or break a line.
func Clean(s string, oneLine bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || r == '\n' || r == '\r':
			if oneLine {
				b.WriteByte(' ')
			} else {
				b.WriteRune(r)
			}
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0, r == 0xfffe, r == 0xffff, r >= 0xd800 && r <= 0xdfff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

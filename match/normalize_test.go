package match

import (
	"regexp"
	"strings"
	"testing"
)

// referenceNormalize is the normalisation written as its four sequential global
// replacements, the way the TypeScript harness chains String.prototype.replace.
func referenceNormalize(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, `\_`, "_")
	s = regexp.MustCompile(`[ \t]+`).ReplaceAllString(s, " ")
	return strings.TrimFunc(s, isJSSpace)
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"clean", "PAPERCLIP_E2E_OK_1", "PAPERCLIP_E2E_OK_1"},
		{"crlf", "a\r\nb", "a\nb"},
		{"lone cr kept", "a\rb", "a\rb"},
		{"cr cr lf", "a\r\r\nb", "a\r\nb"},
		{"escaped underscore", `PAPERCLIP\_E2E\_OK\_1`, "PAPERCLIP_E2E_OK_1"},
		{"double backslash underscore", `a\\_b`, `a\_b`},
		{"space run", "a   b", "a b"},
		{"tab run", "a\t\t b \t c", "a b c"},
		{"lone tab", "a\tb", "a b"},
		{"newlines kept", "a\n\nb", "a\n\nb"},
		{"trim", " \t\n a b \n\t ", "a b"},
		{"trim nbsp and bom", "\u00a0\ufeffa\u3000", "a"},
		{"nbsp inside kept", "a\u00a0\u00a0b", "a\u00a0\u00a0b"},
		{"nel not trimmed", "\u0085a\u0085", "\u0085a\u0085"},
		{"unicode", "  héllo\t\twörld ✓  ", "héllo wörld ✓"},
		{"crlf between spaces", "a \r\n b", "a \n b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Normalize(tt.in); got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if ref := referenceNormalize(tt.in); ref != tt.want {
				t.Errorf("reference(%q) = %q, want %q (table is wrong)", tt.in, ref, tt.want)
			}
		})
	}
}

// FuzzNormalize checks the one-pass Normalize against the four-pass reference.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", "a  b", "a\r\n\tb", `\_\\_`, "\r\r\n", " \u00a0x\ufeff", "\\\r\n_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Normalize(s), referenceNormalize(s); got != want {
			t.Fatalf("Normalize(%q) = %q, reference %q", s, got, want)
		}
	})
}

package catalog

import (
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	t.Parallel()
	known := []string{"reference", "wrong", "nop", "local", "sandbox", "sandbox-hostile", "core-compatibility", "calibration", "message-marker"}
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"refrence", "reference"},
		{"Reference", "reference"},
		{"locl", "local"},
		{"sandbx", "sandbox"},
		{"cor", "core-compatibility"}, // a prefix when nothing is close
		{"message-markr", "message-marker"},
		{"nopp", "nop"},
		{"zzzzzz", ""},
		{"x", ""},
		{"sandbox-hostle", "sandbox-hostile"},
	} {
		if got := strings.Join(Suggest(tc.in, known), ","); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := didYouMean([]string{"refrence", "zzz", "locl"}, known); got != " (did you mean refrence → reference, locl → local?)" {
		t.Errorf("didYouMean: %q", got)
	}
	if got := didYouMean([]string{"zzz"}, known); got != "" {
		t.Errorf("didYouMean without a close value: %q", got)
	}
}

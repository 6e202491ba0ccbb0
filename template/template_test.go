package template_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/template"
)

// TestParseRender: placeholders (spaces inside the braces allowed) render from vars;
// a "{{" that is not closed, a placeholder that is no variable name and a variable
// vars does not define are *template.Error naming the byte offset or the variable.
func TestParseRender(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"nonce": "N1", "marker": "OK_N1"}
	for _, r := range []struct {
		in, want, wantErr string
	}{
		{"plain", "plain", ""},
		{"", "", ""},
		{"{{nonce}}", "N1", ""},
		{"a {{ nonce }} b {{marker}}{{nonce}}", "a N1 b OK_N1N1", ""},
		{"stray }} stays", "stray }} stays", ""},
		{"{{nonce", "", `template: at byte 0: "{{" is not closed by "}}"`},
		{"x {{}}", "", `template: at byte 2: placeholder "{{}}" is not a variable name`},
		{"ab {{nonce}} {{two words}}", "", `template: at byte 13: placeholder "{{two words}}" is not a variable name`},
		{"{{1x}}", "", `is not a variable name`},
		{"{{answer}}", "", `variable "answer" is not defined here`},
	} {
		tm, err := template.Parse(r.in)
		got := ""
		if err == nil {
			got, err = tm.Render(vars)
		}
		var te *template.Error
		switch {
		case r.wantErr == "" && (err != nil || got != r.want):
			t.Errorf("%q = %q, %v; want %q", r.in, got, err, r.want)
		case r.wantErr != "" && (!errors.As(err, &te) || !strings.Contains(err.Error(), r.wantErr)):
			t.Errorf("%q: error %v, want %q", r.in, err, r.wantErr)
		}
	}
	tm, err := template.Parse("{{a}}-{{b}}-{{a}}")
	if err != nil || !slices.Equal(tm.Vars(), []string{"a", "b", "a"}) {
		t.Errorf("Vars = %q, %v", tm.Vars(), err)
	}
}

// FuzzParse: Parse never panics; what it accepts renders with every variable defined
// and keeps each literal part.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "plain", "{{nonce}}", "a {{ x }} b", "{{", "}}{{y}}", "{{a}}{{b}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := template.Parse(s)
		if err != nil {
			return
		}
		vars := map[string]string{}
		for _, v := range tm.Vars() {
			vars[v] = ""
		}
		out, err := tm.Render(vars)
		if err != nil {
			t.Fatalf("Render of %q with every variable: %v", s, err)
		}
		if !strings.Contains(s, "{{") && out != s {
			t.Fatalf("%q without placeholders renders as %q", s, out)
		}
	})
}

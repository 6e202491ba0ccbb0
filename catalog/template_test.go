package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/canonjson"
)

func TestTemplate(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"nonce": "N1", "marker": "OK_N1"}
	rows := []struct {
		in, want string
		wantErr  string
	}{
		{"plain", "plain", ""},
		{"", "", ""},
		{"{{nonce}}", "N1", ""},
		{"a {{ nonce }} b {{marker}}{{nonce}}", "a N1 b OK_N1N1", ""},
		{"stray }} stays", "stray }} stays", ""},
		{"{{nonce", "", `template: at byte 0: "{{" is not closed by "}}"`},
		{"x {{}}", "", `template: at byte 2: placeholder "{{}}" is not a variable name`},
		{"{{two words}}", "", `placeholder "{{two words}}" is not a variable name`},
		{"{{1x}}", "", `is not a variable name`},
		{"{{answer}}", "", `variable "answer" is not defined here`},
	}
	for _, r := range rows {
		got, err := renderString(r.in, vars)
		var te *TemplateError
		switch {
		case r.wantErr == "" && err != nil:
			t.Errorf("render(%q) error %v", r.in, err)
		case r.wantErr != "" && (!errors.As(err, &te) || !strings.Contains(err.Error(), r.wantErr)):
			t.Errorf("render(%q) error = %v, want %q", r.in, err, r.wantErr)
		case r.wantErr == "" && got != r.want:
			t.Errorf("render(%q) = %q, want %q", r.in, got, r.want)
		}
	}
	tm, err := ParseTemplate("{{a}}-{{b}}-{{a}}")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "a"}, tm.Vars()); diff != "" {
		t.Errorf("Vars (-want +got):\n%s", diff)
	}
}

// TestJavaScriptOrders pins the two orders JavaScript imposes on fingerprint input:
// Array.prototype.sort compares UTF-16 code units (an astral character sorts before
// U+FFFF, unlike UTF-8 byte order), and objects put array-index keys first.
func TestJavaScriptOrders(t *testing.T) {
	t.Parallel()
	if compareUTF16("😀", "\uffff") >= 0 {
		t.Error(`compareUTF16("😀", "\uffff") should be < 0 (0xD83D < 0xFFFF)`)
	}
	if compareUTF16("a-b", "a.b") >= 0 || compareUTF16("b", "a") <= 0 || compareUTF16("x", "x") != 0 {
		t.Error("compareUTF16 disagrees with ASCII order")
	}
	in := canonjson.Object{{Key: "z"}, {Key: "10"}, {Key: "2"}, {Key: "01"}, {Key: "4294967295"}, {Key: "4294967294"}, {Key: "-1"}}
	var got []string
	for _, m := range jsPropertyOrder(in) {
		got = append(got, m.Key)
	}
	// 4294967295 (2^32−1) is not an array index; 4294967294 is.
	want := []string{"2", "10", "4294967294", "z", "01", "4294967295", "-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jsPropertyOrder (-want +got):\n%s", diff)
	}
}

func TestLoadDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"a.yaml": baseA, "sub/b.yaml": baseB, "notes.txt": "ignored: ["} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cells) != 1 {
		t.Fatalf("cells = %d", len(c.Cells))
	}
	// A single file is a catalog too (here one without suites).
	single, err := LoadDir(filepath.Join(dir, "a.yaml"))
	if err != nil || len(single.Profiles) != 1 || len(single.Cells) != 0 {
		t.Fatalf("LoadDir(file) = %v, %v", single, err)
	}
	var ve *ValidationError
	if _, err := LoadDir(filepath.Join(dir, "missing")); err == nil || errors.As(err, &ve) {
		t.Errorf("LoadDir(missing) error = %v, want a file-system error", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "b.yaml"), []byte(baseB+"    colour: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadDir(dir)
	if !errors.As(err, &ve) || ve.Problems[0].File != filepath.ToSlash(filepath.Join(dir, "sub", "b.yaml")) {
		t.Errorf("problem file = %v", err)
	}
}

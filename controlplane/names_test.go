package controlplane_test

import (
	"encoding/json"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentproof/agentproof/controlplane"
)

// TestCheckRecordNames: a register_deliverable whose filename is not a relative,
// clean path of at most 512 bytes, or whose contentRef does not name the declared
// blob, is refused with artifact_invalid, naming the field; the record's other
// commands pass.
func TestCheckRecordNames(t *testing.T) {
	t.Parallel()
	sha := strings.Repeat("a", 64)
	deliverable := func(fields string) []byte {
		return []byte(`{"kind":"register_deliverable","sha256":"` + sha + `"` + fields + `}`)
	}
	for _, c := range []struct {
		name string
		cmd  []byte
		want string // "" passes, else a substring of the error
	}{
		{"plain", deliverable(`,"filename":"report.md"`), ""},
		{"nested", deliverable(`,"filename":"out/report.md"`), ""},
		{"unicode", deliverable(`,"filename":"résumé.txt"`), ""},
		{"the stored blob", deliverable(`,"filename":"a","contentRef":"sha256:` + sha + `"`), ""},
		{"no filename (the state machine says it is required)", deliverable(``), ""},
		{"parent", deliverable(`,"filename":"../escape.txt"`), "artifact filename"},
		{"parent inside", deliverable(`,"filename":"a/../../b"`), "artifact filename"},
		{"absolute", deliverable(`,"filename":"/etc/passwd-x"`), "absolute"},
		{"CR LF", deliverable(`,"filename":"a\r\nb"`), "control character"},
		{"NUL", deliverable(`,"filename":"a\u0000b"`), "control character"},
		{"dot segment", deliverable(`,"filename":"./a"`), ". segment"},
		{"empty segment", deliverable(`,"filename":"a//b"`), "empty segment"},
		{"trailing slash", deliverable(`,"filename":"a/"`), "empty segment"},
		{"backslash", deliverable(`,"filename":"..\\\\a"`), "backslash"},
		{"5000 bytes", deliverable(`,"filename":"` + strings.Repeat("n", 5000) + `"`), "longer than 512"},
		{"another blob", deliverable(`,"filename":"a","contentRef":"sha256:` + strings.Repeat("b", 64) + `"`), "contentRef"},
		{"a path as contentRef", deliverable(`,"filename":"a","contentRef":"a"`), "contentRef"},
		{"an empty contentRef", deliverable(`,"filename":"a","contentRef":""`), "contentRef"},
		{"another command", []byte(`{"kind":"append_comment","filename":"../x"}`), ""},
		{"not JSON", []byte(`{`), ""},
	} {
		err := controlplane.CheckRecordNames(c.cmd)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (controlplane.CodeOf(err) != controlplane.CodeArtifactInvalid || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want artifact_invalid naming %q", c.name, err, c.want)
		}
	}
	if err := controlplane.CheckRecordNames(deliverable(`,"filename":"` + strings.Repeat("n", 5000) + `"`)); len(err.Error()) > 400 {
		t.Errorf("the error echoes the whole name: %d bytes", len(err.Error()))
	}
}

// FuzzValidFilePath: a path ValidFilePath accepts is relative, clean, valid UTF-8,
// free of control characters and backslashes, at most MaxFilePathBytes bytes, and
// joined to any root stays below it; CheckRecordNames agrees with it on an
// artifact's filename (a JSON string, so valid UTF-8).
func FuzzValidFilePath(f *testing.F) {
	for _, s := range []string{"report.md", "out/report.md", "../escape.txt", "/etc/passwd-x", "a\r\nb", strings.Repeat("n", 5000), "a//b", "./a", "a/.", "..", "\x7f", "a\\b", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		msg := controlplane.ValidFilePath(p)
		cmd, _ := json.Marshal(map[string]string{"kind": "register_deliverable", "filename": p})
		err := controlplane.CheckRecordNames(cmd)
		// JSON carries only valid UTF-8 (an invalid byte becomes U+FFFD on the way).
		if p != "" && utf8.ValidString(p) && (msg == "") != (err == nil) {
			t.Fatalf("%q: ValidFilePath %q, CheckRecordNames %v", p, msg, err)
		}
		if msg != "" {
			return
		}
		switch {
		case len(p) > controlplane.MaxFilePathBytes, !utf8.ValidString(p):
			t.Fatalf("%q: accepted with %d bytes, valid UTF-8 %t", p, len(p), utf8.ValidString(p))
		case path.IsAbs(p), path.Clean(p) != p, strings.ContainsAny(p, "\\"):
			t.Fatalf("%q: accepted though absolute, unclean or with a backslash", p)
		case strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
			t.Fatalf("%q: accepted with a control character", p)
		}
		root := "/results/attempt"
		if j := filepath.Join(root, p); !strings.HasPrefix(j, root+"/") {
			t.Fatalf("%q: joined to %s gives %s, outside it", p, root, j)
		}
	})
}

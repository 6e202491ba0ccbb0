package result

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/redact"
)

// testCleanLimit is the clean limit of the guarded writers TestGuardedWriterAsWrite
// makes (maxCleanJSON in use), small so that its documents above it stay small.
const testCleanLimit = 1 << 20

// TestGuardedWriterAsWrite: a guarded write in pieces ends as Guard.Write over the whole
// content does — the same bytes on disk, size, digest, leaks, withholding and error —
// for clean and leaking text, JSON (escaped values, keys, numbers, shapes), an image,
// JSON that does not parse, and a refused kind.
func TestGuardedWriterAsWrite(t *testing.T) {
	t.Parallel()
	const secret = "guard-secret-0123456789"
	g := Guard{Secrets: redact.NewSet(secret)}
	big := strings.Repeat("<tr><td>clean cell</td></tr>\n", 5000)
	cases := []struct{ name, content string }{
		{"clean.html", big},
		{"exact.html", big + "<p>" + secret + "</p>" + big},
		{"split.md", big + secret},
		{"shape.txt", big + "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123\n"},
		{"spaced.log", big + "OPENAI_API_KEY=" + strings.Repeat(" ", 70000) + "abcdefghijklmnop\n"},
		{"clean.json", `{"a": [1, 2, {"b": "` + strings.Repeat("x", 100000) + `"}], "c": null}` + "\n"},
		{"escaped.json", `{"note": "\u0067uard-secret-0123456789"}`},
		{"key.json", `{"guard-secret-0123456789": 1}`},
		{"number.json", `{"n": 12345678901234567890}`},
		{"shape.json", `{"auth": "sk-ant-abcdefghijklmnopqrstuvwx"}`},
		// above the writer's clean limit (testCleanLimit): read back token by token only
		{"bigclean.json", `{"a": "` + strings.Repeat("y", testCleanLimit) + `"}`},
		{"bigshape.json", `{"a": "` + strings.Repeat("y ", testCleanLimit/2) + `", "auth": "sk-ant-abcdefghijklmnopqrstuvwx"}`},
		{"notjson.json", `{"a": `},
		{"image.png", "\x89PNG" + secret},
		{"script.js", "alert(1)"},
	}
	num := Guard{Secrets: redact.NewSet(secret, "12345678901234567890")}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := g
			if tc.name == "number.json" {
				g = num
			}
			dir := t.TempDir()
			want, wantErr := g.Write(filepath.Join(dir, "whole", tc.name), []byte(tc.content), true)
			var got GuardedFile
			var err error
			w, err := g.create(filepath.Join(dir, "pieces", tc.name), true, testCleanLimit)
			if err == nil {
				for i := 0; i < len(tc.content); i += 1000 {
					if _, err := w.WriteString(tc.content[i:min(len(tc.content), i+1000)]); err != nil {
						t.Fatal(err)
					}
				}
				got, err = w.Close()
			}
			if (err == nil) != (wantErr == nil) || (err != nil && errors.Is(err, redact.ErrLeak) != errors.Is(wantErr, redact.ErrLeak)) {
				t.Fatalf("error %v, Write's %v", err, wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("guarded file (-Write +pieces):\n%s", diff)
			}
			a, errA := os.ReadFile(filepath.Join(dir, "whole", tc.name))
			b, errB := os.ReadFile(filepath.Join(dir, "pieces", tc.name))
			if !bytes.Equal(a, b) || (errA == nil) != (errB == nil) {
				t.Errorf("written bytes differ (%v, %v)", errA, errB)
			}
			if entries, _ := os.ReadDir(filepath.Join(dir, "pieces")); len(entries) > 1 || (errB != nil && len(entries) > 0) {
				t.Errorf("leftover files: %v", entries)
			}

			// Staged, then committed: the same file, absent until the commit.
			staged := filepath.Join(dir, "staged", tc.name)
			var gs GuardedFile
			var st atomicfile.Staged
			w, err = g.create(staged, true, testCleanLimit)
			if err == nil {
				if _, err := w.WriteString(tc.content); err != nil {
					t.Fatal(err)
				}
				gs, st, err = w.Stage()
			}
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("Stage error %v, Write's %v", err, wantErr)
			}
			if diff := cmp.Diff(want, gs); diff != "" {
				t.Errorf("guarded file (-Write +staged):\n%s", diff)
			}
			if _, err := os.Stat(staged); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("staged file in place before the commit: %v", err)
			}
			if err == nil {
				if err := atomicfile.CommitStaged([]atomicfile.Staged{st}); err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(staged); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("committed file: %v %v", fi, err)
				}
			}
			c, errC := os.ReadFile(staged)
			if !bytes.Equal(a, c) || (errA == nil) != (errC == nil) {
				t.Errorf("staged bytes differ (%v, %v)", errA, errC)
			}
			if entries, _ := os.ReadDir(filepath.Dir(staged)); len(entries) > 1 || (errC != nil && len(entries) > 0) {
				t.Errorf("leftover staged files: %v", entries)
			}
		})
	}
}

// TestGuardedCommitStaged: staged files in two directories appear together after the commit;
// a commit that fails (a destination directory gone) removes every temporary file not
// yet renamed, and DiscardStaged leaves nothing.
func TestGuardedCommitStaged(t *testing.T) {
	t.Parallel()
	g := Guard{Secrets: redact.NewSet("commit-secret-0123456789")}
	stage := func(t *testing.T, p, content string) atomicfile.Staged {
		t.Helper()
		w, err := g.Create(p, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteString(content); err != nil {
			t.Fatal(err)
		}
		_, st, err := w.Stage()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "c", "summary.md"), filepath.Join(dir, "history.json")
	if err := os.WriteFile(b, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []atomicfile.Staged{stage(t, a, "# new\n"), stage(t, b, `{"new": true}`+"\n")}
	if got, _ := os.ReadFile(b); string(got) != "old\n" {
		t.Fatalf("history.json before the commit: %q", got)
	}
	if err := atomicfile.CommitStaged(files); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{a: "# new\n", b: `{"new": true}` + "\n"} {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", p, got, err)
		}
	}

	gone := filepath.Join(dir, "gone")
	files = []atomicfile.Staged{stage(t, filepath.Join(dir, "c", "junit.xml"), "<testsuites/>\n"), stage(t, filepath.Join(gone, "x.md"), "x\n")}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.CommitStaged(files); err == nil {
		t.Fatal("commit into a removed directory: no error")
	}
	atomicfile.DiscardStaged([]atomicfile.Staged{stage(t, filepath.Join(dir, "c", "dashboard.html"), "<html></html>\n")})
	entries, err := os.ReadDir(filepath.Join(dir, "c"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"summary.md"}) {
		t.Errorf("files after a failed commit and a discard: %v, want only summary.md", names)
	}
}

// TestGuardStageCopy: a copy of a staged guarded write holds the same bytes as the
// original once both are committed (the guard's output: a leak redacted in both), is
// described as the original without its leaks, and is refused for a kind the allowlist
// refuses (nothing then left behind).
func TestGuardStageCopy(t *testing.T) {
	t.Parallel()
	const secret = "copy-secret-0123456789"
	g := Guard{Secrets: redact.NewSet(secret)}
	dir := t.TempDir()
	w, err := g.Create(filepath.Join(dir, "a.html"), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(strings.Repeat("<p>clean</p>\n", 10000) + secret); err != nil {
		t.Fatal(err)
	}
	gf, st, err := w.Stage()
	if err != nil || len(gf.Leaks) == 0 {
		t.Fatalf("staged %+v, %v: want a redacted leak", gf, err)
	}
	if _, _, err := g.StageCopy(filepath.Join(dir, "b.svg"), st, gf, true); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("copy to an SVG: %v, want ErrNotAllowed", err)
	}
	cf, cst, err := g.StageCopy(filepath.Join(dir, "b.html"), st, gf, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := (GuardedFile{Bytes: gf.Bytes, SHA256: gf.SHA256}); !cmp.Equal(cf, want) {
		t.Errorf("copy described as %+v, want %+v", cf, want)
	}
	if err := atomicfile.CommitStaged([]atomicfile.Staged{st, cst}); err != nil {
		t.Fatal(err)
	}
	a, errA := os.ReadFile(filepath.Join(dir, "a.html"))
	b, errB := os.ReadFile(filepath.Join(dir, "b.html"))
	if errA != nil || errB != nil || !bytes.Equal(a, b) || bytes.Contains(a, []byte(secret)) || int64(len(b)) != gf.Bytes {
		t.Errorf("copy differs from the original or leaks (%v, %v)", errA, errB)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("files left: %v", entries)
	}
}

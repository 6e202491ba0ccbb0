package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFinalRoundTrip: a final workspace kept as JSON restores the same tree — files
// with their content and permission bits, directories, links as written (never
// followed) — and gives the matchers the files' contents.
func TestFinalRoundTrip(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(ws, "tests", "empty"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\necho ok\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "tests", "data.bin"), []byte{0xff, 0x00, 0xfe}, 0o600))
	must(t, os.Symlink("../outside", filepath.Join(ws, "link")))
	f, err := TakeFinal(context.Background(), ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.Truncated || f.MaxBytes != DefaultFinalMaxBytes {
		t.Fatalf("final = truncated %v (%s), bound %d", f.Truncated, f.Note, f.MaxBytes)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var kept Final
	must(t, json.Unmarshal(b, &kept))
	out := filepath.Join(t.TempDir(), "copy")
	must(t, kept.Restore(out))
	for _, tt := range []struct {
		path    string
		mode    os.FileMode
		content string
	}{{"run.sh", 0o755, "#!/bin/sh\necho ok\n"}, {"tests/data.bin", 0o600, "\xff\x00\xfe"}} {
		fi, err := os.Stat(filepath.Join(out, tt.path))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(filepath.Join(out, tt.path))
		if fi.Mode().Perm() != tt.mode || string(got) != tt.content {
			t.Errorf("%s: mode %v content %q, want %v %q", tt.path, fi.Mode().Perm(), got, tt.mode, tt.content)
		}
	}
	if target, err := os.Readlink(filepath.Join(out, "link")); err != nil || target != "../outside" {
		t.Errorf("link = %q, %v", target, err)
	}
	if fi, err := os.Stat(filepath.Join(out, "tests", "empty")); err != nil || !fi.IsDir() {
		t.Errorf("tests/empty not restored as a directory: %v", err)
	}
	files, err := kept.Files()
	if err != nil || string(files["run.sh"]) != "#!/bin/sh\necho ok\n" || len(files) != 2 {
		t.Errorf("Files = %v, %v", files, err)
	}
}

// TestFinalRefuses: a final workspace over its bound is kept truncated, naming the
// bound, and is never restored; content that no longer matches its digest (redacted)
// and a path out of the directory are refused.
func TestFinalRefuses(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("x", 64)), 0o644))
	f, err := TakeFinal(context.Background(), ws, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Truncated || !strings.Contains(f.Note, "big.txt (64 bytes)") {
		t.Fatalf("final = truncated %v, note %q", f.Truncated, f.Note)
	}
	if err := f.Restore(t.TempDir()); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("Restore of a truncated final = %v", err)
	}
	for _, tt := range []struct {
		name  string
		entry FinalEntry
		want  string
	}{
		{"redacted", FinalEntry{Path: "a.txt", Type: TypeFile, Text: "[REDACTED]", SHA256: "00"}, "does not match its SHA-256"},
		{"escape", FinalEntry{Path: "../a.txt", Type: TypeFile}, "not a clean relative path"},
		{"absolute", FinalEntry{Path: "/etc/x", Type: TypeFile}, "not a clean relative path"},
		{"unknown type", FinalEntry{Path: "p", Type: "fifo"}, "not one a final workspace keeps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := Final{Schema: FinalSchema, Entries: []FinalEntry{tt.entry}}
			if err := f.Restore(filepath.Join(t.TempDir(), "w")); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Restore = %v, want %q", err, tt.want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzFinalRestore: a workspace-final.json read back from a results directory (which
// anyone may have edited) either restores below its directory or is refused; nothing
// is ever written beside it.
func FuzzFinalRestore(f *testing.F) {
	f.Add([]byte(`{"schema":"agentproof.workspace-final/v1","maxBytes":10,"truncated":false,"entries":[{"path":"a","type":"dir","mode":"0755"},{"path":"a/b.txt","type":"file","mode":"0644","bytes":2,"sha256":"6b51d431df5d7f141cbececcf79edf3dd861c3b4069f0b11661a3eefacbba918","text":"ab"}]}`))
	f.Add([]byte(`{"entries":[{"path":"l","type":"symlink","target":"/etc"},{"path":"l/x","type":"file","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}]}`))
	f.Add([]byte(`{"entries":[{"path":"../x","type":"file"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fin Final
		if json.Unmarshal(data, &fin) != nil {
			return
		}
		parent := t.TempDir()
		_ = fin.Restore(filepath.Join(parent, "w"))
		es, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Name() != "w" {
				t.Fatalf("Restore wrote %s beside its directory", e.Name())
			}
		}
	})
}

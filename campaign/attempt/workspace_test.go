package attempt

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSnapshotWorkspace(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"a.txt": "hello\n", "sub/b.txt": ""} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	files, manifest, err := snapshotWorkspace(ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || string(files["a.txt"]) != "hello\n" || files["sub/b.txt"] == nil {
		t.Errorf("files = %q", files)
	}
	if len(manifest) != 2 || manifest[0].Path != "a.txt" || manifest[0].Bytes != 6 ||
		manifest[0].SHA256 != "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" {
		t.Errorf("manifest = %+v", manifest)
	}
}

func TestBoundedBuffer(t *testing.T) {
	t.Parallel()
	b := &boundedBuffer{max: 4}
	for _, s := range []string{"ab", "cdef", "gh"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := string(b.Bytes()); got != "abcd\n[agentproof: 4 more bytes dropped]\n" {
		t.Errorf("Bytes() = %q", got)
	}
}

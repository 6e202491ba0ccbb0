package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRunBinding: a binding written is read back; a missing or cleared one is
// ErrNoRunBound; another schema, half a binding and malformed JSON are errors naming
// the file; the file is private (0600) and a rewrite replaces it whole.
func TestRunBinding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, RunBindingFile)
	if _, err := ReadRunBinding(path); !errors.Is(err, ErrNoRunBound) {
		t.Errorf("missing file: %v, want ErrNoRunBound", err)
	}
	if err := WriteRunBinding(path, "run-1", "apr1.tok"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("binding file mode %v, %v", fi.Mode(), err)
	}
	if b, err := ReadRunBinding(path); err != nil || b.RunID != "run-1" || b.RunToken != "apr1.tok" {
		t.Errorf("read back %+v, %v", b, err)
	}
	if err := WriteRunBinding(path, "run-2", "apr1.tok2"); err != nil {
		t.Fatal(err)
	}
	if b, _ := ReadRunBinding(path); b.RunID != "run-2" || b.RunToken != "apr1.tok2" {
		t.Errorf("after a rewrite %+v", b)
	}
	if err := WriteRunBinding(path, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRunBinding(path); !errors.Is(err, ErrNoRunBound) {
		t.Errorf("cleared: %v, want ErrNoRunBound", err)
	}
	for _, bad := range []string{`{"schema":"other/v1","runId":"r","runToken":"t"}`, `{"schema":"` + RunBindingSchema + `","runId":"r"}`, `{`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadRunBinding(path); err == nil || errors.Is(err, ErrNoRunBound) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", bad, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// TestRunBindingOwner: the binding file gets the owner of its directory (under a
// sandbox lease the session directory is the sandbox user's, whose MCP server reads
// the file), also after a rewrite. Needs root to give a file away.
func TestRunBindingOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	dir := t.TempDir()
	const uid, gid = 65534, 65534
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, RunBindingFile)
	for _, run := range []string{"run-1", "run-2", ""} {
		if err := WriteRunBinding(path, run, map[bool]string{true: "apr1.tok"}[run != ""]); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid || fi.Mode().Perm() != 0o600 {
			t.Errorf("binding of %q: owner %d:%d mode %v, want %d:%d 0600", run, st.Uid, st.Gid, fi.Mode().Perm(), uid, gid)
		}
	}
}

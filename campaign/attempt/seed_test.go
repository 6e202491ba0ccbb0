package attempt

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOwnLikeRoot: seeded files below a workspace that belongs to another user (a
// sandbox lease's) are given to that user, links included, without following them.
func TestOwnLikeRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("giving files to another user needs root; as a normal user the workspace is the user's own and nothing changes")
	}
	ws := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	for _, err := range []error{
		os.MkdirAll(filepath.Join(ws, "d"), 0o755), os.WriteFile(filepath.Join(ws, "d", "f"), nil, 0o644),
		os.WriteFile(outside, nil, 0o644), os.Symlink(outside, filepath.Join(ws, "link")),
		os.Chown(ws, 65534, 65534),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ownLikeRoot(ws); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"d", "d/f", "link"} {
		fi, err := os.Lstat(filepath.Join(ws, p))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%s belongs to %d:%d, want 65534:65534", p, st.Uid, st.Gid)
		}
	}
	fi, _ := os.Stat(outside)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		t.Error("the link was followed out of the workspace")
	}
}

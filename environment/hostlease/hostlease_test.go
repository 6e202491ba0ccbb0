package hostlease

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/environment"
)

// TestSocketDirShape: only a directory of MakeSocketDir's shape is a lease socket
// directory (what the providers' Cleanup removes).
func TestSocketDirShape(t *testing.T) {
	t.Parallel()
	for dir, want := range map[string]bool{
		"/run/apf-0123456789abcdef":    true,
		"/tmp/apf-0123456789abcdef":    true,
		"/run/apf-0123456789abcde":     false,
		"/etc/apf-0123456789abcdef":    false,
		"/run/x/apf-0123456789abcdef":  false,
		"/run/apf-0123456789ABCDEF":    false,
		"/run/apf-0123456789abcdef/..": false,
		"":                             false,
	} {
		if got := ValidSocketDir(dir); got != want {
			t.Errorf("ValidSocketDir(%q) = %t, want %t", dir, got, want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	t.Parallel()
	if got := UnescapeMount(`/a\040b\011c\134d`); got != "/a b\tc\\d" {
		t.Errorf("unescape %q", got)
	}
}

// TestDiskDirNames: DiskDir hands out one path element of [A-Za-z0-9._-] that is not
// one of the disk's own directories, made once and found again; anything else is a
// *environment.SpecError naming the name.
func TestDiskDirNames(t *testing.T) {
	t.Parallel()
	disk := t.TempDir()
	uid, gid := os.Getuid(), os.Getgid()
	for _, name := range []string{"", ".", "..", "a/b", "a b", "home", "tmp", "shm", "runs", "workspace", "é"} {
		var se *environment.SpecError
		if _, err := DiskDir(disk, name, uid, gid); !errors.As(err, &se) || !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("DiskDir(%q) = %v, want a spec error naming it", name, err)
		}
	}
	for range 2 { // the second time it exists already
		dir, err := DiskDir(disk, "agent-state_1.d", uid, gid)
		if err != nil || dir != filepath.Join(disk, "agent-state_1.d") {
			t.Fatalf("DiskDir = %q, %v", dir, err)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("disk directory: %v, %v", fi, err)
		}
	}
}

// TestOwnOnlyDiskOrWorkspace: Own refuses a path neither on the lease disk nor in the
// workspace (relative, unclean or elsewhere), naming the operation.
func TestOwnOnlyDiskOrWorkspace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	disk, ws := filepath.Join(root, "disk"), filepath.Join(root, "ws")
	for _, d := range []string{disk, ws, filepath.Join(ws, "sub")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	l := &environment.Lease{Workspace: ws}
	for _, path := range []string{"rel", root, filepath.Join(root, "other"), ws + "/../x", ""} {
		var se *environment.SpecError
		if err := Own(l, disk, path, os.Getuid(), os.Getgid(), "test own"); !errors.As(err, &se) || se.What != "test own" {
			t.Errorf("Own(%q) = %v, want a spec error", path, err)
		}
	}
	for _, path := range []string{disk, filepath.Join(ws, "sub")} {
		if err := Own(l, disk, path, os.Getuid(), os.Getgid(), "test own"); err != nil {
			t.Errorf("Own(%q): %v", path, err)
		}
	}
}

// TestProblems: a lease whose disk, socket directory or endpoint sockets are not
// where this package puts them is named for each; a lease as Make leaves it has none.
func TestProblems(t *testing.T) {
	t.Parallel()
	sock := "/run/apf-0123456789abcdef"
	good := &environment.Lease{Dir: "/r/lease-0123456789abcdef", SocketDir: sock,
		Endpoints: []environment.Endpoint{{Name: "cp", Socket: sock + "/cp.sock"}}}
	if p := Problems(good, good.Dir+"/disk"); p != nil {
		t.Errorf("good lease: %q", p)
	}
	bad := &environment.Lease{Dir: good.Dir, SocketDir: "/var/apf-0123456789abcdef",
		Endpoints: []environment.Endpoint{{Name: "cp", Socket: sock + "/other.sock"}}}
	p := Problems(bad, "/elsewhere")
	if len(p) != 3 || !strings.Contains(p[0], `disk "/elsewhere"`) || !strings.Contains(p[1], "/var/apf-") || !strings.Contains(p[2], "endpoints[0].socket") {
		t.Errorf("bad lease: %q", p)
	}
}

// TestLaunchDirsAndScratch: launch directories are numbered from 1, each made once; a
// reused lease's launches share the disk's scratch, another's each get a fresh
// runs/<n> holding the named directories.
func TestLaunchDirsAndScratch(t *testing.T) {
	t.Parallel()
	l := &environment.Lease{Dir: t.TempDir()}
	if err := os.Mkdir(filepath.Join(l.Dir, "launches"), 0o711); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 2; want++ {
		n, dir, err := NewLaunchDir(l)
		if err != nil || n != want || dir != filepath.Join(l.Dir, "launches", strconv.Itoa(want)) {
			t.Fatalf("NewLaunchDir = %d, %q, %v; want launch %d", n, dir, err, want)
		}
	}
	disk := filepath.Join(l.Dir, "disk")
	if err := os.Mkdir(disk, 0o700); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	l.Reuse = true
	if got, err := Scratch(l, disk, 1, 0o711, uid, gid, "home", "tmp"); err != nil || got != disk {
		t.Errorf("reused lease: Scratch = %q, %v, want the disk", got, err)
	}
	l.Reuse = false
	got, err := Scratch(l, disk, 2, 0o711, uid, gid, "home", "tmp")
	if err != nil || got != filepath.Join(disk, "runs", "2") {
		t.Fatalf("Scratch = %q, %v", got, err)
	}
	for _, name := range []string{"home", "tmp"} {
		if fi, err := os.Stat(filepath.Join(got, name)); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v", name, fi, err)
		}
	}
	if _, err := Scratch(l, disk, 2, 0o711, uid, gid, "home"); !errors.Is(err, os.ErrExist) {
		t.Errorf("a launch's scratch made twice: %v, want it refused", err)
	}
}

// TestNewLaunch: the next launch gets its directory and a fresh scratch space; when
// the scratch space cannot be made, the launch directory is removed again and the
// error says it was the scratch space.
func TestNewLaunch(t *testing.T) {
	t.Parallel()
	l := &environment.Lease{Dir: t.TempDir()}
	disk := filepath.Join(l.Dir, "disk")
	for _, d := range []string{filepath.Join(l.Dir, "launches"), disk} {
		if err := os.Mkdir(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	uid, gid := os.Getuid(), os.Getgid()
	n, dir, scratch, err := NewLaunch(l, disk, 0o711, uid, gid, "home")
	if err != nil || n != 1 || dir != filepath.Join(l.Dir, "launches", "1") || scratch != filepath.Join(disk, "runs", "1") {
		t.Fatalf("NewLaunch = %d, %q, %q, %v", n, dir, scratch, err)
	}
	if fi, err := os.Stat(filepath.Join(scratch, "home")); err != nil || !fi.IsDir() {
		t.Errorf("scratch home: %v, %v", fi, err)
	}
	// runs/2 taken already: launch 2's scratch cannot be made fresh.
	if err := os.Mkdir(filepath.Join(disk, "runs", "2"), 0o700); err != nil {
		t.Fatal(err)
	}
	n, dir, _, err = NewLaunch(l, disk, 0o711, uid, gid, "home")
	if !errors.Is(err, os.ErrExist) || !strings.HasPrefix(err.Error(), "fresh scratch space: ") || n != 0 || dir != "" {
		t.Fatalf("NewLaunch over a taken scratch = %d, %q, %v; want a scratch space error", n, dir, err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir, "launches", "2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("launch 2's directory after the failure: %v, want it removed", err)
	}
}

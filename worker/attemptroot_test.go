package worker

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// claimRoot is the test binary's `claim-root <dir>`: it makes an attempt root in dir
// the way the campaign does, claims it, writes a key file into it, prints the root's
// path and waits to be killed.
func claimRoot(dir string) int {
	root, err := os.MkdirTemp(dir, AttemptRootPrefix)
	if err != nil {
		return 1
	}
	claim, err := ClaimAttemptRoot(root)
	if err != nil {
		return 1
	}
	if err := os.MkdirAll(filepath.Join(root, "home"), 0o700); err != nil {
		return 1
	}
	if err := os.WriteFile(filepath.Join(root, "home", "master.key"), []byte("key"), 0o600); err != nil {
		return 1
	}
	os.Stdout.WriteString(root + "\n")
	time.Sleep(10 * time.Minute)
	_ = claim.Release()
	return 0
}

// startClaimer starts `claim-root dir` and returns the process and its root.
func startClaimer(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(selfPath(t), "claim-root", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("claim-root: %v", err)
	}
	return cmd, strings.TrimSpace(line)
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestSweepStaleRoots: the root of a process killed with SIGKILL is swept; the root of
// a live owner, a root without an owner record, a released root and a symlink named
// like a root are left alone.
func TestSweepStaleRoots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	killed, killedRoot := startClaimer(t, dir)
	_, liveRoot := startClaimer(t, dir)
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	noRecord := filepath.Join(dir, AttemptRootPrefix+"norecord")
	if err := os.Mkdir(noRecord, 0o700); err != nil {
		t.Fatal(err)
	}
	released, err := os.MkdirTemp(dir, AttemptRootPrefix)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := ClaimAttemptRoot(released)
	if err != nil {
		t.Fatal(err)
	}
	if err := claim.Release(); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if err := os.WriteFile(filepath.Join(target, RootOwnerFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, AttemptRootPrefix+"link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	n, err := SweepStaleRoots(dir)
	if err != nil || n != 1 {
		t.Fatalf("SweepStaleRoots = %d, %v; want 1 removed", n, err)
	}
	if exists(killedRoot) {
		t.Errorf("the killed owner's root %s survived the sweep", killedRoot)
	}
	for _, p := range []string{liveRoot, filepath.Join(liveRoot, "home", "master.key"), noRecord, released, link, filepath.Join(target, RootOwnerFile)} {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}
	if n, err := SweepStaleRoots(dir); n != 0 || err != nil {
		t.Errorf("second sweep = %d, %v; want nothing", n, err)
	}
}

// TestMemoryDir: a directory is a memory directory exactly when statfs says tmpfs, this
// process can write it and it has the free space asked for.
func TestMemoryDir(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{devShm, t.TempDir(), "/proc", "/nonexistent-agentproof"} {
		var st syscall.Statfs_t
		isTmpfs := syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic && syscall.Access(dir, 2) == nil
		want := ""
		if isTmpfs {
			want = dir
		}
		if got := memoryDir(dir, 0); got != want {
			t.Errorf("memoryDir(%s, 0) = %q, want %q (tmpfs and writable: %v)", dir, got, want, isTmpfs)
		}
		if got := memoryDir(dir, 1<<62); got != "" {
			t.Errorf("memoryDir(%s, 4 EiB) = %q, want none (no room)", dir, got)
		}
	}
	if MemoryDir(0) != memoryDir(devShm, 0) {
		t.Error("MemoryDir is not /dev/shm's answer")
	}
}

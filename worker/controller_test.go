package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/evidence"
)

// startController re-executes the test binary as a controller process (see controller
// in main_test.go) and returns it running.
func startController(t *testing.T, a controllerArgs) *exec.Cmd {
	t.Helper()
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(selfPath(t))
	cmd.Env = []string{"AGENTPROOF_TEST_MODE=controller", "AGENTPROOF_TEST_CONTROLLER=" + string(raw)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd
}

// TestControllerKilled: a controller killed with SIGKILL mid-run leaves no fixture
// running (stdin end-of-file → exit 125, Pdeathsig as a backstop, the child's own
// watchdog as the last bound) and its directory is not taken over by a later run.
func TestControllerKilled(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	evDir := t.TempDir()
	ctl := startController(t, controllerArgs{Kind: "fixture", Root: root, Evidence: evDir})
	dir, child := workspaceOfRunningChild(t, root)
	if child.ppid != ctl.Process.Pid {
		t.Fatalf("fixture child %d has parent %d, want the controller %d", child.pid, child.ppid, ctl.Process.Pid)
	}
	if err := ctl.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = ctl.Process.Wait()
	// The controller asked for a 60 s timeout, so the child's watchdog is 65 s: it must
	// be gone well within that.
	if !waitFor((60_000+WatchdogMarginMS)*time.Millisecond, func() bool { return !alive(child.pid) }) {
		_ = syscall.Kill(child.pid, syscall.SIGKILL)
		t.Fatalf("fixture child %d survived its controller", child.pid)
	}
	// Nobody stored anything and nobody removed or reused the directory.
	store, err := evidence.Open(evDir)
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := store.List(); len(ids) != 0 {
		t.Errorf("records stored by a killed controller: %v", ids)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed controller's workspace vanished: %v", err)
	}
	w, err := New(Options{Store: store, WorkspaceRoot: root, Program: selfPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Run(context.Background(), request("pass", 60_000, 4096))
	if err != nil || res.Status != StatusObserved || res.Termination.Workspace.State != "removed" {
		t.Fatalf("a later run: %+v %v", res, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("a later run took over the old workspace: %v", err)
	}
	m, _ := filepath.Glob(filepath.Join(root, workspacePrefix+"*"))
	if len(m) != 1 || m[0] != dir {
		t.Errorf("workspace root holds %v, want only the old %s", m, dir)
	}
}

// TestControllerKilledProcessTree: the same with a hostile child whose grandchild
// called setsid (so the group kill cannot reach it) and keeps the output pipes: the whole tree must go.
func TestControllerKilledProcessTree(t *testing.T) {
	t.Parallel()
	var b [8]byte
	_, _ = rand.Read(b[:])
	marker := "AGENTPROOF_TEST_MARKER=" + hex.EncodeToString(b[:])
	ctl := startController(t, controllerArgs{Kind: "hostile", Root: t.TempDir(), Marker: strings.TrimPrefix(marker, "AGENTPROOF_TEST_MARKER=")})
	marked := func() []proc {
		var out []proc
		for _, p := range processes() {
			if strings.Contains(p.environ, marker) && p.state != "Z" {
				out = append(out, p)
			}
		}
		return out
	}
	if !waitFor(30*time.Second, func() bool { return len(marked()) == 2 }) {
		t.Fatalf("leader and grandchild did not both start: %v", marked())
	}
	tree := marked()
	if err := ctl.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = ctl.Process.Wait()
	if !waitFor(30*time.Second, func() bool { return len(marked()) == 0 }) {
		for _, p := range marked() {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		t.Fatalf("processes survived their controller: %+v (tree was %+v)", marked(), tree)
	}
}

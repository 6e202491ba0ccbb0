package attempt

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
)

// TestInstanceSecrets: the master key (every encoding) and the run-token key derived
// from it are in the set, and the home's own key files are the only exception to the
// persisted-state scan.
func TestInstanceSecrets(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	master := []byte("0123456789abcdef0123456789abcdef")
	if err := os.WriteFile(filepath.Join(home, masterKeyFile), master, 0o600); err != nil {
		t.Fatal(err)
	}
	vals, err := instanceSecrets(home, "board-token-value-0001")
	if err != nil {
		t.Fatal(err)
	}
	set := redact.NewSet(vals...)
	for _, leak := range []string{"board-token-value-0001", string(master), "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "3031323334353637383961626364656630313233343536373839616263646566"} {
		if set.FindExact([]byte("x"+leak+"y")) < 0 {
			t.Errorf("instance secret form %q not in the set", leak)
		}
	}
	if set.Len() < 7 {
		t.Errorf("set has %d values, want the board token and several forms of each key", set.Len())
	}
	if !ownSecretFile(home, masterKeyFile) || ownSecretFile(home, "instance.db") {
		t.Error("ownSecretFile: only the 0600 key files are exempt")
	}
	if err := os.Chmod(filepath.Join(home, masterKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if ownSecretFile(home, masterKeyFile) {
		t.Error("a key file readable by others is not exempt")
	}
	if _, err := instanceSecrets(t.TempDir(), "x"); err == nil {
		t.Error("a home without a master key: want an error")
	}
}

// stubbornServe writes a fake `agentproof serve` into dir: it writes the board token
// into --home, prints its ready line and ignores SIGTERM (a server whose shutdown
// overruns the harness's grace).
func stubbornServe(t *testing.T, dir string) string {
	t.Helper()
	exe := filepath.Join(dir, "stubborn-serve")
	script := `#!/bin/sh
trap '' TERM
printf 'board-token-0001\n' > "$3/` + boardTokenFile + `"
printf '{"addr":"127.0.0.1:9","pid":%d}\n' $$
while :; do sleep 0.05; done
`
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// stubbornHome makes a temporary attempt root with an instance home in it and
// stubbornServe's fake server, and returns the three.
func stubbornHome(t *testing.T) (exe, home, root string) {
	t.Helper()
	root = t.TempDir()
	home = filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return stubbornServe(t, root), home, root
}

// TestKilledServerIsAHarnessNote: a serve child that does not stop within its grace
// is killed; once its exit (and its group's) is confirmed, that is a note in the flow
// log, not a cleanup problem (the candidate did nothing wrong), and the attempt's
// marker sweep still runs.
func TestKilledServerIsAHarnessNote(t *testing.T) {
	t.Parallel()
	exe, home, root := stubbornHome(t)
	in, err := startInstance(context.Background(), exe, home, root, worker.NewMarker(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	in.child.grace = 300 * time.Millisecond
	pid := in.child.cmd.Process.Pid
	a := &attempt{ev: campaign.NewEvidence(t.TempDir()), log: &flowLog{}}
	problems, killed := stopServices(a, &Provisioned{Instance: in}, redact.NewSet())
	if len(problems) != 0 || !killed {
		t.Fatalf("stopServices = %q, killed %v; want no problem, killed", problems, killed)
	}
	if worker.GroupAlive(pid) {
		t.Errorf("the killed server's group %d still has a live member", pid)
	}
	if log := a.log.text(); !strings.Contains(log, "harness note: the server did not stop within") {
		t.Errorf("flow log has no harness note: %s", log)
	}
}

// TestInstanceCrash: crash kills the serve child with SIGKILL alone (a child that
// ignores SIGTERM dies at once, no grace), confirms it and its group gone, and starts a
// new child on the same home; a crash with no child running is an error.
func TestInstanceCrash(t *testing.T) {
	t.Parallel()
	exe, home, root := stubbornHome(t)
	in, err := startInstance(context.Background(), exe, home, root, worker.NewMarker(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	in.child.grace = time.Hour // a SIGTERM would never end it: only the SIGKILL can
	old := in.child.cmd.Process.Pid
	start := time.Now()
	if err := in.crash(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("crash took %s", took)
	}
	if worker.GroupAlive(old) {
		t.Errorf("the killed server's group %d still has a live member", old)
	}
	if in.child == nil || in.pid() == old || in.pid() == 0 {
		t.Fatalf("no new child after the crash (pid %d, old %d)", in.pid(), old)
	}
	if len(in.earlier) != 1 {
		t.Errorf("%d earlier logs, want the killed child's", len(in.earlier))
	}
	if err := in.child.kill(); err != nil {
		t.Fatal(err)
	}
	if err := in.child.kill(); err == nil {
		t.Error("killing a child that already exited: want an error")
	}
	in.child = nil
	if err := in.crash(context.Background()); err == nil {
		t.Error("a crash without a running child: want an error")
	}
}

// TestServeOutlivesItsStartingThread: a serve child keeps running when the OS thread
// of the goroutine that started it ends (Go ends a thread whose goroutine exits while
// locked to it, as a sandbox launch's does, and Linux then sends the parent-death
// signal of every child that thread forked): the child is forked from the process's
// fork thread.
func TestServeOutlivesItsStartingThread(t *testing.T) {
	t.Parallel()
	exe, home, root := stubbornHome(t)
	type started struct {
		in  *instance
		err error
	}
	done := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		in, err := startInstance(context.Background(), exe, home, root, worker.NewMarker(), "", nil)
		done <- started{in, err}
	}()
	s := <-done
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer func() { _ = s.in.child.kill() }()
	select {
	case <-s.in.child.done:
		t.Fatalf("the serve child died when the thread that started it ended: %v", s.in.child.cmd.ProcessState)
	case <-time.After(time.Second):
	}
}

// TestInstanceDied: a serve child killed from outside is reported as a death the
// harness did not cause (instance.died names the signal); a running child, and the
// new child after a crash the flow asked for, are not.
func TestInstanceDied(t *testing.T) {
	t.Parallel()
	exe, home, root := stubbornHome(t)
	in, err := startInstance(context.Background(), exe, home, root, worker.NewMarker(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.died(); got != "" {
		t.Fatalf("a running server: died() = %q", got)
	}
	if err := in.crash(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := in.died(); got != "" {
		t.Fatalf("after a crash the flow asked for: died() = %q", got)
	}
	pid := in.pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-in.child.done
	if got := in.died(); !strings.Contains(got, "exited before the harness stopped it: signal: killed") {
		t.Errorf("a server killed from outside: died() = %q", got)
	}
	_, _, _, _ = in.stop()
}

package worker

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// subreaper makes the test process a subreaper with its reaper running.
func subreaper(t *testing.T) *Reaper {
	t.Helper()
	r, err := BecomeSubreaper()
	if err != nil {
		t.Fatalf("BecomeSubreaper: %v", err)
	}
	return r
}

// TestReaperReapsAdoptedOrphans: an orphan whose parent exited is re-parented to this
// process (a subreaper) and, when it exits, reaped: it does not stay a zombie.
func TestReaperReapsAdoptedOrphans(t *testing.T) {
	t.Parallel()
	r := subreaper(t)
	before := r.Reaped()
	out, err := exec.Command("/bin/sh", "-c", "sleep 0.5 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := readProc(orphan)
	if !ok || p.ppid != os.Getpid() {
		t.Fatalf("orphan %d: %+v, want it adopted by this process (%d)", orphan, p, os.Getpid())
	}
	if !waitFor(20*time.Second, func() bool { _, exists := readProc(orphan); return !exists }) {
		p, _ := readProc(orphan)
		t.Fatalf("orphan %d not reaped: %+v", orphan, p)
	}
	if r.Reaped() <= before {
		t.Errorf("reaped count %d did not grow", r.Reaped())
	}
}

// TestReaperLeavesExecChildren: the reaper never takes the exit status of a child
// os/exec waits for — not even of one that has been a zombie for several reaper
// passes before its Wait — while orphans are reaped around it.
func TestReaperLeavesExecChildren(t *testing.T) {
	t.Parallel()
	r := subreaper(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			cmd := exec.Command("/bin/sh", "-c", "sleep 0.05 >/dev/null 2>&1 & exit "+strconv.Itoa(i%7))
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			// Let it become a zombie and let the reaper pass over it several times.
			waitFor(10*time.Second, func() bool { p, _ := readProc(cmd.Process.Pid); return p.state == "Z" })
			for range 5 {
				r.Kick()
				time.Sleep(20 * time.Millisecond)
			}
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Errorf("child %d: Wait: %v (the reaper stole its status?)", i, err)
				return
			}
			if code != i%7 {
				t.Errorf("child %d exited %d, want %d", i, code, i%7)
			}
		})
	}
	wg.Wait()
	// Supervise's children too (waitid WNOWAIT, then Wait).
	o, err := Supervise(context.Background(), Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "exit 5"}, Dir: t.TempDir(), Timeout: 10 * time.Second, MaxOutputBytes: 1024})
	if err != nil || o.ExitCode == nil || *o.ExitCode != 5 || o.CollectorError != "" {
		t.Errorf("supervised child: %+v %v", o, err)
	}
}

// TestAnyZombie: the reaper's gate sees an exited child that nobody waited for yet,
// and only then, and its look takes nothing: the child's own Wait still gets its exit
// status. Not parallel: other tests' children would be this process's zombies too.
func TestAnyZombie(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "read x; exit 3")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if anyZombie() {
		t.Error("anyZombie() = true while the only child runs")
	}
	_ = stdin.Close() // the child exits 3
	if !waitFor(10*time.Second, func() bool { p, _ := readProc(cmd.Process.Pid); return p.state == "Z" }) {
		t.Fatal("the child did not become a zombie")
	}
	for range 3 {
		if !anyZombie() {
			t.Fatal("anyZombie() = false with an exited child not waited for")
		}
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("Wait after anyZombie: %v, want exit status 3 (the look took the status?)", err)
	}
	if anyZombie() {
		t.Error("anyZombie() = true after the child was waited for")
	}
}

// TestGroupAlive: a group with a running member is alive; one whose only member is a
// zombie (exited, not reaped: signal 0 still finds it) is not; a group with no member
// at all is not.
func TestGroupAlive(t *testing.T) {
	t.Parallel()
	start := func(script string) *exec.Cmd {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	running := start("exec sleep 30")
	t.Cleanup(func() { _ = running.Process.Kill(); _ = running.Wait() })
	if !GroupAlive(running.Process.Pid) {
		t.Errorf("group %d with a running member: not alive", running.Process.Pid)
	}
	exited := start("exit 0")
	pid := exited.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if state, _, ok := procState(pid); ok && state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not become a zombie", pid)
		}
	}
	if syscall.Kill(-pid, 0) != nil {
		t.Fatalf("signal 0 to the zombie's group %d failed: the case is not the one tested", pid)
	}
	if GroupAlive(pid) {
		t.Errorf("group %d whose only member is a zombie: alive", pid)
	}
	_ = exited.Wait()
	if GroupAlive(pid) {
		t.Errorf("group %d with no member: alive", pid)
	}
}

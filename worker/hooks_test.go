package worker

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSuperviseFork: with Spec.Fork set, the process is forked inside Fork (here on a
// locked thread of Fork's own goroutine), BeforeStart runs right before that fork, and
// what Fork returns decides: its own error is the spawn error, a BeforeStart refusal
// stays a refusal.
func TestSuperviseFork(t *testing.T) {
	t.Parallel()
	base := Spec{Path: "/bin/true", Args: []string{"true"}, Dir: "/", Timeout: 30 * time.Second, MaxOutputBytes: 1 << 10}
	t.Run("forked there", func(t *testing.T) {
		t.Parallel()
		var calls, forkPID int
		var before bool
		s := base
		s.BeforeStart = func() error { before = true; return nil }
		s.Fork = func(start func() (int, error)) error {
			done := make(chan error, 1)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				calls++
				pid, err := start()
				forkPID = pid
				done <- err
			}()
			return <-done
		}
		o, err := Supervise(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if calls != 1 || !before || !o.Started || o.PID != forkPID || o.ExitCode == nil || *o.ExitCode != 0 {
			t.Errorf("calls %d, before %v, outcome %+v, fork pid %d", calls, before, o, forkPID)
		}
	})
	t.Run("fork fails", func(t *testing.T) {
		t.Parallel()
		s := base
		refusal := errors.New("staging refused")
		s.Fork = func(func() (int, error)) error { return refusal }
		o, err := Supervise(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if o.Started || !errors.Is(o.SpawnError, refusal) || o.Refused != nil {
			t.Errorf("outcome %+v", o)
		}
	})
	t.Run("before start refuses", func(t *testing.T) {
		t.Parallel()
		s := base
		refusal := errors.New("window closed")
		s.BeforeStart = func() error { return refusal }
		s.Fork = func(start func() (int, error)) error { _, err := start(); return err }
		o, err := Supervise(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if o.Started || !errors.Is(o.Refused, refusal) || o.SpawnError != nil {
			t.Errorf("outcome %+v", o)
		}
	})
}

// TestSuperviseStop: with Spec.Stop set, a timeout's SIGTERM is delivered by Stop,
// given the supervised pid; the process (which dies of it) records SIGTERM as sent.
func TestSuperviseStop(t *testing.T) {
	t.Parallel()
	type call struct {
		pid int
		sig syscall.Signal
	}
	calls := make(chan call, 4)
	o, err := Supervise(context.Background(), Spec{
		Path: "/bin/sleep", Args: []string{"sleep", "60"}, Dir: "/", Timeout: 300 * time.Millisecond, MaxOutputBytes: 1 << 10,
		TerminateGrace: 10 * time.Second,
		Stop: func(pid int, sig syscall.Signal) error {
			calls <- call{pid, sig}
			return syscall.Kill(pid, sig)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	close(calls)
	var got []call
	for c := range calls {
		got = append(got, c)
	}
	if len(got) != 1 || got[0].pid != o.PID || got[0].sig != syscall.SIGTERM {
		t.Errorf("Stop calls %v, pid %d", got, o.PID)
	}
	if !o.TimedOut || o.Signal != "SIGTERM" || strings.Join(o.SignalsSent, ",") != "SIGTERM" {
		t.Errorf("outcome: timedOut %v signal %q sent %v", o.TimedOut, o.Signal, o.SignalsSent)
	}
}

// TestSuperviseCredential: Spec.Credential runs the process as that user and group
// with no supplementary groups (root only can set them).
func TestSuperviseCredential(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root can run a process as another user")
	}
	o, err := Supervise(context.Background(), Spec{
		Path: "/usr/bin/id", Args: []string{"id"}, Dir: "/", Timeout: 30 * time.Second, MaxOutputBytes: 1 << 10,
		Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(o.Output.Stdout())); !strings.HasPrefix(got, "uid=65534(") || !strings.Contains(got, "gid=65534(") || strings.Count(got, "(") != 3 {
		t.Errorf("id: %q", got)
	}
}

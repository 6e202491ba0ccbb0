package worker

import (
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunSentry: at the end of its input the sentry kills every process carrying a
// marker it still watches, leaves one whose marker was marked done, and reports a
// line it does not understand with exit 64.
func TestRunSentry(t *testing.T) {
	t.Parallel()
	watched, done := NewMarker(), NewMarker()
	start := func(marker string) *exec.Cmd {
		cmd := exec.Command("/bin/sleep", "60")
		cmd.Env = []string{MarkerVar + "=" + marker}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	victim, spared := start(watched), start(done)
	exited := make(chan error, 1)
	go func() { exited <- victim.Wait() }()
	in := "+" + watched + "\n+" + done + "\n-" + done + "\nbogus\n"
	if code := RunSentry(strings.NewReader(in), io.Discard); code != 64 {
		t.Errorf("exit %d, want 64 for the bogus line", code)
	}
	select {
	case err := <-exited:
		if ws, ok := victim.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the watched process ended with %v, not SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watched process outlived the sentry's sweep")
	}
	if err := spared.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process of a marker marked done was killed: %v", err)
	}
}

// TestSentryNil: a nil *Sentry (no sentry could be started) does nothing.
func TestSentryNil(t *testing.T) {
	t.Parallel()
	var s *Sentry
	if s.Watch(NewMarker()) != nil || s.Done(NewMarker()) != nil || s.Close() != nil {
		t.Error("a nil sentry returned an error")
	}
}

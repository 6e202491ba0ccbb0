package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFixtureRunInterrupted: SIGINT during a run stops the fixture, records the abort
// and exits 130. The test binary runs as the real `agentproof` command (testscript.Main
// dispatches on argv[0]); the interrupt is sent once the fixture child is running.
func TestFixtureRunInterrupted(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root, evDir := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := &exec.Cmd{
		Path:   self,
		Args:   []string{"agentproof", "fixture", "run", "hang", "--timeout", "60s", "--json", "--evidence-dir", evDir, "--workspace-root", root},
		Env:    []string{"HOME=" + t.TempDir()},
		Stdout: &stdout,
		Stderr: &stderr,
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	running := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !running; time.Sleep(10 * time.Millisecond) {
		dirs, _ := filepath.Glob(filepath.Join(root, "agentproof-fixture-*"))
		procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, p := range procs {
			if cwd, err := os.Readlink(p); err == nil && len(dirs) == 1 && cwd == dirs[0] {
				running = true
			}
		}
	}
	if !running {
		t.Fatalf("the fixture child never started; stderr: %s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != int(ExitInterrupted) {
		t.Fatalf("wait = %v, want exit %d; stderr: %s", err, ExitInterrupted, stderr.String())
	}
	var out struct {
		Status      string `json:"status"`
		Termination struct {
			Aborted  bool `json:"aborted"`
			TimedOut bool `json:"timedOut"`
		} `json:"termination"`
		Assurance struct {
			Class string `json:"class"`
		} `json:"assurance"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("stdout %q: %v", stdout.String(), err)
	}
	if out.Status != "observed" || !out.Termination.Aborted || out.Termination.TimedOut || out.Assurance.Class != "Inconclusive" {
		t.Errorf("output %s, want an observed, aborted, Inconclusive run", strings.TrimSpace(stdout.String()))
	}
}

package attempt

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
)

// TestSweepMarker: a process that still carries the attempt's marker after the server
// stopped is killed; it is a cleanup problem (the candidate left it), unless the server
// had to be killed (then it is the server's unfinished stop: a harness note).
func TestSweepMarker(t *testing.T) {
	t.Parallel()
	for _, serverKilled := range []bool{false, true} {
		marker := worker.NewMarker()
		cmd := exec.Command("/bin/sleep", "60")
		cmd.Env = []string{worker.MarkerVar + "=" + marker}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		// Start returns once the exec succeeded, but the kernel sets the new program's
		// environment a moment later: until then /proc/<pid>/environ is empty and the
		// process carries no marker yet (a loaded machine widens that moment).
		environ := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "environ")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if b, _ := os.ReadFile(environ); bytes.Contains(b, []byte(marker)) || time.Now().After(deadline) {
				break
			}
		}
		a := &attempt{ev: campaign.NewEvidence(t.TempDir()), log: &flowLog{}}
		problems := sweepMarker(a, marker, serverKilled, redact.NewSet())
		if err := <-waited; err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("serverKilled %v: the marked process was not killed: %v", serverKilled, err)
		}
		switch {
		case !serverKilled && (len(problems) != 1 || !strings.Contains(problems[0], "escaped its run and outlived the server; killed: sleep (pid ")):
			t.Errorf("problems %q; want the escaped sleep", problems)
		case serverKilled && (len(problems) != 0 || !strings.Contains(a.log.text(), "harness note: the killed server left agent process sleep")):
			t.Errorf("after a killed server: problems %q, log %q; want a harness note only", problems, a.log.text())
		}
	}
}

// TestEscapedOfKilledRun: what a run's agent left outside its process group is a
// cleanup problem, but for a run whose process the flow killed (crash_retry), whose
// escapees the runner killed: a harness note; one whose exit is not confirmed stays a
// problem.
func TestEscapedOfKilledRun(t *testing.T) {
	t.Parallel()
	esc := func(run string, killed bool) api.HeartbeatRun {
		return api.HeartbeatRun{RunID: run, Termination: &api.Termination{EscapedProcesses: []api.EscapedProcess{{PID: 42, Command: "sleep", Killed: killed}}}}
	}
	problems, notes := escapedOf([]api.HeartbeatRun{esc("r-1", true), esc("r-2", true), esc("r-3", false)}, []string{"r-1", "r-3"})
	if len(problems) != 2 || !strings.Contains(problems[0], "run r-2") || !strings.Contains(problems[1], "run r-3") {
		t.Errorf("problems %q, want r-2 (not killed by the flow) and r-3 (exit not confirmed)", problems)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "run r-1 was killed by the flow") {
		t.Errorf("notes %q", notes)
	}
}

// TestScanClosedStateRoot: the closed-root leak scan covers the instance home wherever
// it lives — inside the attempt's temp root, or apart in its state root
// (LocalExecutor.StateDir, a memory file system) — naming each leak by its place (the
// instance home, the workspace, the rest of the root) and exempting only the home's
// own key files.
func TestScanClosedStateRoot(t *testing.T) {
	t.Parallel()
	const secret = "closed-root-secret-0123456789"
	for _, apart := range []bool{false, true} {
		t.Run(fmt.Sprintf("apart=%v", apart), func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			p := &Provisioned{Root: root, Home: filepath.Join(root, "home"), Workspace: filepath.Join(root, "workspace")}
			if apart {
				p.StateRoot = t.TempDir()
				p.Home = filepath.Join(p.StateRoot, "home")
			}
			write := func(path, body string, mode os.FileMode) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), mode); err != nil {
					t.Fatal(err)
				}
			}
			write(filepath.Join(p.Home, boardTokenFile), secret, 0o600)                  // its own file: exempt
			write(filepath.Join(p.Home, "agents", "a", "notes.txt"), "x "+secret, 0o600) // a leak in the home
			write(filepath.Join(p.Workspace, "out.txt"), secret, 0o644)                  // a leak in the workspace
			write(filepath.Join(root, "tmp", "scratch"), secret, 0o600)                  // elsewhere in the root
			var problems []string
			var leaks []string
			for _, r := range []string{p.Root, p.StateRoot} {
				if r != "" {
					leaks = append(leaks, scanClosed(redact.NewSet(secret), p, r, &problems)...)
				}
			}
			got := strings.Join(leaks, "\n")
			for _, want := range []string{"instance home state at agents/a/notes.txt", "workspace state at out.txt", "attempt temp root state at tmp/scratch"} {
				if !strings.Contains(got, want) {
					t.Errorf("leaks %q lack %q", got, want)
				}
			}
			if len(leaks) != 3 || len(problems) != 0 || strings.Contains(got, boardTokenFile) {
				t.Errorf("leaks %q, problems %q: want exactly the three, the key file exempt", leaks, problems)
			}
		})
	}
}

// TestTeardownCollectsAgentLogsFromStateRoot: the agent logs are copied into the
// attempt's evidence before the state root that holds the instance home is removed
// (the removal runs beside the temp root's; it once raced the copy and lost a run's
// stdout.log).
func TestTeardownCollectsAgentLogsFromStateRoot(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		root, stateRoot := t.TempDir(), t.TempDir()
		p := Provisioned{Root: root, StateRoot: stateRoot, Home: filepath.Join(stateRoot, "home"), Workspace: filepath.Join(root, "workspace")}
		run := filepath.Join(p.Home, "heartbeat", "runs", "run-1")
		if err := os.MkdirAll(run, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, "stdout.log"), []byte("run run-1 completed: done\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		a := &attempt{ev: campaign.NewEvidence(dir), log: &flowLog{}}
		x := &LocalExecutor{}
		x.teardown(t.Context(), a, &Stages{Provisioned: p})
		b, err := os.ReadFile(filepath.Join(dir, "logs", "agent", "runs", "run-1", "stdout.log"))
		if err != nil || string(b) != "run run-1 completed: done\n" {
			t.Fatalf("round %d: the run's stdout.log in the evidence: %q, %v", i, b, err)
		}
		if _, err := os.Stat(stateRoot); !os.IsNotExist(err) {
			t.Fatalf("round %d: the state root was not removed: %v", i, err)
		}
	}
}

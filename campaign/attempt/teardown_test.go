package attempt

import (
	"os/exec"
	"strings"
	"testing"

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

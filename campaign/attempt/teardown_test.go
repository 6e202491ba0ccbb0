package attempt

import (
	"os/exec"
	"strings"
	"testing"

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

package result

import (
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// notRunCampaign is a campaign of one passed local cell and one sandbox cell this
// machine could not run.
func notRunCampaign() *Campaign {
	passed := Synthetic(nil, "c", "s.p.local.k", "")
	passed.Synthetic, passed.Verdict, passed.FailureClass, passed.Error = false, verdict.Passed, "", ""
	passed.Attempt, passed.Cleanup = 1, CleanupPassed
	results := []Result{passed, Synthetic(nil, "c", "s.p.sandbox.k", "no result")}
	markNotRunHere(results, map[string]string{"s.p.sandbox.k": "needs root for cgroup limits", "s.p.local.k": "unused: it has a result"})
	return BuildCampaign("c", nil, []string{"s.p.local.k", "s.p.sandbox.k"}, results, nil, false)
}

// TestNotRunHere: a cell not run here has no verdict and its own state, counts in
// NotRun only (never passed, failed or inconclusive; no cleanup, no attempt), makes
// the campaign partial, and the campaign exits ExitPartial when the rest passed; a
// cell with a result keeps it whatever the not-run map says.
func TestNotRunHere(t *testing.T) {
	t.Parallel()
	c := notRunCampaign()
	if c.Passed != 1 || c.Failed != 0 || c.Inconclusive != 0 || c.NotRun != 1 || c.Executed != 1 || !c.CleanupPassed {
		t.Fatalf("counts: passed %d failed %d inconclusive %d notRun %d executed %d cleanup %t", c.Passed, c.Failed, c.Inconclusive, c.NotRun, c.Executed, c.CleanupPassed)
	}
	if !c.Partial || c.ExitCode() != verdict.ExitPartial || c.NotRunHere["s.p.sandbox.k"] != "needs root for cgroup limits" || len(c.NotRunHere) != 1 {
		t.Fatalf("partial %t, exit %d, notRunHere %v", c.Partial, c.ExitCode(), c.NotRunHere)
	}
	r := &c.Results[1]
	if StateOf(r) != StateNotRunHere || Outcome(r) != "" || r.Verdict != "" || r.Error != "needs root for cgroup limits" {
		t.Errorf("the not-run result: state %s outcome %q verdict %q error %q", StateOf(r), Outcome(r), r.Verdict, r.Error)
	}
	if StateOf(&c.Results[0]) != StatePassed {
		t.Errorf("the cell that ran is %s", StateOf(&c.Results[0]))
	}
	if got := c.Selection(); got != "partial: 1 of 2 selected cell(s) not run here (this machine cannot provide their environment)" {
		t.Errorf("selection %q", got)
	}
	e := c.Entry()
	if e.NotRun != 1 || e.Green() || !e.Executions[1].NotRunHere {
		t.Errorf("history entry: notRun %d green %t", e.NotRun, e.Green())
	}
	// Compared with a campaign where it passed: not run here, never regressed.
	before := notRunCampaign()
	before.Results[1] = before.Results[0]
	before.Results[1].ExecutionID = "s.p.sandbox.k"
	cmp := Compare(before, c)
	if cmp.Counts[ChangeNotRunHere] != 1 || cmp.Counts[Regressed] != 0 {
		t.Errorf("compare counts %v", cmp.Counts)
	}
	// A failure elsewhere still wins.
	c.Failed = 1
	if c.ExitCode() != verdict.ExitFailed {
		t.Errorf("a failed cell beside a cell not run here exits %d", c.ExitCode())
	}
}

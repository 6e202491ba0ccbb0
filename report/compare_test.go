package report

import (
	"encoding/json"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// TestCompare: every change between two campaigns, rendered as text and JSON (goldens
// testdata/golden/compare.txt and compare.json; go test ./report -update rewrites them).
func TestCompare(t *testing.T) {
	t.Parallel()
	res := func(id, hash string, v verdict.Verdict, expected verdict.Verdict, reason string) result.Result {
		s, p, e, c, _ := result.ParseExecutionID(id)
		r := result.Result{ExecutionID: id, SuiteID: s, ProfileID: p, EnvironmentID: e, CaseID: c, SuiteDefinitionHash: hash, Verdict: v, ExpectedVerdict: expected, Cleanup: result.CleanupPassed, Attempt: 1}
		if v != verdict.Passed {
			r.FailureClass, r.Error = verdict.CandidateFailure, reason
			if v == verdict.Inconclusive {
				r.FailureClass = verdict.TransientInfrastructure
			}
		}
		return r
	}
	a := &result.Campaign{Schema: result.CampaignSchema, CampaignID: "before", Results: []result.Result{
		res("s.p.local.regress", "h1", verdict.Passed, "", ""),
		res("s.p.local.fix", "h1", verdict.Failed, "", "no marker"),
		res("s.p.local.still", "h1", verdict.Failed, "", "no marker"),
		res("s.p.local.flat", "h1", verdict.Passed, "", ""),
		res("s.p.local.unsure", "h1", verdict.Passed, "", ""),
		res("s.nop.local.calibration", "h1", verdict.Failed, verdict.Failed, "expected"),
		res("t.p.local.redefined", "t1", verdict.Passed, "", ""),
		res("s.p.local.gone", "h1", verdict.Passed, "", ""),
		res("s.p.sandbox.away", "h1", verdict.Passed, "", ""),
		// Not run by A's machine, run by B's: new, with A's reason.
		{ExecutionID: "s.p.sandbox.back", SuiteID: "s", ProfileID: "p", EnvironmentID: "sandbox", CaseID: "back", SuiteDefinitionHash: "h1",
			Verdict: verdict.Inconclusive, Synthetic: true, NotRunHere: "needs root for the disk limit"},
	}}
	b := &result.Campaign{Schema: result.CampaignSchema, CampaignID: "after", Results: []result.Result{
		res("s.p.local.regress", "h1", verdict.Failed, "", "message_exact: observed \"nothing\"\nsecond line"),
		res("s.p.local.fix", "h1", verdict.Passed, "", ""),
		res("s.p.local.still", "h1", verdict.Failed, "", "no marker"),
		res("s.p.local.flat", "h1", verdict.Passed, "", ""),
		res("s.p.local.unsure", "h1", verdict.Inconclusive, "", "the server did not start"),
		// A calibration cell that stopped failing as expected: it regressed.
		res("s.nop.local.calibration", "h1", verdict.Passed, verdict.Failed, ""),
		res("t.p.local.redefined", "t2", verdict.Failed, "", "other definition"),
		res("s.p.local.added", "h1", verdict.Passed, "", ""),
		// Not run by B's machine: its reason, never "absent".
		{ExecutionID: "s.p.sandbox.away", SuiteID: "s", ProfileID: "p", EnvironmentID: "sandbox", CaseID: "away", SuiteDefinitionHash: "h1",
			Verdict: verdict.Inconclusive, Synthetic: true, NotRunHere: "needs bubblewrap, which is not installed"},
		res("s.p.sandbox.back", "h1", verdict.Passed, "", ""),
	}}
	c := result.Compare(a, b)
	want := map[result.Change]int{result.Regressed: 2, result.Fixed: 1, result.StillFailing: 1, result.NowInconclusive: 1, result.DefinitionChanged: 1, result.New: 2, result.Removed: 1, result.StillPassing: 1, result.ChangeNotRunHere: 1}
	for ch, n := range want {
		if c.Counts[ch] != n {
			t.Errorf("%s: %d cells, want %d", ch, c.Counts[ch], n)
		}
	}
	if c.ExitCode() != verdict.ExitFailed || !c.HasRegression {
		t.Errorf("exit %d, want %d", c.ExitCode(), verdict.ExitFailed)
	}
	if len(c.Suites) != 1 || c.Suites[0].SuiteID != "t" {
		t.Errorf("suites %+v, want t's definition change", c.Suites)
	}
	golden.Assert(t, string(CompareText(c)), "golden/compare.txt")
	js, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, string(js)+"\n", "golden/compare.json")
	if c := result.Compare(b, b); c.ExitCode() != verdict.ExitPassed || c.Counts[result.StillPassing] != 4 || c.Counts[result.StillFailing] != 4 {
		t.Errorf("a campaign against itself: %+v", c.Counts)
	}
}

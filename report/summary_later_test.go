package report

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// TestSummaryLaterPasses: a cell that counts as passed only on a later attempt (a
// --rerun-failed run or an automatic retry) is named in summary.md's headline count and
// its own section, with the attempts that did not pass; a cell whose earlier attempt
// also passed, or whose earlier attempt was invalid, is not.
func TestSummaryLaterPasses(t *testing.T) {
	t.Parallel()
	pass := func(id string, attempt, first int) result.Result {
		return result.Result{ExecutionID: id, Attempt: attempt, FirstAttempt: first, Verdict: verdict.Passed, Cleanup: result.CleanupPassed}
	}
	note := func(id string, attempt int, chosen bool, o verdict.Verdict) result.CandidateNote {
		return result.CandidateNote{ExecutionID: id, Attempt: attempt, Valid: o != "", Chosen: chosen, Outcome: o}
	}
	c := &result.Campaign{
		CampaignID: "c", Counts: result.Counts{Selected: 4, Passed: 4, CleanupPassed: true},
		Results: []result.Result{pass("s.p.e.rerun", 3, 3), pass("s.p.e.retry", 2, 0), pass("s.p.e.twice", 2, 0), pass("s.p.e.torn", 2, 2)},
		Candidates: []result.CandidateNote{
			note("s.p.e.rerun", 1, false, verdict.Failed), note("s.p.e.rerun", 2, false, verdict.Inconclusive), note("s.p.e.rerun", 3, true, verdict.Passed),
			note("s.p.e.retry", 1, false, verdict.Inconclusive), note("s.p.e.retry", 2, true, verdict.Passed),
			note("s.p.e.twice", 1, false, verdict.Passed), note("s.p.e.twice", 2, true, verdict.Passed),
			note("s.p.e.torn", 1, false, ""), note("s.p.e.torn", 2, true, verdict.Passed),
		},
	}
	lp := c.LaterPasses()
	var got []string
	for _, l := range lp {
		got = append(got, l.ExecutionID+": "+l.Words())
	}
	want := []string{
		"s.p.e.rerun: passed on attempt 3 (a later run: --rerun-failed or --resume) after attempt 1 was failed, attempt 2 was inconclusive",
		"s.p.e.retry: passed on attempt 2 (automatic retry) after attempt 1 was inconclusive",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("LaterPasses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := string(Summary(c))
	for _, w := range []string{
		"Passed: 4/4 (2 only after an earlier attempt did not pass) · ",
		"## Passed only after an earlier attempt did not\n\n- **s.p.e.rerun** — passed on attempt 3 (a later run: --rerun-failed or --resume) after attempt 1 was failed, attempt 2 was inconclusive\n- **s.p.e.retry** — ",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("summary.md lacks %q:\n%s", w, s)
		}
	}
}

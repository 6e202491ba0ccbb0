package report

import (
	"encoding/json"
	"testing"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// TestDetailTextQuotesEachMatcherOnce: a matcher detail the error already quotes is not
// repeated; one it does not quote is kept.
func TestDetailTextQuotesEachMatcherOnce(t *testing.T) {
	t.Parallel()
	detail := `expected {"kind":"run_status","expected":"succeeded"}; observed "failed"`
	tests := []struct {
		name string
		r    result.Result
		want string
	}{
		{"error quotes the matcher", result.Result{FailureClass: "candidate_failure", Error: "matcher failed: #1 run_status: " + detail, Cleanup: result.CleanupPassed,
			MatcherResults: []result.MatcherResult{{Kind: "run_status", Detail: detail}}},
			"candidate_failure; matcher failed: #1 run_status: " + detail},
		{"error does not quote the matcher", result.Result{FailureClass: "candidate_failure", Error: "fixture exited with code 1", Cleanup: result.CleanupPassed,
			MatcherResults: []result.MatcherResult{{Kind: "run_status", Detail: detail}}},
			"candidate_failure; fixture exited with code 1; run_status: " + detail},
		{"no error", result.Result{Cleanup: result.CleanupPassed, MatcherResults: []result.MatcherResult{{Kind: "run_status", Detail: detail}, {Kind: "x", Passed: true}}},
			"run_status: " + detail},
		{"ok", result.Result{Cleanup: result.CleanupPassed}, "ok"},
	}
	for _, tt := range tests {
		if got := detailText(&tt.r); got != tt.want {
			t.Errorf("%s: detailText = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestDetailTextLeadsWithAbnormalEnd: the one-line detail of summary.md (and the
// dashboard's cards) of a cell that did not pass leads with its run's termination
// summary when the agent's run ended abnormally — an exec agent that exited 0 without
// completing its run —, before the matcher differences it caused; the summary kept of
// a result read from disk (summaryResult) still says so, and a passed cell's detail
// does not.
func TestDetailTextLeadsWithAbnormalEnd(t *testing.T) {
	t.Parallel()
	const why = "the exec agent exited 0 without completing its run; exited with code 0 after 75ms"
	term := json.RawMessage(`{"summary":"` + why + `","started":true,"exitCode":0,"leftOpen":true,"environment":{"provider":"local"}}`)
	detail := `expected {"kind":"run_status","expected":"succeeded"}; observed "failed"`
	r := result.Result{Verdict: verdict.Failed, FailureClass: "candidate_failure", Error: "matcher failed: #4 run_status: " + detail,
		Cleanup: result.CleanupPassed, Termination: term, MatcherResults: []result.MatcherResult{{Kind: "run_status", Detail: detail}}}
	want := "candidate_failure; " + why + "; matcher failed: #4 run_status: " + detail
	if got := detailText(&r); got != want {
		t.Errorf("detailText = %q, want %q", got, want)
	}
	summaryResult(&r, "s/p/e/c/attempt-1")
	if got := detailText(&r); got != want {
		t.Errorf("after summaryResult, detailText = %q, want %q", got, want)
	}
	passed := result.Result{Verdict: verdict.Passed, Cleanup: result.CleanupPassed, Termination: term}
	if got := detailText(&passed); got != "ok" {
		t.Errorf("a passed cell's detailText = %q, want ok", got)
	}
	summaryResult(&passed, "s/p/e/c/attempt-1")
	if passed.Termination != nil {
		t.Errorf("summaryResult kept a passed cell's termination: %s", passed.Termination)
	}
}

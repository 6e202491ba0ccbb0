package report

import (
	"testing"

	"github.com/agentproof/agentproof/result"
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

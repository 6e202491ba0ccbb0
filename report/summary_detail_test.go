package report

import "testing"

// TestDetailTextQuotesEachMatcherOnce: a matcher detail the error already quotes is not
// repeated; one it does not quote is kept.
func TestDetailTextQuotesEachMatcherOnce(t *testing.T) {
	t.Parallel()
	detail := `expected {"kind":"run_status","expected":"succeeded"}; observed "failed"`
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"error quotes the matcher", Result{FailureClass: "candidate_failure", Error: "matcher failed: #1 run_status: " + detail, Cleanup: CleanupPassed,
			MatcherResults: []MatcherResult{{Kind: "run_status", Detail: detail}}},
			"candidate_failure; matcher failed: #1 run_status: " + detail},
		{"error does not quote the matcher", Result{FailureClass: "candidate_failure", Error: "fixture exited with code 1", Cleanup: CleanupPassed,
			MatcherResults: []MatcherResult{{Kind: "run_status", Detail: detail}}},
			"candidate_failure; fixture exited with code 1; run_status: " + detail},
		{"no error", Result{Cleanup: CleanupPassed, MatcherResults: []MatcherResult{{Kind: "run_status", Detail: detail}, {Kind: "x", Passed: true}}},
			"run_status: " + detail},
		{"ok", Result{Cleanup: CleanupPassed}, "ok"},
	}
	for _, tt := range tests {
		if got := detailText(&tt.r); got != tt.want {
			t.Errorf("%s: detailText = %q, want %q", tt.name, got, tt.want)
		}
	}
}

package report

import (
	"testing"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// TestCleanupWord: the summary header says cleanup did not all pass, and says so
// without alarm only when every such cell is a calibration cell that expected it.
func TestCleanupWord(t *testing.T) {
	t.Parallel()
	ok := result.Result{Verdict: verdict.Passed, Cleanup: result.CleanupPassed}
	expected := result.Result{ExecutionID: "calibration.hostile_daemon.local.cleanup", Verdict: verdict.Failed, ExpectedVerdict: verdict.Failed, Cleanup: result.CleanupFailed}
	other := func(id string) result.Result { r := expected; r.ExecutionID = id; return r }
	candidate := result.Result{Verdict: verdict.Failed, Cleanup: result.CleanupFailed}
	tests := []struct {
		name    string
		results []result.Result
		clean   bool
		want    string
	}{
		{"all passed", []result.Result{ok}, true, "all passed"},
		{"only expected", []result.Result{ok, expected}, false, `not all passed, as expected by calibration cell(s) calibration.hostile\_daemon.local.cleanup`},
		{"many expected", []result.Result{expected, other("a"), other("b"), other("c"), other("d")}, false,
			`not all passed, as expected by calibration cell(s) calibration.hostile\_daemon.local.cleanup, a, b and 2 more`},
		{"a real one", []result.Result{expected, candidate}, false, "not all passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := cleanupWord(&result.Campaign{Results: tt.results, Counts: result.Counts{CleanupPassed: tt.clean}}); got != tt.want {
				t.Errorf("cleanupWord = %q, want %q", got, tt.want)
			}
		})
	}
}

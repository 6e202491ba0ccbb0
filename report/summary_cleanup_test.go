package report

import (
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// TestCleanupWord: the summary header says cleanup did not all pass, and says so
// without alarm only when every such cell is a calibration cell that expected it.
func TestCleanupWord(t *testing.T) {
	t.Parallel()
	ok := Result{Verdict: verdict.Passed, Cleanup: CleanupPassed}
	expected := Result{ExecutionID: "calibration.hostile_daemon.local.cleanup", Verdict: verdict.Failed, ExpectedVerdict: verdict.Failed, Cleanup: CleanupFailed}
	other := func(id string) Result { r := expected; r.ExecutionID = id; return r }
	candidate := Result{Verdict: verdict.Failed, Cleanup: CleanupFailed}
	tests := []struct {
		name    string
		results []Result
		clean   bool
		want    string
	}{
		{"all passed", []Result{ok}, true, "all passed"},
		{"only expected", []Result{ok, expected}, false, `not all passed, as expected by calibration cell(s) calibration.hostile\_daemon.local.cleanup`},
		{"many expected", []Result{expected, other("a"), other("b"), other("c"), other("d")}, false,
			`not all passed, as expected by calibration cell(s) calibration.hostile\_daemon.local.cleanup, a, b and 2 more`},
		{"a real one", []Result{expected, candidate}, false, "not all passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := cleanupWord(&Campaign{Results: tt.results, CleanupPassed: tt.clean}); got != tt.want {
				t.Errorf("cleanupWord = %q, want %q", got, tt.want)
			}
		})
	}
}

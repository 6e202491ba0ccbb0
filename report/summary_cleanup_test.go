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
	expected := Result{Verdict: verdict.Failed, ExpectedVerdict: verdict.Failed, Cleanup: CleanupFailed}
	candidate := Result{Verdict: verdict.Failed, Cleanup: CleanupFailed}
	tests := []struct {
		name    string
		results []Result
		clean   bool
		want    string
	}{
		{"all passed", []Result{ok}, true, "all passed"},
		{"only expected", []Result{ok, expected}, false, "not all passed (1 calibration cell(s) that expect it)"},
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

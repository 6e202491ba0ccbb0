package campaign

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// TestResultOf: every judged outcome maps to a result.json that validates, with the
// verdict, the expected verdict, the class, cleanup and the executor's facts — the
// runtime mode is the one the runner recorded, never the profile's.
func TestResultOf(t *testing.T) {
	t.Parallel()
	c := loadDefault(t)
	cell := c.Cell("calibration.fixture-hang.local.process-exit")
	if cell == nil {
		t.Fatal("no fixture-hang cell in the default catalog")
	}
	start := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	term := json.RawMessage(`{"summary":"timed out","timedOut":true}`)
	facts := &Facts{IssueID: "t1", IssueIdentifier: "APF-1", RunIDs: []string{"r1"}, Termination: term,
		Matchers: []match.Outcome{{Kind: "run_status", Passed: true, Detail: "matched"}},
		Runtime:  []result.RuntimeFacts{{RunID: "r1", Driver: "fixture:hang", RuntimeMode: "native", ExecutionTarget: "local", PID: 42, ProcessStartTicks: 1234}}}
	withFacts := func(o Outcome) Outcome { o.Facts = facts; return o }
	cleanupFailed := judged(verdict.Failed, verdict.CleanupFailure, "cleanup failed: temp root could not be removed")
	cleanupFailed.CleanupConfirmed = false
	tests := []struct {
		name    string
		outcome Outcome
		cleanup result.CleanupStatus
	}{
		{"passed", withFacts(passOutcome), result.CleanupPassed},
		{"deadline", deadlineOutcome, result.CleanupPassed},
		{"cleanup problem", cleanupFailed, result.CleanupFailed},
		{"leak", judged(verdict.Failed, verdict.SecretLeak, "secret leak: workspace out.txt: exact secret value"), result.CleanupPassed},
		{"error", transientOutcome, result.CleanupPassed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := tt.outcome.Judgement
			ar := &AttemptResult{Plan: AttemptPlan{CampaignID: "c", Cell: cell, Attempt: 1, Dir: "c/x/attempt-1"},
				Outcome: tt.outcome, Counted: verdict.Counted(cell.ExpectedVerdict, j.Verdict, tt.outcome.CleanupConfirmed), StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond)}
			r := ResultOf(ar)
			if err := r.Validate("result"); err != nil {
				t.Fatal(err)
			}
			if r.Verdict != j.Verdict || r.FailureClass != j.FailureClass || r.Cleanup != tt.cleanup || r.ExpectedVerdict != verdict.Inconclusive || r.DurationMs != 1500 {
				t.Errorf("result = verdict %s class %s cleanup %s expected %s duration %d", r.Verdict, r.FailureClass, r.Cleanup, r.ExpectedVerdict, r.DurationMs)
			}
			if j.Verdict != verdict.Passed && r.Error != j.Reason {
				t.Errorf("error = %q, want the reason %q", r.Error, j.Reason)
			}
			if f := tt.outcome.Facts; f != nil && (r.IssueIdentifier != "APF-1" || len(r.RunIDs) != 1 || string(r.Termination) != string(term) ||
				len(r.MatcherResults) != 1 || len(r.RuntimeFacts) != 1 || r.RuntimeMode != "native") {
				t.Errorf("facts not carried: %+v", r)
			}
			if tt.outcome.Facts == nil && r.RuntimeMode != "" {
				t.Errorf("runtime mode %q without any recorded run: copied from the catalog?", r.RuntimeMode)
			}
			root := t.TempDir()
			if err := WriteResult(root, ar); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(root, "c/x/attempt-1", ResultFile))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := result.DecodeResult("result.json", b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

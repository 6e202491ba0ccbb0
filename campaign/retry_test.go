package campaign

import (
	"testing"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/verdict"
)

func judgement(v verdict.Verdict, c verdict.FailureClass, reason string) verdict.Judgement {
	return verdict.Judgement{Verdict: v, FailureClass: c, Reason: reason}
}

// testCell builds a cell for policy tests.
func testCell(expected verdict.Verdict, qualificationCandidate bool, retryPolicy string) *catalog.Cell {
	return &catalog.Cell{
		ID:              "suite.profile.local.case",
		Profile:         &catalog.Profile{ID: "profile", QualificationCandidate: qualificationCandidate},
		Case:            &catalog.Case{ID: "case", AutomaticRetryPolicy: retryPolicy},
		ExpectedVerdict: expected,
	}
}

func TestShouldRetry(t *testing.T) {
	t.Parallel()
	transient := judgement(verdict.Inconclusive, verdict.TransientInfrastructure, "503")
	variance := judgement(verdict.Inconclusive, verdict.ProviderVariance, "slow")
	tests := []struct {
		name       string
		cell       *catalog.Cell
		j          verdict.Judgement
		attempt    int
		maxRetries int
		want       bool
	}{
		{"transient first attempt", testCell("", false, ""), transient, 1, 1, true},
		{"provider variance first attempt", testCell("", false, ""), variance, 1, 1, true},
		{"at most one retry", testCell("", false, ""), transient, 2, 1, false},
		{"retries disabled", testCell("", false, ""), transient, 1, 0, false},
		{"permanent is final", testCell("", false, ""), judgement(verdict.Inconclusive, verdict.PermanentInfrastructure, ""), 1, 1, false},
		{"candidate is final", testCell("", false, ""), judgement(verdict.Failed, verdict.CandidateFailure, ""), 1, 1, false},
		{"leak is final", testCell("", false, ""), judgement(verdict.Failed, verdict.SecretLeak, ""), 1, 1, false},
		{"cleanup is final", testCell("", false, ""), judgement(verdict.Failed, verdict.CleanupFailure, ""), 1, 1, false},
		{"passed is final", testCell("", false, ""), judgement(verdict.Passed, "", ""), 1, 1, false},
		{"qualification candidate", testCell("", true, ""), transient, 1, 1, false},
		{"single_attempt case", testCell("", false, "single_attempt"), transient, 1, 1, false},
		{"calibration expectation already met", testCell("inconclusive", false, ""), variance, 1, 1, false},
		{"calibration expectation not met", testCell("passed", false, ""), transient, 1, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ShouldRetry(tt.cell, tt.j, tt.attempt, tt.maxRetries); got != tt.want {
				t.Errorf("ShouldRetry = %v, want %v", got, tt.want)
			}
		})
	}
}

package campaign

import (
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// judged is an outcome with a confirmed cleanup and the given judgement (the fake
// executors of these tests judge nothing: package campaign/attempt's Judge does).
func judged(v verdict.Verdict, c verdict.FailureClass, reason string) Outcome {
	return Outcome{Judgement: verdict.Judgement{Verdict: v, FailureClass: c, Reason: reason}, CleanupConfirmed: true}
}

var (
	passOutcome      = judged(verdict.Passed, "", "every matcher passed (1), cleanup confirmed, no leak")
	failOutcome      = judged(verdict.Failed, verdict.CandidateFailure, `matcher failed: #1 message_contains: expected "MARK"; observed "nothing"`)
	transientOutcome = judged(verdict.Inconclusive, verdict.TransientInfrastructure, "transient infrastructure failure: GET /api/issues/1: 503 service unavailable")
	permanentOutcome = judged(verdict.Inconclusive, verdict.PermanentInfrastructure, "permanent infrastructure failure: missing credential OPENAI_API_KEY")
	deadlineOutcome  = judged(verdict.Inconclusive, verdict.ProviderVariance, "missed the attempt deadline")
	// interruptedOutcome is what an executor reports when its context was cancelled.
	interruptedOutcome = Outcome{Judgement: InterruptedJudgement(), Interrupted: true, CleanupConfirmed: true}
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package campaign

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/match"

	"github.com/agentproof/agentproof/verdict"
)

var (
	okMatcher         = match.Outcome{Kind: "issue_status", Passed: true, Detail: "matched"}
	failedMatcher     = match.Outcome{Kind: "message_contains", Detail: `expected "MARK"; observed "nothing"`}
	notReachedMatcher = match.Outcome{Kind: "message_contains", NotReached: true, Detail: "not reached: turn 2 was not observed (1 turns observed)"}
)

// clean is a complete, cleaned-up outcome with the given matchers.
func clean(ms ...match.Outcome) AttemptOutcome {
	return AttemptOutcome{Matchers: ms, CleanupConfirmed: true}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	with := func(o AttemptOutcome, f func(*AttemptOutcome)) AttemptOutcome { f(&o); return o }
	tests := []struct {
		name       string
		outcome    AttemptOutcome
		verdict    verdict.Verdict
		class      verdict.FailureClass
		reasonPart string
	}{
		{"every matcher passed", clean(okMatcher, okMatcher), verdict.Passed, "", "every matcher passed (2)"},
		{"a matcher failed", clean(okMatcher, failedMatcher), verdict.Failed, verdict.CandidateFailure, "matcher failed: #2 message_contains"},
		{"several failed, listed with a bound", clean(failedMatcher, failedMatcher, failedMatcher, failedMatcher, failedMatcher),
			verdict.Failed, verdict.CandidateFailure, "5 matchers failed: #1 message_contains"},
		{"failed beats not reached", clean(notReachedMatcher, failedMatcher), verdict.Failed, verdict.CandidateFailure, "#2"},
		{"not reached is inconclusive", clean(okMatcher, notReachedMatcher), verdict.Inconclusive, verdict.PermanentInfrastructure, "matcher not reached: #2"},
		{"no matcher evaluated", clean(), verdict.Inconclusive, verdict.PermanentInfrastructure, "no matcher was evaluated"},
		{"leak overrides everything",
			with(clean(failedMatcher), func(o *AttemptOutcome) {
				o.Leaks = []string{"exact secret value at result.json"}
				o.DeadlineMissed = "attempt"
				o.CleanupConfirmed = false
				o.Err = errors.New("503 service unavailable")
			}), verdict.Failed, verdict.SecretLeak, "secret leak: exact secret value at result.json"},
		{"leak from the error", with(clean(okMatcher), func(o *AttemptOutcome) { o.Err = ErrSecretInRecord }),
			verdict.Failed, verdict.SecretLeak, "secret leak: "},
		{"cleanup problem beats a deadline",
			with(clean(okMatcher), func(o *AttemptOutcome) {
				o.CleanupProblem = "process group 4242 survived SIGKILL"
				o.DeadlineMissed = "turn 2"
			}), verdict.Failed, verdict.CleanupFailure, "cleanup failed: process group 4242 survived SIGKILL"},
		{"cleanup error text", with(clean(okMatcher), func(o *AttemptOutcome) {
			o.Err = errors.New(`fixture teardown failed: fixture "environment" teardown: 404`)
		}), verdict.Failed, verdict.CleanupFailure, "cleanup failed: fixture teardown failed"},
		{"cleanup not confirmed", AttemptOutcome{Matchers: []match.Outcome{okMatcher}}, verdict.Failed, verdict.CleanupFailure, "cleanup was not confirmed"},
		{"interrupted", with(clean(failedMatcher), func(o *AttemptOutcome) { o.Interrupted = true }),
			verdict.Inconclusive, verdict.TransientInfrastructure, "interrupted"},
		{"transient error beats failed matchers", with(clean(failedMatcher), func(o *AttemptOutcome) {
			o.Err = errors.New("GET /api/issues: 502 bad gateway")
		}), verdict.Inconclusive, verdict.TransientInfrastructure, "transient infrastructure failure: GET /api/issues: 502"},
		{"permanent error", with(clean(), func(o *AttemptOutcome) { o.Err = errors.New("missing credential OPENAI_API_KEY") }),
			verdict.Inconclusive, verdict.PermanentInfrastructure, "permanent infrastructure failure: missing credential"},
		{"typed provider variance", with(clean(), func(o *AttemptOutcome) {
			o.Err = &ClassError{Class: verdict.ProviderVariance, Err: errors.New("plan never appeared")}
		}), verdict.Inconclusive, verdict.ProviderVariance, "provider variance: plan never appeared"},
		{"collector error", with(clean(failedMatcher), func(o *AttemptOutcome) { o.CollectorError = "workspace snapshot unreadable" }),
			verdict.Inconclusive, verdict.PermanentInfrastructure, "collector error: workspace snapshot unreadable"},
		{"deadline missed is never failed", with(clean(failedMatcher), func(o *AttemptOutcome) { o.DeadlineMissed = "turn 3" }),
			verdict.Inconclusive, verdict.ProviderVariance, "missed the turn 3 deadline"},
		{"candidate error with passing matchers", with(clean(okMatcher), func(o *AttemptOutcome) {
			o.Err = errors.New("the agent finished without asking the question")
		}), verdict.Failed, verdict.CandidateFailure, "the agent finished without asking the question"},
		{"candidate error without grading", with(clean(), func(o *AttemptOutcome) {
			o.Err = errors.New("run status failed before the plan was published")
		}), verdict.Failed, verdict.CandidateFailure, "run status failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := Judge(tt.outcome)
			if j.Verdict != tt.verdict || j.FailureClass != tt.class {
				t.Errorf("Judge = %s/%s (%q), want %s/%s", j.Verdict, j.FailureClass, j.Reason, tt.verdict, tt.class)
			}
			if !strings.Contains(j.Reason, tt.reasonPart) {
				t.Errorf("reason %q does not contain %q", j.Reason, tt.reasonPart)
			}
		})
	}
}

func TestJudgeReasonBound(t *testing.T) {
	t.Parallel()
	var ms []match.Outcome
	for range 10 {
		ms = append(ms, failedMatcher)
	}
	j := Judge(clean(ms...))
	if !strings.HasSuffix(j.Reason, "; and 7 more") || strings.Count(j.Reason, "message_contains") != maxReasonMatchers {
		t.Errorf("reason = %q, want three matchers and a remainder", j.Reason)
	}
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

package campaign

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/match"
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
		verdict    Verdict
		class      FailureClass
		reasonPart string
	}{
		{"every matcher passed", clean(okMatcher, okMatcher), Passed, "", "every matcher passed (2)"},
		{"a matcher failed", clean(okMatcher, failedMatcher), Failed, CandidateFailure, "matcher failed: #2 message_contains"},
		{"several failed, listed with a bound", clean(failedMatcher, failedMatcher, failedMatcher, failedMatcher, failedMatcher),
			Failed, CandidateFailure, "5 matchers failed: #1 message_contains"},
		{"failed beats not reached", clean(notReachedMatcher, failedMatcher), Failed, CandidateFailure, "#2"},
		{"not reached is inconclusive", clean(okMatcher, notReachedMatcher), Inconclusive, PermanentInfrastructure, "matcher not reached: #2"},
		{"no matcher evaluated", clean(), Inconclusive, PermanentInfrastructure, "no matcher was evaluated"},
		{"leak overrides everything",
			with(clean(failedMatcher), func(o *AttemptOutcome) {
				o.Leaks = []string{"exact secret value at result.json"}
				o.DeadlineMissed = "attempt"
				o.CleanupConfirmed = false
				o.Err = errors.New("503 service unavailable")
			}), Failed, SecretLeak, "secret leak: exact secret value at result.json"},
		{"leak from the error", with(clean(okMatcher), func(o *AttemptOutcome) { o.Err = ErrSecretInRecord }),
			Failed, SecretLeak, "secret leak: "},
		{"cleanup problem beats a deadline",
			with(clean(okMatcher), func(o *AttemptOutcome) {
				o.CleanupProblem = "process group 4242 survived SIGKILL"
				o.DeadlineMissed = "turn 2"
			}), Failed, CleanupFailure, "cleanup failed: process group 4242 survived SIGKILL"},
		{"cleanup error text", with(clean(okMatcher), func(o *AttemptOutcome) {
			o.Err = errors.New(`fixture teardown failed: fixture "environment" teardown: 404`)
		}), Failed, CleanupFailure, "cleanup failed: fixture teardown failed"},
		{"cleanup not confirmed", AttemptOutcome{Matchers: []match.Outcome{okMatcher}}, Failed, CleanupFailure, "cleanup was not confirmed"},
		{"interrupted", with(clean(failedMatcher), func(o *AttemptOutcome) { o.Interrupted = true }),
			Inconclusive, TransientInfrastructure, "interrupted"},
		{"transient error beats failed matchers", with(clean(failedMatcher), func(o *AttemptOutcome) {
			o.Err = errors.New("GET /api/issues: 502 bad gateway")
		}), Inconclusive, TransientInfrastructure, "transient infrastructure failure: GET /api/issues: 502"},
		{"permanent error", with(clean(), func(o *AttemptOutcome) { o.Err = errors.New("missing credential OPENAI_API_KEY") }),
			Inconclusive, PermanentInfrastructure, "permanent infrastructure failure: missing credential"},
		{"typed provider variance", with(clean(), func(o *AttemptOutcome) {
			o.Err = &ClassError{Class: ProviderVariance, Err: errors.New("plan never appeared")}
		}), Inconclusive, ProviderVariance, "provider variance: plan never appeared"},
		{"collector error", with(clean(failedMatcher), func(o *AttemptOutcome) { o.CollectorError = "workspace snapshot unreadable" }),
			Inconclusive, PermanentInfrastructure, "collector error: workspace snapshot unreadable"},
		{"deadline missed is never failed", with(clean(failedMatcher), func(o *AttemptOutcome) { o.DeadlineMissed = "turn 3" }),
			Inconclusive, ProviderVariance, "missed the turn 3 deadline"},
		{"candidate error with passing matchers", with(clean(okMatcher), func(o *AttemptOutcome) {
			o.Err = errors.New("the agent finished without asking the question")
		}), Failed, CandidateFailure, "the agent finished without asking the question"},
		{"candidate error without grading", with(clean(), func(o *AttemptOutcome) {
			o.Err = errors.New("run status failed before the plan was published")
		}), Failed, CandidateFailure, "run status failed"},
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

func TestCounted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expected string
		observed Verdict
		want     Verdict
	}{
		{"", Passed, Passed},
		{"", Failed, Failed},
		{"", Inconclusive, Inconclusive},
		{"passed", Passed, Passed},
		{"failed", Failed, Passed},
		{"inconclusive", Inconclusive, Passed},
		{"passed", Failed, Failed},
		{"inconclusive", Failed, Failed},
		{"failed", Passed, Failed},
		{"inconclusive", Passed, Failed},
		{"passed", Inconclusive, Inconclusive},
		{"failed", Inconclusive, Inconclusive},
	}
	for _, tt := range tests {
		if got := Counted(tt.expected, tt.observed); got != tt.want {
			t.Errorf("Counted(%q, %s) = %s, want %s", tt.expected, tt.observed, got, tt.want)
		}
	}
}

// testCell builds a cell for policy tests.
func testCell(expected string, qualificationCandidate bool, retryPolicy string) *catalog.Cell {
	return &catalog.Cell{
		ID:              "suite.profile.local.case",
		Profile:         &catalog.Profile{ID: "profile", QualificationCandidate: qualificationCandidate},
		Case:            &catalog.Case{ID: "case", AutomaticRetryPolicy: retryPolicy},
		ExpectedVerdict: expected,
	}
}

func TestShouldRetry(t *testing.T) {
	t.Parallel()
	transient := Judgement{Inconclusive, TransientInfrastructure, "503"}
	variance := Judgement{Inconclusive, ProviderVariance, "slow"}
	tests := []struct {
		name       string
		cell       *catalog.Cell
		j          Judgement
		attempt    int
		maxRetries int
		want       bool
	}{
		{"transient first attempt", testCell("", false, ""), transient, 1, 1, true},
		{"provider variance first attempt", testCell("", false, ""), variance, 1, 1, true},
		{"at most one retry", testCell("", false, ""), transient, 2, 1, false},
		{"retries disabled", testCell("", false, ""), transient, 1, 0, false},
		{"permanent is final", testCell("", false, ""), Judgement{Inconclusive, PermanentInfrastructure, ""}, 1, 1, false},
		{"candidate is final", testCell("", false, ""), Judgement{Failed, CandidateFailure, ""}, 1, 1, false},
		{"leak is final", testCell("", false, ""), Judgement{Failed, SecretLeak, ""}, 1, 1, false},
		{"cleanup is final", testCell("", false, ""), Judgement{Failed, CleanupFailure, ""}, 1, 1, false},
		{"passed is final", testCell("", false, ""), Judgement{Passed, "", ""}, 1, 1, false},
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

package campaign

import (
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/match"

	"github.com/agentproof/agentproof/verdict"
)

// maxReasonMatchers is how many failing matchers a reason names before "and N more".
const maxReasonMatchers = 3

// Judge returns the verdict of one attempt from its outcome (DESIGN.md "Verdicts",
// spec §9). Ordered rules, first match wins:
//
//  1. a leak (Leaks non-empty, or Err classified secret_leak) → failed, secret_leak —
//     it overrides everything;
//  2. cleanup not confirmed (CleanupProblem set, CleanupConfirmed false, or Err
//     classified cleanup_failure) → failed, cleanup_failure (spec §6: "Teardown must fail
//     the cell if provider cleanup cannot be confirmed");
//  3. Interrupted → inconclusive, transient_infrastructure;
//  4. Err classified as an infrastructure class (transient, permanent, provider
//     variance) → inconclusive with that class;
//  5. CollectorError → inconclusive, permanent_infrastructure (spec §9: missing
//     required evidence);
//  6. DeadlineMissed → inconclusive, provider_variance (a missed deadline is
//     inconclusive, never failed);
//  7. a matcher that failed (neither passed nor not reached) → failed,
//     candidate_failure — the observation is final, so a definite mismatch blames the
//     candidate even when another matcher was not reached;
//  8. Err classified candidate_failure (the agent broke the flow) → failed,
//     candidate_failure;
//  9. no matcher evaluated → inconclusive, permanent_infrastructure (nothing vouches
//     for the attempt);
//  10. a matcher not reached → inconclusive, permanent_infrastructure;
//  11. otherwise → passed.
//
// Reasons never contain more than the texts the outcome carries (matcher details are
// redacted by match; errors and problems must be redacted by the executor).
func Judge(o AttemptOutcome) verdict.Judgement {
	errClass := ClassifyError(o.Err)
	switch {
	case len(o.Leaks) > 0:
		return judgement(verdict.Failed, verdict.SecretLeak, "secret leak: " + strings.Join(o.Leaks, "; "))
	case errClass == verdict.SecretLeak:
		return judgement(verdict.Failed, verdict.SecretLeak, "secret leak: " + o.Err.Error())
	case o.CleanupProblem != "":
		return judgement(verdict.Failed, verdict.CleanupFailure, "cleanup failed: " + o.CleanupProblem)
	case errClass == verdict.CleanupFailure:
		return judgement(verdict.Failed, verdict.CleanupFailure, "cleanup failed: " + o.Err.Error())
	case !o.CleanupConfirmed:
		return judgement(verdict.Failed, verdict.CleanupFailure, "cleanup was not confirmed")
	case o.Interrupted:
		return judgement(verdict.Inconclusive, verdict.TransientInfrastructure, "the attempt was interrupted")
	case errClass == verdict.TransientInfrastructure || errClass == verdict.PermanentInfrastructure || errClass == verdict.ProviderVariance:
		return judgement(verdict.Inconclusive, errClass, errClass.Words() + ": " + o.Err.Error())
	case o.CollectorError != "":
		return judgement(verdict.Inconclusive, verdict.PermanentInfrastructure, "collector error: " + o.CollectorError)
	case o.DeadlineMissed != "":
		return judgement(verdict.Inconclusive, verdict.ProviderVariance, "missed the " + o.DeadlineMissed + " deadline")
	}
	var failed, notReached []string
	for i, m := range o.Matchers {
		switch {
		case m.Passed:
		case m.NotReached:
			notReached = append(notReached, describeMatcher(i, m))
		default:
			failed = append(failed, describeMatcher(i, m))
		}
	}
	switch {
	case len(failed) > 0 && errClass == verdict.CandidateFailure:
		// The agent's own failure first (for example a CLI that exited non-zero, naming
		// the model-script step it broke), then the matchers it left failing.
		return judgement(verdict.Failed, verdict.CandidateFailure, o.Err.Error() + "; " + listReason("matcher failed", "matchers failed", failed))
	case len(failed) > 0:
		return judgement(verdict.Failed, verdict.CandidateFailure, listReason("matcher failed", "matchers failed", failed))
	case errClass == verdict.CandidateFailure:
		return judgement(verdict.Failed, verdict.CandidateFailure, o.Err.Error())
	case len(o.Matchers) == 0:
		return judgement(verdict.Inconclusive, verdict.PermanentInfrastructure, "no matcher was evaluated")
	case len(notReached) > 0:
		return judgement(verdict.Inconclusive, verdict.PermanentInfrastructure, listReason("matcher not reached", "matchers not reached", notReached))
	}
	return judgement(verdict.Passed, "", fmt.Sprintf("every matcher passed (%d), cleanup confirmed, no leak", len(o.Matchers)))
}

func describeMatcher(i int, m match.Outcome) string {
	return fmt.Sprintf("#%d %s: %s", i+1, m.Kind, m.Detail)
}

func listReason(one, many string, items []string) string {
	head := one
	if len(items) > 1 {
		head = fmt.Sprintf("%d %s", len(items), many)
	}
	shown := items[:min(len(items), maxReasonMatchers)]
	s := head + ": " + strings.Join(shown, "; ")
	if rest := len(items) - len(shown); rest > 0 {
		s += fmt.Sprintf("; and %d more", rest)
	}
	return s
}

// ShouldRetry reports whether attempt number attempt (1-based) of cell, judged j, is
// followed by an automatic retry in a brand-new isolated attempt (spec §9): only when
// j's class is Retryable, fewer than maxAutomaticRetries retries were made (0 or 1),
// the profile is not a qualification candidate and the case's automaticRetryPolicy is
// not "single_attempt". agentproof adds one rule: a calibration cell whose attempt
// already counts as passed (an expected inconclusive observed) is not retried, since a
// retry could only repeat the expectation. Callers also stop retrying once the
// campaign is cancelled.
func ShouldRetry(cell *catalog.Cell, j verdict.Judgement, attempt, maxAutomaticRetries int) bool {
	return j.FailureClass.Retryable() &&
		verdict.Counted(cell.ExpectedVerdict, j.Verdict, true) != verdict.Passed &&
		attempt <= maxAutomaticRetries &&
		!cell.Profile.QualificationCandidate &&
		cell.Case.AutomaticRetryPolicy != "single_attempt"
}

// judgement builds a verdict.Judgement.
func judgement(v verdict.Verdict, c verdict.FailureClass, reason string) verdict.Judgement {
	return verdict.Judgement{Verdict: v, FailureClass: c, Reason: reason}
}

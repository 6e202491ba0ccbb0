package verdict

import "fmt"

// FailureClass says why an attempt did not pass. The empty
// class means none (a passed attempt).
type FailureClass string

// The failure classes (docs/harness.md, "Blame and retries").
const (
	// CandidateFailure: the agent under test is at fault (a matcher failed, the agent
	// broke the flow, it missed a deadline with no provider to blame). Final; failed.
	CandidateFailure FailureClass = "candidate_failure"
	// ProviderVariance: a live model provider behaved unusually (a missed deadline, a
	// state that did not arrive in time). Retryable; inconclusive.
	ProviderVariance FailureClass = "provider_variance"
	// TransientInfrastructure: a fault of the harness, server or network that may not
	// recur. Retryable; inconclusive.
	TransientInfrastructure FailureClass = "transient_infrastructure"
	// PermanentInfrastructure: a configuration or environment fault that will recur
	// (missing credential, refused fixture, incompatible model, missing evidence).
	// Final; inconclusive.
	PermanentInfrastructure FailureClass = "permanent_infrastructure"
	// SecretLeak: a secret value reached something agentproof keeps or shows. Overrides
	// every other class; final; failed.
	SecretLeak FailureClass = "secret_leak"
	// CleanupFailure: teardown failed or could not be confirmed. Final; failed.
	CleanupFailure FailureClass = "cleanup_failure"
)

// FailureClasses lists every class in declaration order.
var FailureClasses = []FailureClass{CandidateFailure, ProviderVariance, TransientInfrastructure,
	PermanentInfrastructure, SecretLeak, CleanupFailure}

// Valid reports whether c is one of FailureClasses (the empty class is not).
func (c FailureClass) Valid() bool {
	switch c {
	case CandidateFailure, ProviderVariance, TransientInfrastructure, PermanentInfrastructure, SecretLeak, CleanupFailure:
		return true
	}
	return false
}

// ParseClass returns the class named s, or an error naming every class.
func ParseClass(s string) (FailureClass, error) {
	if c := FailureClass(s); c.Valid() {
		return c, nil
	}
	return "", fmt.Errorf("%q is not one of %v", s, FailureClasses)
}

// Verdict is the verdict an attempt ending with class c gets: failed for a candidate
// failure and the safety classes, inconclusive for the infrastructure classes and
// provider variance, passed for the empty class.
func (c FailureClass) Verdict() Verdict {
	switch c {
	case "":
		return Passed
	case CandidateFailure, SecretLeak, CleanupFailure:
		return Failed
	}
	return Inconclusive
}

// Retryable reports whether an attempt that ended with class c may be retried
// automatically: only transient_infrastructure and provider_variance.
func (c FailureClass) Retryable() bool {
	return c == TransientInfrastructure || c == ProviderVariance
}

// Words returns the class as words for humans ("transient infrastructure failure").
func (c FailureClass) Words() string {
	switch c {
	case CandidateFailure:
		return "candidate failure"
	case ProviderVariance:
		return "provider variance"
	case TransientInfrastructure:
		return "transient infrastructure failure"
	case PermanentInfrastructure:
		return "permanent infrastructure failure"
	case SecretLeak:
		return "secret leak"
	case CleanupFailure:
		return "cleanup failure"
	}
	return string(c)
}

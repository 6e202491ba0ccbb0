package verdict

import "errors"

// Origin says who is to blame for a fault that ended an attempt (docs/ARCHITECTURE.md
// "Honest blame"). It is decided where the fault happens, from what the code knows
// there, never later from the error's text.
type Origin string

// The origins of a fault.
const (
	// Harness: agentproof's own machinery — the temp root, the fixture registry and
	// its board calls, the control-plane server and its serve child, the heartbeat
	// runner, the scripted model, evidence writing. Its faults are infrastructure:
	// inconclusive, retried once when transient.
	Harness Origin = "harness"
	// Provider: a live model API (`run --live`). Its faults are provider variance (or
	// infrastructure when its text says so): inconclusive.
	Provider Origin = "provider"
	// Candidate: the agent or runner under test. Its faults are candidate failures:
	// failed.
	Candidate Origin = "candidate"
	// Safety: a secret leak or a cleanup that could not be confirmed: failed.
	Safety Origin = "safety"
)

// Fault is an error that ends (or decides) an attempt, with its origin and failure
// class as values. Err carries the words (already redacted by whoever built the
// fault); Class is one the origin allows (see the constructors).
type Fault struct {
	Origin Origin
	Class  FailureClass
	Err    error
}

// Error returns the wrapped error's text (origin and class are not part of it).
func (f *Fault) Error() string {
	if f.Err == nil {
		return string(f.Class)
	}
	return f.Err.Error()
}

// Unwrap returns the wrapped error.
func (f *Fault) Unwrap() error { return f.Err }

// HarnessFault is a fault of agentproof's own machinery: transient infrastructure when
// a retry in a fresh attempt may succeed (a server that did not start, a refused
// connection), permanent infrastructure otherwise (a refused fixture, a missing
// credential, a script that cannot be derived).
func HarnessFault(err error, transient bool) *Fault {
	c := PermanentInfrastructure
	if transient {
		c = TransientInfrastructure
	}
	return &Fault{Origin: Harness, Class: c, Err: err}
}

// CandidateFault is a fault of the agent under test: candidate_failure.
func CandidateFault(err error) *Fault {
	return &Fault{Origin: Candidate, Class: CandidateFailure, Err: err}
}

// ProviderFault is a fault of a live model provider with class c, which must be
// provider_variance or an infrastructure class (for example from the text rules
// applied to the provider's words); any other class becomes provider_variance.
func ProviderFault(err error, c FailureClass) *Fault {
	if c != TransientInfrastructure && c != PermanentInfrastructure {
		c = ProviderVariance
	}
	return &Fault{Origin: Provider, Class: c, Err: err}
}

// LeakFault is a secret leak: secret_leak.
func LeakFault(err error) *Fault { return &Fault{Origin: Safety, Class: SecretLeak, Err: err} }

// CleanupFault is a cleanup that failed or could not be confirmed: cleanup_failure.
func CleanupFault(err error) *Fault { return &Fault{Origin: Safety, Class: CleanupFailure, Err: err} }

// FaultOf returns the first *Fault in err's chain, or nil.
func FaultOf(err error) *Fault {
	var f *Fault
	if errors.As(err, &f) {
		return f
	}
	return nil
}

package verdict

import (
	"errors"
	"fmt"
	"testing"
)

func TestCounted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expected, observed Verdict
		cleanup            bool
		want               Verdict
	}{
		{"", Passed, true, Passed},
		{"", Failed, true, Failed},
		{"", Inconclusive, true, Inconclusive},
		{"", Passed, false, Failed}, // a pass needs a confirmed cleanup
		{"", Failed, false, Failed},
		{"", Inconclusive, false, Inconclusive},
		{Passed, Passed, true, Passed},
		{Passed, Passed, false, Failed},
		{Passed, Failed, true, Failed},
		{Passed, Inconclusive, true, Inconclusive},
		{Failed, Failed, true, Passed},
		{Failed, Passed, true, Failed},
		{Failed, Inconclusive, true, Inconclusive},
		{Inconclusive, Inconclusive, true, Passed},
		{Inconclusive, Passed, true, Failed},
		{Inconclusive, Failed, true, Failed},
	}
	for _, tt := range tests {
		if got := Counted(tt.expected, tt.observed, tt.cleanup); got != tt.want {
			t.Errorf("Counted(%q, %q, cleanup %v) = %q, want %q", tt.expected, tt.observed, tt.cleanup, got, tt.want)
		}
	}
}

func TestWorst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		codes []ExitCode
		want  ExitCode
	}{
		{nil, ExitPassed},
		{[]ExitCode{ExitPassed, ExitPassed}, ExitPassed},
		{[]ExitCode{ExitInconclusive, ExitPassed}, ExitInconclusive},
		{[]ExitCode{ExitPartial, ExitPassed}, ExitPartial},
		{[]ExitCode{ExitPartial, ExitInconclusive}, ExitInconclusive},
		{[]ExitCode{ExitFailed, ExitPartial}, ExitFailed},
		{[]ExitCode{ExitPassed, ExitFailed, ExitInconclusive}, ExitFailed}, // 1 beats 3 beats 0
		{[]ExitCode{ExitFailed, ExitUsage}, ExitUsage},
		{[]ExitCode{ExitFailed, ExitInterrupted}, ExitInterrupted},
		{[]ExitCode{ExitInterrupted, ExitInternal, ExitFailed}, ExitInternal},
		{[]ExitCode{ExitCode(42)}, ExitCode(42)}, // unknown codes are as severe as internal errors
	}
	for _, tt := range tests {
		if got := Worst(tt.codes...); got != tt.want {
			t.Errorf("Worst(%v) = %d, want %d", tt.codes, got, tt.want)
		}
	}
	if got := WorstOf(Passed, Inconclusive, Failed); got != ExitFailed {
		t.Errorf("WorstOf = %d, want %d", got, ExitFailed)
	}
	if got := WorstOf(Verdict("bogus")); got != ExitInternal {
		t.Errorf("an invalid verdict is a bug: WorstOf = %d, want %d", got, ExitInternal)
	}
}

func TestClassVerdictAndRetry(t *testing.T) {
	t.Parallel()
	want := map[FailureClass]struct {
		v     Verdict
		retry bool
		words string
	}{
		"":                      {Passed, false, ""},
		CandidateFailure:        {Failed, false, "candidate failure"},
		ProviderVariance:        {Inconclusive, true, "provider variance"},
		TransientInfrastructure: {Inconclusive, true, "transient infrastructure failure"},
		PermanentInfrastructure: {Inconclusive, false, "permanent infrastructure failure"},
		SecretLeak:              {Failed, false, "secret leak"},
		CleanupFailure:          {Failed, false, "cleanup failure"},
	}
	for c, w := range want {
		if c.Verdict() != w.v || c.Retryable() != w.retry || c.Words() != w.words {
			t.Errorf("%q: verdict %q retryable %v words %q; want %q %v %q", c, c.Verdict(), c.Retryable(), c.Words(), w.v, w.retry, w.words)
		}
		if c != "" && !c.Valid() {
			t.Errorf("%q not valid", c)
		}
	}
	if len(FailureClasses) != len(want)-1 {
		t.Errorf("FailureClasses has %d classes, the table %d", len(FailureClasses), len(want)-1)
	}
	if _, err := ParseClass("flaky"); err == nil {
		t.Error("ParseClass accepted an unknown class")
	}
	if _, err := Parse("maybe"); err == nil {
		t.Error("Parse accepted an unknown verdict")
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	cause := errors.New("boom")
	tests := []struct {
		f      *Fault
		origin Origin
		class  FailureClass
	}{
		{HarnessFault(cause, true), Harness, TransientInfrastructure},
		{HarnessFault(cause, false), Harness, PermanentInfrastructure},
		{CandidateFault(cause), Candidate, CandidateFailure},
		{ProviderFault(cause, ""), Provider, ProviderVariance},
		{ProviderFault(cause, CandidateFailure), Provider, ProviderVariance}, // a provider is never the candidate
		{ProviderFault(cause, TransientInfrastructure), Provider, TransientInfrastructure},
		{LeakFault(cause), Safety, SecretLeak},
		{CleanupFault(cause), Safety, CleanupFailure},
	}
	for _, tt := range tests {
		if tt.f.Origin != tt.origin || tt.f.Class != tt.class {
			t.Errorf("fault %+v: want origin %s class %s", tt.f, tt.origin, tt.class)
		}
		wrapped := fmt.Errorf("stage: %w", tt.f)
		if got := FaultOf(wrapped); got != tt.f || !errors.Is(wrapped, cause) || tt.f.Error() != "boom" {
			t.Errorf("FaultOf(%v) = %v", wrapped, got)
		}
	}
	if FaultOf(cause) != nil || FaultOf(nil) != nil {
		t.Error("FaultOf found a fault where there is none")
	}
}

func TestRepeatedAndFlaky(t *testing.T) {
	t.Parallel()
	tests := []struct {
		counted []Verdict
		want    Verdict
		flaky   bool
	}{
		{nil, Inconclusive, false},
		{[]Verdict{Passed}, Passed, false},
		{[]Verdict{Passed, Passed, Passed}, Passed, false},
		{[]Verdict{Passed, Failed, Passed}, Failed, true},
		{[]Verdict{Passed, Inconclusive}, Inconclusive, true},
		{[]Verdict{Inconclusive, Failed, Passed}, Failed, true},
		{[]Verdict{Failed, Failed}, Failed, false},
		{[]Verdict{Inconclusive, Inconclusive}, Inconclusive, false},
		{[]Verdict{Passed, Verdict("bogus")}, Verdict("bogus"), true},
	}
	for _, tt := range tests {
		if got := Repeated(tt.counted...); got != tt.want {
			t.Errorf("Repeated(%v) = %q, want %q", tt.counted, got, tt.want)
		}
		if got := Flaky(tt.counted...); got != tt.flaky {
			t.Errorf("Flaky(%v) = %v, want %v", tt.counted, got, tt.flaky)
		}
	}
}

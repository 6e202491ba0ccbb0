// Package verdict is agentproof's one vocabulary of outcomes (docs/ARCHITECTURE.md
// "One vocabulary"): the three verdicts, the failure classes, the origin of a fault (who is to blame), the rule that says how a verdict counts
// in a campaign, the process exit codes and the one worst-of rule over them.
//
// It imports only the standard library, so that every other package (campaign,
// report, the command line) can speak it without an import cycle. No other package
// spells a verdict, a failure class or an exit code as a literal.
package verdict

import "fmt"

// Verdict is the outcome of an attempt or a cell (docs/ARCHITECTURE.md "Verdicts").
type Verdict string

// The three verdicts.
const (
	// Passed: complete evidence, every matcher passed, cleanup confirmed, no leak.
	Passed Verdict = "passed"
	// Failed: complete evidence and the candidate is at fault (candidate_failure), or a
	// safety rule broke (secret_leak, cleanup_failure).
	Failed Verdict = "failed"
	// Inconclusive: the evidence is incomplete (a missed deadline of a live provider, a
	// collector error, an unreached matcher, an interruption) or the harness was at fault.
	Inconclusive Verdict = "inconclusive"
)

// Verdicts lists the verdicts in the order a report shows them.
var Verdicts = []Verdict{Passed, Failed, Inconclusive}

// Valid reports whether v is one of the three verdicts.
func (v Verdict) Valid() bool { return v == Passed || v == Failed || v == Inconclusive }

// Parse returns the verdict named s, or an error naming the three.
func Parse(s string) (Verdict, error) {
	if v := Verdict(s); v.Valid() {
		return v, nil
	}
	return "", fmt.Errorf("%q is not a verdict (passed, failed or inconclusive)", s)
}

// ExitCode is the exit code a verdict contributes to a campaign: 0 passed, 1 failed,
// 3 inconclusive. An invalid verdict contributes ExitInternal (it is a bug).
func (v Verdict) ExitCode() ExitCode {
	switch v {
	case Passed:
		return ExitPassed
	case Failed:
		return ExitFailed
	case Inconclusive:
		return ExitInconclusive
	}
	return ExitInternal
}

// Judgement is an attempt's verdict with its failure class ("" when passed) and a
// one-sentence reason for humans and reports.
type Judgement struct {
	Verdict      Verdict      `json:"verdict"`
	FailureClass FailureClass `json:"failureClass,omitempty"`
	Reason       string       `json:"reason"`
}

// Counted is how an attempt's verdict counts in its campaign (docs/ARCHITECTURE.md
// "Verdicts"; catalog Suite.ExpectedVerdicts): the one "counted as passed" rule.
//
//   - A verdict of passed without a confirmed cleanup counts as failed (a cell
//     passes only when its cleanup passed), whatever was expected.
//   - An ordinary cell (expected == "") counts as its verdict.
//   - A calibration cell counts as passed exactly when the observed verdict equals the
//     expected one; otherwise as inconclusive when the observed verdict is
//     inconclusive (the evidence cannot show whether the expectation holds) and as
//     failed when it is not (the calibration was contradicted).
func Counted(expected, observed Verdict, cleanupConfirmed bool) Verdict {
	switch {
	case observed == Passed && !cleanupConfirmed:
		return Failed
	case expected == "":
		return observed
	case expected == observed:
		return Passed
	case observed == Inconclusive:
		return Inconclusive
	}
	return Failed
}

// Repeated is the counted verdict of a cell run several times (`run --repeat N`;
// docs/ARCHITECTURE.md "Repeats"), from the counted verdicts of its repetitions (each
// by Counted): failed when any repetition failed, else inconclusive when any was
// inconclusive, else passed. A cell passes only when every repetition passed (pass^k),
// so a flaky cell never passes. No repetitions is inconclusive (nothing was observed).
// An invalid verdict is returned as it is (WorstOf makes it an internal error).
func Repeated(counted ...Verdict) Verdict {
	if len(counted) == 0 {
		return Inconclusive
	}
	out := Passed
	for _, v := range counted {
		switch {
		case !v.Valid():
			return v
		case v == Failed:
			out = Failed
		case v == Inconclusive && out == Passed:
			out = Inconclusive
		}
	}
	return out
}

// Flaky reports whether the counted verdicts of a cell's repetitions disagree (at
// least two different verdicts). A flaky cell's verdict is still Repeated's: it counts
// as failed (exit 1) when a repetition failed, as inconclusive (exit 3) when the others
// passed and one was inconclusive; flakiness has no exit code of its own.
func Flaky(counted ...Verdict) bool {
	for _, v := range counted[min(1, len(counted)):] {
		if v != counted[0] {
			return true
		}
	}
	return false
}

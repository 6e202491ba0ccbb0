package result

import "github.com/agentproof/agentproof/verdict"

// CellState is how one cell of a campaign shows in the reports that list cells (the
// runner matrix, CTRF, JUnit): its counted outcome, or why it has none.
type CellState string

const (
	// StatePassed: the cell counts as passed (verdict.Counted).
	StatePassed CellState = "passed"
	// StateFailed: the cell counts as failed.
	StateFailed CellState = "failed"
	// StateKnownFailure: the cell ended as its entry in the catalog's baseline of
	// known failures expects (failed by the candidate, or inconclusive): it does not
	// fail the campaign.
	StateKnownFailure CellState = "known_failure"
	// StateUnexpectedPass: a cell of the baseline of known failures passed: its entry
	// is stale ("unexpectedly passed — remove it from the baseline"), and it counts as
	// failed until the entry is removed.
	StateUnexpectedPass CellState = "unexpected_pass"
	// StateNotRunHere: the cell was selected but this machine cannot provide its
	// environment, so it did not run; StateOf reports this state for the results that
	// record it.
	StateNotRunHere CellState = "not_run_here"
	// StateInconclusive: the cell ran and counts as inconclusive.
	StateInconclusive CellState = "inconclusive"
	// StateMissing: the cell was expected and left no result (a synthetic result).
	StateMissing CellState = "missing"
)

// CellStates are the states in the order reports list them.
var CellStates = []CellState{StatePassed, StateFailed, StateUnexpectedPass, StateKnownFailure, StateNotRunHere, StateInconclusive, StateMissing}

// StateOf is the state of r, the one mapping from a stored result to a CellState:
// not run here for a cell whose environment this machine could not provide (a
// synthetic result with NotRunHere), missing for any other synthetic result, else
// StateFor its counted outcome (Outcome), its failure class and its known failure's
// expectation.
func StateOf(r *Result) CellState {
	if r.NotRunHere != "" {
		return StateNotRunHere
	}
	if r.Synthetic {
		return StateMissing
	}
	var known verdict.Verdict
	if r.KnownFailure != nil {
		known = r.KnownFailure.Expected
	}
	return StateFor(Outcome(r), r.FailureClass, known)
}

// StateFor is the one rule of a cell's state, from its counted verdict
// (verdict.Counted, or verdict.Repeated of its repetitions), the failure class of its
// judgement and known, the verdict its known-failure entry expects ("" for a cell with
// no entry; otherwise failed or inconclusive):
//
//   - no entry: the counted verdict;
//   - counted passed: an unexpected pass (the baseline is stale);
//   - counted as expected: a known failure — an expected failure only when the
//     candidate failed: a secret leak or a cleanup failure is never hidden by the
//     baseline, it stays failed;
//   - anything else: the counted verdict (an expected failure that ended
//     inconclusive is inconclusive; an expected inconclusive that failed, failed).
func StateFor(counted verdict.Verdict, class verdict.FailureClass, known verdict.Verdict) CellState {
	switch {
	case known == "":
	case counted == verdict.Passed:
		return StateUnexpectedPass
	case counted == known && (known != verdict.Failed || class == verdict.CandidateFailure):
		return StateKnownFailure
	}
	switch counted {
	case verdict.Passed:
		return StatePassed
	case verdict.Failed:
		return StateFailed
	}
	return StateInconclusive
}

// Counts is the verdict the state counts as toward the campaign's counts and exit
// code: a known failure as passed (it does not fail the campaign; it is counted apart
// as a known failure), an unexpected pass as failed, missing as inconclusive (nothing
// was observed), the others as themselves; a cell not run here as inconclusive.
func (s CellState) Counts() verdict.Verdict {
	switch s {
	case StatePassed, StateKnownFailure:
		return verdict.Passed
	case StateFailed, StateUnexpectedPass:
		return verdict.Failed
	}
	return verdict.Inconclusive
}

// Words name the state for humans: "known failure", "unexpectedly passed — remove it
// from the baseline", "not run here"; the others as they are spelled.
func (s CellState) Words() string {
	switch s {
	case StateKnownFailure:
		return "known failure"
	case StateUnexpectedPass:
		return "unexpectedly passed — remove it from the baseline"
	case StateNotRunHere:
		return "not run here"
	}
	return string(s)
}

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
	// StateKnownFailure: the cell failed as a declared known failure of its runner
	// expects; a catalog declares known failures, and StateOf reports this state for
	// the results that record one.
	StateKnownFailure CellState = "known_failure"
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
var CellStates = []CellState{StatePassed, StateFailed, StateKnownFailure, StateNotRunHere, StateInconclusive, StateMissing}

// StateOf is the state of r, the one mapping from a stored result to a CellState:
// missing for a synthetic result, else its counted outcome (Outcome).
func StateOf(r *Result) CellState {
	if r.Synthetic {
		return StateMissing
	}
	switch Outcome(r) {
	case verdict.Passed:
		return StatePassed
	case verdict.Failed:
		return StateFailed
	}
	return StateInconclusive
}

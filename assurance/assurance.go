// Package assurance turns evidence into an assurance class: Verified, Failed or
// Inconclusive, always with a reason (seed 003, "Unknown vs failed"; DESIGN.md
// "Verdicts"). The worker never calls it; callers classify stored records.
//
// The rule is conservative: Failed only for a known unexpected exit code of a run whose
// evidence is otherwise complete. A timeout, a collector error, a terminating signal, a
// null exit code, an unconfirmed exit, unclosed stdio or a quarantined workspace is
// Inconclusive, because the evidence does not show what the program would have done.
//
// Seed 003 lists the fixture EXIT codes (pass 0, fail 1, usage 64, outputError 74,
// watchdog 124, parentLost 125) without saying which of them are "known unexpected". We
// read 1 (fail) and 64 (usage: the program refused its own arguments) as outcomes of the
// program, hence Failed; 74 (it could not write its output), 124 (its own watchdog fired)
// and 125 (it lost its parent) describe the collection, not the program, hence
// Inconclusive. Any other exit code is unknown and Inconclusive.
package assurance

import (
	"fmt"

	"github.com/agentproof/agentproof/evidence"
)

// Class is an assurance class.
type Class string

// The three assurance classes.
const (
	Verified     Class = "Verified"
	Failed       Class = "Failed"
	Inconclusive Class = "Inconclusive"
)

// Result is a class with the reason it was given (one sentence, for humans and reports).
type Result struct {
	Class  Class  `json:"class"`
	Reason string `json:"reason"`
}

// Fixture exit codes (seed 003, EXIT) as the classifier reads them.
const (
	exitPass        = 0
	exitFail        = 1
	exitUsage       = 64
	exitOutputError = 74
	exitWatchdog    = 124
	exitParentLost  = 125
)

// Classify returns the assurance class of one process observation record. It never
// fails: anything it cannot vouch for is Inconclusive with a reason.
func Classify(meta evidence.Metadata) Result {
	o := meta.Observation
	switch {
	case o.CollectorError != nil:
		return Result{Inconclusive, "collector error: " + *o.CollectorError}
	case o.TimedOut:
		return Result{Inconclusive, "the process timed out"}
	case o.OutputExceeded:
		return Result{Inconclusive, fmt.Sprintf("output exceeded the %d-byte budget", o.MaxOutputBytes)}
	case o.Aborted:
		return Result{Inconclusive, "the run was aborted"}
	case !o.Exited:
		return Result{Inconclusive, "the exit was not confirmed"}
	case !o.StdioClosed:
		return Result{Inconclusive, "stdout/stderr did not close"}
	case o.Signal != nil:
		return Result{Inconclusive, "the process was ended by " + *o.Signal}
	case o.ExitCode == nil:
		return Result{Inconclusive, "no exit code was observed"}
	case o.Workspace != evidence.WorkspaceRemoved:
		return Result{Inconclusive, "cleanup not confirmed: workspace " + o.Workspace + " (" + o.WorkspaceReason + ")"}
	}
	switch code := *o.ExitCode; code {
	case exitPass:
		return Result{Verified, "exited 0 with complete evidence and a removed workspace"}
	case exitFail:
		return Result{Failed, "exited 1 (fail)"}
	case exitUsage:
		return Result{Failed, "exited 64 (usage: the program refused its arguments)"}
	case exitOutputError:
		return Result{Inconclusive, "exited 74 (the program could not write its output)"}
	case exitWatchdog:
		return Result{Inconclusive, "exited 124 (the program's own watchdog ended it)"}
	case exitParentLost:
		return Result{Inconclusive, "exited 125 (the program lost its parent)"}
	default:
		return Result{Inconclusive, fmt.Sprintf("exited %d, an unknown exit code", code)}
	}
}

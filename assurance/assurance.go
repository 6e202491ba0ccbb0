// Package assurance judges one fixture process observation record: passed, failed or
// inconclusive (verdict.Verdict, the one vocabulary of outcomes), always with a reason
// (docs/ARCHITECTURE.md "Verdicts"). The worker never calls it; callers classify stored
// records. `agentproof fixture run` prints the verdict under its assurance name (Class:
// Verified, Failed or Inconclusive), a view of the verdict, not a second vocabulary.
//
// The rule is conservative: Failed only for a known unexpected exit code of a run whose
// evidence is otherwise complete. A timeout, a collector error, a terminating signal, a
// null exit code, an unconfirmed exit, unclosed stdio or a quarantined workspace is
// Inconclusive, because the evidence does not show what the program would have done.
//
// The fixture programs exit with pass 0, fail 1, usage 64, outputError 74, watchdog 124
// and parentLost 125. We read 1 (fail) and 64 (usage: the program refused its own
// arguments) as outcomes of the program, hence Failed; 74 (it could not write its
// output), 124 (its own watchdog fired) and 125 (it lost its parent) describe the
// collection, not the program, hence Inconclusive. Any other exit code is unknown and
// Inconclusive.
package assurance

import (
	"encoding/json"
	"fmt"

	"github.com/agentproof/agentproof/evidence"
	"github.com/agentproof/agentproof/verdict"
)

// Class is the assurance name of a verdict, as `agentproof fixture run` prints it: a
// view of verdict.Verdict (ClassOf), never compared or stored on its own.
type Class string

// The assurance names of the three verdicts.
const (
	// Verified names verdict.Passed.
	Verified Class = "Verified"
	// Failed names verdict.Failed.
	Failed Class = "Failed"
	// Inconclusive names verdict.Inconclusive, and any invalid verdict.
	Inconclusive Class = "Inconclusive"
)

// ClassOf returns the assurance name of v: Verified for passed, Failed for failed and
// Inconclusive for inconclusive (and for an invalid verdict: nothing is vouched for).
func ClassOf(v verdict.Verdict) Class {
	switch v {
	case verdict.Passed:
		return Verified
	case verdict.Failed:
		return Failed
	}
	return Inconclusive
}

// Result is a verdict with the reason it was given (one sentence, for humans and
// reports). Its JSON form is {"class": ClassOf(Verdict), "reason": Reason}.
type Result struct {
	Verdict verdict.Verdict
	Reason  string
}

// InconclusiveBecause returns an inconclusive Result with reason.
func InconclusiveBecause(reason string) Result { return Result{verdict.Inconclusive, reason} }

// Class returns the assurance name of r's verdict.
func (r Result) Class() Class { return ClassOf(r.Verdict) }

// MarshalJSON encodes r as {"class": <assurance name>, "reason": <reason>}.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Class  Class  `json:"class"`
		Reason string `json:"reason"`
	}{r.Class(), r.Reason})
}

// Fixture exit codes as the classifier reads them.
const (
	exitPass        = 0
	exitFail        = 1
	exitUsage       = 64
	exitOutputError = 74
	exitWatchdog    = 124
	exitParentLost  = 125
)

// Classify returns the verdict of one process observation record with its reason. It
// never fails: anything it cannot vouch for is inconclusive with a reason.
func Classify(meta evidence.Metadata) Result {
	o := meta.Observation
	switch {
	case o.CollectorError != nil:
		return InconclusiveBecause("collector error: " + *o.CollectorError)
	case o.TimedOut:
		return InconclusiveBecause("the process timed out")
	case o.OutputExceeded:
		return InconclusiveBecause(fmt.Sprintf("output exceeded the %d-byte budget", o.MaxOutputBytes))
	case o.Aborted:
		return InconclusiveBecause("the run was aborted")
	case !o.Exited:
		return InconclusiveBecause("the exit was not confirmed")
	case !o.StdioClosed:
		return InconclusiveBecause("stdout/stderr did not close")
	case o.Signal != nil:
		return InconclusiveBecause("the process was ended by " + *o.Signal)
	case o.ExitCode == nil:
		return InconclusiveBecause("no exit code was observed")
	case o.Workspace != evidence.WorkspaceRemoved:
		return InconclusiveBecause("cleanup not confirmed: workspace " + string(o.Workspace) + " (" + o.WorkspaceReason + ")")
	}
	switch code := *o.ExitCode; code {
	case exitPass:
		return Result{verdict.Passed, "exited 0 with complete evidence and a removed workspace"}
	case exitFail:
		return Result{verdict.Failed, "exited 1 (fail)"}
	case exitUsage:
		return Result{verdict.Failed, "exited 64 (usage: the program refused its arguments)"}
	case exitOutputError:
		return InconclusiveBecause("exited 74 (the program could not write its output)")
	case exitWatchdog:
		return InconclusiveBecause("exited 124 (the program's own watchdog ended it)")
	case exitParentLost:
		return InconclusiveBecause("exited 125 (the program lost its parent)")
	default:
		return InconclusiveBecause(fmt.Sprintf("exited %d, an unknown exit code", code))
	}
}

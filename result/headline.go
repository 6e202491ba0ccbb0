package result

import (
	"encoding/json"
	"strings"

	"github.com/agentproof/agentproof/verdict"
)

// AbnormalEnd is the summary of a termination record (a result's Termination: the
// last run's) when the agent's process ended abnormally: it was not started, timed
// out, exceeded its output bound, was killed by a signal, exited non-zero, or exited 0
// leaving its run open (leftOpen: the runner completed it as failed). It is "" for a
// process that exited 0 after completing its run, and for a record that is absent or
// unreadable.
func AbnormalEnd(termination json.RawMessage) string {
	if len(termination) == 0 {
		return ""
	}
	var t struct {
		Summary        string `json:"summary"`
		Started        bool   `json:"started"`
		ExitCode       *int   `json:"exitCode"`
		Signal         string `json:"signal"`
		TimedOut       bool   `json:"timedOut"`
		OutputExceeded bool   `json:"outputExceeded"`
		LeftOpen       bool   `json:"leftOpen"`
	}
	if json.Unmarshal(termination, &t) != nil || strings.TrimSpace(t.Summary) == "" {
		return ""
	}
	exitedNonZero := t.ExitCode != nil && *t.ExitCode != 0
	if !t.Started || t.TimedOut || t.OutputExceeded || t.Signal != "" || exitedNonZero || t.LeftOpen {
		return t.Summary
	}
	return ""
}

// Headline is the reason a cell's line shows for an attempt failed for the candidate's
// fault (class candidate_failure): its reason (the judgement's, a result's Error), led
// by the termination's summary when the agent's run ended abnormally (AbnormalEnd) and
// the reason does not already quote it, so that why the run ended comes before the
// matcher differences it caused. Any other class (a leak, a cleanup failure, the
// harness's faults) already names its cause: its reason is returned as it is. Callers
// clip it like any reason.
func Headline(class verdict.FailureClass, reason string, termination json.RawMessage) string {
	if class != verdict.CandidateFailure {
		return reason
	}
	lead := AbnormalEnd(termination)
	switch {
	case lead == "" || strings.Contains(reason, lead):
		return reason
	case reason == "":
		return lead
	}
	return lead + "; " + reason
}

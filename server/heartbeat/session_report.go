package heartbeat

import (
	"errors"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/worker"
)

// sessionOutcome is the part of a session driver's report (acpReport, piReport) that
// does not depend on the protocol: the worker outcome of the agent process's exit (its
// duration the process's, or wall when the exit has none) and, when the session did
// not start (startErr), the whole report — not started when its process never ran
// (the launch or spawn failed: the harness's), otherwise a failed run whose agent
// broke off the handshake (protocol names it: "ACP", "Pi"). A started session is
// Started, and TimedOut when its turn passed its deadline (turnErr); the report is
// then nil and the protocol writes it.
func sessionOutcome(protocol string, startErr, turnErr error, exit agent.ProcessExit, wall time.Duration) (worker.Outcome, *agent.Report) {
	o := worker.Outcome{ExitCode: exit.ExitCode, Signal: exit.Signal, Exited: exit.ExitCode != nil || exit.Signal != "", TimedOut: exit.TimedOut,
		OutputExceeded: exit.OutputExceeded, SignalsSent: exit.SignalsSent, Duration: time.Duration(exit.DurationMS) * time.Millisecond,
		OutputBytes: exit.StdoutBytes, Escaped: exit.Escaped}
	if o.Duration == 0 {
		o.Duration = wall
	}
	if startErr != nil {
		var se *agent.StartError
		o.Started = errors.As(startErr, &se) && se.Stage != "launch" && se.Stage != "spawn"
		if !o.Started {
			o.SpawnError = startErr
			return o, &agent.Report{Summary: "not started: " + startErr.Error(), RunStatus: controlplane.RunFailed}
		}
		return o, &agent.Report{Summary: "the " + protocol + " session did not start: " + startErr.Error() + "; " + exit.Summary(),
			RunStatus: controlplane.RunFailed, Transcript: []agent.Evidence{stderrEvidence(exit)}}
	}
	o.Started = true
	var te *agent.TurnError
	if errors.As(turnErr, &te) && te.Failure == agent.TurnTimedOut {
		o.TimedOut = true
	}
	return o, nil
}

// stderrEvidence is the agent process's stderr as the run's stderr.log evidence.
func stderrEvidence(exit agent.ProcessExit) agent.Evidence {
	return agent.Evidence{Name: "stderr.log", MediaType: "text/plain", Body: exit.Stderr}
}

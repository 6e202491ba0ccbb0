package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/worker"
)

// sessionReport turns a session run's outcome into the worker outcome and the driver
// report finish records, for protocol proto: a turn that ended with the protocol's
// completed stop reason and no cancel leaves the run succeeded when the agent left it
// open (like a real CLI's clean exit), anything else failed (a Stop makes it cancelled
// in finish); a turn past its deadline counts as timed out; a session that did not
// start is not started when its process never ran (the launch or spawn failed: the
// harness's) and otherwise a failed run whose agent broke off the handshake. The event
// stream is whole when the agent ended the turn itself: also a turn it ended with an
// error (agent_error after the protocol's terminal event), which fails the run as the
// candidate's. A warm session that stays open after the turn (o.open) has no exit yet:
// its outcome is the turn's, its stderr comes with the run that retires it.
func sessionReport(proto session.Protocol, o turnOutcome, wall time.Duration) (worker.Outcome, agent.Report) {
	out, rep := sessionOutcome(proto.Name, o.startErr, o.turnErr, o.exit, wall)
	if rep != nil {
		return out, *rep
	}
	res := o.res
	status := controlplane.RunFailed
	summary := proto.Name + " turn " + res.Failure
	if o.turnErr == nil {
		summary = proto.Name + " turn ended with stop reason " + res.StopReason
		if res.StopReason == proto.Completed && !res.CancelRequested {
			status = controlplane.RunSucceeded
		}
		if res.CancelRequested && !res.CancelHonoured {
			summary += " (" + proto.CancelName + " was not honoured)"
		}
	}
	var te *session.TurnError
	complete := o.turnErr == nil || errors.As(o.turnErr, &te) && te.Failure == session.TurnAgentError && res.Ended
	turn, _ := json.MarshalIndent(res, "", "  ")
	tr := []agent.Evidence{stderrEvidence(o.exit), {Name: proto.Evidence + ".json", MediaType: "application/json", Body: turn}}
	exitSummary := o.exit.Summary()
	if o.open {
		tr = tr[1:]
		out.Duration = wall
		exitSummary = fmt.Sprintf("the warm session's process (pid %d) stays open for the next run", res.Process.PID)
	}
	if len(res.Log) > 0 { // the turn's share of the session log (its name notes a cut)
		name := proto.Evidence + ".jsonl"
		if res.LogCut > 0 {
			name = fmt.Sprintf("%s (%d lines over %d bytes not kept)", name, res.LogCut, session.MaxTurnLogBytes)
		}
		tr = append(tr, agent.Evidence{Name: name, MediaType: "application/jsonl", Body: res.Log})
	}
	return out, agent.Report{Summary: summary + "; " + exitSummary, RunStatus: status, Usage: res.Usage,
		Transcript: tr, EventStreamComplete: &complete}
}

// sessionOutcome is the part of a session run's report that does not depend on the
// turn: the worker outcome of the agent process's exit (its duration the process's,
// or wall when the exit has none) and, when the session did not start (startErr), the
// whole report. A started session is Started, and TimedOut when its turn passed its
// deadline (turnErr); the report is then nil.
func sessionOutcome(protocol string, startErr, turnErr error, exit session.ProcessExit, wall time.Duration) (worker.Outcome, *agent.Report) {
	o := worker.Outcome{ExitCode: exit.ExitCode, Signal: exit.Signal, Exited: exit.ExitCode != nil || exit.Signal != "", TimedOut: exit.TimedOut,
		OutputExceeded: exit.OutputExceeded, SignalsSent: exit.SignalsSent, Duration: time.Duration(exit.DurationMS) * time.Millisecond,
		OutputBytes: exit.StdoutBytes, Escaped: exit.Escaped}
	if o.Duration == 0 {
		o.Duration = wall
	}
	if startErr != nil {
		var se *session.StartError
		o.Started = errors.As(startErr, &se) && se.Started()
		if !o.Started {
			o.SpawnError = startErr
			return o, &agent.Report{Summary: "not started: " + startErr.Error(), RunStatus: controlplane.RunFailed}
		}
		return o, &agent.Report{Summary: "the " + protocol + " session did not start: " + startErr.Error() + "; " + exit.Summary(),
			RunStatus: controlplane.RunFailed, Transcript: []agent.Evidence{stderrEvidence(exit)}}
	}
	o.Started = true
	var te *session.TurnError
	if errors.As(turnErr, &te) && te.Failure == session.TurnTimedOut {
		o.TimedOut = true
	}
	return o, nil
}

// stderrEvidence is the agent process's stderr as the run's stderr.log evidence.
func stderrEvidence(exit session.ProcessExit) agent.Evidence {
	return agent.Evidence{Name: "stderr.log", MediaType: "text/plain", Body: exit.Stderr}
}

// turnFacts summarises a turn for the run's record (api.SessionTurn); everything that
// came from the agent is redacted with redact.
func turnFacts(s *session.Session, res session.TurnResult, exit session.ProcessExit, redact func(string) string) *api.SessionTurn {
	t := &api.SessionTurn{SessionIndex: s.Index, SessionID: redact(s.Info.SessionID), Turn: res.Turn, PID: res.Process.PID,
		ProcessStartTicks: res.Process.StartTime, StopReason: res.StopReason, CancelRequested: res.CancelRequested, CancelHonoured: res.CancelHonoured,
		Message: redact(res.Message), AssistantMessages: res.AssistantMessages, UserMessages: len(res.UserMessages),
		Permissions: []api.PermissionTurn{}, Questions: []api.QuestionTurn{}, Files: []api.FileOp{}, Steers: []api.Delivery{},
		ToolCalls: len(res.ToolCalls), Failure: redact(res.Failure), Exit: redact(exit.Summary())}
	for _, p := range res.Permissions {
		var locs, offered []string
		for _, l := range p.Request.Locations {
			locs = append(locs, redact(l))
		}
		for _, o := range p.Request.Options {
			offered = append(offered, redact(o.ID))
		}
		t.Permissions = append(t.Permissions, api.PermissionTurn{ToolCallID: redact(p.Request.ToolCallID), Kind: p.Request.Kind, Locations: locs,
			Command: redact(p.Request.Command), Offered: offered, OptionID: redact(p.Decision.OptionID), Cancelled: p.Decision.Cancelled, By: p.By,
			RequestedAt: stamp(p.RequestedAt), AnsweredAt: stamp(p.AnsweredAt)})
	}
	for _, q := range res.Questions {
		t.Questions = append(t.Questions, api.QuestionTurn{Method: q.Request.Method, By: q.By, Outcome: questionOutcome(q)})
	}
	for _, f := range res.Files {
		t.Files = append(t.Files, api.FileOp{Op: f.Op, Path: redact(f.Path), Bytes: int64(f.Bytes), AfterCancel: f.AfterCancel, Refused: redact(f.Error)})
	}
	for _, d := range res.Steers {
		t.Steers = append(t.Steers, api.Delivery{Accepted: d.Accepted, Delivered: d.Delivered, Error: redact(d.Error)})
	}
	for _, d := range res.FollowUps {
		t.FollowUps = append(t.FollowUps, api.Delivery{Accepted: d.Accepted, Delivered: d.Delivered, Error: redact(d.Error)})
	}
	for _, v := range res.ProtocolViolations {
		t.ProtocolViolations = append(t.ProtocolViolations, redact(v))
	}
	for _, v := range res.HarnessErrors {
		t.HarnessErrors = append(t.HarnessErrors, redact(v))
	}
	return t
}

// questionOutcome classifies how a native question was closed (api.Question*): a
// confirm answered no is negative_or_cancelled, as Pi sees it.
func questionOutcome(q session.QuestionRecord) string {
	switch {
	case q.Answer.Cancelled || q.By != session.AnsweredByDecider:
		return api.QuestionCancelled
	case q.Request.Method == session.QuestionConfirm && q.Answer.Confirmed:
		return api.QuestionConfirmed
	case q.Request.Method == session.QuestionConfirm:
		return api.QuestionNegativeOrCancelled
	}
	return api.QuestionAnswered
}

// questionSource names a protocol's native questions on the board (the payload's
// source, the questions' id prefix): "pi" for Pi.
func questionSource(proto session.Protocol) string { return strings.ToLower(proto.Name) }

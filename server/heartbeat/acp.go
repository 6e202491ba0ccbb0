package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/worker"
	"github.com/agentproof/agentproof/workspace/watch"
)

// ACP runs (docs/acp.md "In the heartbeat runner"): an acp:<agent> run is one ACP
// session (lifecycle per_turn): the runner starts the agent process with the driver
// (agent.NewACP, ACPDriver.Start: initialize, session/new with the workspace and the
// agentproof MCP server bound to the run), sends the run's prompt as one
// session/prompt, hands every session/request_permission to the board as a permission
// interaction (boardDecider), and closes the session when the turn ends. Stop cancels
// the run's context: the driver sends session/cancel and answers pending permissions
// "cancelled"; the turn must then end with stop reason cancelled. The turn's facts are
// the record's ACP field; its share of the session log (acp-turn.jsonl), the turn
// summary (acp-turn.json) and the agent's stderr are the run's evidence. Under the warm
// lifecycle (warm.go) the session outlives the run: the run binds it, prompts it and
// unbinds it, and the runner retires it at shutdown.

// ACP evidence names in a run's record directory (WorkspaceWatchFile: the workspace
// watcher's whole record, package workspace/watch).
const (
	ACPTurnLogFile     = "acp-turn.jsonl"
	ACPTurnFile        = "acp-turn.json"
	WorkspaceWatchFile = "workspace-watch.json"
)

// watchSummary is a run's api.WorkspaceWatch from the watcher's record (paths
// redacted); a watcher that did not start is an incomplete watch naming why.
func watchSummary(wr *watch.Record, startErr error, redact func(string) string) *api.WorkspaceWatch {
	if wr == nil {
		why := "the workspace watcher did not start"
		if startErr != nil {
			why += ": " + redact(startErr.Error())
		}
		return &api.WorkspaceWatch{Events: []api.WorkspaceEvent{}, Problems: []string{why}}
	}
	w := &api.WorkspaceWatch{Complete: wr.Complete(), Events: []api.WorkspaceEvent{}, More: wr.Dropped}
	for i, e := range wr.Events {
		if i >= api.MaxWatchEvents {
			w.More += len(wr.Events) - i
			break
		}
		w.Events = append(w.Events, api.WorkspaceEvent{Op: string(e.Op), Path: redact(e.Path), Dir: e.Dir})
	}
	if wr.Overflow {
		w.Problems = append(w.Problems, "the kernel's event queue overflowed: mutations were lost")
	}
	for _, p := range wr.Problems {
		w.Problems = append(w.Problems, redact(p))
	}
	return w
}

// executeACP carries an ACP run from its open run to its completion. It is called with
// the run's lock held and unlocks it while the session runs.
func (r *Runner) executeACP(ctx, runCtx context.Context, j job, rc controlplane.RunContext, rec *Record, lock *sync.Mutex) {
	var dc api.DriverConfig
	if j.cfg.DriverConfig != nil {
		dc = *j.cfg.DriverConfig
	}
	env, secrets, lease, err := r.prepareEnv(ctx, j, rec)
	// Under a sandbox the agent process starts through the lease (acp_sandbox.go).
	leased, launchIn := acpLauncher(lease, j, env.StateDir)
	var d *agent.ACPDriver
	if err == nil {
		d, err = agent.NewACP(j.cfg.Driver, dc)
	}
	if err != nil {
		r.finish(j.c, rec, worker.Outcome{SpawnError: err}, agent.Report{Summary: "not started: " + err.Error(), RunStatus: controlplane.RunFailed}, nil, nil)
		lock.Unlock()
		return
	}
	rec.State = api.RunLaunching
	r.remember(rec)
	lock.Unlock() // Stop may now reserve its intent and cancel runCtx

	var markers []string
	if r.cfg.ProcessMarker != "" {
		markers = []string{r.cfg.ProcessMarker}
	}
	startedAt := r.cfg.Now()
	warm := j.cfg.LifecycleMode.Warm()
	var (
		sess     *agent.ACPSession
		startErr error
		ws       *warmSession
		reused   bool
	)
	// The workspace watcher runs from before the session's start (its first prompt)
	// until the process exited (per_turn) or the turn ended (warm).
	watcher, watchErr := watch.Start(env.Workspace)
	if warm {
		// One session serves every run of the agent (warm.go): this run's turn is a new
		// session/prompt in it, its MCP server bound to this run for the turn.
		ws, reused, startErr = r.warmFor(runCtx, j, d, env, secrets, markers, leased, launchIn)
		if startErr == nil {
			sess, secrets, leased = ws.sess, ws.secrets, ws.leased
		}
	} else {
		sess, startErr = d.Start(runCtx, agent.ACPEnv{Run: env, Decider: boardDecider{r: r, j: j, run: j.runID}, Redact: secrets, ExtraMarkers: markers, Launch: launchIn})
	}
	var (
		res     agent.TurnResult
		turnErr error
		exit    agent.ProcessExit
		facts   *api.LaunchFacts
		open    bool // the warm session stays open after this turn
	)
	if startErr == nil {
		var observed func()
		facts, observed, _, _ = r.sessionLaunchFacts(j, startedAt, worker.Spec{Path: sess.Path, Args: sess.Args}, sess.Identity, secrets)
		res, turnErr = sess.Prompt(runCtx, agent.Turn{RunID: j.runID, Text: agent.Prompt(rc)})
		if warm {
			exit, open = r.warmAfterTurn(ws, j)
		} else {
			exit = sess.Close()
		}
		observed()
	}
	var watched *watch.Record
	if watcher != nil {
		wr := watcher.Stop()
		watched = &wr
	}
	if startErr != nil {
		var se *agent.StartError
		if errors.As(startErr, &se) && se.Exit != nil {
			exit = *se.Exit
		}
	}
	endedAt := r.cfg.Now()
	r.closeRunPermissions(j.runID, "the turn ended before the human answered")
	lock.Lock()
	defer lock.Unlock()
	if cur, ok := r.Run(j.runID); ok && cur.Cancellation != nil {
		rec.Cancellation = cur.Cancellation
	}
	o, report := acpReport(startErr, res, turnErr, exit, endedAt.Sub(startedAt), open)
	if startErr == nil {
		rec.WorkspaceWatch = watchSummary(watched, watchErr, secrets.RedactText)
		if watched != nil {
			b, _ := json.MarshalIndent(watched, "", "  ")
			report.Transcript = append(report.Transcript, agent.Evidence{Name: WorkspaceWatchFile, MediaType: "application/json", Body: b})
		}
	}
	if o.Started {
		rec.ProcessStartedAt, rec.ProcessEndedAt = stamp(startedAt), stamp(endedAt)
		rec.Launch = facts
	}
	if startErr == nil {
		rec.ACP = acpTurnFacts(sess, res, exit, secrets.RedactText)
		rec.ACP.Lifecycle, rec.ACP.Reused = api.LifecyclePerTurn, reused
		if warm {
			rec.ACP.Lifecycle = api.LifecycleWarm
		}
		if open {
			rec.ACP.Exit = ""
		}
		report = withPresentation(report, env.StateDir, rec.RunID)
	}
	// The lease provider's account (limits hit, problems, facts) once the process ended:
	// per_turn now, warm when the session was retired after this turn.
	r.finish(j.c, rec, o, report, secrets, leased.account())
}

// withPresentation answers report with the run's presentation record (the comment the
// agent presented as its reply, read from stateDir) or, when the record is unreadable,
// its summary saying so; a run without one leaves report as it is.
func withPresentation(report agent.Report, stateDir, runID string) agent.Report {
	p, err := agent.ReadPresentation(stateDir, runID)
	switch {
	case err != nil:
		report.Summary += "; presentation record unreadable: " + err.Error()
	case p != nil:
		report.Presentation = &agent.Presentation{CommentID: p.CommentID, Text: p.Text}
	}
	return report
}

// acpReport turns an ACP session's start, turn and exit into the worker outcome and
// the driver report finish records: a turn that ended with stop reason end_turn
// leaves the run succeeded when the agent left it open (like a real CLI's clean exit),
// anything else failed (a Stop makes it cancelled in finish); a turn past its deadline
// counts as timed out; a session that did not start is not started when its process
// never ran (the launch or spawn failed: the harness's) and otherwise a failed run
// whose agent broke off the handshake. open is a warm session that stays open after
// the turn: the process has no exit yet (its outcome is the turn's, its stderr comes
// with the run that retires it).
func acpReport(startErr error, res agent.TurnResult, turnErr error, exit agent.ProcessExit, wall time.Duration, open bool) (worker.Outcome, agent.Report) {
	o, rep := sessionOutcome("ACP", startErr, turnErr, exit, wall)
	if rep != nil {
		return o, *rep
	}
	stderr := stderrEvidence(exit)
	status := controlplane.RunFailed
	summary := "ACP turn " + res.Failure
	if turnErr == nil {
		summary = "ACP turn ended with stop reason " + res.StopReason
		if res.StopReason == "end_turn" {
			status = controlplane.RunSucceeded
		}
	}
	if res.CancelRequested && !res.CancelHonoured && turnErr == nil {
		summary += " (session/cancel was not honoured)"
	}
	complete := turnErr == nil
	turn, _ := json.MarshalIndent(res, "", "  ")
	tr := []agent.Evidence{stderr, {Name: ACPTurnFile, MediaType: "application/json", Body: turn}}
	exitSummary := exit.Summary()
	if open {
		tr = tr[1:]
		o.Duration = wall
		exitSummary = fmt.Sprintf("the warm session's process (pid %d) stays open for the next run", res.Process.PID)
	}
	if len(res.Evidence) > 0 { // the turn's share of the session log (its name notes a cut)
		tr = append(tr, agent.Evidence{Name: ACPTurnLogFile, MediaType: res.Evidence[0].MediaType, Body: res.Evidence[0].Body})
	}
	return o, agent.Report{Summary: summary + "; " + exitSummary, RunStatus: status, Usage: res.Usage,
		Transcript: tr, EventStreamComplete: &complete}
}

// acpTurnFacts summarises a turn for the run's record (api.ACPTurn); the agent's
// message is redacted with redact.
func acpTurnFacts(s *agent.ACPSession, res agent.TurnResult, exit agent.ProcessExit, redact func(string) string) *api.ACPTurn {
	t := &api.ACPTurn{SessionIndex: s.Index, SessionID: redact(s.ID), Turn: res.Turn, PID: res.Process.PID, ProcessStartTicks: res.Process.StartTime,
		StopReason: res.StopReason, CancelRequested: res.CancelRequested, CancelHonoured: res.CancelHonoured, Message: redact(res.Message),
		Permissions: []api.ACPPermissionTurn{}, Files: []api.ACPFileOp{}, ToolCalls: len(res.ToolCalls), Failure: redact(res.Failure), Exit: redact(exit.Summary())}
	for _, p := range res.Permissions {
		t.Permissions = append(t.Permissions, api.ACPPermissionTurn{ToolCallID: redact(p.Request.ToolCallID), Kind: p.Request.Kind,
			OptionID: redact(p.Decision.OptionID), Cancelled: p.Decision.Cancelled, By: p.By})
	}
	for _, f := range res.Files {
		t.Files = append(t.Files, api.ACPFileOp{Op: f.Op, Path: redact(f.Path), Bytes: int64(f.Bytes), AfterCancel: f.AfterCancel, Refused: redact(f.Error)})
	}
	for _, v := range res.ProtocolViolations {
		t.ProtocolViolations = append(t.ProtocolViolations, redact(v))
	}
	for _, v := range res.HarnessErrors {
		t.HarnessErrors = append(t.HarnessErrors, redact(v))
	}
	return t
}

// Compile-time check: the board decider is a permission decider.
var _ agent.PermissionDecider = boardDecider{}

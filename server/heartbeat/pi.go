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
)

// Pi runs (docs/pi.md "In the heartbeat runner"): an rpc:pi run is one Pi session
// (lifecycle per_turn; under the warm lifecycle one session serves every run of the
// agent, pi_warm.go): the runner starts Pi in its RPC mode with the driver
// (agent.NewPi, PiDriver.Start: agentproof's extension with the write gate, the native
// question tool and the MCP bridge to the semantic tools, Config.PiTools), sends the run's prompt as one
// Pi prompt acting as the run, and closes the session when the turn ends. The write
// gate's requests become permission interactions on the board exactly like an ACP
// agent's (boardDecider, the same store); a board comment on the run's task while the
// turn runs is delivered to Pi with steer; Pi's native questions become question
// interactions on the board (pi_question.go) (same-turn steering; the comment's wake is
// then consumed, no second run); Stop cancels the run's context: the driver sends Pi's
// abort and answers pending dialogs "cancelled", and the turn must end with stop reason
// aborted. The turn's facts are the record's Pi field; its share of the session log
// (pi-turn.jsonl), the turn summary (pi-turn.json) and Pi's stderr are the run's
// evidence, all through the secret guard (finish).

// Pi evidence names in a run's record directory.
const (
	PiTurnLogFile = "pi-turn.jsonl"
	PiTurnFile    = "pi-turn.json"
)

// PiSteerPoll is how often the runner looks for board comments to steer a running Pi
// turn with.
const PiSteerPoll = 200 * time.Millisecond

// executePi carries an rpc:pi run from its open run to its completion. It is called with
// the run's lock held and unlocks it while the session runs.
func (r *Runner) executePi(ctx, runCtx context.Context, j job, rc controlplane.RunContext, rec *Record, lock *sync.Mutex) {
	var dc api.DriverConfig
	if j.cfg.DriverConfig != nil {
		dc = *j.cfg.DriverConfig
	}
	env, secrets, lease, err := r.prepareEnv(ctx, j, rec)
	if err == nil && lease != nil {
		// The Pi session is driven from the runner over its stdio; nothing launches it
		// inside a sandbox lease, so it is refused rather than run unconfined.
		err = fmt.Errorf("driver %s runs in a local environment only; environment %s is a sandbox", j.cfg.Driver, j.env.ID)
	}
	var d *agent.PiDriver
	if err == nil {
		d, err = agent.NewPi(dc)
	}
	if err != nil {
		r.finish(j.c, rec, worker.Outcome{SpawnError: err}, agent.Report{Summary: "not started: " + err.Error(), RunStatus: controlplane.RunFailed}, nil, nil)
		lock.Unlock()
		return
	}
	rec.State = api.RunLaunching
	r.remember(rec)
	lock.Unlock() // Stop may now reserve its intent and cancel runCtx

	startedAt := r.cfg.Now()
	questions := boardQuestions{c: j.c, run: j.runID, task: j.task.ID, poll: PiQuestionPoll}
	warm := j.cfg.LifecycleMode.Warm()
	var (
		sess     *agent.PiSession
		startErr error
		ws       *warmSession
		reused   bool
	)
	if warm {
		// One Pi session serves every run of the agent (pi_warm.go): this run's turn is
		// a new prompt in it, acting as this run.
		ws, reused, startErr = r.warmPiFor(runCtx, j, d, env, secrets, questions)
		if startErr == nil {
			sess, secrets = ws.pi, ws.secrets
		}
	} else {
		sess, startErr = d.Start(runCtx, agent.PiEnv{Run: env, Permissions: boardDecider{r: r, j: j, run: j.runID}, Questions: questions,
			Tools: r.cfg.PiTools, Redact: secrets, Now: r.cfg.Now})
	}
	var (
		res     agent.PiTurnResult
		turnErr error
		exit    agent.ProcessExit
		facts   *api.LaunchFacts
		open    bool // the warm session stays open after this turn
	)
	if startErr == nil {
		r.mu.Lock()
		if cur := r.runs[j.runID]; cur != nil {
			cur.ProcessStartedAt = stamp(startedAt)
		}
		r.mu.Unlock()
		var observed func()
		facts, observed = r.launchFacts(j, worker.Spec{Path: sess.Path, Args: sess.Args}, secrets)
		if id, err := sess.Identity(); err == nil {
			facts.PID, facts.ProcessStartTicks = id.PID, id.StartTime
			r.mu.Lock()
			if cur := r.runs[j.runID]; cur != nil && cur.Launch == nil {
				cur.Launch = &api.LaunchFacts{PID: id.PID, ProcessStartTicks: id.StartTime}
			}
			r.mu.Unlock()
		} else {
			facts.Problems = append(facts.Problems, "the process identity could not be read: "+err.Error())
		}
		steerCtx, stopSteer := context.WithCancel(runCtx)
		steered := make(chan struct{})
		go func() {
			defer close(steered)
			r.steerComments(steerCtx, j, sess)
		}()
		res, turnErr = sess.Prompt(runCtx, agent.PiTurn{RunID: j.runID, RunToken: env.RunToken, Text: agent.Prompt(rc)})
		stopSteer()
		<-steered
		if warm {
			exit, open = r.warmPiAfterTurn(ws, j)
		} else {
			exit = sess.Close()
		}
		observed()
	} else {
		var se *agent.StartError
		if errors.As(startErr, &se) && se.Exit != nil {
			exit = *se.Exit
		}
	}
	endedAt := r.cfg.Now()
	r.closeRunPermissions(j.runID, "the turn ended before the human answered")
	lock.Lock()
	defer lock.Unlock()
	if cur, ok := r.Run(j.runID); ok {
		if cur.Cancellation != nil {
			rec.Cancellation = cur.Cancellation
		}
		rec.IdempotentStops = cur.IdempotentStops
	}
	o, report := piReport(startErr, res, turnErr, exit, endedAt.Sub(startedAt), open)
	if o.Started {
		rec.ProcessStartedAt, rec.ProcessEndedAt = stamp(startedAt), stamp(endedAt)
		rec.Launch = facts
	}
	if startErr == nil {
		rec.Pi = piTurnFacts(sess, res, exit, secrets.RedactText)
		rec.Pi.Lifecycle, rec.Pi.Reused = api.LifecyclePerTurn, reused
		if warm {
			rec.Pi.Lifecycle = api.LifecycleWarm
		}
		if open {
			rec.Pi.Exit = ""
		}
		if p, err := agent.ReadPresentation(env.StateDir, rec.RunID); err == nil && p != nil {
			report.Presentation = &agent.Presentation{CommentID: p.CommentID, Text: p.Text}
		} else if err != nil {
			report.Summary += "; presentation record unreadable: " + err.Error()
		}
	}
	r.finish(j.c, rec, o, report, secrets, nil)
}

// steerComments delivers every human board comment on the run's task to the running Pi
// turn with steer until ctx ends: it polls the company's state (PiSteerPoll) for
// scheduled issue_commented wakes of the run's actor and task, not yet taken by a run
// of their own, whose comment has no author actor (the human's), and once Pi accepted a comment the wake is consumed
// (skipped with a reason naming the run: the comment was delivered in this turn, it
// starts no second run). A comment Pi did not accept keeps its wake for a later run.
func (r *Runner) steerComments(ctx context.Context, j job, sess *agent.PiSession) {
	t := time.NewTicker(PiSteerPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := j.c.Snapshot(ctx)
		if err != nil {
			continue
		}
		r.mu.Lock()
		skipped := r.skipped[j.company]
		done := map[string]bool{}
		for id := range skipped {
			done[id] = true
		}
		r.mu.Unlock()
		runs := map[string]bool{} // a wake whose run exists was taken (pick)
		for _, run := range st.Runs {
			runs[run.ID] = true
		}
		for _, w := range st.Wakes {
			if w.Status != controlplane.WakeScheduled || w.Reason != controlplane.WakeIssueCommented || w.TaskID != j.task.ID ||
				w.ActorID != j.actor.ID || w.ID == j.wake.ID || done[w.ID] || runs[RunID(j.company, w.ID)] {
				continue
			}
			var p struct {
				CommentID string `json:"commentId"`
			}
			if json.Unmarshal(w.Payload, &p) != nil || p.CommentID == "" {
				continue
			}
			for _, c := range st.Comments {
				if c.ID != p.CommentID || c.AuthorActorID != nil {
					continue
				}
				if err := sess.Steer(ctx, c.Body); err == nil {
					r.skipWake(j.company, w.ID, "the comment was delivered to the running Pi turn of run "+j.runID+" with steer")
					// In memory (the durable record gets the turn's facts at its end): the
					// board sees at once that Pi accepted the steer.
					r.mu.Lock()
					if cur := r.runs[j.runID]; cur != nil {
						if cur.Pi == nil {
							cur.Pi = &api.PiTurn{Permissions: []api.ACPPermissionTurn{}, Questions: []api.PiQuestionTurn{}, Steers: []api.PiDelivery{}}
						}
						cur.Pi.Steers = append(cur.Pi.Steers, api.PiDelivery{Accepted: true})
					}
					r.mu.Unlock()
				}
			}
		}
	}
}

// piReport turns a Pi session's start, turn and exit into the worker outcome and the
// driver report finish records: a turn that ended with stop reason stop leaves the run
// succeeded when the agent left it open, anything else failed (a Stop makes it
// cancelled in finish); a turn past its deadline counts as timed out; a session that
// did not start is not started when its process never ran (the launch or spawn failed:
// the harness's) and otherwise a failed run whose agent broke off before get_state.
//
// open is a warm session that stays open after the turn: the process has no exit yet
// (its outcome is the turn's, its stderr comes with the run that retires it).
func piReport(startErr error, res agent.PiTurnResult, turnErr error, exit agent.ProcessExit, wall time.Duration, open bool) (worker.Outcome, agent.Report) {
	o, rep := sessionOutcome("Pi", startErr, turnErr, exit, wall)
	if rep != nil {
		return o, *rep
	}
	stderr := stderrEvidence(exit)
	var te *agent.TurnError
	errors.As(turnErr, &te)
	status := controlplane.RunFailed
	summary := "Pi turn " + res.Failure
	if turnErr == nil {
		summary = "Pi turn ended with stop reason " + res.StopReason
		if res.StopReason == "stop" && !res.CancelRequested {
			status = controlplane.RunSucceeded
		}
	}
	if res.CancelRequested && !res.CancelHonoured && turnErr == nil {
		summary += " (the abort was not honoured)"
	}
	// The event stream is whole when Pi ended the turn itself (agent_end): also a turn
	// Pi ended with stop reason error (agent_error: the model refused a request that
	// did not fit its script), which fails the run as the candidate's.
	complete := turnErr == nil || te != nil && te.Failure == agent.TurnAgentError && res.Events["agent_end"] > 0
	turn, _ := json.MarshalIndent(res, "", "  ")
	tr := []agent.Evidence{stderr, {Name: PiTurnFile, MediaType: "application/json", Body: turn}}
	exitSummary := exit.Summary()
	if open {
		tr = tr[1:]
		o.Duration = wall
		exitSummary = fmt.Sprintf("the warm session's process (pid %d) stays open for the next run", res.Process.PID)
	}
	if len(res.Evidence) > 0 { // the turn's share of the session log
		tr = append(tr, agent.Evidence{Name: PiTurnLogFile, MediaType: res.Evidence[0].MediaType, Body: res.Evidence[0].Body})
	}
	return o, agent.Report{Summary: summary + "; " + exitSummary, RunStatus: status, Usage: res.Usage,
		Transcript: tr, EventStreamComplete: &complete}
}

// piTurnFacts summarises a turn for the run's record (api.PiTurn); the agent's message
// is redacted with redact.
func piTurnFacts(s *agent.PiSession, res agent.PiTurnResult, exit agent.ProcessExit, redact func(string) string) *api.PiTurn {
	t := &api.PiTurn{SessionIndex: s.Index, SessionID: redact(s.SessionID), Turn: res.Turn, PID: res.Process.PID, ProcessStartTicks: res.Process.StartTime,
		StopReason: res.StopReason, CancelRequested: res.CancelRequested, CancelHonoured: res.CancelHonoured, Message: redact(res.Message),
		AssistantMessages: res.AssistantMessages, UserMessages: len(res.UserMessages), Permissions: []api.ACPPermissionTurn{},
		Questions: []api.PiQuestionTurn{}, Steers: []api.PiDelivery{}, ToolCalls: len(res.ToolCalls), Failure: redact(res.Failure), Exit: redact(exit.Summary())}
	for _, p := range res.Permissions {
		t.Permissions = append(t.Permissions, api.ACPPermissionTurn{ToolCallID: redact(p.Request.ToolCallID), Kind: p.Request.Kind,
			OptionID: redact(p.Decision.OptionID), Cancelled: p.Decision.Cancelled, By: p.By})
	}
	for _, q := range res.Questions {
		t.Questions = append(t.Questions, api.PiQuestionTurn{Method: q.Request.Method, By: q.By, Outcome: piQuestionOutcome(q)})
	}
	for _, d := range res.Steers {
		t.Steers = append(t.Steers, api.PiDelivery{Accepted: d.Accepted, Delivered: d.Delivered, Error: redact(d.Error)})
	}
	for _, v := range res.ProtocolViolations {
		t.ProtocolViolations = append(t.ProtocolViolations, redact(v))
	}
	for _, v := range res.HarnessErrors {
		t.HarnessErrors = append(t.HarnessErrors, redact(v))
	}
	return t
}

// piQuestionOutcome classifies how a native question was closed (api.PiQuestion*): a
// confirm answered no is negative_or_cancelled, as Pi sees it.
func piQuestionOutcome(q agent.QuestionRecord) string {
	switch {
	case q.Answer.Cancelled || q.By != agent.AnsweredByDecider:
		return api.PiQuestionCancelled
	case q.Request.Method == agent.QuestionConfirm && q.Answer.Confirmed:
		return api.PiQuestionConfirmed
	case q.Request.Method == agent.QuestionConfirm:
		return api.PiQuestionNegativeOrCancelled
	}
	return api.PiQuestionAnswered
}

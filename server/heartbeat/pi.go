package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
// agent's (boardDecider, the same store); the Steer button (Runner.Steer) posts the
// human's comment and delivers it to the running turn with steer, and any other board
// comment on the run's task while the turn runs is delivered with follow_up (either
// way the comment's wake is then consumed, no second run); Pi's native questions
// become question interactions on the board (pi_question.go); Stop cancels the run's context: the driver sends Pi's
// abort and answers pending dialogs "cancelled", and the turn must end with stop reason
// aborted. The turn's facts are the record's Pi field; its share of the session log
// (pi-turn.jsonl), the turn summary (pi-turn.json) and Pi's stderr are the run's
// evidence, all through the secret guard (finish).

// Pi evidence names in a run's record directory.
const (
	PiTurnLogFile = "pi-turn.jsonl"
	PiTurnFile    = "pi-turn.json"
)

// PiSteerPoll is how often the runner looks for board comments to deliver to a running
// Pi turn as follow-ups.
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
		var observed func()
		var id agent.ProcessIdentity
		var identified bool
		facts, observed, id, identified = r.sessionLaunchFacts(j, startedAt, worker.Spec{Path: sess.Path, Args: sess.Args}, sess.Identity, secrets)
		if identified {
			r.mu.Lock()
			if cur := r.runs[j.runID]; cur != nil && cur.Launch == nil {
				cur.Launch = &api.LaunchFacts{PID: id.PID, ProcessStartTicks: id.StartTime}
			}
			r.mu.Unlock()
		}
		live := &piLive{j: j, sess: sess, delivered: map[string]bool{}}
		r.mu.Lock()
		r.piLive[j.runID] = live
		r.mu.Unlock()
		pollCtx, stopPoll := context.WithCancel(runCtx)
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			r.followUpComments(pollCtx, live)
		}()
		res, turnErr = sess.Prompt(runCtx, agent.PiTurn{RunID: j.runID, RunToken: env.RunToken, Text: agent.Prompt(rc)})
		stopPoll()
		<-polled
		r.mu.Lock()
		delete(r.piLive, j.runID)
		r.mu.Unlock()
		live.mu.Lock() // a Steer in flight ends first; a later one finds the turn over
		live.over = true
		live.mu.Unlock()
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
		report = withPresentation(report, env.StateDir, rec.RunID)
	}
	r.finish(j.c, rec, o, report, secrets, nil)
}

// piLive is a Pi run's running turn: its job and session, the lock that orders the
// deliveries of the human's messages into it (Steer and the follow-up poller: a
// comment goes in once, as one or the other) and the comments delivered so far.
type piLive struct {
	j         job
	sess      *agent.PiSession
	mu        sync.Mutex
	delivered map[string]bool // comment id → delivered into the turn
	over      bool            // the turn ended (guarded by mu)
}

// followUpComments delivers every human board comment on the run's task that arrives
// while the Pi turn runs, and that was not posted with Steer, as a queued follow-up
// (Pi's follow_up: delivered when the agent would otherwise stop, in the same turn),
// until ctx ends. It polls the company's state (PiSteerPoll) for scheduled
// issue_commented wakes of the run's actor and task, not yet taken by a run of their
// own, whose comment has no author actor (the human's); once Pi accepted a comment the
// wake is consumed (skipped with a reason naming the run: the comment was delivered in
// this turn, it starts no second run). A comment Pi did not accept keeps its wake for
// a later run: no message is lost.
func (r *Runner) followUpComments(ctx context.Context, live *piLive) {
	j := live.j
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
		runs := map[string]bool{} // a wake whose run exists was taken (pick)
		for _, run := range st.Runs {
			runs[run.ID] = true
		}
		for _, w := range st.Wakes {
			if w.Status != controlplane.WakeScheduled || w.Reason != controlplane.WakeIssueCommented || w.TaskID != j.task.ID ||
				w.ActorID != j.actor.ID || w.ID == j.wake.ID || runs[RunID(j.company, w.ID)] {
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
				r.deliverFollowUp(ctx, live, w.ID, c)
			}
		}
	}
}

// deliverFollowUp sends comment c (whose wake is wakeID) to the running turn with
// follow_up unless it was delivered or its wake skipped meanwhile (under live.mu).
func (r *Runner) deliverFollowUp(ctx context.Context, live *piLive, wakeID string, c *controlplane.Comment) {
	j := live.j
	live.mu.Lock()
	defer live.mu.Unlock()
	r.mu.Lock()
	skipped := r.skipped[j.company][wakeID] != ""
	r.mu.Unlock()
	if skipped || live.delivered[c.ID] {
		return
	}
	if err := live.sess.FollowUp(ctx, c.Body); err != nil {
		return
	}
	live.delivered[c.ID] = true
	r.skipWake(j.company, wakeID, "the comment was delivered to the running Pi turn of run "+j.runID+" as a follow-up")
	r.noteDelivery(j.runID, agentDeliveryFollowUp)
}

// Kinds of deliveries into a running Pi turn (noteDelivery).
const (
	agentDeliverySteer    = "steer"
	agentDeliveryFollowUp = "follow_up"
)

// noteDelivery records in memory (the durable record gets the turn's facts at its
// end) that Pi accepted a steer or a follow-up: the board sees it at once.
func (r *Runner) noteDelivery(runID, kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.runs[runID]
	if cur == nil {
		return
	}
	if cur.Pi == nil {
		cur.Pi = &api.PiTurn{Permissions: []api.ACPPermissionTurn{}, Questions: []api.PiQuestionTurn{}, Steers: []api.PiDelivery{}}
	}
	if kind == agentDeliverySteer {
		cur.Pi.Steers = append(cur.Pi.Steers, api.PiDelivery{Accepted: true})
	} else {
		cur.Pi.FollowUps = append(cur.Pi.FollowUps, api.PiDelivery{Accepted: true})
	}
}

// Steer is the Steer button for runID (seed 000 "Pi active controls"): it posts body as
// the human's comment on the run's task (board operation comment, with the idempotency
// key key) and delivers it to the running Pi turn with steer (the same turn, before the
// model's next request); the comment's wake is then consumed (no second run). A
// repeated request with the same key answers the same comment without a second
// delivery. Errors (*controlplane.Error): invalid_request (an empty body), run_missing
// (404), run_not_steerable (409: no running Pi turn, or Pi refused the message — the
// comment then stays, a follow-up or the next run's), the comment's own errors.
func (r *Runner) Steer(ctx context.Context, runID string, req api.SteerRunRequest, key string) (api.SteerRunResponse, error) {
	if strings.TrimSpace(req.Body) == "" {
		return api.SteerRunResponse{}, &controlplane.Error{Code: controlplane.CodeInvalidRequest, Message: "body: the steering message must not be empty"}
	}
	r.mu.Lock()
	live := r.piLive[runID]
	r.mu.Unlock()
	if live == nil {
		if _, ok := r.Run(runID); !ok {
			return api.SteerRunResponse{}, &controlplane.Error{Code: controlplane.CodeRunMissing, Message: "no heartbeat run " + runID}
		}
		return api.SteerRunResponse{}, &controlplane.Error{Code: controlplane.CodeRunNotSteerable, Message: "run " + runID + " has no running Pi turn to steer"}
	}
	j := live.j
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.over {
		return api.SteerRunResponse{}, &controlplane.Error{Code: controlplane.CodeRunNotSteerable, Message: "the Pi turn of run " + runID + " has ended"}
	}
	in, _ := json.Marshal(map[string]string{"issueId": j.task.ID, "body": req.Body})
	res, err := j.c.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardComment, Input: in, IdempotencyKey: key})
	if err != nil {
		return api.SteerRunResponse{}, err
	}
	out := api.SteerRunResponse{RunID: runID, CommentID: res.ID, Accepted: true}
	if live.delivered[res.ID] {
		return out, nil
	}
	if err := live.sess.Steer(ctx, req.Body); err != nil {
		return api.SteerRunResponse{}, &controlplane.Error{Code: controlplane.CodeRunNotSteerable,
			Message: fmt.Sprintf("the running Pi turn of run %s did not take the steering message (comment %s stays on the task): %v", runID, res.ID, err)}
	}
	live.delivered[res.ID] = true
	if st, err := j.c.Snapshot(ctx); err == nil {
		for _, w := range st.Wakes {
			var p struct {
				CommentID string `json:"commentId"`
			}
			if w.Reason == controlplane.WakeIssueCommented && json.Unmarshal(w.Payload, &p) == nil && p.CommentID == res.ID {
				r.skipWake(j.company, w.ID, "the comment was delivered to the running Pi turn of run "+runID+" with steer")
			}
		}
	}
	r.noteDelivery(runID, agentDeliverySteer)
	return out, nil
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
	for _, d := range res.FollowUps {
		t.FollowUps = append(t.FollowUps, api.PiDelivery{Accepted: d.Accepted, Delivered: d.Delivered, Error: redact(d.Error)})
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

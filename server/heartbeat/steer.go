package heartbeat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// Steering (docs/pi.md "In the heartbeat runner"): the running turn of a session whose
// protocol can deliver messages into it (session.Steerer: Pi, Codex's app-server) is
// live: the Steer button (Runner.Steer) posts the human's comment and delivers it to
// the turn with the protocol's steer, and, when the protocol queues follow-ups
// (session.FollowUpper: Pi), any other board comment on the run's task while the turn
// runs is delivered as a follow-up; either way the comment's wake is then consumed (no
// second run). A comment not delivered keeps its wake: it starts the next run.

// SteerPoll is how often the runner looks for board comments to deliver to a running
// turn as follow-ups.
const SteerPoll = 200 * time.Millisecond

// goLive makes sess's turn of j's run live (the Steer button, the follow-up poller)
// until stop is called, after the turn: a Steer in flight ends first, a later one
// finds the turn over.
func (r *Runner) goLive(runCtx context.Context, j job, sess *session.Session) (stop func()) {
	live := &liveTurn{j: j, sess: sess, delivered: map[string]bool{}}
	r.mu.Lock()
	r.steering[j.runID] = live
	r.mu.Unlock()
	pollCtx, stopPoll := context.WithCancel(runCtx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		if sess.FollowsUp() {
			r.followUpComments(pollCtx, live)
		}
	}()
	return func() {
		stopPoll()
		<-polled
		r.mu.Lock()
		delete(r.steering, j.runID)
		r.mu.Unlock()
		live.mu.Lock()
		live.over = true
		live.mu.Unlock()
	}
}

// liveTurn is a steerable session run's running turn: its job and session, the lock that orders the
// deliveries of the human's messages into it (Steer and the follow-up poller: a
// comment goes in once, as one or the other) and the comments delivered so far.
type liveTurn struct {
	j         job
	sess      *session.Session
	mu        sync.Mutex
	delivered map[string]bool // comment id → delivered into the turn
	over      bool            // the turn ended (guarded by mu)
}

// followUpComments delivers every human board comment on the run's task that arrives
// while the turn runs, and that was not posted with Steer, as a queued follow-up
// (delivered when the agent would otherwise stop, in the same turn), until ctx ends.
// It polls the company's state (SteerPoll) for scheduled
// issue_commented wakes of the run's actor and task, not yet taken by a run of their
// own, whose comment has no author actor (the human's); once Pi accepted a comment the
// wake is consumed (skipped with a reason naming the run: the comment was delivered in
// this turn, it starts no second run). A comment Pi did not accept keeps its wake for
// a later run: no message is lost.
func (r *Runner) followUpComments(ctx context.Context, live *liveTurn) {
	j := live.j
	t := time.NewTicker(SteerPoll)
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
func (r *Runner) deliverFollowUp(ctx context.Context, live *liveTurn, wakeID string, c *controlplane.Comment) {
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
	r.skipWake(j.company, wakeID, "the comment was delivered to the running turn of run "+j.runID+" as a follow-up")
	r.noteDelivery(j.runID, agentDeliveryFollowUp)
}

// Kinds of deliveries into a running turn (noteDelivery).
const (
	agentDeliverySteer    = "steer"
	agentDeliveryFollowUp = "follow_up"
)

// noteDelivery records in memory (the durable record gets the turn's facts at its
// end) that the agent accepted a steer or a follow-up: the board sees it at once.
func (r *Runner) noteDelivery(runID, kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.runs[runID]
	if cur == nil {
		return
	}
	t := cur.SessionTurn()
	if t == nil {
		t = &api.SessionTurn{Permissions: []api.PermissionTurn{}, Questions: []api.QuestionTurn{}, Files: []api.FileOp{}, Steers: []api.Delivery{}}
		setSessionTurn(cur, cur.Driver.Kind, t)
	}
	if kind == agentDeliverySteer {
		t.Steers = append(t.Steers, api.Delivery{Accepted: true})
	} else {
		t.FollowUps = append(t.FollowUps, api.Delivery{Accepted: true})
	}
}

// Steer is the Steer button for runID: it posts body as
// the human's comment on the run's task (board operation comment, with the idempotency
// key key) and delivers it to the running turn with the protocol's steer (the same turn, before the
// model's next request); the comment's wake is then consumed (no second run). A
// repeated request with the same key answers the same comment without a second
// delivery. Errors (*controlplane.Error): invalid_request (an empty body), run_missing
// (404), run_not_steerable (409: no running steerable turn, or the agent refused the message — the
// comment then stays, a follow-up or the next run's), the comment's own errors.
func (r *Runner) Steer(ctx context.Context, runID string, req api.SteerRunRequest, key string) (api.SteerRunResponse, error) {
	if strings.TrimSpace(req.Body) == "" {
		return api.SteerRunResponse{}, &controlplane.Error{Code: controlplane.CodeInvalidRequest, Message: "body: the steering message must not be empty"}
	}
	r.mu.Lock()
	live := r.steering[runID]
	r.mu.Unlock()
	if live == nil {
		if _, ok := r.Run(runID); !ok {
			return api.SteerRunResponse{}, &controlplane.Error{Code: controlplane.CodeRunMissing, Message: "no heartbeat run " + runID}
		}
		return api.SteerRunResponse{}, &controlplane.Error{Code: controlplane.CodeRunNotSteerable, Message: "run " + runID + " has no running turn to steer"}
	}
	j := live.j
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.over {
		return api.SteerRunResponse{}, &controlplane.Error{Code: controlplane.CodeRunNotSteerable, Message: "the turn of run " + runID + " has ended"}
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
			Message: fmt.Sprintf("the running turn of run %s did not take the steering message (comment %s stays on the task): %v", runID, res.ID, err)}
	}
	live.delivered[res.ID] = true
	if st, err := j.c.Snapshot(ctx); err == nil {
		for _, w := range st.Wakes {
			var p struct {
				CommentID string `json:"commentId"`
			}
			if w.Reason == controlplane.WakeIssueCommented && json.Unmarshal(w.Payload, &p) == nil && p.CommentID == res.ID {
				r.skipWake(j.company, w.ID, "the comment was delivered to the running turn of run "+runID+" with steer")
			}
		}
	}
	r.noteDelivery(runID, agentDeliverySteer)
	return out, nil
}

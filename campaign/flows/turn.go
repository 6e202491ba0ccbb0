package flows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// defaultPoll is how often a flow looks at the board while it waits when the board
// has no change feed (ChangeWaiter) or the feed fails.
const defaultPoll = 25 * time.Millisecond

// changeWait bounds one wait on the board's change feed: without a change, the flow
// still looks at least this often (a change the feed did not announce is seen late,
// never missed).
const changeWait = 500 * time.Millisecond

// minLookGap is the least time between two looks when the feed announces changes
// back to back (an agent writing events continuously), so that a busy agent does not
// make the flow look hundreds of times a second.
const minLookGap = 10 * time.Millisecond

// ChangeWaiter is the board's change feed (GET /api/changes, api.Changes), which a
// Board may implement (*client.Company does): WaitChanges returns the change sequence
// number once it is above after or when wait passed.
type ChangeWaiter interface {
	WaitChanges(ctx context.Context, after uint64, wait time.Duration) (uint64, error)
}

// pacer decides when a waiting flow looks again: as soon as the board announces a
// change after the last look (long-poll on its change feed, at most changeWait), or
// every poll period when the board has no feed or the feed failed.
type pacer struct {
	feed     ChangeWaiter // nil: poll
	seq      uint64       // the sequence number read before the last look
	poll     time.Duration
	lastLook time.Time
}

// newPacer reads the feed's sequence number before the first look (so that a change
// between that look and the first wait ends the wait at once).
func newPacer(ctx context.Context, s *Session) *pacer {
	p := &pacer{poll: s.Poll}
	if p.poll <= 0 {
		p.poll = defaultPoll
	}
	if w, ok := s.Board.(ChangeWaiter); ok {
		if seq, err := w.WaitChanges(ctx, 0, 0); err == nil {
			p.feed, p.seq = w, seq
		}
	}
	p.lastLook = time.Now()
	return p
}

// wait returns when the flow should look again, or the context's error.
func (p *pacer) wait(ctx context.Context) error {
	if p.feed != nil {
		if gap := minLookGap - time.Since(p.lastLook); gap > 0 {
			if err := sleep(ctx, gap); err != nil {
				return err
			}
		}
		seq, err := p.feed.WaitChanges(ctx, p.seq, changeWait)
		if err == nil {
			p.seq = seq // below the last one: a restarted server; look at once
			p.lastLook = time.Now()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The feed failed (a dead server): fall through to one poll period, so that
		// the look that follows reports the failure and BoardPatience applies.
	}
	err := sleep(ctx, p.poll)
	p.lastLook = time.Now()
	return err
}

// sleep waits d or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// BoardPatience is how long a flow keeps looking at a board that fails every look
// before it blames the harness (a server that died is not a slow agent).
const BoardPatience = 10 * time.Second

// patience is what a waiting flow knows of the board's failures: since when every
// look has failed (zero while the board answers).
type patience struct{ failingSince time.Time }

// look takes the error of one look at the board (nil: it answered) and returns a
// BoardFault naming err once every look has failed for more than BoardPatience while
// ctx is live; nil otherwise.
func (p *patience) look(ctx context.Context, err error) error {
	switch {
	case err == nil:
		p.failingSince = time.Time{}
	case p.failingSince.IsZero():
		p.failingSince = time.Now()
	case time.Since(p.failingSince) > BoardPatience && ctx.Err() == nil:
		return BoardFault(fmt.Sprintf("the board did not answer for %s while the flow waited", BoardPatience), err)
	}
	return nil
}

// view is one look at the attempt through the board: the company state, the task, its
// runs in order and the heartbeat runner's records.
type view struct {
	st      controlplane.State
	task    *controlplane.Task
	runs    []*controlplane.Run
	records []api.HeartbeatRun
}

// look reads the state, then the heartbeat records (in that order: a run the state
// shows terminal whose process still runs has a record still launching).
func look(ctx context.Context, s *Session) (*view, error) {
	st, err := s.Board.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the company state: %w", err)
	}
	recs, err := s.Board.HeartbeatRuns(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the heartbeat runs: %w", err)
	}
	return viewOf(s, st, recs), nil
}

// lookSettle is look for a flow waiting for a run to settle: the heartbeat records
// alone first, and while one of them is still opening or launching, nothing more (no
// run can be settled until then; the records also say why a wake was refused).
// Otherwise it is look.
func lookSettle(ctx context.Context, s *Session) (*view, error) {
	recs, err := s.Board.HeartbeatRuns(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the heartbeat runs: %w", err)
	}
	if busy(recs) {
		return &view{records: recs}, nil
	}
	return look(ctx, s)
}

// busy reports whether a record's process is being opened or launched (or runs).
func busy(recs []api.HeartbeatRun) bool {
	for _, r := range recs {
		if r.State == api.RunOpening || r.State == api.RunLaunching {
			return true
		}
	}
	return false
}

// viewOf is the view of the session's task in state st with records recs.
func viewOf(s *Session, st controlplane.State, recs []api.HeartbeatRun) *view {
	v := &view{st: st, records: recs}
	for _, t := range st.Tasks {
		if t.ID == s.TaskID {
			v.task = t
		}
	}
	for _, r := range st.Runs {
		if r.TaskID == s.TaskID {
			v.runs = append(v.runs, r)
		}
	}
	return v
}

// settled reports whether run n (1-based) exists, is terminal and every heartbeat
// record is done (its process ended), so that the workspace and the state are stable.
func (v *view) settled(n int) bool {
	if len(v.runs) < n || v.runs[n-1].Status == controlplane.RunRunning {
		return false
	}
	return !busy(v.records)
}

// refused returns the reason of a wake the runner could not open, or "".
func (v *view) refused() string {
	for _, r := range v.records {
		if r.State == api.RunNotOpened {
			return fmt.Sprintf("the runner did not open run %s: %s", r.RunID, r.Reason)
		}
	}
	return ""
}

// pending returns the task's pending interaction of kind ("" for any), or nil.
func (v *view) pending(task string, kind controlplane.InteractionKind) *controlplane.Interaction {
	for _, in := range v.st.Interactions {
		if in.TaskID == task && in.Status == controlplane.InteractionPending && (kind == "" || in.Kind == kind) {
			return in
		}
	}
	return nil
}

// waitTurn looks until run n is settled, within the turn deadline when the session has
// one. Errors: a *DeadlineError for a missed turn deadline; a harness fault when the
// runner refused a run or the board stopped answering (the last failed look is named,
// so that a dead server is never mistaken for a slow agent); the context's error for
// the attempt's deadline or a cancellation.
func waitTurn(ctx context.Context, s *Session, n int) (*view, error) {
	ctx, cancel := turnDeadline(ctx, s, n)
	defer cancel()
	pace := newPacer(ctx, s)
	var board patience
	for {
		v, err := lookSettle(ctx, s)
		if fault := board.look(ctx, err); fault != nil {
			return nil, fault
		}
		if err == nil {
			if v.settled(n) {
				s.log("run %d settled: %s %s", n, v.runs[n-1].ID, v.runs[n-1].Status)
				if s.TurnSettled != nil && !s.settled[n] {
					if s.settled == nil {
						s.settled = map[int]bool{}
					}
					s.settled[n] = true
					s.TurnSettled(ctx, n)
				}
				return v, nil
			}
			if why := v.refused(); why != "" {
				return v, permanent(errors.New(why))
			}
		}
		if pace.wait(ctx) != nil {
			return nil, waitError(ctx)
		}
	}
}

// lookFor looks at the board every s.Poll (defaultPoll when unset), each look made by
// lk, until found reports true on one, run 1 settles (settled true) or run 1's wake was
// refused (a permanent error). found's error ends the wait; a board that fails for
// BoardPatience is a BoardFault; the end of ctx is waitError's.
func lookFor(ctx context.Context, s *Session, lk func(context.Context) (*view, error), found func(v *view) (bool, error)) (settled bool, err error) {
	poll := s.Poll
	if poll <= 0 {
		poll = defaultPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	var board patience
	for {
		v, err := lk(ctx)
		if fault := board.look(ctx, err); fault != nil {
			return false, fault
		}
		if err == nil {
			if ok, err := found(v); ok || err != nil {
				return false, err
			}
			if v.settled(1) {
				return true, nil
			}
			if why := v.refused(); why != "" {
				return false, permanent(errors.New(why))
			}
		}
		select {
		case <-ctx.Done():
			return false, waitError(ctx)
		case <-t.C:
		}
	}
}

// turnDeadline bounds ctx by the session's turn timeout for turn n (a *DeadlineError
// cause), when it has one.
func turnDeadline(ctx context.Context, s *Session, n int) (context.Context, context.CancelFunc) {
	if s.TurnTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, s.TurnTimeout, &DeadlineError{Turn: n, Limit: s.TurnTimeout})
}

// waitError says why waiting ended: a turn deadline is its *DeadlineError; anything
// else (the attempt's deadline, a cancellation) is the context's error. A board that
// stopped answering was blamed before (BoardPatience).
func waitError(ctx context.Context) error {
	var de *DeadlineError
	if cause := context.Cause(ctx); errors.As(cause, &de) {
		return de
	}
	return ctx.Err()
}

// submit records that the human submitted a turn now.
func (o *Outcome) submit() { o.Submitted = append(o.Submitted, time.Now()) }

// wait waits for run n of s's task to settle (waitTurn) and returns the settled look;
// nil, with the error in o.Err, when it did not settle.
func (o *Outcome) wait(ctx context.Context, s *Session, n int) *view {
	v, err := waitTurn(ctx, s, n)
	if err != nil {
		o.Err = err
		return nil
	}
	return v
}

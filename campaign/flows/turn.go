package flows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// defaultPoll is how often a flow looks at the board while it waits.
const defaultPoll = 25 * time.Millisecond

// BoardPatience is how long a flow keeps looking at a board that fails every look
// before it blames the harness (a server that died is not a slow agent).
const BoardPatience = 10 * time.Second

// view is one look at the attempt through the board: the company state, the task, its
// runs in order and the heartbeat runner's records.
type view struct {
	st      controlplane.State
	task    *controlplane.Task
	runs    []*controlplane.Run
	records []api.HeartbeatRun
}

// look reads the state and the heartbeat records.
func look(ctx context.Context, s *Session) (*view, error) {
	st, err := s.Board.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the company state: %w", err)
	}
	recs, err := s.Board.HeartbeatRuns(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the heartbeat runs: %w", err)
	}
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
	return v, nil
}

// settled reports whether run n (1-based) exists, is terminal and every heartbeat
// record is done (its process ended), so that the workspace and the state are stable.
func (v *view) settled(n int) bool {
	if len(v.runs) < n || v.runs[n-1].Status == controlplane.RunRunning {
		return false
	}
	for _, r := range v.records {
		if r.State == api.RunOpening || r.State == api.RunLaunching {
			return false
		}
	}
	return true
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
	if s.TurnTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.TurnTimeout, &DeadlineError{Turn: n, Limit: s.TurnTimeout})
		defer cancel()
	}
	poll := s.Poll
	if poll <= 0 {
		poll = defaultPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	var failingSince time.Time
	for {
		v, err := look(ctx, s)
		switch {
		case err == nil:
			failingSince = time.Time{}
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
		case failingSince.IsZero():
			failingSince = time.Now()
		case time.Since(failingSince) > BoardPatience && ctx.Err() == nil:
			return nil, BoardFault(fmt.Sprintf("the board did not answer for %s while the flow waited", BoardPatience), err)
		}
		select {
		case <-ctx.Done():
			return nil, waitError(ctx)
		case <-t.C:
		}
	}
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

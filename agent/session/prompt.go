package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Prompt sends one turn and blocks until the agent ends it. Meanwhile everything the
// protocol reports is recorded, permission requests and questions go to the deciders,
// and the turn is bounded: at the turn deadline, or when ctx ends (a Stop cancels the
// caller's context), the protocol's cancel is sent and the turn gets the cancel grace
// to end. The result is returned even on error (what was observed before the
// failure). Errors: a *TurnError (agent_error: the agent refused the prompt or ended
// the turn with an error; agent_gone: it exited or closed its stream; timed_out: the
// deadline passed, or the turn did not end within the cancel grace; misuse: a closed
// or broken session). A session is broken, and serves no further turn, after
// agent_gone or a turn that did not end even after the cancel.
func (s *Session) Prompt(ctx context.Context, tn Turn) (TurnResult, error) {
	s.promptMu.Lock()
	defer s.promptMu.Unlock()
	t, err := s.begin(tn)
	if err != nil {
		return TurnResult{}, err
	}
	id, idErr := s.Identity()
	s.log.note("turn_start", map[string]any{"turn": t.n, "runId": tn.RunID, "sessionId": s.Info.SessionID, "pid": id.PID, "startTime": id.StartTime})
	a := s.await(ctx, t, tn)
	res := s.finish(t, id, idErr)
	return s.conclude(res, a)
}

// begin opens the session's next turn for tn. Errors: misuse (closed or broken).
func (s *Session) begin(tn Turn) (*turn, error) {
	s.mu.Lock()
	if s.closed || s.broken != nil {
		why := s.broken
		if s.closed {
			why = errors.New("the session is closed")
		}
		s.mu.Unlock()
		return nil, &TurnError{Protocol: s.proto.Name, Failure: TurnMisuse, Err: why}
	}
	s.turns++
	t := newTurn(s.turns, tn.RunID, s.env.Now())
	s.cur = t
	s.mu.Unlock()
	if tn.RunToken != "" {
		s.log.addSecrets(tn.RunToken)
	}
	s.log.beginTurn(t.n)
	return t, nil
}

// answer is how a turn's wait ended: the protocol's error, the failure the layer
// decided (the deadline), and whether the turn never ended (stuck: the agent did not
// end it even after the cancel).
type answer struct {
	err     error
	failure TurnFailure
	stuck   bool
}

// await runs the protocol's Prompt and waits for its end, the caller's context, the
// turn deadline or the end of the agent's stream.
func (s *Session) await(ctx context.Context, t *turn, tn Turn) answer {
	// The protocol's context ends only at the turn's hard end: a Stop is the
	// protocol's cancel (Cancel), after which the agent must still end the turn.
	turnCtx, cancelTurn := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTurn()
	done := make(chan answer, 1)
	go func() { done <- answer{err: s.conn.Prompt(turnCtx, tn)} }()
	deadline := time.NewTimer(s.env.Bounds.Turn)
	defer deadline.Stop()
	select {
	case a := <-done:
		return a
	case <-ctx.Done():
		// The caller gives up (a Stop): cancel, then wait the grace.
		a, answered := s.cancelAndWait(t, done, "the caller's context ended: "+context.Cause(ctx).Error())
		if !answered {
			a.failure, a.stuck = TurnTimedOut, true
		}
		return a
	case <-deadline.C:
		why := fmt.Sprintf("the turn deadline (%v) passed", s.env.Bounds.Turn)
		a, answered := s.cancelAndWait(t, done, why)
		if answered {
			a.err = fmt.Errorf("%s; the turn ended after %s", why, s.proto.CancelName)
		}
		a.failure, a.stuck = TurnTimedOut, !answered
		return a
	case <-s.conn.Done():
		select {
		case a := <-done:
			return a
		case <-time.After(time.Second):
			return answer{err: fmt.Errorf("%w: the agent closed its %s stream", ErrGone, s.proto.Name)}
		}
	}
}

// cancelAndWait sends the protocol's cancel for a turn that must end now (why) and
// waits the cancel grace for the turn's end.
func (s *Session) cancelAndWait(t *turn, done <-chan answer, why string) (answer, bool) {
	_ = s.cancel(t, why)
	select {
	case a := <-done:
		return a, true
	case <-time.After(s.env.Bounds.CancelGrace):
		return answer{err: fmt.Errorf("%s; %s was sent and the turn did not end within %v", why, s.proto.CancelName, s.env.Bounds.CancelGrace)}, false
	}
}

// finish closes turn t and returns its record: what is still pending is released (and
// its record awaited: awaitRecorded), the cancel is judged against the protocol's
// cancelled stop reason.
func (s *Session) finish(t *turn, id ProcessIdentity, idErr error) TurnResult {
	s.mu.Lock()
	s.cur = nil
	s.mu.Unlock()
	t.mu.Lock()
	t.ended = true
	var waits []chan struct{}
	for _, p := range t.pending {
		p.cancel()
		waits = append(waits, p.recorded)
	}
	t.mu.Unlock()
	unrecorded := awaitRecorded(waits, s.env.Bounds.CancelGrace)
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.res
	if unrecorded > 0 {
		r.HarnessErrors = appendBounded(r.HarnessErrors, fmt.Sprintf("%d pending request(s) not answered within %v of the turn's end", unrecorded, s.env.Bounds.CancelGrace))
	}
	r.SessionID, r.Process = s.Info.SessionID, id
	if idErr != nil && !s.proc.exited() {
		// A live process whose identity cannot be read is our fault; a dead one is the
		// turn's failure (agent_gone).
		r.HarnessErrors = appendBounded(r.HarnessErrors, "reading the process identity: "+idErr.Error())
	}
	r.EndedAt = s.env.Now()
	r.DurationMS = r.EndedAt.Sub(r.StartedAt).Milliseconds()
	r.Message = t.msg.String()
	if t.cancelRequested {
		at := t.cancelAt
		r.CancelRequested, r.CancelRequestedAt = true, &at
		r.CancelHonoured = r.StopReason == s.proto.Cancelled
		if r.Ended && !r.CancelHonoured {
			r.ProtocolViolations = appendBounded(r.ProtocolViolations, fmt.Sprintf("the turn ended with stop reason %q after %s (the protocol requires %q)",
				r.StopReason, s.proto.CancelName, s.proto.Cancelled))
		}
	}
	for _, l := range []*[]string{&r.UserMessages, &r.Notices, &r.ProtocolViolations, &r.HarnessErrors} {
		*l = slices.Clone(*l)
	}
	r.ToolCalls, r.Plan, r.Files = slices.Clone(r.ToolCalls), slices.Clone(r.Plan), slices.Clone(r.Files)
	r.Permissions, r.Questions = slices.Clone(r.Permissions), slices.Clone(r.Questions)
	r.Steers, r.FollowUps = slices.Clone(r.Steers), slices.Clone(r.FollowUps)
	return r
}

// conclude classifies a's failure into res (the session broken when the agent went
// away or the turn never ended), notes the turn's end and attaches its log.
func (s *Session) conclude(res TurnResult, a answer) (TurnResult, error) {
	failure := a.failure
	if failure == "" && a.err != nil {
		failure = TurnAgentError
		if s.proc.exited() || errors.Is(a.err, ErrGone) {
			failure = TurnAgentGone
		}
	}
	if failure == "" {
		s.log.note("turn_end", map[string]any{"turn": res.Turn, "stopReason": res.StopReason, "durationMs": res.DurationMS})
		res.Log, res.LogCut = s.log.turnEvidence()
		return res, nil
	}
	err := a.err
	if err == nil {
		err = errors.New("the turn did not end")
	}
	res.Failure = string(failure) + ": " + err.Error()
	if failure == TurnAgentGone || a.stuck {
		s.mu.Lock()
		s.broken = fmt.Errorf("turn %d: %s", res.Turn, res.Failure)
		s.mu.Unlock()
	}
	s.log.note("turn_end", map[string]any{"turn": res.Turn, "failure": res.Failure})
	res.Log, res.LogCut = s.log.turnEvidence()
	return res, &TurnError{Protocol: s.proto.Name, Failure: failure, Err: err}
}

// awaitRecorded waits until each request the turn's end released is recorded (its
// decider returned on its ended context), at most grace in all; it returns how many
// were not. A request released at the end is answered "cancelled" and must be in the
// turn's result: the end does not wait for the decider's goroutine otherwise.
func awaitRecorded(waits []chan struct{}, grace time.Duration) int {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for i, w := range waits {
		select {
		case <-w:
		case <-deadline.C:
			return len(waits) - i
		}
	}
	return 0
}

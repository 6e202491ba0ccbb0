package session

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Host is the layer's side of a connection (the Session implements it): what a
// protocol reports of the running turn and the human's answers it asks for. Every
// method is safe for concurrent use and may be called while no turn runs (between
// turns what the agent sends is counted in EventsOutsideTurns, a request or question
// is answered "cancelled").
type Host interface {
	// Update runs f on the running turn's record, under the turn's lock, and reports
	// whether it ran (false between turns and after the turn ended).
	Update(f func(r Recorder)) bool
	// Permission asks the session's permission decider about req (its Seq, Turn and
	// RunID are the layer's) and returns what the agent is to be told: an offered
	// option, or Cancelled (the turn was cancelled or ended, the decider failed or
	// chose an option not offered). It blocks until then; ctx's end (the agent
	// withdrew the request) answers it cancelled.
	Permission(ctx context.Context, req PermissionRequest) PermissionDecision
	// Question asks the session's question decider about req (Seq, Turn and RunID are
	// the layer's) and returns the answer to give the agent, or Cancelled, like
	// Permission; a select answered with a value that is not an option is the
	// decider's fault (cancelled, a harness error).
	Question(ctx context.Context, req QuestionRequest) QuestionAnswer
	// Note writes a note of the protocol to the session log (data as JSON, redacted).
	Note(event string, data any)
}

var _ Host = (*Session)(nil)

// current returns the running turn, or nil between turns.
func (s *Session) current() *turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Update runs f on the running turn's record (Host).
func (s *Session) Update(f func(r Recorder)) bool {
	t := s.current()
	if t == nil {
		s.mu.Lock()
		s.outside++
		s.mu.Unlock()
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return false
	}
	f(Recorder{t})
	return true
}

// Note writes a protocol's note to the session log (Host).
func (s *Session) Note(event string, data any) { s.log.note(event, data) }

// ask is one permission request or question while it is pending: the turn it belongs
// to, its session-wide sequence number, its context (ended by a cancel of the turn,
// the turn's end or the session's close), whether it arrived after the cancel, and
// when it was asked.
type ask struct {
	t         *turn
	seq       int
	ctx       context.Context
	done      func()
	cancelled bool
	at        time.Time
}

// pendingAsk is a pending request as its turn holds it: cancel ends its decider's
// context; recorded is closed once its record is in the turn (the turn's end waits for
// it, so a request the end cancels is in the turn's result).
type pendingAsk struct {
	cancel   context.CancelFunc
	recorded chan struct{}
}

// open registers a request of the running turn, or returns false between turns.
func (s *Session) open(ctx context.Context) (ask, bool) {
	s.mu.Lock()
	t := s.cur
	s.asks++
	seq := s.asks
	if t == nil {
		s.outside++
	}
	s.mu.Unlock()
	if t == nil {
		return ask{}, false
	}
	a := ask{t: t, seq: seq, at: s.env.Now()}
	var cancel context.CancelFunc
	a.ctx, cancel = context.WithCancel(ctx)
	recorded := make(chan struct{})
	t.mu.Lock()
	a.cancelled = t.cancelRequested || t.ended
	if !a.cancelled {
		t.pending[seq] = pendingAsk{cancel: cancel, recorded: recorded}
	}
	t.mu.Unlock()
	a.done = func() { // deferred: after the request's record is in the turn
		t.mu.Lock()
		delete(t.pending, seq)
		t.mu.Unlock()
		cancel()
		close(recorded)
	}
	return a, true
}

// over reports whether the request must be answered "cancelled" now that the decider
// returned: the turn was cancelled or ended, or the request was withdrawn.
func (a ask) over() bool {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	return a.t.cancelRequested || a.t.ended || a.ctx.Err() != nil
}

// Permission asks the permission decider (Host).
func (s *Session) Permission(ctx context.Context, req PermissionRequest) PermissionDecision {
	cancelled := PermissionDecision{Cancelled: true}
	a, ok := s.open(ctx)
	if !ok {
		s.log.note("permission_decision", map[string]any{"by": AnsweredByCancel, "reason": "no turn is running"})
		return cancelled
	}
	defer a.done()
	req.Seq, req.Turn, req.RunID = a.seq, a.t.n, a.t.runID
	rec := PermissionRecord{Request: req, RequestedAt: a.at, Decision: cancelled, By: AnsweredByCancel}
	if !a.cancelled && s.env.Permissions == nil {
		rec.By, rec.Error = AnsweredByError, "the session has no permission decider"
	} else if !a.cancelled {
		dec, err := s.env.Permissions.Decide(a.ctx, req)
		switch {
		case a.over():
		case err != nil:
			rec.By, rec.Error = AnsweredByError, err.Error()
		case !dec.Cancelled && !slices.ContainsFunc(req.Options, func(o PermissionOption) bool { return o.ID == dec.OptionID }):
			rec.By, rec.Error = AnsweredByError, fmt.Sprintf("the decider chose option %q, which the request does not offer", clip(dec.OptionID, 100))
		default:
			rec.By, rec.Decision = AnsweredByDecider, dec
		}
	}
	rec.AnsweredAt = s.env.Now()
	record(a.t, func(r *TurnResult) *[]PermissionRecord { return &r.Permissions }, rec, rec.Error, "permission request %d: %s", req.Seq)
	s.log.note("permission_decision", map[string]any{"seq": req.Seq, "toolCallId": req.ToolCallID, "by": rec.By,
		"optionId": rec.Decision.OptionID, "cancelled": rec.Decision.Cancelled, "error": rec.Error,
		"waitMs": rec.AnsweredAt.Sub(rec.RequestedAt).Milliseconds()})
	return rec.Decision
}

// Question asks the question decider (Host).
func (s *Session) Question(ctx context.Context, req QuestionRequest) QuestionAnswer {
	cancelled := QuestionAnswer{Cancelled: true}
	a, ok := s.open(ctx)
	if !ok {
		s.log.note("question_answer", map[string]any{"method": req.Method, "by": AnsweredByCancel, "cancelled": true, "reason": "no turn is running"})
		return cancelled
	}
	defer a.done()
	req.Seq, req.Turn, req.RunID = a.seq, a.t.n, a.t.runID
	rec := QuestionRecord{Request: req, RequestedAt: a.at, By: AnsweredByCancel, Answer: cancelled}
	if !a.cancelled {
		ans, err := s.env.Questions.Answer(a.ctx, req)
		switch {
		case a.over():
			if err != nil { // the decider could not close its question after the cancel
				rec.Error = fmt.Sprintf("after the cancel: %v", err)
			}
		case err != nil:
			rec.By, rec.Error = AnsweredByError, fmt.Sprintf("the decider failed: %v", err)
		case req.Method == QuestionSelect && !ans.Cancelled && !slices.Contains(req.Options, ans.Value):
			rec.By, rec.Error = AnsweredByError, fmt.Sprintf("the decider chose %q, which is not one of the options", ans.Value)
		default:
			rec.By, rec.Answer = AnsweredByDecider, ans
		}
	}
	rec.AnsweredAt = s.env.Now()
	record(a.t, func(r *TurnResult) *[]QuestionRecord { return &r.Questions }, rec, rec.Error, "question %d: %s", req.Seq)
	s.log.note("question_answer", map[string]any{"seq": req.Seq, "method": req.Method, "by": rec.By, "cancelled": rec.Answer.Cancelled})
	return rec.Answer
}

// record appends rec to the list of t's record that list selects (counted in Dropped
// when full) and a harness error when errText is set (format gets the sequence number
// and errText).
func record[R any](t *turn, list func(*TurnResult) *[]R, rec R, errText, format string, seq int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := list(&t.res); len(*l) < MaxTurnRecords {
		*l = append(*l, rec)
	} else {
		t.res.Dropped++
	}
	if errText != "" {
		t.res.HarnessErrors = appendBounded(t.res.HarnessErrors, fmt.Sprintf(format, seq, errText))
	}
}

package session

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnsupported is what Steer and FollowUp return for a protocol that cannot deliver
// a message into a running turn.
var ErrUnsupported = errors.New("the protocol cannot deliver a message into a running turn")

// Steerable reports whether the session's protocol can deliver messages into a running
// turn (Steer; FollowUp too when the protocol has follow-ups).
func (s *Session) Steerable() bool {
	_, ok := s.conn.(Steerer)
	return ok
}

// FollowsUp reports whether the session's protocol can queue follow-ups of a running
// turn (FollowUp).
func (s *Session) FollowsUp() bool {
	_, ok := s.conn.(FollowUpper)
	return ok
}

// Steer delivers text to the running turn as a steering message (after the current
// message's tool calls, before the model's next request) and returns once the agent
// accepted it; the turn records it (TurnResult.Steers, delivered when it arrived in
// the conversation). Errors: ErrUnsupported, no turn is running, or the agent refused
// it.
func (s *Session) Steer(ctx context.Context, text string) error {
	st, ok := s.conn.(Steerer)
	if !ok {
		return fmt.Errorf("agent: %s: %w", s.proto.Name, ErrUnsupported)
	}
	return s.deliver(ctx, "steer", text, func(r *TurnResult) *[]DeliveryRecord { return &r.Steers }, st.Steer)
}

// FollowUp queues text as a follow-up of the running turn (delivered when the agent
// would otherwise stop, in the same turn) and returns once the agent accepted it.
// Errors as Steer's.
func (s *Session) FollowUp(ctx context.Context, text string) error {
	fu, ok := s.conn.(FollowUpper)
	if !ok {
		return fmt.Errorf("agent: %s: %w", s.proto.Name, ErrUnsupported)
	}
	return s.deliver(ctx, "follow_up", text, func(r *TurnResult) *[]DeliveryRecord { return &r.FollowUps }, fu.FollowUp)
}

// deliver records a delivery of kind in the list of the running turn that list
// selects, sends it with send and records whether the agent accepted it.
func (s *Session) deliver(ctx context.Context, kind, text string, list func(*TurnResult) *[]DeliveryRecord, send func(context.Context, string) error) error {
	t := s.current()
	if t == nil {
		return fmt.Errorf("agent: no %s turn is running to %s", s.proto.Name, kind)
	}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return fmt.Errorf("agent: no %s turn is running to %s", s.proto.Name, kind)
	}
	l := list(&t.res)
	i := len(*l)
	*l = append(*l, DeliveryRecord{Text: text, SentAt: s.env.Now()})
	t.mu.Unlock()
	err := send(ctx, text)
	t.mu.Lock()
	defer t.mu.Unlock()
	l = list(&t.res)
	if err != nil {
		(*l)[i].Error = err.Error()
		return fmt.Errorf("agent: %s %s: %w", s.proto.Name, kind, err)
	}
	(*l)[i].Accepted = true
	return nil
}

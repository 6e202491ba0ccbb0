package session

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// Permissions (docs/acp.md "Permissions"): an agent asks before a sensitive tool call
// in its protocol's words (ACP session/request_permission, the Pi write gate's confirm
// dialog, Codex's approval requests): the tool call, what it touches and the options it
// offers (allow once, allow always, reject once, reject always). The protocol turns
// every such request into a PermissionRequest and hands it to the layer (Host), which
// numbers it, stamps it and asks the session's PermissionDecider — the human's side.
// In a campaign the decider turns the request into a permission card on the board that
// the harness answers through the board API; in tests it is one of the deciders
// below. When the turn is cancelled (Session.Cancel) every pending request is answered
// "cancelled", whatever the decider does.

// Permission option kinds an agent offers (ACP's PermissionOptionKind; the other
// protocols map their options onto them).
const (
	PermissionAllowOnce    = "allow_once"
	PermissionAllowAlways  = "allow_always"
	PermissionRejectOnce   = "reject_once"
	PermissionRejectAlways = "reject_always"
)

// PermissionOption is one answer the agent offers: its id (what a decision selects), its
// label and its kind (PermissionAllowOnce, …).
type PermissionOption struct {
	ID   string `json:"optionId"`
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// PermissionRequest is one permission request as the decider sees it: the turn and run
// it belongs to, the tool call (id, title, kind such as "edit" or "execute", the file
// locations it touches — paths as the agent sent them —, the command it would run, for
// a command, and its raw input), and the options offered, in the agent's order. Seq
// numbers the requests and questions of a session (1-based).
type PermissionRequest struct {
	Seq        int                `json:"seq"`
	Turn       int                `json:"turn"`
	RunID      string             `json:"runId"`
	ToolCallID string             `json:"toolCallId"`
	Title      string             `json:"title,omitempty"`
	Kind       string             `json:"kind,omitempty"`
	Locations  []string           `json:"locations,omitempty"`
	Command    string             `json:"command,omitempty"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	Options    []PermissionOption `json:"options"`
}

// Option returns the first offered option of kind, if any.
func (r PermissionRequest) Option(kind string) (PermissionOption, bool) {
	for _, o := range r.Options {
		if o.Kind == kind {
			return o, true
		}
	}
	return PermissionOption{}, false
}

// PermissionDecision is the human's answer: the id of the selected option, or Cancelled.
type PermissionDecision struct {
	OptionID  string `json:"optionId,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
}

// PermissionDecider answers permission requests (the human's side of the session).
// Decide blocks until there is an answer. Its ctx is cancelled when the turn is
// cancelled or ends, or the session ends; the agent is then answered "cancelled"
// whatever Decide returns. An error (the board could not be reached, …) is a harness
// fault: the agent is answered "cancelled" and the turn records the error
// (TurnResult.HarnessErrors).
// A decision naming an option the request does not offer is treated the same way.
// Implementations must be safe for concurrent use (an agent may ask several at once).
type PermissionDecider interface {
	Decide(ctx context.Context, req PermissionRequest) (PermissionDecision, error)
}

// DeciderFunc adapts a function to PermissionDecider.
type DeciderFunc func(ctx context.Context, req PermissionRequest) (PermissionDecision, error)

// PermissionRecord is one permission request of the turn and how it was answered:
// Decision is what the agent was told; By is AnsweredByDecider (the decider's answer),
// AnsweredByCancel (the turn was cancelled or ended while it was pending, or it
// arrived after the cancel) or AnsweredByError (the decider failed or chose an option
// not offered: the agent was told "cancelled"); RequestedAt and AnsweredAt bound the
// wait.
type PermissionRecord struct {
	Request     PermissionRequest  `json:"request"`
	Decision    PermissionDecision `json:"decision"`
	By          string             `json:"by"`
	RequestedAt time.Time          `json:"requestedAt"`
	AnsweredAt  time.Time          `json:"answeredAt"`
	Error       string             `json:"error,omitempty"`
}

// Answerers of a permission request or question (PermissionRecord.By,
// QuestionRecord.By).
const (
	AnsweredByDecider = "decider"
	AnsweredByCancel  = "cancel"
	AnsweredByError   = "error"
)

// Decide calls f.
func (f DeciderFunc) Decide(ctx context.Context, req PermissionRequest) (PermissionDecision, error) {
	return f(ctx, req)
}

// DecideByKind is the decider that selects, for every request, the first offered option
// of the first kind in kinds that the request offers (for example PermissionAllowOnce,
// PermissionAllowAlways to approve; PermissionRejectOnce, PermissionRejectAlways to
// decline). A request offering none of them is an error.
func DecideByKind(kinds ...string) PermissionDecider {
	return DeciderFunc(func(_ context.Context, req PermissionRequest) (PermissionDecision, error) {
		for _, k := range kinds {
			if o, ok := req.Option(k); ok {
				return PermissionDecision{OptionID: o.ID}, nil
			}
		}
		return PermissionDecision{}, fmt.Errorf("permission request %d offers no option of kind %v", req.Seq, kinds)
	})
}

// Approve selects allow_once (or else allow_always); Decline selects reject_once (or
// else reject_always).
var (
	Approve = DecideByKind(PermissionAllowOnce, PermissionAllowAlways)
	Decline = DecideByKind(PermissionRejectOnce, PermissionRejectAlways)
)

// HoldDecider never answers by itself: every request waits until its context ends (the
// turn is cancelled or the session closes). Pending receives each request as it
// arrives (buffered; a full buffer drops the notice, never the request); Seen returns
// every request received, in order. It is the decider of the "Stop while a permission
// is pending" calibration.
type HoldDecider struct{ holder[PermissionRequest] }

// NewHoldDecider returns a HoldDecider whose Pending channel buffers n requests.
func NewHoldDecider(n int) *HoldDecider {
	return &HoldDecider{holder[PermissionRequest]{Pending: make(chan PermissionRequest, n)}}
}

// Decide records req, announces it on Pending and waits for ctx to end.
func (h *HoldDecider) Decide(ctx context.Context, req PermissionRequest) (PermissionDecision, error) {
	h.hold(ctx, req)
	return PermissionDecision{Cancelled: true}, nil
}

// holder is what the Hold deciders share: requests recorded, announced on Pending
// (buffered; a full buffer drops the notice, never the request) and held until their
// context ends.
type holder[R any] struct {
	// Pending receives each request as it arrives.
	Pending chan R

	mu   sync.Mutex
	seen []R
}

// hold records req, announces it and waits for ctx to end.
func (h *holder[R]) hold(ctx context.Context, req R) {
	h.mu.Lock()
	h.seen = append(h.seen, req)
	h.mu.Unlock()
	select {
	case h.Pending <- req:
	default:
	}
	<-ctx.Done()
}

// Seen returns every request received, in order.
func (h *holder[R]) Seen() []R {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]R(nil), h.seen...)
}

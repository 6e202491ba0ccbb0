package session

import (
	"context"
	"time"
)

// Native questions (docs/pi.md "Questions"): an agent's own questions to the human —
// Pi's extension dialogs (select, confirm, input and editor, raised by agentproof's
// ask_user tool or any extension) — go through the layer (Host.Question) to the
// session's QuestionDecider, the human's side. In a campaign the decider turns the
// request into a control-plane interaction of kind question that the harness answers
// through the board API; in tests it is one of the deciders below. When the turn is
// cancelled (Session.Cancel) every pending question is answered "cancelled".

// Question methods (Pi's dialog methods).
const (
	QuestionSelect  = "select"
	QuestionConfirm = "confirm"
	QuestionInput   = "input"
	QuestionEditor  = "editor"
)

// QuestionRequest is one dialog as the decider sees it: the session-wide sequence
// number (1-based, shared with permission requests), the turn and run it belongs to,
// Pi's request id, the method (QuestionSelect, …), the title, and what the method
// carries: Message (confirm), Options (select), Placeholder (input), Prefill (editor);
// TimeoutMS is the dialog's own timeout when the extension set one (Pi then answers by
// itself), 0 for none.
type QuestionRequest struct {
	Seq         int      `json:"seq"`
	Turn        int      `json:"turn"`
	RunID       string   `json:"runId"`
	ID          string   `json:"id"`
	Method      string   `json:"method"`
	Title       string   `json:"title"`
	Message     string   `json:"message,omitempty"`
	Options     []string `json:"options,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Prefill     string   `json:"prefill,omitempty"`
	TimeoutMS   int64    `json:"timeoutMs,omitempty"`
}

// QuestionAnswer is the human's answer: Value (select: one of the options; input,
// editor: the text), Confirmed (confirm), or Cancelled (the dialog was dismissed). Pi
// cannot tell a negative confirmation from a dismissed one: the extension sees false
// for both (graded negative_or_cancelled).
type QuestionAnswer struct {
	Value     string `json:"value,omitempty"`
	Confirmed bool   `json:"confirmed,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
}

// QuestionDecider answers an agent's questions. Answer blocks until there is an answer; its ctx
// ends when the turn is cancelled or ends, or the session closes, and the agent is then told
// "cancelled" whatever Answer returns. An error, or a select answer that is not one of
// the options, is a harness fault: the agent is told "cancelled" and the turn records the
// error (TurnResult.HarnessErrors). Implementations must be safe for concurrent use.
type QuestionDecider interface {
	Answer(ctx context.Context, req QuestionRequest) (QuestionAnswer, error)
}

// QuestionFunc adapts a function to QuestionDecider.
type QuestionFunc func(ctx context.Context, req QuestionRequest) (QuestionAnswer, error)

// Answer calls f.
func (f QuestionFunc) Answer(ctx context.Context, req QuestionRequest) (QuestionAnswer, error) {
	return f(ctx, req)
}

// CancelQuestions dismisses every dialog (the decider of a session that asks nothing).
var CancelQuestions = QuestionFunc(func(context.Context, QuestionRequest) (QuestionAnswer, error) {
	return QuestionAnswer{Cancelled: true}, nil
})

// HoldQuestions never answers by itself: every dialog waits until its context ends.
// Pending receives each request as it arrives (buffered; a full buffer drops the
// notice, never the request); Seen returns every request received, in order. It is the
// decider of "Stop while a question is pending".
type HoldQuestions struct{ holder[QuestionRequest] }

// NewHoldQuestions returns a HoldQuestions whose Pending channel buffers n requests.
func NewHoldQuestions(n int) *HoldQuestions {
	return &HoldQuestions{holder[QuestionRequest]{Pending: make(chan QuestionRequest, n)}}
}

// Answer records req, announces it and waits for ctx to end.
func (h *HoldQuestions) Answer(ctx context.Context, req QuestionRequest) (QuestionAnswer, error) {
	h.hold(ctx, req)
	return QuestionAnswer{Cancelled: true}, nil
}

// QuestionRecord is one dialog of a turn and how it was answered: By is
// AnsweredByDecider, AnsweredByCancel (cancelled while pending, or asked after the
// cancel) or AnsweredByError (the decider failed: the agent was told "cancelled").
type QuestionRecord struct {
	Request     QuestionRequest `json:"request"`
	Answer      QuestionAnswer  `json:"answer"`
	By          string          `json:"by"`
	RequestedAt time.Time       `json:"requestedAt"`
	AnsweredAt  time.Time       `json:"answeredAt"`
	Error       string          `json:"error,omitempty"`
}

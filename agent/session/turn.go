package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Bounds of what the layer keeps of one turn.
const (
	// MaxTurnMessageBytes bounds TurnResult.Message (bytes).
	MaxTurnMessageBytes = 1 << 20
	// MaxTurnRecords bounds every list of a TurnResult (tool calls, permission requests,
	// questions, file operations, violations, …); the rest are counted in Dropped.
	MaxTurnRecords = 1000
)

// TurnResult is what the layer observed of one prompt turn, whatever the protocol
// (docs/acp.md "What a turn records", docs/pi.md):
//
//   - Turn (1-based within the session), RunID, SessionID; Process: the agent process's
//     identity read from /proc when the turn started (the warm lifecycle's same-PID
//     oracle); StartedAt, EndedAt, DurationMS (ms).
//   - StopReason: the turn's stop reason in the protocol's words (ACP end_turn,
//     cancelled, …; Pi stop, aborted, error, …); "" when the turn failed before any;
//     ErrorMessage what came with it; Ended: the protocol's terminal event of the turn
//     arrived.
//   - CancelRequested, CancelRequestedAt: a cancel (Stop, the deadline, the caller) was
//     asked for during the turn; CancelHonoured: the turn then ended with the
//     protocol's cancelled stop reason; EventsAfterCancel: events after the cancel (tool
//     calls still reported after it show in ToolCalls[].AfterCancel).
//   - Message: the agent's message of the turn (ACP: its message chunks in order; Pi:
//     its last assistant message; at most MaxTurnMessageBytes, MessageTruncated says it
//     was cut); ThoughtBytes: the size of its thoughts; AssistantMessages and
//     UserMessages: the whole messages of the conversation, where the protocol has them
//     (the user messages the agent delivered in the turn: the prompt, then steering and
//     follow-up messages).
//   - ToolCalls, Plan (the last plan reported), Permissions, Questions, Files (file
//     operations the client carried out for the agent), Steers and FollowUps (messages
//     delivered into the turn), Notices (fire-and-forget dialogs), Events (count per
//     event kind).
//   - Usage: the turn's token usage as JSON for billing.ExtractLLM; nil when the agent
//     reported none (unavailable, never zero). Cost: the last cost reported, if any.
//   - ProtocolViolations: what the agent did against the protocol (candidate facts).
//     HarnessErrors: what went wrong on agentproof's side (a decider failed, …).
//   - Failure: why the turn failed ("" when it ended with a stop reason).
//   - Log: the turn's share of the session log (JSONL); LogCut: its lines that were not
//     kept (over MaxTurnLogBytes).
type TurnResult struct {
	Turn               int                `json:"turn"`
	RunID              string             `json:"runId"`
	SessionID          string             `json:"sessionId"`
	Process            ProcessIdentity    `json:"process"`
	StartedAt          time.Time          `json:"startedAt"`
	EndedAt            time.Time          `json:"endedAt"`
	DurationMS         int64              `json:"durationMs"`
	StopReason         string             `json:"stopReason,omitempty"`
	ErrorMessage       string             `json:"errorMessage,omitempty"`
	Ended              bool               `json:"ended"`
	CancelRequested    bool               `json:"cancelRequested,omitempty"`
	CancelRequestedAt  *time.Time         `json:"cancelRequestedAt,omitempty"`
	CancelHonoured     bool               `json:"cancelHonoured,omitempty"`
	EventsAfterCancel  int                `json:"eventsAfterCancel,omitempty"`
	Message            string             `json:"message"`
	MessageTruncated   bool               `json:"messageTruncated,omitempty"`
	ThoughtBytes       int                `json:"thoughtBytes,omitempty"`
	AssistantMessages  int                `json:"assistantMessages,omitempty"`
	UserMessages       []string           `json:"userMessages,omitempty"`
	ToolCalls          []ToolCallRecord   `json:"toolCalls,omitempty"`
	Plan               []PlanEntry        `json:"plan,omitempty"`
	Permissions        []PermissionRecord `json:"permissions,omitempty"`
	Questions          []QuestionRecord   `json:"questions,omitempty"`
	Files              []FileOpRecord     `json:"files,omitempty"`
	Steers             []DeliveryRecord   `json:"steers,omitempty"`
	FollowUps          []DeliveryRecord   `json:"followUps,omitempty"`
	Notices            []string           `json:"notices,omitempty"`
	Events             map[string]int     `json:"events,omitempty"`
	Dropped            int                `json:"dropped,omitempty"`
	Usage              json.RawMessage    `json:"usage,omitempty"`
	Cost               json.RawMessage    `json:"cost,omitempty"`
	ProtocolViolations []string           `json:"protocolViolations,omitempty"`
	HarnessErrors      []string           `json:"harnessErrors,omitempty"`
	Failure            string             `json:"failure,omitempty"`
	Log                []byte             `json:"-"`
	LogCut             int64              `json:"-"`
}

// ToolCallRecord is one tool call the agent reported: its id, its latest title, kind,
// status (pending, in_progress, completed, failed) and locations (paths as sent), how
// many updates it got, and whether any of them arrived after the turn was cancelled.
type ToolCallRecord struct {
	ID          string   `json:"id"`
	Title       string   `json:"title,omitempty"`
	Kind        string   `json:"kind,omitempty"`
	Status      string   `json:"status,omitempty"`
	Locations   []string `json:"locations,omitempty"`
	Updates     int      `json:"updates"`
	AfterCancel bool     `json:"afterCancel,omitempty"`
}

// PlanEntry is one entry of the agent's plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status,omitempty"`
}

// FileOpRecord is one file operation the client carried out for the agent: Op ("read"
// or "write"), Path relative to the workspace (as the agent named it when it was not
// usable), the content's size and SHA-256, whether it came after the turn was
// cancelled, and the error when it was refused.
type FileOpRecord struct {
	Op          string `json:"op"`
	Path        string `json:"path"`
	Bytes       int    `json:"bytes"`
	SHA256      string `json:"sha256,omitempty"`
	AfterCancel bool   `json:"afterCancel,omitempty"`
	Error       string `json:"error,omitempty"`
}

// DeliveryRecord is one steering or follow-up message sent during a turn: its text,
// when it was sent, whether the agent accepted it (its answer) and whether it
// delivered it into the turn's conversation (a user message with that text arrived in
// the turn).
type DeliveryRecord struct {
	Text      string    `json:"text"`
	SentAt    time.Time `json:"sentAt"`
	Accepted  bool      `json:"accepted"`
	Error     string    `json:"error,omitempty"`
	Delivered bool      `json:"delivered"`
}

// turn is one running turn; n, runID and started are immutable, the rest is guarded
// by mu.
type turn struct {
	n       int
	runID   string
	started time.Time

	mu              sync.Mutex
	res             TurnResult
	msg             strings.Builder
	calls           map[string]int // tool call id → index in res.ToolCalls
	pending         map[int]pendingAsk
	ended           bool
	cancelRequested bool
	cancelAt        time.Time // when the first cancel was asked for
}

func newTurn(n int, runID string, now time.Time) *turn {
	return &turn{n: n, runID: runID, started: now, calls: map[string]int{}, pending: map[int]pendingAsk{},
		res: TurnResult{Turn: n, RunID: runID, StartedAt: now, Events: map[string]int{}}}
}

// requestCancel marks a cancel asked for at now. running is false when the turn
// already ended; first is true for the first request of a running turn (only it stamps
// cancelAt and is sent to the agent).
func (t *turn) requestCancel(now time.Time) (running, first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return false, false
	}
	first = !t.cancelRequested
	t.cancelRequested = true
	if first {
		t.cancelAt = now
	}
	return true, first
}

// releasePending answers every pending permission request and question "cancelled"
// (their deciders' contexts end).
func (t *turn) releasePending() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pending {
		p.cancel()
	}
}

// Recorder is the running turn's record as a protocol updates it (Host.Update), under
// the turn's lock.
type Recorder struct{ t *turn }

// Cancelled reports whether a cancel was asked for in this turn.
func (r Recorder) Cancelled() bool { return r.t.cancelRequested }

// Count counts one event of kind (an event after the cancel also in
// EventsAfterCancel).
func (r Recorder) Count(kind string) {
	r.t.res.Events[kind]++
	if r.t.cancelRequested {
		r.t.res.EventsAfterCancel++
	}
}

// AppendMessage appends a chunk of the agent's message (cut at MaxTurnMessageBytes).
func (r Recorder) AppendMessage(text string) {
	t := r.t
	if t.msg.Len()+len(text) > MaxTurnMessageBytes {
		t.res.MessageTruncated = true
		text = strings.ToValidUTF8(text[:max(0, MaxTurnMessageBytes-t.msg.Len())], "")
	}
	t.msg.WriteString(text)
}

// SetMessage replaces the agent's message with a whole message (cut at
// MaxTurnMessageBytes) and counts it as an assistant message.
func (r Recorder) SetMessage(text string) {
	t := r.t
	t.msg.Reset()
	t.res.MessageTruncated = len(text) > MaxTurnMessageBytes
	if t.res.MessageTruncated {
		text = strings.ToValidUTF8(text[:MaxTurnMessageBytes], "")
	}
	t.msg.WriteString(text)
	t.res.AssistantMessages++
}

// Thought counts n bytes of the agent's thoughts.
func (r Recorder) Thought(n int) { r.t.res.ThoughtBytes += n }

// UserMessage records a user message the agent delivered in the turn and marks the
// steering and follow-up messages with its text delivered (and so accepted), except
// those the agent refused (a refused delivery never reaches the conversation; a
// second attempt of the same text is the one delivered).
func (r Recorder) UserMessage(text string) {
	res := &r.t.res
	if len(res.UserMessages) < MaxTurnRecords {
		res.UserMessages = append(res.UserMessages, clip(text, 4096))
	}
	for _, list := range [][]DeliveryRecord{res.Steers, res.FollowUps} {
		for i := range list {
			if list[i].Text == text && list[i].Error == "" {
				// delivered is accepted, even when the agent's answer to the delivery
				// is read after the turn ended
				list[i].Delivered, list[i].Accepted = true, true
			}
		}
	}
}

// ToolCall returns the record of tool call id, created (with its id) when create is
// set and it is unknown, and counts an update of it (marked after the cancel when one
// was asked for). It returns nil, false for an unknown call that is not created, or
// when the list is full (counted in Dropped); known says whether it existed before.
func (r Recorder) ToolCall(id string, create bool) (c *ToolCallRecord, known bool) {
	t := r.t
	i, known := t.calls[id]
	if !known {
		if !create {
			return nil, false
		}
		if len(t.res.ToolCalls) >= MaxTurnRecords {
			t.res.Dropped++
			return nil, false
		}
		t.res.ToolCalls = append(t.res.ToolCalls, ToolCallRecord{ID: clip(id, 200)})
		i = len(t.res.ToolCalls) - 1
		t.calls[id] = i
	}
	c = &t.res.ToolCalls[i]
	c.Updates++
	if t.cancelRequested {
		c.AfterCancel = true
	}
	return c, known
}

// Plan replaces the turn's plan.
func (r Recorder) Plan(entries []PlanEntry) {
	r.t.res.Plan = append(r.t.res.Plan[:0], entries[:min(len(entries), MaxTurnRecords)]...)
}

// Stop records the turn's stop reason in the protocol's words and the error message
// that came with it (the last one reported counts).
func (r Recorder) Stop(reason, errorMessage string) {
	r.t.res.StopReason, r.t.res.ErrorMessage = reason, errorMessage
}

// End records that the protocol's terminal event of the turn arrived.
func (r Recorder) End() { r.t.res.Ended = true }

// Usage records the turn's token usage as JSON for billing.ExtractLLM (the last one
// reported counts).
func (r Recorder) Usage(usage json.RawMessage) { r.t.res.Usage = usage }

// Cost records the last cost the agent reported.
func (r Recorder) Cost(cost json.RawMessage) { r.t.res.Cost = cost }

// Notice records a fire-and-forget dialog.
func (r Recorder) Notice(s string) { r.t.res.Notices = appendBounded(r.t.res.Notices, clip(s, 1000)) }

// FileOp records a file operation the client carried out (marked after the cancel
// when one was asked for).
func (r Recorder) FileOp(rec FileOpRecord) {
	rec.AfterCancel = r.t.cancelRequested
	if len(r.t.res.Files) < MaxTurnRecords {
		r.t.res.Files = append(r.t.res.Files, rec)
	} else {
		r.t.res.Dropped++
	}
}

// Violation records what the agent did against the protocol.
func (r Recorder) Violation(format string, args ...any) {
	r.t.res.ProtocolViolations = appendBounded(r.t.res.ProtocolViolations, fmt.Sprintf(format, args...))
}

// HarnessError records what went wrong on agentproof's side.
func (r Recorder) HarnessError(format string, args ...any) {
	r.t.res.HarnessErrors = appendBounded(r.t.res.HarnessErrors, fmt.Sprintf(format, args...))
}

// Drop counts a record that was not kept.
func (r Recorder) Drop() { r.t.res.Dropped++ }

// Undecoded records a line the connection could not decode (too long, or not the
// protocol's JSON): one event of kind "(not decoded)", and one record not kept.
func (r Recorder) Undecoded() {
	r.Count("(not decoded)")
	r.Drop()
}

// Permissions returns the turn's permission records so far (a protocol that answers in
// an event of its own reads what was decided).
func (r Recorder) Permissions() []PermissionRecord { return r.t.res.Permissions }

func appendBounded(list []string, s string) []string {
	if len(list) >= MaxTurnRecords {
		return list
	}
	return append(list, s)
}

// clip cuts s to at most n bytes of valid UTF-8, marking a cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// Clip is clip for protocols: s cut to at most n bytes of valid UTF-8, a cut marked
// with "…".
func Clip(s string, n int) string { return clip(s, n) }

// TailText is the last n bytes of b as one line of valid UTF-8 (newlines → " ⏎ ").
func TailText(b []byte, n int) string { return tailText(b, n) }

func tailText(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[len(s)-n:]
		for len(s) > 0 && s[0]&0xC0 == 0x80 {
			s = s[1:]
		}
		s = "…" + s
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ⏎ ")), " ")
}

// Record accumulates one turn's TurnResult outside a running session: what a
// protocol's Conn would report to the layer, fed through Update (a protocol's tests
// and fuzzers use it).
type Record struct{ t *turn }

// NewRecord starts the record of turn n of run runID at now.
func NewRecord(n int, runID string, now time.Time) *Record { return &Record{t: newTurn(n, runID, now)} }

// Update runs f on the record, as Host.Update does for a running turn.
func (r *Record) Update(f func(Recorder)) {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	f(Recorder{r.t})
}

// Result is the record so far (its message assembled).
func (r *Record) Result() TurnResult {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	res := r.t.res
	res.Message = r.t.msg.String()
	return res
}

package api

// SessionTurn is what one prompt turn of a session driver's run recorded (the
// heartbeat record's acp field of an acp:<agent> run, its pi field of an rpc:pi run, its
// app field of an app:codex run;
// package agent/session's TurnResult, summarised; docs/acp.md, docs/pi.md):
//
//   - Lifecycle: the run's lifecycle mode (per_turn, warm); a warm run whose session was
//     already running is Reused, and its session stays open after the turn (Exit "").
//   - SessionIndex: the session's index among the agent's sessions; SessionID: the
//     protocol's session id; Turn: the turn's number in the session.
//   - PID, ProcessStartTicks: the agent process's identity when the turn started (start
//     time in clock ticks after boot, /proc/<pid>/stat field 22).
//   - StopReason: the turn's stop reason in the protocol's words (ACP end_turn,
//     cancelled, …; Pi stop, aborted, error, …); CancelRequested: a Stop cancelled it;
//     CancelHonoured: the agent ended it with the protocol's cancelled stop reason.
//   - Message: the agent's message of the turn (redacted); AssistantMessages and
//     UserMessages: how many whole messages the conversation had, where the protocol
//     reports them (Pi; the user messages it delivered in the turn: the prompt, then
//     steering and follow-up messages); omitted when none.
//   - Permissions: the permission requests with what the agent was told; Questions:
//     the native questions and how they were closed; Files: the file operations the
//     client served (ACP's client fs); Steers and FollowUps: the messages delivered
//     into the turn (Pi) and whether the agent delivered each into its conversation.
//   - ToolCalls: how many tool calls; ProtocolViolations, HarnessErrors; Failure ("" when
//     the turn ended with a stop reason); Exit: the session's exit when it was closed
//     with this turn.
type SessionTurn struct {
	Lifecycle          LifecycleMode    `json:"lifecycle,omitempty"`
	Reused             bool             `json:"reused,omitempty"`
	SessionIndex       int              `json:"sessionIndex"`
	SessionID          string           `json:"sessionId"`
	Turn               int              `json:"turn"`
	PID                int              `json:"pid"`
	ProcessStartTicks  uint64           `json:"processStartTicks"`
	StopReason         string           `json:"stopReason,omitempty"`
	CancelRequested    bool             `json:"cancelRequested"`
	CancelHonoured     bool             `json:"cancelHonoured"`
	Message            string           `json:"message"`
	AssistantMessages  int              `json:"assistantMessages,omitempty"`
	UserMessages       int              `json:"userMessages,omitempty"`
	Permissions        []PermissionTurn `json:"permissions"`
	Questions          []QuestionTurn   `json:"questions"`
	Files              []FileOp         `json:"files"`
	Steers             []Delivery       `json:"steers"`
	FollowUps          []Delivery       `json:"followUps,omitempty"`
	ToolCalls          int              `json:"toolCalls"`
	ProtocolViolations []string         `json:"protocolViolations,omitempty"`
	HarnessErrors      []string         `json:"harnessErrors,omitempty"`
	Failure            string           `json:"failure,omitempty"`
	Exit               string           `json:"exit,omitempty"`
}

// PermissionTurn is one permission request of a turn: the tool call, its kind, the
// paths it touches and the command it would run (when the agent said), the options it
// offered (their ids), the option the agent was told (OptionID, or Cancelled), who
// decided (decider, cancel, error), and when it was asked and answered (RFC 3339 UTC).
type PermissionTurn struct {
	ToolCallID  string   `json:"toolCallId"`
	Kind        string   `json:"kind,omitempty"`
	Locations   []string `json:"locations,omitempty"`
	Command     string   `json:"command,omitempty"`
	Offered     []string `json:"offered,omitempty"`
	OptionID    string   `json:"optionId,omitempty"`
	Cancelled   bool     `json:"cancelled"`
	By          string   `json:"by"`
	RequestedAt string   `json:"requestedAt,omitempty"`
	AnsweredAt  string   `json:"answeredAt,omitempty"`
}

// FileOp is one file operation the client served for the agent: op (read or write),
// the workspace-relative path, bytes, whether it came after a cancel and why it was
// refused ("" when it was served).
type FileOp struct {
	Op          string `json:"op"`
	Path        string `json:"path"`
	Bytes       int64  `json:"bytes"`
	AfterCancel bool   `json:"afterCancel,omitempty"`
	Refused     string `json:"refused,omitempty"`
}

// Outcomes of a native question (QuestionTurn.Outcome).
const (
	// QuestionAnswered: a select, input or editor dialog got a value.
	QuestionAnswered = "answered"
	// QuestionConfirmed: a confirm dialog was answered yes.
	QuestionConfirmed = "confirmed"
	// QuestionNegativeOrCancelled: a confirm dialog was answered no, which Pi cannot
	// tell from a dismissal.
	QuestionNegativeOrCancelled = "negative_or_cancelled"
	// QuestionCancelled: the dialog was dismissed (by the human, a Stop or the end of
	// the turn).
	QuestionCancelled = "cancelled"
)

// QuestionTurn is one native question of a turn: the dialog's method (select,
// confirm, input, editor), who answered (decider: the human on the board; cancel: the
// Stop or the end of the turn; error: the harness) and the outcome (Question*). The
// answer's value is not recorded here (it is the human's, on the board).
type QuestionTurn struct {
	Method  string `json:"method"`
	By      string `json:"by"`
	Outcome string `json:"outcome"`
}

// Delivery is one steering or follow-up message of a turn: whether the agent accepted
// it (its answer) and whether it arrived in the turn's conversation as a user message.
// Its text is not recorded here (it is the human's comment, on the board).
type Delivery struct {
	Accepted  bool   `json:"accepted"`
	Delivered bool   `json:"delivered"`
	Error     string `json:"error,omitempty"`
}

// SessionTurn returns the session turn the run recorded (ACP's, Pi's or an app
// server's), nil for a run of another driver.
func (h *HeartbeatRun) SessionTurn() *SessionTurn {
	switch {
	case h.ACP != nil:
		return h.ACP
	case h.Pi != nil:
		return h.Pi
	}
	return h.App
}

package api

// PiTurn is what one Pi prompt turn of a run recorded (the heartbeat record's Pi field;
// package agent's PiTurnResult, summarised; docs/pi.md "In the heartbeat runner"): the
// session's index among the agent's Pi sessions and Pi's session id, the turn number in
// the session, Pi's process identity when the turn started (PID and start time in
// clock ticks after boot, /proc/<pid>/stat field 22), the last assistant message's stop
// reason (stop, length, toolUse, error, aborted), whether Stop aborted it and whether Pi
// honoured the abort (stop reason aborted), the last assistant text (redacted), the
// number of assistant messages, the user messages Pi delivered in the turn (the prompt,
// then steering and follow-up messages), the permission requests of the write gate with
// what Pi was told, the native questions and how they were closed, the steering messages sent and whether Pi delivered each into the
// turn, tool call and protocol violation counts, the failure ("" when the turn ended
// with a stop reason) and the session's exit. Lifecycle is the run's lifecycle mode
// (per_turn, warm); a warm run whose session was already running is Reused, and its
// session stays open after the turn (Exit ""). FollowUps are the queued follow-up
// messages (Pi's follow_up) sent during the turn, like Steers.
type PiTurn struct {
	Lifecycle          LifecycleMode       `json:"lifecycle,omitempty"`
	Reused             bool                `json:"reused,omitempty"`
	SessionIndex       int                 `json:"sessionIndex"`
	SessionID          string              `json:"sessionId"`
	Turn               int                 `json:"turn"`
	PID                int                 `json:"pid"`
	ProcessStartTicks  uint64              `json:"processStartTicks"`
	StopReason         string              `json:"stopReason,omitempty"`
	CancelRequested    bool                `json:"cancelRequested"`
	CancelHonoured     bool                `json:"cancelHonoured"`
	Message            string              `json:"message"`
	AssistantMessages  int                 `json:"assistantMessages"`
	UserMessages       int                 `json:"userMessages"`
	Permissions        []ACPPermissionTurn `json:"permissions"`
	Questions          []PiQuestionTurn    `json:"questions"`
	Steers             []PiDelivery        `json:"steers"`
	FollowUps          []PiDelivery        `json:"followUps,omitempty"`
	ToolCalls          int                 `json:"toolCalls"`
	ProtocolViolations []string            `json:"protocolViolations,omitempty"`
	HarnessErrors      []string            `json:"harnessErrors,omitempty"`
	Failure            string              `json:"failure,omitempty"`
	Exit               string              `json:"exit,omitempty"`
}

// Outcomes of a native question (PiQuestionTurn.Outcome).
const (
	// PiQuestionAnswered: a select, input or editor dialog got a value.
	PiQuestionAnswered = "answered"
	// PiQuestionConfirmed: a confirm dialog was answered yes.
	PiQuestionConfirmed = "confirmed"
	// PiQuestionNegativeOrCancelled: a confirm dialog was answered no, which Pi cannot
	// tell from a dismissal (seed 000).
	PiQuestionNegativeOrCancelled = "negative_or_cancelled"
	// PiQuestionCancelled: the dialog was dismissed (by the human, a Stop or the end of
	// the turn).
	PiQuestionCancelled = "cancelled"
)

// PiQuestionTurn is one native question of a Pi turn: the dialog's method (select,
// confirm, input, editor), who answered (decider: the human on the board; cancel: the
// Stop or the end of the turn; error: the harness) and the outcome (PiQuestion*). The
// answer's value is not recorded here (it is the human's, on the board).
type PiQuestionTurn struct {
	Method  string `json:"method"`
	By      string `json:"by"`
	Outcome string `json:"outcome"`
}

// PiDelivery is one steering message of a Pi turn: whether Pi accepted it (its RPC
// response) and whether it arrived in the turn's conversation as a user message. Its
// text is not recorded here (it is the human's comment, on the board).
type PiDelivery struct {
	Accepted  bool   `json:"accepted"`
	Delivered bool   `json:"delivered"`
	Error     string `json:"error,omitempty"`
}

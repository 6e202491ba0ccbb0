package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// ACPResourceNotFound is ACP's JSON-RPC error code for a missing resource (a file the
// agent asked to read that does not exist).
const ACPResourceNotFound = -32002

// Bounds of what the driver keeps of one turn and does for the agent (bytes).
const (
	// MaxTurnMessageBytes bounds TurnResult.Message (the agent's message chunks).
	MaxTurnMessageBytes = 1 << 20
	// MaxACPReadBytes bounds one fs/read_text_file answer.
	MaxACPReadBytes = 16 << 20
	// MaxACPWriteBytes bounds all fs/write_text_file content of one session.
	MaxACPWriteBytes = 64 << 20
	// MaxTurnRecords bounds the tool calls, permission requests and file operations one
	// TurnResult lists (each list); the rest are counted in Dropped.
	MaxTurnRecords = 1000
)

// TurnResult is what the driver observed of one prompt turn (the facts phase-2
// matchers grade; docs/acp.md "What a turn records"):
//
//   - Turn (1-based within the session), RunID, SessionID; Process: the agent process's
//     identity read from /proc when the turn started (the warm lifecycle's same-PID
//     oracle); StartedAt, EndedAt, DurationMS (ms).
//   - StopReason: the agent's stop reason (end_turn, cancelled, max_tokens,
//     max_turn_requests, refusal); "" when the turn failed (Failure says why).
//   - CancelRequested, CancelRequestedAt: Cancel was called during the turn;
//     CancelHonoured: the turn then ended with stop reason cancelled;
//     UpdatesAfterCancel: session/update notifications that arrived after the cancel
//     (tool calls still reported completed after it show in ToolCalls[].AfterCancel).
//   - Message: the agent's message chunks of the turn, in order (text only; at most
//     MaxTurnMessageBytes, MessageTruncated says it was cut); ThoughtBytes: the size of
//     its thought chunks.
//   - ToolCalls, Plan (the last plan reported), Permissions, Files (fs operations the
//     client carried out for the agent), Updates (count per sessionUpdate kind).
//   - Usage: the turn's token usage when the agent reported it (PromptResponse.usage),
//     as JSON for billing.ExtractLLM; nil when it reported none (unavailable, never
//     zero). Cost: the last usage_update cost, when reported.
//   - ProtocolViolations: what the agent did against the protocol (a stop reason other
//     than cancelled after session/cancel, an update for another session, a tool call
//     update for an unknown tool call, …): candidate facts. HarnessErrors: what went
//     wrong on agentproof's side (the decider failed, …).
//   - Failure: why the turn failed ("" when it ended with a stop reason).
//   - Evidence: the turn's share of the session log (acp-turn.jsonl).
type TurnResult struct {
	Turn               int                `json:"turn"`
	RunID              string             `json:"runId"`
	SessionID          string             `json:"sessionId"`
	Process            ProcessIdentity    `json:"process"`
	StartedAt          time.Time          `json:"startedAt"`
	EndedAt            time.Time          `json:"endedAt"`
	DurationMS         int64              `json:"durationMs"`
	StopReason         string             `json:"stopReason,omitempty"`
	CancelRequested    bool               `json:"cancelRequested,omitempty"`
	CancelRequestedAt  *time.Time         `json:"cancelRequestedAt,omitempty"`
	CancelHonoured     bool               `json:"cancelHonoured,omitempty"`
	UpdatesAfterCancel int                `json:"updatesAfterCancel,omitempty"`
	Message            string             `json:"message"`
	MessageTruncated   bool               `json:"messageTruncated,omitempty"`
	ThoughtBytes       int                `json:"thoughtBytes,omitempty"`
	ToolCalls          []ToolCallRecord   `json:"toolCalls,omitempty"`
	Plan               []PlanEntry        `json:"plan,omitempty"`
	Permissions        []PermissionRecord `json:"permissions,omitempty"`
	Files              []FileOpRecord     `json:"files,omitempty"`
	Updates            map[string]int     `json:"updates,omitempty"`
	Dropped            int                `json:"dropped,omitempty"`
	Usage              json.RawMessage    `json:"usage,omitempty"`
	Cost               json.RawMessage    `json:"cost,omitempty"`
	ProtocolViolations []string           `json:"protocolViolations,omitempty"`
	HarnessErrors      []string           `json:"harnessErrors,omitempty"`
	Failure            string             `json:"failure,omitempty"`
	Evidence           []Evidence         `json:"-"`
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

// PermissionRecord is one permission request of the turn and how it was answered:
// Decision is what the agent was told; By is "decider" (the decider's answer),
// "cancel" (the turn was cancelled while it was pending, or it arrived after the
// cancel) or "error" (the decider failed or chose an option not offered: the agent was
// told "cancelled"); RequestedAt and AnsweredAt bound the wait.
type PermissionRecord struct {
	Request     PermissionRequest  `json:"request"`
	Decision    PermissionDecision `json:"decision"`
	By          string             `json:"by"`
	RequestedAt time.Time          `json:"requestedAt"`
	AnsweredAt  time.Time          `json:"answeredAt"`
	Error       string             `json:"error,omitempty"`
}

// Answerers of a permission request (PermissionRecord.By).
const (
	AnsweredByDecider = "decider"
	AnsweredByCancel  = "cancel"
	AnsweredByError   = "error"
)

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

// turnState accumulates one turn; its fields are guarded by mu, except n, runID and
// started (immutable).
type turnState struct {
	n       int
	runID   string
	started time.Time

	mu sync.Mutex
	turnCancel
	res     TurnResult
	msg     strings.Builder
	calls   map[string]int // tool call id → index in res.ToolCalls
	pending map[int]context.CancelFunc
	permSeq int
}

// turnCancel is a turn's end and cancellation marks (ACP and Pi), guarded by the turn's
// mutex.
type turnCancel struct {
	ended           bool
	cancelRequested bool
	cancelAt        time.Time // when the first cancel was asked for
}

// requestCancel marks a cancel asked for at now; ts's mutex is held. running is false
// when the turn already ended; first is true for the first request of a running turn
// (only it stamps cancelAt and is sent to the agent).
func (t *turnCancel) requestCancel(now time.Time) (running, first bool) {
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

func newTurnState(n int, runID string, now time.Time) *turnState {
	return &turnState{n: n, runID: runID, started: now, calls: map[string]int{}, pending: map[int]context.CancelFunc{},
		res: TurnResult{Turn: n, RunID: runID, StartedAt: now, Updates: map[string]int{}}}
}

// cancelPending releases every pending permission request (they are answered
// "cancelled").
func (ts *turnState) cancelPending() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, c := range ts.pending {
		c()
	}
}

// finishTurn closes ts with the prompt's response and returns the result.
func (s *ACPSession) finishTurn(ts *turnState, id ProcessIdentity, idErr error, resp acp.PromptResponse) TurnResult {
	s.mu.Lock()
	s.cur = nil
	s.mu.Unlock()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.ended = true
	r := ts.res
	r.SessionID, r.Process = s.ID, id
	if idErr != nil && !s.proc.exited() {
		// A live process whose identity cannot be read is our fault; a dead one is the
		// turn's failure (agent_gone).
		r.HarnessErrors = append(r.HarnessErrors, "reading the process identity: "+idErr.Error())
	}
	r.EndedAt = s.env.Now()
	r.DurationMS = r.EndedAt.Sub(r.StartedAt).Milliseconds()
	r.StopReason = string(resp.StopReason)
	r.Message = ts.msg.String()
	if ts.cancelRequested {
		at := ts.cancelAt
		r.CancelRequested, r.CancelRequestedAt = true, &at
		r.CancelHonoured = resp.StopReason == acp.StopReasonCancelled
		if r.StopReason != "" && !r.CancelHonoured {
			r.ProtocolViolations = append(r.ProtocolViolations, fmt.Sprintf("the turn ended with stop reason %q after session/cancel (the protocol requires \"cancelled\")", r.StopReason))
		}
	}
	if u := resp.Usage; u != nil {
		m := map[string]any{"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens, "source": "acp prompt response"}
		if u.CachedReadTokens != nil {
			m["cachedInputTokens"] = *u.CachedReadTokens
		}
		if u.ThoughtTokens != nil {
			m["reasoningTokens"] = *u.ThoughtTokens
		}
		r.Usage, _ = json.Marshal(m)
	}
	return r
}

// acpClient is the client side of the ACP connection (acp.Client): it records
// updates, routes permission requests to the decider and serves file operations.
type acpClient struct {
	s *ACPSession
}

var _ acp.Client = (*acpClient)(nil)

// current returns the running turn, or nil between turns.
func (c *acpClient) current() *turnState {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.s.cur
}

// SessionUpdate summarises one update into the running turn (the wire log already
// holds it verbatim).
func (c *acpClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	ts := c.current()
	if ts == nil {
		return nil // between turns (available commands, mode updates): logged only
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.ended {
		return nil
	}
	r := &ts.res
	if string(n.SessionId) != c.s.ID {
		r.ProtocolViolations = appendBounded(r.ProtocolViolations, fmt.Sprintf("an update for session %q, not this session", clip(string(n.SessionId), 100)))
		return nil
	}
	if ts.cancelRequested {
		r.UpdatesAfterCancel++
	}
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		r.Updates["agent_message_chunk"]++
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			if ts.msg.Len()+len(t.Text) > MaxTurnMessageBytes {
				r.MessageTruncated = true
				ts.msg.WriteString(strings.ToValidUTF8(t.Text[:max(0, MaxTurnMessageBytes-ts.msg.Len())], ""))
			} else {
				ts.msg.WriteString(t.Text)
			}
		}
	case u.AgentThoughtChunk != nil:
		r.Updates["agent_thought_chunk"]++
		if t := u.AgentThoughtChunk.Content.Text; t != nil {
			r.ThoughtBytes += len(t.Text)
		}
	case u.UserMessageChunk != nil:
		r.Updates["user_message_chunk"]++
	case u.ToolCall != nil:
		r.Updates["tool_call"]++
		tc := u.ToolCall
		c.toolCall(ts, string(tc.ToolCallId), &tc.Title, string(tc.Kind), string(tc.Status), tc.Locations, true)
	case u.ToolCallUpdate != nil:
		r.Updates["tool_call_update"]++
		tc := u.ToolCallUpdate
		kind, status := "", ""
		if tc.Kind != nil {
			kind = string(*tc.Kind)
		}
		if tc.Status != nil {
			status = string(*tc.Status)
		}
		c.toolCall(ts, string(tc.ToolCallId), tc.Title, kind, status, tc.Locations, false)
	case u.Plan != nil:
		r.Updates["plan"]++
		r.Plan = r.Plan[:0]
		for i, e := range u.Plan.Entries {
			if i >= MaxTurnRecords {
				break
			}
			r.Plan = append(r.Plan, PlanEntry{Content: clip(e.Content, 4000), Priority: string(e.Priority), Status: string(e.Status)})
		}
	case u.UsageUpdate != nil:
		r.Updates["usage_update"]++
		if u.UsageUpdate.Cost != nil {
			r.Cost, _ = json.Marshal(u.UsageUpdate.Cost)
		}
	case u.AvailableCommandsUpdate != nil:
		r.Updates["available_commands_update"]++
	case u.CurrentModeUpdate != nil:
		r.Updates["current_mode_update"]++
	case u.ConfigOptionUpdate != nil:
		r.Updates["config_option_update"]++
	case u.SessionInfoUpdate != nil:
		r.Updates["session_info_update"]++
	default:
		r.Updates["unknown"]++
	}
	return nil
}

// toolCall records a tool_call (start) or tool_call_update into ts (locked).
func (c *acpClient) toolCall(ts *turnState, id string, title *string, kind, status string, locs []acp.ToolCallLocation, start bool) {
	r := &ts.res
	i, known := ts.calls[id]
	if !known {
		if !start {
			r.ProtocolViolations = appendBounded(r.ProtocolViolations, fmt.Sprintf("a tool_call_update for tool call %q that was never started", clip(id, 100)))
		}
		if len(r.ToolCalls) >= MaxTurnRecords {
			r.Dropped++
			return
		}
		r.ToolCalls = append(r.ToolCalls, ToolCallRecord{ID: clip(id, 200)})
		i = len(r.ToolCalls) - 1
		ts.calls[id] = i
	}
	tc := &r.ToolCalls[i]
	tc.Updates++
	if title != nil && *title != "" {
		tc.Title = clip(*title, 1000)
	}
	if kind != "" {
		tc.Kind = kind
	}
	if status != "" {
		tc.Status = status
	}
	for _, l := range locs {
		if len(tc.Locations) < 100 {
			tc.Locations = append(tc.Locations, clip(l.Path, 4096))
		}
	}
	if ts.cancelRequested {
		tc.AfterCancel = true
	}
}

func appendBounded(list []string, s string) []string {
	if len(list) >= MaxTurnRecords {
		return list
	}
	return append(list, s)
}

// RequestPermission hands the request to the decider and answers the agent with its
// decision, or "cancelled" when the turn is (or gets) cancelled, the session closes, or
// the decider fails.
func (c *acpClient) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	ts := c.current()
	cancelled := acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
	if ts == nil {
		c.s.log.note("permission_decision", map[string]any{"by": AnsweredByCancel, "reason": "no turn is running"})
		return cancelled, nil
	}
	req := PermissionRequest{Turn: ts.n, RunID: ts.runID, ToolCallID: clip(string(p.ToolCall.ToolCallId), 200)}
	if p.ToolCall.Title != nil {
		req.Title = clip(*p.ToolCall.Title, 1000)
	}
	if p.ToolCall.Kind != nil {
		req.Kind = string(*p.ToolCall.Kind)
	}
	for _, l := range p.ToolCall.Locations {
		if len(req.Locations) < 100 {
			req.Locations = append(req.Locations, clip(l.Path, 4096))
		}
	}
	if p.ToolCall.RawInput != nil {
		if b, err := json.Marshal(p.ToolCall.RawInput); err == nil && len(b) <= 64<<10 {
			req.RawInput = b
		}
	}
	for _, o := range p.Options {
		if len(req.Options) < 100 {
			req.Options = append(req.Options, PermissionOption{ID: clip(string(o.OptionId), 200), Name: clip(o.Name, 200), Kind: string(o.Kind)})
		}
	}
	ctx, cancel := context.WithCancel(ctx) // also ends when the agent sends $/cancel_request
	defer cancel()
	c.s.mu.Lock()
	c.s.permissions++
	req.Seq = c.s.permissions
	c.s.mu.Unlock()
	ts.mu.Lock()
	ts.permSeq++
	seq := ts.permSeq
	rec := PermissionRecord{Request: req, RequestedAt: c.s.env.Now()}
	alreadyCancelled := ts.cancelRequested || ts.ended
	if !alreadyCancelled {
		ts.pending[seq] = cancel
	}
	ts.mu.Unlock()

	var dec PermissionDecision
	var err error
	if alreadyCancelled {
		dec, rec.By = PermissionDecision{Cancelled: true}, AnsweredByCancel
	} else {
		dec, err = c.s.env.Decider.Decide(ctx, req)
		ts.mu.Lock()
		delete(ts.pending, seq)
		nowCancelled := ts.cancelRequested || ctx.Err() != nil
		ts.mu.Unlock()
		switch {
		case nowCancelled:
			dec, rec.By = PermissionDecision{Cancelled: true}, AnsweredByCancel
		case err != nil:
			rec.Error = err.Error()
			dec, rec.By = PermissionDecision{Cancelled: true}, AnsweredByError
		case dec.Cancelled:
			rec.By = AnsweredByDecider
		default:
			rec.By = AnsweredByDecider
			if !offered(req, dec.OptionID) {
				rec.Error = fmt.Sprintf("the decider chose option %q, which the request does not offer", clip(dec.OptionID, 100))
				dec, rec.By = PermissionDecision{Cancelled: true}, AnsweredByError
			}
		}
	}
	rec.Decision, rec.AnsweredAt = dec, c.s.env.Now()
	ts.mu.Lock()
	if len(ts.res.Permissions) < MaxTurnRecords {
		ts.res.Permissions = append(ts.res.Permissions, rec)
	} else {
		ts.res.Dropped++
	}
	if rec.By == AnsweredByError {
		ts.res.HarnessErrors = appendBounded(ts.res.HarnessErrors, fmt.Sprintf("permission request %d: %s", req.Seq, rec.Error))
	}
	ts.mu.Unlock()
	c.s.log.note("permission_decision", map[string]any{"seq": req.Seq, "toolCallId": req.ToolCallID, "by": rec.By,
		"optionId": dec.OptionID, "cancelled": dec.Cancelled, "error": rec.Error, "waitMs": rec.AnsweredAt.Sub(rec.RequestedAt).Milliseconds()})
	if dec.Cancelled {
		return cancelled, nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(dec.OptionID))}, nil
}

func offered(req PermissionRequest, id string) bool {
	for _, o := range req.Options {
		if o.ID == id {
			return true
		}
	}
	return false
}

// workspacePath turns an absolute path the agent sent into one relative to the
// workspace. Errors: a relative path or one outside the workspace.
func (c *acpClient) workspacePath(p string) (string, error) {
	ws := c.s.env.Run.Workspace
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is not absolute (ACP requires absolute paths)", clip(p, 200))
	}
	rel, err := filepath.Rel(ws, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("path %q is outside the workspace", clip(p, 200))
	}
	if rel == "." {
		return "", fmt.Errorf("path %q is the workspace itself", clip(p, 200))
	}
	return rel, nil
}

// fileOp records op into the running turn (or the log only, between turns).
func (c *acpClient) fileOp(rec FileOpRecord) {
	c.s.log.note("fs_"+rec.Op, rec)
	ts := c.current()
	if ts == nil {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	rec.AfterCancel = ts.cancelRequested
	if len(ts.res.Files) < MaxTurnRecords {
		ts.res.Files = append(ts.res.Files, rec)
	} else {
		ts.res.Dropped++
	}
}

// ReadTextFile serves fs/read_text_file inside the workspace (os.Root: no symlink or
// ".." escapes), optionally from a 1-based line and for limit lines, at most
// MaxACPReadBytes.
func (c *acpClient) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	if !c.s.clientFS {
		return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
	}
	rec := FileOpRecord{Op: "read", Path: clip(p.Path, 4096)}
	fail := func(err error) (acp.ReadTextFileResponse, error) {
		rec.Error = err.Error()
		c.fileOp(rec)
		return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	rel, err := c.workspacePath(p.Path)
	if err != nil {
		return fail(err)
	}
	rec.Path = rel
	f, err := c.s.root.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		// ACP's "Resource not found" (-32002): agents read before they create a file.
		rec.Error = "not found"
		c.fileOp(rec)
		return acp.ReadTextFileResponse{}, &acp.RequestError{Code: ACPResourceNotFound, Message: "Resource not found", Data: map[string]any{"uri": p.Path}}
	}
	if err != nil {
		return fail(fmt.Errorf("opening %s: %w", rel, errors.Unwrap(err)))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxACPReadBytes+1))
	if err != nil {
		return fail(fmt.Errorf("reading %s: %w", rel, err))
	}
	if len(b) > MaxACPReadBytes {
		return fail(fmt.Errorf("%s is larger than %d bytes", rel, MaxACPReadBytes))
	}
	content := string(b)
	if p.Line != nil || p.Limit != nil {
		lines := strings.SplitAfter(content, "\n")
		start := 0
		if p.Line != nil && *p.Line > 1 {
			start = min(*p.Line-1, len(lines))
		}
		end := len(lines)
		if p.Limit != nil && *p.Limit >= 0 && start+*p.Limit < end {
			end = start + *p.Limit
		}
		content = strings.Join(lines[start:end], "")
	}
	sum := sha256.Sum256(b)
	rec.Bytes, rec.SHA256 = len(content), hex.EncodeToString(sum[:])
	c.fileOp(rec)
	return acp.ReadTextFileResponse{Content: content}, nil
}

// WriteTextFile serves fs/write_text_file inside the workspace (os.Root), creating
// parent directories, within MaxACPWriteBytes per session. The client does not judge
// whether the write was permitted: that is the agent's duty, and the record (with
// AfterCancel) is the evidence.
func (c *acpClient) WriteTextFile(_ context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	if !c.s.clientFS {
		return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
	}
	sum := sha256.Sum256([]byte(p.Content))
	rec := FileOpRecord{Op: "write", Path: clip(p.Path, 4096), Bytes: len(p.Content), SHA256: hex.EncodeToString(sum[:])}
	fail := func(err error) (acp.WriteTextFileResponse, error) {
		rec.Error = err.Error()
		c.fileOp(rec)
		return acp.WriteTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	rel, err := c.workspacePath(p.Path)
	if err != nil {
		return fail(err)
	}
	rec.Path = rel
	c.s.mu.Lock()
	over := c.s.written+int64(len(p.Content)) > MaxACPWriteBytes
	if !over {
		c.s.written += int64(len(p.Content))
	}
	c.s.mu.Unlock()
	if over {
		return fail(fmt.Errorf("the session's writes would exceed %d bytes", MaxACPWriteBytes))
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := c.s.root.MkdirAll(dir, 0o755); err != nil {
			return fail(fmt.Errorf("creating %s: %w", dir, errors.Unwrap(err)))
		}
	}
	if err := c.s.root.WriteFile(rel, []byte(p.Content), 0o644); err != nil {
		return fail(fmt.Errorf("writing %s: %w", rel, errors.Unwrap(err)))
	}
	c.fileOp(rec)
	return acp.WriteTextFileResponse{}, nil
}

// The client offers no terminal capability: agents run commands with their own tools.

func (c *acpClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *acpClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *acpClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *acpClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *acpClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

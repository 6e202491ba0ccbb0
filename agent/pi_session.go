package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
)

// PiLogSchema tags every line of a Pi session log (the ACP log's entry shape: Method is
// the RPC line's type, ID its id, Update the assistant message event or dialog method).
const PiLogSchema = "agentproof.pi-rpc-log/v1"

// MaxPiLineBytes bounds one line of Pi's RPC stream that the driver decodes (bytes);
// a longer line (an agent_end of a long session carries every message) is classified
// from its head and counted.
const MaxPiLineBytes = 16 << 20

// PiRequestTimeout bounds the wait for Pi's response to one command of a started
// session (the run identity, a prompt, a steer, a follow-up); the first get_state of a
// starting Pi waits up to the driver's startTimeoutMs instead.
const PiRequestTimeout = 30 * time.Second

// PiEnv is what PiDriver.Start needs besides the driver's configuration:
//
//   - Run: the run that starts the session (its executable, workspace, API URL, state
//     directory and resolved secrets; each prompt names its own run, PiTurn).
//   - Permissions: answers the write gate's requests (required unless the gate is off).
//   - Questions: answers Pi's dialogs (required).
//   - Tools: the semantic tools the extension registers and proxies to `agentproof
//     mcp` (package mcp's Tools; may be empty).
//   - Log: where the whole session's evidence log goes (JSONL); may be nil.
//   - Redact: values to redact from the log besides the run tokens and the resolved
//     secrets, which are always redacted.
//   - Now: the clock (default time.Now).
type PiEnv struct {
	Run         RunEnv
	Permissions PermissionDecider
	Questions   QuestionDecider
	Tools       []PiTool
	Log         io.Writer
	Redact      *redact.Set
	Now         func() time.Time
}

// PiTurn is one prompt: the run it belongs to (RunID and RunToken: the extension's MCP
// bridge acts as that run) and the prompt text.
type PiTurn struct {
	RunID    string
	RunToken string
	Text     string
}

// PiSession is one running Pi process in RPC mode: the warm lifecycle sends every prompt
// of a case to it. Prompt calls are serialised; Steer, FollowUp and Cancel may be called
// from other goroutines while a prompt runs. Close must always be called.
type PiSession struct {
	d     *PiDriver
	env   PiEnv
	proc  *agentProcess
	log   *acpLog
	nonce string
	in    io.Writer

	// Index is the session's index among the agent's Pi sessions (1-based; the scripted
	// model serves it at /runs/<Index>/v1).
	Index int
	// SessionID is Pi's session id (get_state) and Model the model Pi reported using.
	SessionID string
	Model     string
	// Path and Args are Pi's program (Node.js, absolute) and argv as launched (the
	// entry script first).
	Path string
	Args []string

	promptMu sync.Mutex
	writeMu  sync.Mutex

	mu       sync.Mutex
	turns    int
	cur      *piTurn
	closed   bool
	broken   error
	reqSeq   int
	uiSeq    int
	waiting  map[string]chan piResponse
	outside  int // events that arrived while no turn ran
	readDone chan struct{}
}

// piResponse is Pi's answer to one command.
type piResponse struct {
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Error   string          `json:"error"`
	Data    json.RawMessage `json:"data"`
}

// PiTurnResult is what the driver observed of one prompt turn:
//
//   - Turn (1-based within the session), RunID, SessionID; Process: Pi's identity read
//     from /proc when the turn started (the warm lifecycle's same-PID oracle);
//     StartedAt, EndedAt, DurationMS (ms).
//   - StopReason: the last assistant message's stop reason (stop, length, toolUse,
//     error, aborted; "" when the turn failed before any); ErrorMessage its error.
//   - CancelRequested, CancelRequestedAt: Cancel was called; CancelHonoured: the turn
//     then ended with stop reason aborted; EventsAfterCancel: events after the cancel.
//   - Message: the text of the last assistant message (at most MaxTurnMessageBytes);
//     AssistantMessages: how many assistant messages the turn had; UserMessages the texts
//     of the user messages Pi delivered in the turn (the prompt, then steering and
//     follow-up messages, in order).
//   - ToolCalls (Kind is the tool's name, Status completed or failed), Permissions,
//     Questions, Steers, FollowUps, Notices (fire-and-forget dialog requests), Events
//     (count per type).
//   - Usage: summed token usage of the turn's assistant messages as JSON for
//     billing.ExtractLLM; nil when none was reported.
//   - ProtocolViolations, HarnessErrors, Failure, Evidence: as TurnResult's (the
//     evidence is pi-turn.jsonl).
type PiTurnResult struct {
	Turn               int                `json:"turn"`
	RunID              string             `json:"runId"`
	SessionID          string             `json:"sessionId"`
	Process            ProcessIdentity    `json:"process"`
	StartedAt          time.Time          `json:"startedAt"`
	EndedAt            time.Time          `json:"endedAt"`
	DurationMS         int64              `json:"durationMs"`
	StopReason         string             `json:"stopReason,omitempty"`
	ErrorMessage       string             `json:"errorMessage,omitempty"`
	CancelRequested    bool               `json:"cancelRequested,omitempty"`
	CancelRequestedAt  *time.Time         `json:"cancelRequestedAt,omitempty"`
	CancelHonoured     bool               `json:"cancelHonoured,omitempty"`
	EventsAfterCancel  int                `json:"eventsAfterCancel,omitempty"`
	Message            string             `json:"message"`
	MessageTruncated   bool               `json:"messageTruncated,omitempty"`
	AssistantMessages  int                `json:"assistantMessages"`
	UserMessages       []string           `json:"userMessages,omitempty"`
	ToolCalls          []ToolCallRecord   `json:"toolCalls,omitempty"`
	Permissions        []PermissionRecord `json:"permissions,omitempty"`
	Questions          []QuestionRecord   `json:"questions,omitempty"`
	Steers             []DeliveryRecord   `json:"steers,omitempty"`
	FollowUps          []DeliveryRecord   `json:"followUps,omitempty"`
	Notices            []string           `json:"notices,omitempty"`
	Events             map[string]int     `json:"events,omitempty"`
	Dropped            int                `json:"dropped,omitempty"`
	Usage              json.RawMessage    `json:"usage,omitempty"`
	ProtocolViolations []string           `json:"protocolViolations,omitempty"`
	HarnessErrors      []string           `json:"harnessErrors,omitempty"`
	Failure            string             `json:"failure,omitempty"`
	Evidence           []Evidence         `json:"-"`
}

// DeliveryRecord is one steering or follow-up message sent during a turn: its text,
// when it was sent, whether Pi accepted it (its response) and whether Pi delivered it
// into the turn's conversation (a user message with that text arrived in the turn).
type DeliveryRecord struct {
	Text      string    `json:"text"`
	SentAt    time.Time `json:"sentAt"`
	Accepted  bool      `json:"accepted"`
	Error     string    `json:"error,omitempty"`
	Delivered bool      `json:"delivered"`
}

// piTurn accumulates one turn; fields after mu are guarded by it.
type piTurn struct {
	n       int
	runID   string
	started time.Time
	ctx     context.Context
	stop    context.CancelFunc
	done    chan struct{}

	mu sync.Mutex
	turnCancel
	res     PiTurnResult
	calls   map[string]int
	pending map[string]context.CancelFunc
	usage   piUsage
}

type piUsage struct {
	input, output, cacheRead, cacheWrite int64
	events                               int
}

// StartError stages of a Pi session.
const piStageState = "get_state"

// Start launches Pi in env.Run's workspace: it creates the session's directory
// (PiSessionDir: HOME with Pi's models.json, the extension and its configuration),
// starts `node <cli.js> --mode rpc …` (explicit environment, its own process group, no
// shell) and waits for Pi to answer get_state within startTimeoutMs. Errors: a
// *StartError naming the stage (launch, spawn, get_state); the process is gone.
func (d *PiDriver) Start(ctx context.Context, env PiEnv) (*PiSession, error) {
	if env.Questions == nil {
		return nil, &StartError{Stage: "launch", Err: errors.New("no question decider")}
	}
	if len(d.gate) > 0 && env.Permissions == nil {
		return nil, &StartError{Stage: "launch", Err: errors.New("no permission decider (the write gate is on)")}
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	n, err := nextSessionIndex(env.Run.StateDir, "pi-sessions")
	if err != nil {
		return nil, &StartError{Stage: "launch", Err: fmt.Errorf("reading the agent's sessions: %w", err)}
	}
	l, err := d.launch(env.Run, n, env.Tools)
	if err != nil {
		return nil, &StartError{Stage: "launch", Err: err}
	}
	for _, dir := range append([]string{l.dir}, l.dirs...) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, &StartError{Stage: "launch", Err: err}
		}
	}
	if err := os.WriteFile(filepath.Join(l.dir, "run-id"), []byte(env.Run.RunID), 0o600); err != nil {
		return nil, &StartError{Stage: "launch", Err: err}
	}
	for name, body := range l.files {
		if err := os.WriteFile(name, body, 0o600); err != nil {
			return nil, &StartError{Stage: "launch", Err: err}
		}
	}
	secrets := env.Redact.WithCredentials(env.Run.RunToken)
	for _, v := range env.Run.Secrets {
		secrets = secrets.WithCredentials(v)
	}
	log := newACPLog(env.Log, secrets, env.Now)
	log.schema, log.classify = PiLogSchema, ClassifyPiLine
	s := &PiSession{d: d, env: env, Index: n, log: log, nonce: l.nonce, waiting: map[string]chan piResponse{}, readDone: make(chan struct{}),
		Path: l.spec.Path, Args: slices.Clone(l.spec.Args)}
	l.spec.Marker = worker.NewMarker()
	proc, err := startProcess(l.spec, ACPCloseGrace)
	if err != nil {
		return nil, &StartError{Stage: "spawn", Err: err}
	}
	s.proc = proc
	s.in = &tapWriter{w: proc.stdin, tap: &lineTap{maxLine: MaxACPLineBytes, emit: func(b []byte, n int) { s.log.wire(DirClient, b, n) }}}
	s.log.note("process_start", map[string]any{"pid": proc.identity.PID, "startTime": proc.identity.StartTime,
		"argv0": l.spec.Path, "args": len(l.spec.Args) - 1, "session": n})
	go s.read()
	startCtx, cancel := context.WithTimeout(ctx, d.startTimeout)
	defer cancel()
	resp, err := s.request(startCtx, d.startTimeout, map[string]any{"type": "get_state"})
	if err == nil && !resp.Success {
		err = fmt.Errorf("get_state failed: %s", resp.Error)
	}
	if err != nil {
		exit := s.Close()
		return nil, &StartError{Stage: piStageState, Err: err, Exit: &exit}
	}
	var st struct {
		SessionID string `json:"sessionId"`
		Model     struct {
			ID string `json:"id"`
		} `json:"model"`
	}
	_ = json.Unmarshal(resp.Data, &st)
	s.SessionID, s.Model = st.SessionID, st.Model.ID
	return s, nil
}

// Identity is Pi's process identity, read afresh from /proc. Errors: it has exited.
func (s *PiSession) Identity() (ProcessIdentity, error) {
	if s.proc.exited() {
		return ProcessIdentity{}, fmt.Errorf("agent: the Pi process %s has exited", s.proc.identity)
	}
	st, err := ProcStartTime(s.proc.identity.PID)
	if err != nil {
		return ProcessIdentity{}, err
	}
	return ProcessIdentity{PID: s.proc.identity.PID, StartTime: st}, nil
}

// Alive reports whether the session can serve another prompt: not closed, not broken
// by a turn (agent_gone, timed_out) and its process still running (the warm
// lifecycle's reuse test).
func (s *PiSession) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && s.broken == nil && !s.proc.exited()
}

// send writes one command line to Pi.
func (s *PiSession) send(cmd map[string]any) error {
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, err = s.in.Write(append(b, '\n'))
	return err
}

// request sends cmd with a fresh id and waits for Pi's response (ctx, limit — PiRequestTimeout,
// or startTimeoutMs for the first get_state of a starting Pi — or Pi's exit end the wait).
func (s *PiSession) request(ctx context.Context, limit time.Duration, cmd map[string]any) (piResponse, error) {
	s.mu.Lock()
	s.reqSeq++
	id := "agentproof-" + strconv.Itoa(s.reqSeq)
	ch := make(chan piResponse, 1)
	s.waiting[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, id)
		s.mu.Unlock()
	}()
	cmd["id"] = id
	if err := s.send(cmd); err != nil {
		return piResponse{}, fmt.Errorf("sending %v: %w", cmd["type"], err)
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return piResponse{}, fmt.Errorf("waiting for the answer to %v: %w", cmd["type"], context.Cause(ctx))
	case <-t.C:
		return piResponse{}, fmt.Errorf("agent: Pi did not answer %v within %v", cmd["type"], limit)
	case <-s.readDone:
		return piResponse{}, fmt.Errorf("agent: Pi closed its RPC stream before answering %v", cmd["type"])
	}
}

// piTypeRE finds the "type" of a line too long to decode.
var piTypeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"type"\s*:\s*"([a-z_]{1,40})"`) })

// read consumes Pi's stdout until it ends: every line is logged, responses go to their
// waiting request, dialogs to the deciders, events to the current turn.
func (s *PiSession) read() {
	defer close(s.readDone)
	r := bufio.NewReaderSize(s.proc.stdout, 64<<10)
	var line []byte
	size := 0
	for {
		chunk, err := r.ReadSlice('\n')
		size += len(chunk)
		if room := MaxPiLineBytes - len(line); room > 0 {
			line = append(line, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if size > 0 {
			// The log's size of a line excludes its newline, like the client's side
			// (lineTap): a whole line is logged as JSON, only a longer one as cut text.
			n := size
			if err == nil {
				n--
			}
			logged := bytes.TrimSuffix(line, []byte("\n"))
			s.log.wire(DirAgent, logged[:min(len(logged), MaxACPLineBytes)], n)
			s.dispatch(bytes.TrimRight(line, "\r\n"), size > MaxPiLineBytes)
		}
		line, size = line[:0], 0
		if err != nil {
			s.mu.Lock()
			ts := s.cur
			s.mu.Unlock()
			if ts != nil {
				ts.finish()
			}
			return
		}
	}
}

// piLine is the part of an RPC line the driver reads.
type piLine struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Error   string          `json:"error"`
	Data    json.RawMessage `json:"data"`
	// extension_ui_request
	Method      string   `json:"method"`
	Title       string   `json:"title"`
	Message     any      `json:"message"`
	Options     []string `json:"options"`
	Placeholder string   `json:"placeholder"`
	Prefill     string   `json:"prefill"`
	Timeout     int64    `json:"timeout"`
	// tool_execution_*
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	IsError    bool   `json:"isError"`
}

// piMessage is an AgentMessage as the driver reads it.
type piMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Usage        *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cacheRead"`
		CacheWrite int64 `json:"cacheWrite"`
	} `json:"usage"`
}

// text returns the message's text content (a string, or its text blocks joined).
func (m piMessage) text() string {
	var str string
	if json.Unmarshal(m.Content, &str) == nil {
		return str
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "")
}

func (s *PiSession) dispatch(line []byte, oversized bool) {
	var l piLine
	if oversized || json.Unmarshal(line, &l) != nil {
		if m := piTypeRE().FindSubmatch(line[:min(len(line), 4096)]); m != nil {
			l.Type = string(m[1])
		}
		s.event(l, nil, oversized)
		return
	}
	switch l.Type {
	case "response":
		s.mu.Lock()
		ch := s.waiting[l.ID]
		s.mu.Unlock()
		if ch != nil {
			ch <- piResponse{Command: l.Command, Success: l.Success, Error: l.Error, Data: l.Data}
			return
		}
		s.event(l, line, false)
	case "extension_ui_request":
		switch l.Method {
		case QuestionSelect, QuestionConfirm, QuestionInput, QuestionEditor:
			go s.dialog(l)
		default:
			s.event(l, line, false)
		}
	default:
		s.event(l, line, false)
	}
}

// event records one event in the current turn.
func (s *PiSession) event(l piLine, line []byte, oversized bool) {
	s.mu.Lock()
	ts := s.cur
	if ts == nil {
		s.outside++
	}
	s.mu.Unlock()
	if ts == nil {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.ended {
		return
	}
	name := cmpOr(l.Type, "(not JSON)")
	if ts.res.Events == nil {
		ts.res.Events = map[string]int{}
	}
	ts.res.Events[name]++
	if ts.cancelRequested {
		ts.res.EventsAfterCancel++
	}
	if oversized {
		ts.res.Dropped++
		if l.Type == "agent_end" {
			ts.end()
		}
		return
	}
	switch l.Type {
	case "message_end":
		var ev struct {
			Message piMessage `json:"message"`
		}
		_ = json.Unmarshal(line, &ev)
		m := ev.Message
		switch m.Role {
		case "assistant":
			ts.res.AssistantMessages++
			ts.res.StopReason, ts.res.ErrorMessage = m.StopReason, m.ErrorMessage
			txt := m.text()
			ts.res.Message, ts.res.MessageTruncated = txt, false
			if len(txt) > MaxTurnMessageBytes {
				ts.res.Message, ts.res.MessageTruncated = strings.ToValidUTF8(txt[:MaxTurnMessageBytes], ""), true
			}
			if u := m.Usage; u != nil {
				ts.usage.events++
				ts.usage.input += max(0, u.Input)
				ts.usage.output += max(0, u.Output)
				ts.usage.cacheRead += max(0, u.CacheRead)
				ts.usage.cacheWrite += max(0, u.CacheWrite)
			}
		case "user":
			txt := m.text()
			ts.res.UserMessages = appendBounded(ts.res.UserMessages, clip(txt, 4096))
			for _, list := range [][]DeliveryRecord{ts.res.Steers, ts.res.FollowUps} {
				for i := range list {
					if list[i].Text == txt {
						list[i].Delivered = true
					}
				}
			}
		}
	case "tool_execution_start":
		if _, seen := ts.calls[l.ToolCallID]; !seen && len(ts.res.ToolCalls) < MaxTurnRecords {
			ts.calls[l.ToolCallID] = len(ts.res.ToolCalls)
			ts.res.ToolCalls = append(ts.res.ToolCalls, ToolCallRecord{ID: l.ToolCallID, Title: l.ToolName, Kind: l.ToolName, Status: "in_progress"})
		}
		ts.touch(l.ToolCallID)
	case "tool_execution_update":
		ts.touch(l.ToolCallID)
	case "tool_execution_end":
		i, seen := ts.calls[l.ToolCallID]
		if !seen {
			ts.res.ProtocolViolations = appendBounded(ts.res.ProtocolViolations, "tool_execution_end of unknown tool call "+clip(l.ToolCallID, 200))
			return
		}
		ts.touch(l.ToolCallID)
		ts.res.ToolCalls[i].Status = "completed"
		if l.IsError {
			ts.res.ToolCalls[i].Status = "failed"
		}
	case "extension_ui_request":
		ts.res.Notices = appendBounded(ts.res.Notices, clip(l.Method+": "+l.Title+fmt.Sprint(l.Message), 1000))
	case "extension_error":
		ts.res.HarnessErrors = appendBounded(ts.res.HarnessErrors, "agentproof's Pi extension failed: "+clip(string(line), 1000))
	case "agent_end":
		ts.end()
	}
}

// touch counts an update of tool call id.
func (ts *piTurn) touch(id string) {
	if i, ok := ts.calls[id]; ok {
		ts.res.ToolCalls[i].Updates++
		if ts.cancelRequested {
			ts.res.ToolCalls[i].AfterCancel = true
		}
	}
}

// end marks the turn ended (Pi's agent_end); ts.mu is held.
func (ts *piTurn) end() {
	if !ts.ended {
		ts.ended = true
		close(ts.done)
	}
}

// finish ends the turn from outside the event stream (the stream closed).
func (ts *piTurn) finish() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.end()
}

// dialog answers one of Pi's dialogs: the gate's confirm goes to the permission
// decider, every other dialog to the question decider.
func (s *PiSession) dialog(l piLine) {
	s.mu.Lock()
	ts := s.cur
	s.uiSeq++
	seq := s.uiSeq
	s.mu.Unlock()
	respond := func(r map[string]any) {
		r["type"], r["id"] = "extension_ui_response", l.ID
		_ = s.send(r)
	}
	if ts == nil {
		s.mu.Lock()
		s.outside++
		s.mu.Unlock()
		respond(map[string]any{"cancelled": true})
		return
	}
	ts.mu.Lock()
	if ts.ended {
		ts.mu.Unlock()
		respond(map[string]any{"cancelled": true})
		return
	}
	ctx, cancel := context.WithCancel(ts.ctx)
	ts.pending[l.ID] = cancel
	cancelled := ts.cancelRequested
	if ts.res.Events == nil {
		ts.res.Events = map[string]int{}
	}
	ts.res.Events["extension_ui_request"]++
	ts.mu.Unlock()
	defer func() {
		ts.mu.Lock()
		delete(ts.pending, l.ID)
		ts.mu.Unlock()
		cancel()
	}()
	msg, _ := l.Message.(string)
	now := s.env.Now()
	if l.Method == QuestionConfirm && l.Title == "agentproof-permission:"+s.nonce {
		rec := s.permission(ctx, seq, ts, msg, cancelled)
		rec.RequestedAt = now
		rec.AnsweredAt = s.env.Now()
		r := map[string]any{"cancelled": true}
		switch {
		case rec.Decision.Cancelled:
		case rec.Decision.OptionID == piAllow:
			r = map[string]any{"confirmed": true}
		case rec.Decision.OptionID == piReject:
			r = map[string]any{"confirmed": false}
		}
		respond(r)
		s.log.note("permission_decision", rec)
		ts.mu.Lock()
		if len(ts.res.Permissions) < MaxTurnRecords {
			ts.res.Permissions = append(ts.res.Permissions, rec)
		} else {
			ts.res.Dropped++
		}
		if rec.Error != "" {
			ts.res.HarnessErrors = appendBounded(ts.res.HarnessErrors, rec.Error)
		}
		ts.mu.Unlock()
		return
	}
	req := QuestionRequest{Seq: seq, Turn: ts.n, RunID: ts.runID, ID: l.ID, Method: l.Method, Title: l.Title, Message: msg,
		Options: l.Options, Placeholder: l.Placeholder, Prefill: l.Prefill, TimeoutMS: l.Timeout}
	rec := QuestionRecord{Request: req, RequestedAt: now, By: AnsweredByCancel, Answer: QuestionAnswer{Cancelled: true}}
	if !cancelled {
		a, err := s.env.Questions.Answer(ctx, req)
		switch {
		case ctx.Err() != nil:
			if err != nil { // the decider could not close its question after the cancel
				rec.Error = fmt.Sprintf("question %d: after the cancel: %v", seq, err)
			}
		case err != nil:
			rec.By, rec.Error = AnsweredByError, fmt.Sprintf("question %d: the decider failed: %v", seq, err)
		case l.Method == QuestionSelect && !a.Cancelled && !slicesContains(l.Options, a.Value):
			rec.By, rec.Error = AnsweredByError, fmt.Sprintf("question %d: the decider chose %q, which is not one of the options", seq, a.Value)
		default:
			rec.By, rec.Answer = AnsweredByDecider, a
		}
	}
	rec.AnsweredAt = s.env.Now()
	r := map[string]any{"cancelled": true}
	if !rec.Answer.Cancelled {
		if l.Method == QuestionConfirm {
			r = map[string]any{"confirmed": rec.Answer.Confirmed}
		} else {
			r = map[string]any{"value": rec.Answer.Value}
		}
	}
	respond(r)
	s.log.note("question_answer", map[string]any{"seq": seq, "method": l.Method, "by": rec.By, "cancelled": rec.Answer.Cancelled})
	ts.mu.Lock()
	if len(ts.res.Questions) < MaxTurnRecords {
		ts.res.Questions = append(ts.res.Questions, rec)
	} else {
		ts.res.Dropped++
	}
	if rec.Error != "" {
		ts.res.HarnessErrors = appendBounded(ts.res.HarnessErrors, rec.Error)
	}
	ts.mu.Unlock()
}

// The options of a gate's permission request.
const (
	piAllow  = "allow"
	piReject = "reject"
)

// permission asks the permission decider about one gated tool call (msg is the
// extension's JSON {toolCallId, tool, path, input}).
func (s *PiSession) permission(ctx context.Context, seq int, ts *piTurn, msg string, cancelled bool) PermissionRecord {
	var call struct {
		ToolCallID string          `json:"toolCallId"`
		Tool       string          `json:"tool"`
		Path       string          `json:"path"`
		Input      json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal([]byte(msg), &call)
	req := PermissionRequest{Seq: seq, Turn: ts.n, RunID: ts.runID, ToolCallID: call.ToolCallID,
		Title: strings.TrimSpace(call.Tool + " " + call.Path), Kind: "edit", RawInput: call.Input,
		Options: []PermissionOption{{ID: piAllow, Name: "Allow", Kind: PermissionAllowOnce}, {ID: piReject, Name: "Reject", Kind: PermissionRejectOnce}}}
	if call.Path != "" {
		req.Locations = []string{call.Path}
	}
	rec := PermissionRecord{Request: req, By: AnsweredByCancel, Decision: PermissionDecision{Cancelled: true}}
	if cancelled {
		return rec
	}
	dec, err := s.env.Permissions.Decide(ctx, req)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		rec.By, rec.Error = AnsweredByError, fmt.Sprintf("permission %d: the decider failed: %v", seq, err)
	case !dec.Cancelled && dec.OptionID != piAllow && dec.OptionID != piReject:
		rec.By, rec.Error = AnsweredByError, fmt.Sprintf("permission %d: the decider chose option %q, which the request does not offer", seq, dec.OptionID)
	default:
		rec.By, rec.Decision = AnsweredByDecider, dec
	}
	return rec
}

func slicesContains(list []string, v string) bool {
	for _, e := range list {
		if e == v {
			return true
		}
	}
	return false
}

// Prompt sends t.Text as the next prompt of the session, after telling the extension
// the turn's run (/agentproof-run, so its MCP bridge acts as t's run), and blocks until
// Pi ends the turn (agent_end). The result is returned even on error. Errors: a
// *TurnError (agent_error: Pi refused the prompt or the turn ended with stop reason
// error; agent_gone: Pi exited or closed its stream; timed_out: the turn deadline passed
// and Pi did not end the turn within cancelGraceMs of the abort; misuse: a closed or
// broken session).
func (s *PiSession) Prompt(ctx context.Context, t PiTurn) (PiTurnResult, error) {
	s.promptMu.Lock()
	defer s.promptMu.Unlock()
	s.mu.Lock()
	if s.closed || s.broken != nil {
		why := s.broken
		if s.closed {
			why = errors.New("the session is closed")
		}
		s.mu.Unlock()
		return PiTurnResult{}, &TurnError{Failure: TurnMisuse, Err: why}
	}
	s.turns++
	n := s.turns
	s.mu.Unlock()
	if t.RunToken != "" {
		s.log.addSecrets(t.RunToken)
	}
	tctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	ts := &piTurn{n: n, runID: t.RunID, started: s.env.Now(), ctx: tctx, stop: stop, done: make(chan struct{}),
		calls: map[string]int{}, pending: map[string]context.CancelFunc{}}
	ts.res = PiTurnResult{Turn: n, RunID: t.RunID, SessionID: s.SessionID, StartedAt: ts.started}
	s.log.beginTurn(n)
	id, idErr := s.Identity()
	ts.res.Process = id
	s.log.note("turn_start", map[string]any{"turn": n, "runId": t.RunID, "sessionId": s.SessionID, "pid": id.PID, "startTime": id.StartTime})
	fail := func(f TurnFailure, err error) (PiTurnResult, error) {
		res := s.result(ts, idErr)
		res.Failure = string(f) + ": " + err.Error()
		if f == TurnAgentGone || f == TurnTimedOut {
			s.mu.Lock()
			s.broken = fmt.Errorf("turn %d: %s", n, res.Failure)
			s.mu.Unlock()
		}
		s.log.note("turn_end", map[string]any{"turn": n, "failure": res.Failure})
		res.Evidence = s.turnEvidence()
		return res, &TurnError{Failure: f, Err: err}
	}
	identity, _ := json.Marshal(map[string]string{"apiUrl": s.env.Run.APIURL, "runId": t.RunID, "runToken": t.RunToken, "stateDir": s.env.Run.StateDir})
	if r, err := s.request(ctx, PiRequestTimeout, map[string]any{"type": "prompt", "message": "/agentproof-run " + string(identity)}); err != nil || !r.Success {
		if err == nil {
			err = fmt.Errorf("the extension refused the run identity: %s", r.Error)
		}
		return fail(s.goneOr(TurnAgentError), err)
	}
	s.mu.Lock()
	s.cur = ts
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
	}()
	r, err := s.request(ctx, PiRequestTimeout, map[string]any{"type": "prompt", "message": t.Text})
	if err == nil && !r.Success {
		err = fmt.Errorf("agent: Pi refused the prompt: %s", r.Error)
	}
	if err != nil {
		return fail(s.goneOr(TurnAgentError), err)
	}
	deadline := time.NewTimer(s.d.turnTimeout)
	defer deadline.Stop()
	select {
	case <-ts.done:
	case <-ctx.Done():
		if !s.abortAndWait(ts, "the caller's context ended: "+context.Cause(ctx).Error()) {
			return fail(TurnTimedOut, fmt.Errorf("the caller's context ended and Pi did not end the turn within %v of the abort", s.d.cancelGrace))
		}
	case <-deadline.C:
		why := fmt.Sprintf("the turn deadline (%v) passed", s.d.turnTimeout)
		if !s.abortAndWait(ts, why) {
			return fail(TurnTimedOut, fmt.Errorf("%s and Pi did not end the turn within %v of the abort", why, s.d.cancelGrace))
		}
		return fail(TurnTimedOut, errors.New(why+"; the turn ended after the abort"))
	}
	if !s.sawAgentEnd(ts) {
		return fail(TurnAgentGone, errors.New("agent: Pi closed its RPC stream during the turn"))
	}
	res := s.result(ts, idErr)
	if res.StopReason == "error" && !res.CancelRequested {
		f, e := fail(TurnAgentError, fmt.Errorf("the turn ended with stop reason error: %s", clip(res.ErrorMessage, 600)))
		return f, e
	}
	s.log.note("turn_end", map[string]any{"turn": n, "stopReason": res.StopReason, "durationMs": res.DurationMS})
	res.Evidence = s.turnEvidence()
	return res, nil
}

// sawAgentEnd reports whether ts ended with Pi's agent_end (rather than the stream
// closing).
func (s *PiSession) sawAgentEnd(ts *piTurn) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.res.Events["agent_end"] > 0
}

// goneOr is TurnAgentGone when Pi has exited or closed its stream, else f.
func (s *PiSession) goneOr(f TurnFailure) TurnFailure {
	select {
	case <-s.readDone:
		return TurnAgentGone
	default:
	}
	if s.proc.exited() {
		return TurnAgentGone
	}
	return f
}

// abortAndWait aborts ts (why) and waits the cancel grace for it to end.
func (s *PiSession) abortAndWait(ts *piTurn, why string) bool {
	_ = s.cancel(ts, why)
	select {
	case <-ts.done:
		return true
	case <-time.After(s.d.cancelGrace):
		return false
	}
}

// result is the turn's record at its end.
func (s *PiSession) result(ts *piTurn, idErr error) PiTurnResult {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	res := ts.res
	res.EndedAt = s.env.Now()
	res.DurationMS = res.EndedAt.Sub(ts.started).Milliseconds()
	res.CancelRequested = ts.cancelRequested
	if ts.cancelRequested {
		at := ts.cancelAt
		res.CancelRequestedAt = &at
		res.CancelHonoured = res.StopReason == "aborted"
		if !res.CancelHonoured && ts.ended {
			res.ProtocolViolations = appendBounded(res.ProtocolViolations, fmt.Sprintf("the turn ended with stop reason %q after the abort, not aborted", res.StopReason))
		}
	}
	if idErr != nil {
		res.HarnessErrors = appendBounded(res.HarnessErrors, "reading the process identity: "+idErr.Error())
	}
	if u := ts.usage; u.events > 0 {
		res.Usage, _ = json.Marshal(map[string]any{"inputTokens": u.input, "outputTokens": u.output, "cachedInputTokens": u.cacheRead,
			"cacheWriteInputTokens": u.cacheWrite, "source": "pi rpc", "usageEvents": u.events})
	}
	res.ToolCalls = append([]ToolCallRecord(nil), res.ToolCalls...)
	res.Steers = append([]DeliveryRecord(nil), res.Steers...)
	res.FollowUps = append([]DeliveryRecord(nil), res.FollowUps...)
	return res
}

// Steer delivers text to the running turn as a steering message (Pi's steer: after the
// current assistant message's tool calls, before the next model request) and returns
// once Pi accepted it. Errors: no turn is running, or Pi refused it.
func (s *PiSession) Steer(ctx context.Context, text string) error {
	return s.deliver(ctx, "steer", text)
}

// FollowUp queues text as a follow-up of the running turn (Pi's follow_up: delivered
// when the agent would otherwise stop, in the same turn) and returns once Pi accepted
// it. Errors as Steer's.
func (s *PiSession) FollowUp(ctx context.Context, text string) error {
	return s.deliver(ctx, "follow_up", text)
}

func (s *PiSession) deliver(ctx context.Context, kind, text string) error {
	s.mu.Lock()
	ts := s.cur
	s.mu.Unlock()
	if ts == nil {
		return fmt.Errorf("agent: no Pi turn is running to %s", kind)
	}
	ts.mu.Lock()
	if ts.ended {
		ts.mu.Unlock()
		return fmt.Errorf("agent: no Pi turn is running to %s", kind)
	}
	rec := DeliveryRecord{Text: text, SentAt: s.env.Now()}
	list := &ts.res.Steers
	if kind == "follow_up" {
		list = &ts.res.FollowUps
	}
	i := len(*list)
	*list = append(*list, rec)
	ts.mu.Unlock()
	r, err := s.request(ctx, PiRequestTimeout, map[string]any{"type": kind, "message": text})
	ts.mu.Lock()
	defer ts.mu.Unlock()
	switch {
	case err != nil:
		(*list)[i].Error = err.Error()
		return fmt.Errorf("agent: Pi %s: %w", kind, err)
	case !r.Success:
		(*list)[i].Error = r.Error
		return fmt.Errorf("agent: Pi refused the %s: %s", kind, r.Error)
	}
	(*list)[i].Accepted = true
	return nil
}

// Cancel is the native Stop of the running turn: it sends Pi's abort and answers every
// pending dialog "cancelled" (Pi's abort waits for them), and any dialog that arrives
// later in the turn. The turn's Prompt then returns once Pi ends it, which must be with
// stop reason aborted (PiTurnResult.CancelHonoured). Errors: no turn is running, or the
// command could not be sent.
func (s *PiSession) Cancel(reason string) error {
	s.mu.Lock()
	ts := s.cur
	s.mu.Unlock()
	if ts == nil {
		return errors.New("agent: no Pi turn is running")
	}
	return s.cancel(ts, reason)
}

func (s *PiSession) cancel(ts *piTurn, reason string) error {
	ts.mu.Lock()
	running, first := ts.requestCancel(s.env.Now())
	ts.mu.Unlock()
	if !running {
		return errors.New("agent: no Pi turn is running")
	}
	if !first {
		return nil
	}
	s.log.note("cancel", map[string]any{"turn": ts.n, "reason": reason})
	s.mu.Lock()
	s.reqSeq++
	id := "agentproof-" + strconv.Itoa(s.reqSeq)
	s.mu.Unlock()
	err := s.send(map[string]any{"type": "abort", "id": id})
	ts.mu.Lock()
	for _, c := range ts.pending {
		c()
	}
	ts.mu.Unlock()
	return err
}

// Close ends the session: pending dialogs are answered "cancelled", Pi's stdin is
// closed, the process is given ACPCloseGrace to exit, then SIGTERM and SIGKILL of its
// process group, every descendant left is killed, and the exit is returned (stderr
// redacted). It is idempotent.
func (s *PiSession) Close() ProcessExit {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	ts := s.cur
	s.mu.Unlock()
	if ts != nil {
		ts.mu.Lock()
		for _, c := range ts.pending {
			c()
		}
		ts.mu.Unlock()
	}
	exit := s.proc.stop()
	exit.Stderr = []byte(s.log.set().RedactText(string(exit.Stderr)))
	if first {
		s.log.note("process_exit", exit)
		_ = s.log.close()
	}
	return exit
}

// EventsOutsideTurns counts the events and dialogs Pi sent while no turn was running.
func (s *PiSession) EventsOutsideTurns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outside
}

// LogError returns the first error writing the session log, if any (a harness fault).
func (s *PiSession) LogError() error {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.err
}

func (s *PiSession) turnEvidence() []Evidence {
	b, cut := s.log.turnEvidence()
	ev := []Evidence{{Name: "pi-turn.jsonl", MediaType: "application/jsonl", Body: b}}
	if cut > 0 {
		ev[0].Name = fmt.Sprintf("pi-turn.jsonl (%d lines over %d bytes not kept)", cut, MaxACPTurnLogBytes)
	}
	return ev
}

// ClassifyPiLine reads the envelope of one Pi RPC line (untrusted: any bytes) for the
// log: Method is its type, ID its id, Update the assistant message event type of a
// message_update or the method of an extension_ui_request. It never fails.
func ClassifyPiLine(line []byte) WireLine {
	var env struct {
		Type   *string         `json:"type"`
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		AME    *struct {
			Type string `json:"type"`
		} `json:"assistantMessageEvent"`
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &env) != nil {
		return WireLine{}
	}
	w := WireLine{Object: true, ID: env.ID}
	if env.Type != nil {
		w.Method = *env.Type
	}
	switch {
	case env.AME != nil:
		w.Update = env.AME.Type
	case w.Method == "extension_ui_request" || w.Method == "extension_ui_response":
		w.Update = env.Method
	}
	return w
}

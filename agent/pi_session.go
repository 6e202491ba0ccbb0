package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent/session"
)

// The Pi protocol of the session layer (docs/pi.md "RPC mapping"): Pi's RPC mode is
// newline-delimited JSON — commands with an id on stdin, their responses and Pi's
// events on stdout. The handshake is get_state (Pi's session id and model); a turn is
// a prompt carrying the run's identity to agentproof's extension (/agentproof-run),
// then the prompt itself, ended by Pi's agent_end event; the native cancel is abort;
// steer and follow_up deliver messages into the running turn. Pi's extension dialogs
// (extension_ui_request) are the write gate's permission requests (a confirm whose
// title carries the session's nonce) and native questions; both go to the layer.

// PiLogSchema tags every line of a Pi session log (Method is the RPC line's type, ID
// its id, Update the assistant message event or dialog method).
const PiLogSchema = "agentproof.pi-rpc-log/v1"

// MaxPiLineBytes bounds one line of Pi's RPC stream that the driver decodes (bytes);
// a longer line (an agent_end of a long session carries every message) is classified
// from its head and counted.
const MaxPiLineBytes = 16 << 20

// PiRequestTimeout bounds the wait for Pi's response to one command of a started
// session (the run identity, a prompt, a steer, a follow-up); the first get_state of a
// starting Pi waits as long as the start may take (startTimeoutMs).
const PiRequestTimeout = 30 * time.Second

// Start launches Pi in env.Run's workspace: it creates the session's directory
// (PiSessionDir: HOME with Pi's models.json, the extension and its configuration with
// env.Tools), starts `node <cli.js> --mode rpc …` and waits for Pi to answer get_state
// within startTimeoutMs. Errors: a *session.StartError naming the stage (launch, spawn,
// get_state); the process is gone.
func (d *PiDriver) Start(ctx context.Context, env SessionEnv) (*session.Session, error) {
	fail := func(err error) (*session.Session, error) {
		return nil, &session.StartError{Protocol: piName, Stage: session.StageLaunch, Err: err}
	}
	if env.Questions == nil {
		return fail(errors.New("no question decider"))
	}
	if len(d.gate) > 0 && env.Permissions == nil {
		return fail(errors.New("no permission decider (the write gate is on)"))
	}
	n, err := nextSessionIndex(env.Run.StateDir, piSessions)
	if err != nil {
		return fail(fmt.Errorf("reading the agent's sessions: %w", err))
	}
	l, nonce, err := d.launch(env.Run, n, env.Tools)
	if err != nil {
		return fail(err)
	}
	return session.Start(ctx, &piProtocol{nonce: nonce, apiURL: env.Run.APIURL, stateDir: env.Run.StateDir}, l, d.sessionSettings.env(env))
}

// Protocol is PiProtocol.
func (d *PiDriver) Protocol() session.Protocol { return PiProtocol }

// Confinable: Pi runs inside a lease (a container of the Node.js image; its
// extension's MCP bridge is the agentproof executable the lease mounts read-only, its
// files are in the state directory the lease binds).
func (d *PiDriver) Confinable() bool { return true }

// piName is the Pi protocol's name in messages.
const piName = "Pi"

// PiProtocol describes Pi's RPC mode to the session layer.
var PiProtocol = session.Protocol{Name: piName, LogSchema: PiLogSchema, Classify: ClassifyPiLine, Evidence: "pi-turn",
	Completed: "stop", Cancelled: "aborted", CancelName: "the abort"}

// piProtocol is one Pi session's handshake: the write gate's nonce and what the run
// identity of every turn names besides the run (the API URL, the state directory).
type piProtocol struct {
	nonce    string
	apiURL   string
	stateDir string
}

func (p *piProtocol) Protocol() session.Protocol { return PiProtocol }

// Open starts reading Pi's stream and waits for get_state.
func (p *piProtocol) Open(ctx context.Context, rw io.ReadWriter, h session.Host) (session.Conn, error) {
	c := &piConn{p: p, h: h, out: session.NewLineWriter(rw), readDone: make(chan struct{})}
	go c.read(rw)
	resp, err := c.request(ctx, time.Duration(1<<62), map[string]any{"type": "get_state"})
	if err == nil && !resp.Success {
		err = fmt.Errorf("get_state failed: %s", resp.Error)
	}
	if err != nil {
		return c, &session.StartError{Stage: "get_state", Err: err}
	}
	var st struct {
		SessionID string `json:"sessionId"`
		Model     struct {
			ID string `json:"id"`
		} `json:"model"`
	}
	_ = json.Unmarshal(resp.Data, &st)
	c.info = session.Info{SessionID: st.SessionID, Model: st.Model.ID}
	return c, nil
}

// piConn is one Pi RPC connection (session.Conn, session.Steerer,
// session.FollowUpper).
type piConn struct {
	p    *piProtocol
	h    session.Host
	out  *session.LineWriter // Pi's stdin
	info session.Info

	calls session.Calls[piResponse]

	mu       sync.Mutex
	turn     *piTurn // the running turn's own state, nil between turns
	readDone chan struct{}
}

var (
	_ session.Conn        = (*piConn)(nil)
	_ session.Steerer     = (*piConn)(nil)
	_ session.FollowUpper = (*piConn)(nil)
)

// piTurn is what the Pi connection keeps of the running turn: its end (agent_end, or
// the stream's end), the last assistant message's stop reason and error, and the
// summed usage; guarded by piConn.mu.
type piTurn struct {
	session.TurnEnd // completed by agent_end
	stop            string
	errMsg          string
	usage           piUsage
}

type piUsage struct {
	input, output, cacheRead, cacheWrite int64
	events                               int
}

// piResponse is Pi's answer to one command.
type piResponse struct {
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Error   string          `json:"error"`
	Data    json.RawMessage `json:"data"`
}

func (c *piConn) Info() session.Info { return c.info }

func (c *piConn) Done() <-chan struct{} { return c.readDone }

func (c *piConn) Close() error { return nil }

// send writes one command line to Pi.
func (c *piConn) send(cmd map[string]any) error { return c.out.Send(cmd) }

// request sends cmd with a fresh id and waits for Pi's response (ctx, limit or the end
// of Pi's stream end the wait; the last wraps session.ErrGone).
func (c *piConn) request(ctx context.Context, limit time.Duration, cmd map[string]any) (piResponse, error) {
	id, answer, done := c.calls.Open("agentproof-")
	defer done()
	cmd["id"] = id
	if err := c.send(cmd); err != nil {
		return piResponse{}, fmt.Errorf("sending %v: %w", cmd["type"], err)
	}
	return session.Await(ctx, fmt.Sprintf("Pi's %v", cmd["type"]), limit, answer, c.readDone)
}

// Prompt tells the extension the turn's run (/agentproof-run: its MCP bridge then acts
// as that run), sends t.Text as the next prompt and waits for Pi's agent_end. Errors:
// the extension refused the identity, Pi refused the prompt, the turn ended with stop
// reason error without a cancel (the candidate's), or, wrapping session.ErrGone, Pi's
// stream ended.
func (c *piConn) Prompt(ctx context.Context, t session.Turn) error {
	identity, _ := json.Marshal(map[string]string{"apiUrl": c.p.apiURL, "runId": t.RunID, "runToken": t.RunToken, "stateDir": c.p.stateDir})
	r, err := c.request(ctx, PiRequestTimeout, map[string]any{"type": "prompt", "message": "/agentproof-run " + string(identity)})
	if err == nil && !r.Success {
		err = fmt.Errorf("the extension refused the run identity: %s", r.Error)
	}
	if err != nil {
		return err
	}
	pt := &piTurn{TurnEnd: session.NewTurnEnd()}
	defer session.Running(&c.mu, &c.turn, pt)()
	if r, err = c.request(ctx, PiRequestTimeout, map[string]any{"type": "prompt", "message": t.Text}); err == nil && !r.Success {
		err = fmt.Errorf("agent: Pi refused the prompt: %s", r.Error)
	}
	if err != nil {
		return err
	}
	if err := pt.Await(ctx, &c.mu, "Pi closed its RPC stream"); err != nil {
		return err
	}
	return c.ended(pt)
}

// ended judges the end of turn pt, ended by agent_end. Errors: the turn ended with
// stop reason error without a cancel.
func (c *piConn) ended(pt *piTurn) error {
	c.mu.Lock()
	stop, msg := pt.stop, pt.errMsg
	c.mu.Unlock()
	cancelled := false
	c.h.Update(func(r session.Recorder) { cancelled = r.Cancelled() })
	if stop == "error" && !cancelled {
		return fmt.Errorf("the turn ended with stop reason error: %s", session.Clip(msg, 600))
	}
	return nil
}

// Cancel sends Pi's abort (the layer then answers the pending dialogs "cancelled":
// Pi's abort waits for them).
func (c *piConn) Cancel(context.Context) error {
	id, _, done := c.calls.Open("agentproof-")
	done() // Pi's answer is not awaited: the turn's end is
	return c.send(map[string]any{"type": "abort", "id": id})
}

// Steer sends Pi's steer (delivered after the current assistant message's tool calls,
// before the next model request). Errors: Pi refused it or did not answer.
func (c *piConn) Steer(ctx context.Context, text string) error { return c.deliver(ctx, "steer", text) }

// FollowUp sends Pi's follow_up (delivered when the agent would otherwise stop, in the
// same turn). Errors as Steer's.
func (c *piConn) FollowUp(ctx context.Context, text string) error {
	return c.deliver(ctx, "follow_up", text)
}

func (c *piConn) deliver(ctx context.Context, kind, text string) error {
	r, err := c.request(ctx, PiRequestTimeout, map[string]any{"type": kind, "message": text})
	switch {
	case err != nil:
		return err
	case !r.Success:
		return fmt.Errorf("agent: Pi refused the %s: %s", kind, r.Error)
	}
	return nil
}

// piTypeRE finds the "type" of a line too long to decode.
var piTypeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"type"\s*:\s*"([a-z_]{1,40})"`) })

// read consumes Pi's stdout until it ends (the layer logs every line): responses go to
// their waiting request, dialogs to the layer, events to the running turn.
func (c *piConn) read(out io.Reader) {
	defer close(c.readDone)
	session.ReadLines(out, MaxPiLineBytes, c.dispatch)
	c.endTurn(false)
}

// endTurn ends the running turn: with Pi's agent_end, or (agentEnd false) because the
// stream ended.
func (c *piConn) endTurn(agentEnd bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pt := c.turn; pt != nil {
		pt.End(agentEnd)
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

func (c *piConn) dispatch(line []byte, oversized bool) {
	var l piLine
	if oversized || json.Unmarshal(line, &l) != nil {
		if m := piTypeRE().FindSubmatch(line[:min(len(line), 4096)]); m != nil {
			l.Type = string(m[1])
		}
		c.oversized(l.Type, oversized)
		return
	}
	switch {
	case l.Type == "response":
		if c.calls.Deliver(l.ID, piResponse{Command: l.Command, Success: l.Success, Error: l.Error, Data: l.Data}) {
			return
		}
	case l.Type == "extension_ui_request" && slices.Contains([]string{session.QuestionSelect, session.QuestionConfirm, session.QuestionInput, session.QuestionEditor}, l.Method):
		go c.dialog(l)
		return
	}
	c.event(l, line)
}

// oversized records a line that was not decoded (too long, or not JSON) as an event of
// its type, and ends the turn when it is agent_end.
func (c *piConn) oversized(kind string, cut bool) {
	c.h.Update(func(r session.Recorder) {
		r.Count(cmp.Or(kind, "(not JSON)"))
		if cut {
			r.Drop()
		}
	})
	if cut && kind == "agent_end" {
		c.endTurn(true)
	}
}

// event records one event in the running turn.
func (c *piConn) event(l piLine, line []byte) {
	c.h.Update(func(r session.Recorder) {
		r.Count(l.Type)
		switch l.Type {
		case "message_end":
			var ev struct {
				Message piMessage `json:"message"`
			}
			_ = json.Unmarshal(line, &ev)
			c.message(r, ev.Message)
		case "tool_execution_start", "tool_execution_update", "tool_execution_end":
			piToolEvent(r, l)
		case "extension_ui_request":
			r.Notice(l.Method + ": " + l.Title + fmt.Sprint(l.Message))
		case "extension_error":
			r.HarnessError("agentproof's Pi extension failed: %s", session.Clip(string(line), 1000))
		case "agent_end":
			r.End()
		}
	})
	if l.Type == "agent_end" {
		c.endTurn(true)
	}
}

// message records one whole message of Pi's conversation: an assistant message is the
// turn's message, stop reason and usage; a user message was delivered in the turn.
func (c *piConn) message(r session.Recorder, m piMessage) {
	switch m.Role {
	case "assistant":
		r.SetMessage(m.text())
		r.Stop(m.StopReason, m.ErrorMessage)
		if usage := c.noteAssistant(m); usage != nil {
			r.Usage(usage)
		}
	case "user":
		r.UserMessage(m.text())
	}
}

// noteAssistant keeps an assistant message's stop reason and usage in the running
// turn's own state and returns the turn's summed usage so far (nil when none was
// reported).
func (c *piConn) noteAssistant(m piMessage) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	pt := c.turn
	if pt == nil {
		return nil
	}
	pt.stop, pt.errMsg = m.StopReason, m.ErrorMessage
	u := &pt.usage
	if m.Usage != nil {
		u.events++
		u.input += max(0, m.Usage.Input)
		u.output += max(0, m.Usage.Output)
		u.cacheRead += max(0, m.Usage.CacheRead)
		u.cacheWrite += max(0, m.Usage.CacheWrite)
	}
	if u.events == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"inputTokens": u.input, "outputTokens": u.output, "cachedInputTokens": u.cacheRead,
		"cacheWriteInputTokens": u.cacheWrite, "source": "pi rpc", "usageEvents": u.events})
	return b
}

// piToolEvent records a tool_execution_start, _update or _end.
func piToolEvent(r session.Recorder, l piLine) {
	switch l.Type {
	case "tool_execution_start":
		if tc, known := r.ToolCall(l.ToolCallID, true); tc != nil && !known {
			tc.Title, tc.Kind, tc.Status = l.ToolName, l.ToolName, "in_progress"
		}
	case "tool_execution_update":
		r.ToolCall(l.ToolCallID, false)
	case "tool_execution_end":
		tc, _ := r.ToolCall(l.ToolCallID, false)
		if tc == nil {
			r.Violation("tool_execution_end of unknown tool call %s", session.Clip(l.ToolCallID, 200))
			return
		}
		tc.Status = "completed"
		if l.IsError {
			tc.Status = "failed"
		}
	}
}

// The options of a gate's permission request.
const (
	piAllow  = "allow"
	piReject = "reject"
)

// dialog answers one of Pi's dialogs through the layer: the gate's confirm is a
// permission request, every other dialog a question.
func (c *piConn) dialog(l piLine) {
	c.h.Update(func(r session.Recorder) { r.Count("extension_ui_request") })
	r := map[string]any{"cancelled": true}
	msg, _ := l.Message.(string)
	if l.Method == session.QuestionConfirm && l.Title == "agentproof-permission:"+c.p.nonce {
		switch dec := c.h.Permission(context.Background(), piPermission(msg)); {
		case dec.Cancelled:
		case dec.OptionID == piAllow:
			r = map[string]any{"confirmed": true}
		case dec.OptionID == piReject:
			r = map[string]any{"confirmed": false}
		}
	} else {
		a := c.h.Question(context.Background(), session.QuestionRequest{ID: l.ID, Method: l.Method, Title: l.Title, Message: msg,
			Options: l.Options, Placeholder: l.Placeholder, Prefill: l.Prefill, TimeoutMS: l.Timeout})
		switch {
		case a.Cancelled:
		case l.Method == session.QuestionConfirm:
			r = map[string]any{"confirmed": a.Confirmed}
		default:
			r = map[string]any{"value": a.Value}
		}
	}
	r["type"], r["id"] = "extension_ui_response", l.ID
	_ = c.send(r)
}

// piPermission is the permission request of one gated tool call (msg is the
// extension's JSON {toolCallId, tool, path, input}): kind edit, the path, allow or
// reject.
func piPermission(msg string) session.PermissionRequest {
	var call struct {
		ToolCallID string          `json:"toolCallId"`
		Tool       string          `json:"tool"`
		Path       string          `json:"path"`
		Input      json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal([]byte(msg), &call)
	req := session.PermissionRequest{ToolCallID: call.ToolCallID, Title: strings.TrimSpace(call.Tool + " " + call.Path), Kind: "edit", RawInput: call.Input,
		Options: []session.PermissionOption{{ID: piAllow, Name: "Allow", Kind: session.PermissionAllowOnce}, {ID: piReject, Name: "Reject", Kind: session.PermissionRejectOnce}}}
	if call.Path != "" {
		req.Locations = []string{call.Path}
	}
	return req
}

// ClassifyPiLine reads the envelope of one Pi RPC line (untrusted: any bytes) for the
// log: Method is its type, ID its id, Update the assistant message event type of a
// message_update or the method of an extension_ui_request. It never fails.
func ClassifyPiLine(line []byte) session.WireLine {
	var env struct {
		Type   *string         `json:"type"`
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		AME    *struct {
			Type string `json:"type"`
		} `json:"assistantMessageEvent"`
	}
	if !session.DecodeObject(line, &env) {
		return session.WireLine{}
	}
	w := session.WireLine{Object: true, ID: env.ID}
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

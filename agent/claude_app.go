package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/worker"
)

// The Claude Code driver (docs/clis.md "app:claude"): app:claude runs the pinned Claude
// Code as `claude -p --input-format stream-json --output-format stream-json` — one JSON
// message per line on stdin and stdout, the protocol of Claude Code's own SDKs — as a
// protocol of the session layer. The handshake is the control request initialize; a
// turn is one user message, ended by the result message; the native cancel is the
// control request interrupt. Claude Code asks before a tool call its permission mode
// does not allow (default mode: every command, every file edit) through its
// --permission-prompt-tool, here the permission_prompt tool of the agentproof MCP
// server: that server relays each prompt to the driver over the session's permission
// relay socket (session.ListenRelay), the driver asks the layer (a board permission
// card) and answers in Claude Code's shape: {"behavior": "allow", "updatedInput": {}}
// (the tool's own input, unchanged) or {"behavior": "deny", "message": …}. One process
// and one conversation serve every turn of a session: the warm lifecycle keeps them.
// The MCP server reads its run from the session's run binding file (no run token ever
// reaches Claude Code's environment).

// ClaudeAppLogSchema tags every line of a Claude Code stream-json session log (Method
// is the message's type, with its control subtype for a control message; ID a control
// message's request id; Update an assistant or user message's first content block
// type, a system message's subtype).
const ClaudeAppLogSchema = "agentproof.claude-app-log/v1"

// ClaudePermissionPromptTool is the --permission-prompt-tool app:claude names: the
// agentproof MCP server's permission_prompt tool as Claude Code names it.
const ClaudePermissionPromptTool = "mcp__" + MCPServerName + "__permission_prompt"

// MaxClaudeAppLineBytes bounds one line of Claude Code's stream that the driver
// decodes (bytes); a longer line is counted and dropped.
const MaxClaudeAppLineBytes = 16 << 20

// Stop reasons of a Claude Code turn: its result message's subtype when it ended by
// itself (success, or error_max_turns and the like), ClaudeStopInterrupted when it
// ended as an interrupt ends it (the result error_during_execution after the
// interrupt control request).
const (
	ClaudeStopSuccess     = "success"
	ClaudeStopInterrupted = "interrupted"
	claudeResultAborted   = "error_during_execution"
)

// claudeAppName is the protocol's name in messages; claudeAppSessions the directory
// of an agent's sessions below its state directory.
const (
	claudeAppName     = "Claude Code"
	claudeAppSessions = "claude-sessions"
)

// ClaudeAppProtocol describes Claude Code's stream-json protocol to the session layer.
var ClaudeAppProtocol = session.Protocol{Name: claudeAppName, LogSchema: ClaudeAppLogSchema, Classify: ClassifyClaudeAppLine, Evidence: "app-turn",
	Completed: ClaudeStopSuccess, Cancelled: ClaudeStopInterrupted, CancelName: "the interrupt control request"}

// ClaudeAppDriver starts Claude Code sessions. It is immutable and safe for concurrent
// use.
type ClaudeAppDriver struct {
	bounds bounds
	model  string
	mode   string
	sessionSettings
}

// Claude Code's permission modes the driver accepts: default asks before every command
// and file edit (the native boundary); bypassPermissions asks nothing (the
// calibration twin that acts without asking).
const (
	ClaudeModeDefault = "default"
	ClaudeModeBypass  = "bypassPermissions"
)

// NewClaudeApp returns the app:claude driver configured by config (the profile's
// driverConfig): TimeoutMs (the whole session's life, ms), MaxOutputBytes (Claude
// Code's stdout, bytes; default DefaultPiMaxOutputBytes), TurnTimeoutMs,
// StartTimeoutMs, CancelGraceMs (ms, > 0), Binary (the native claude binary),
// ModelBaseURL (a loopback http URL), Script (oracle, nop or wrong) and Model (default
// ScriptedModelID) and PermissionMode (ClaudeModeDefault, the default, or
// ClaudeModeBypass). A key the driver does not read and a value out of range are a
// *ConfigError listing every problem.
func NewClaudeApp(config api.DriverConfig) (*ClaudeAppDriver, error) {
	name := driver.Name{Kind: driver.KindApp, Arg: driver.AppClaude}
	ce := &ConfigError{Driver: name.String()}
	d := &ClaudeAppDriver{mode: ClaudeModeDefault, sessionSettings: defaultSessionSettings()}
	d.bounds = parseBounds(config, name, ce, []string{ACPKeyTurnTimeout, ACPKeyStartTimeout, ACPKeyCancelGrace,
		CLIKeyBinary, CLIKeyModelBaseURL, CLIKeyScript, CLIKeyModel, "permissionMode"})
	if m := config.PermissionMode; m != "" {
		if m != ClaudeModeDefault && m != ClaudeModeBypass {
			ce.Problems = append(ce.Problems, fmt.Sprintf("permissionMode %s is not %s or %s", m, ClaudeModeDefault, ClaudeModeBypass))
		}
		d.mode = m
	}
	if config.MaxOutputBytes == nil {
		d.bounds.maxOutput = DefaultPiMaxOutputBytes
	}
	d.sessionSettings.parse(config, ce)
	d.model = modelID(config, ScriptedModelID, ce)
	if len(ce.Problems) > 0 {
		return nil, ce
	}
	return d, nil
}

// Name is the driver's name, "app:claude".
func (d *ClaudeAppDriver) Name() string { return string(driver.KindApp) + driver.AppClaude }

// Protocol is ClaudeAppProtocol.
func (d *ClaudeAppDriver) Protocol() session.Protocol { return ClaudeAppProtocol }

// Confinable: Claude Code runs inside a sandbox lease (it has no sandbox of its own
// in this mode).
func (d *ClaudeAppDriver) Confinable() bool { return true }

// Start launches Claude Code in env.Run's workspace (STATE/claude-sessions/<n>: HOME,
// XDG, TMPDIR, CLAUDE_CONFIG_DIR, the MCP configuration, the run binding file and the
// permission relay socket) and opens its session. Errors: a *session.StartError naming
// the stage (launch, spawn, initialize); the process is gone.
func (d *ClaudeAppDriver) Start(ctx context.Context, env SessionEnv) (*session.Session, error) {
	n, err := askingSession(claudeAppName, env, claudeAppSessions)
	if err != nil {
		return nil, err
	}
	id := uuid.NewString()
	l, err := d.launch(env.Run, n, id)
	if err != nil {
		return nil, launchError(claudeAppName, err)
	}
	se := d.sessionSettings.env(env)
	se.Binding = filepath.Join(l.Dir, session.RunBindingFile)
	p := &claudeAppProtocol{relay: filepath.Join(l.Dir, session.PermissionRelayFile), sessionID: id, model: d.model, mode: d.mode}
	return session.Start(ctx, p, l, se)
}

// launch plans session n (conversation id) for env (pure: the layer creates what it
// lists).
func (d *ClaudeAppDriver) launch(env RunEnv, n int, id string) (session.Launch, error) {
	if err := d.requireLaunch(env, d.Name(), "claude"); err != nil {
		return session.Launch{}, err
	}
	l, _, vars := d.bounds.sessionLaunch(env, claudeAppSessions, n)
	cfgDir := filepath.Join(l.Dir, "claude")
	l.Dirs = append(l.Dirs, cfgDir)
	mcpVars := []string{EnvAPIURL, session.EnvRunBinding, session.EnvPermissionRelay, EnvStateDir, worker.MarkerVar}
	mcpFile := filepath.Join(cfgDir, "agentproof-mcp.json")
	l.Files[mcpFile] = ClaudeMCPConfig(env.Executable, mcpVars)
	vars["CLAUDE_CONFIG_DIR"], vars["ANTHROPIC_API_KEY"] = cfgDir, ScriptedAPIKey
	vars["ANTHROPIC_BASE_URL"] = d.modelURL + "/runs/" + strconv.Itoa(n)
	for _, kv := range slices.Concat(ClaudeOfflineEnv, ClaudeMCPWaitEnv()) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	if d.mode == ClaudeModeBypass {
		vars["IS_SANDBOX"] = "1" // Claude Code refuses to bypass permissions as root without it
	}
	// The agentproof MCP server reads the current run from the binding file and relays
	// permission prompts to the socket: the variables name files, never a token.
	vars[EnvAPIURL], vars[EnvStateDir] = env.APIURL, env.StateDir
	vars[session.EnvRunBinding] = filepath.Join(l.Dir, session.RunBindingFile)
	vars[session.EnvPermissionRelay] = filepath.Join(l.Dir, session.PermissionRelayFile)
	var err error
	if l.Spec.Env, err = sessionEnviron(vars, env.Secrets); err != nil {
		return session.Launch{}, err
	}
	l.Spec.Marker = worker.NewMarker()
	l.Spec.Path = d.binary
	l.Spec.Args = append([]string{d.binary}, ClaudeAppArgs(d.model, d.mode, mcpFile, id)...)
	return l, nil
}

// ClaudeMCPConnectWait is how long Claude Code waits for the agentproof MCP server
// (whose permission_prompt tool is the session's permission prompt) to connect before
// its first turn. Left to itself, Claude Code connects --mcp-config servers in the
// background and starts at once: on a loaded machine the model's first tool call then
// comes before the permission tool exists, and Claude Code decides without asking —
// the harness's slowness graded as the candidate not asking.
const ClaudeMCPConnectWait = 60 * time.Second

// ClaudeMCPWaitEnv is the environment that makes Claude Code connect its MCP servers
// before the first turn, waiting up to ClaudeMCPConnectWait (its own variables:
// MCP_CONNECTION_NONBLOCKING off, MCP_CONNECT_TIMEOUT_MS and MCP_TIMEOUT in ms).
// Its entries are "NAME=value".
func ClaudeMCPWaitEnv() []string {
	ms := strconv.FormatInt(ClaudeMCPConnectWait.Milliseconds(), 10)
	return []string{"MCP_CONNECTION_NONBLOCKING=false", "MCP_CONNECT_TIMEOUT_MS=" + ms, "MCP_TIMEOUT=" + ms}
}

// ClaudeAppArgs is the argv (after the program) of Claude Code as a stream-json
// session: print mode reading user messages from stdin, every message on stdout,
// the built-in tools Bash, Read, Write and Edit, only the user's settings (the
// session's own configuration directory: no project settings of the workspace),
// permission mode mode (default: commands and file edits ask) with permission prompts
// going to ClaudePermissionPromptTool, the agentproof MCP server's tools allowed
// without asking, only the MCP servers of mcpFile, and conversation id.
func ClaudeAppArgs(model, mode, mcpFile, id string) []string {
	return []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--tools", "Bash,Read,Write,Edit", "--setting-sources", "user",
		"--model", model, "--permission-mode", mode, "--permission-prompt-tool", ClaudePermissionPromptTool,
		"--allowedTools", "mcp__" + MCPServerName, "--mcp-config", mcpFile, "--strict-mcp-config", "--session-id", id}
}

// claudeAppProtocol is one Claude Code session's handshake: the permission relay
// socket's path, the conversation id and the model asked for.
type claudeAppProtocol struct {
	relay     string
	sessionID string
	model     string
	mode      string
}

func (p *claudeAppProtocol) Protocol() session.Protocol { return ClaudeAppProtocol }

// Open starts reading Claude Code's stream, listens on the permission relay and sends
// the initialize control request.
func (p *claudeAppProtocol) Open(ctx context.Context, rw io.ReadWriter, h session.Host) (session.Conn, error) {
	c := &claudeAppConn{h: h, out: session.NewLineWriter(rw), readDone: make(chan struct{}), relayDone: make(chan struct{})}
	go c.read(rw)
	l, err := session.ListenRelay(p.relay)
	if err != nil {
		close(c.relayDone)
		return c, &session.StartError{Stage: "permission relay", Err: err}
	}
	c.relay = l
	go c.serveRelay(l)
	var init struct {
		PID    int `json:"pid"`
		Models []struct {
			Value string `json:"value"`
		} `json:"models"`
		OutputStyle string `json:"output_style"`
	}
	if err := c.control(ctx, map[string]any{"subtype": "initialize"}, &init); err != nil {
		return c, &session.StartError{Stage: "initialize", Err: err}
	}
	caps, _ := json.Marshal(map[string]any{"permissionPromptTool": ClaudePermissionPromptTool, "permissionMode": p.mode})
	c.info = session.Info{SessionID: p.sessionID, Name: "claude", Model: p.model, Capabilities: caps}
	return c, nil
}

// claudeAppMessage is a control request or response agentproof writes.
type claudeAppMessage struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id,omitempty"`
	Request   any             `json:"request,omitempty"`
	Response  json.RawMessage `json:"response,omitempty"`
}

// claudeControlReply is the answer to one control request: its response, or the error
// Claude Code gave.
type claudeControlReply struct {
	Response json.RawMessage
	Err      string
}

// claudeAppConn is one Claude Code connection (session.Conn).
type claudeAppConn struct {
	h         session.Host
	out       *session.LineWriter // Claude Code's stdin
	info      session.Info
	calls     session.Calls[claudeControlReply]
	readDone  chan struct{}
	relay     net.Listener
	relayDone chan struct{}

	mu   sync.Mutex
	turn *claudeAppTurn // the running turn, nil between turns
}

var _ session.Conn = (*claudeAppConn)(nil)

// claudeAppTurn is what the connection keeps of the running turn: its end (the result
// message, or the stream's end), whether an interrupt was sent, the result's subtype,
// whether it is an error and its text; guarded by claudeAppConn.mu.
type claudeAppTurn struct {
	session.TurnEnd
	interrupted bool
	subtype     string
	isError     bool
	result      string
}

func (c *claudeAppConn) Info() session.Info { return c.info }

func (c *claudeAppConn) Done() <-chan struct{} { return c.readDone }

// Close stops the permission relay (a prompt still waiting is answered deny by its
// MCP server when the connection drops).
func (c *claudeAppConn) Close() error {
	if c.relay != nil {
		_ = c.relay.Close()
		<-c.relayDone
	}
	return nil
}

// control sends control request req and decodes its response into out (nil: not
// read), waiting at most PiRequestTimeout or until ctx ends. Errors: the request could
// not be sent, Claude Code answered with an error, its stream ended (wrapping
// session.ErrGone), no answer in time.
func (c *claudeAppConn) control(ctx context.Context, req map[string]any, out any) error {
	id, answer, done := c.calls.Open("agentproof-")
	defer done()
	what := fmt.Sprintf("the %v control request", req["subtype"])
	if err := c.out.Send(claudeAppMessage{Type: "control_request", RequestID: id, Request: req}); err != nil {
		return fmt.Errorf("sending %s: %w", what, err)
	}
	r, err := session.Await(ctx, "Claude Code's "+what, PiRequestTimeout, answer, c.readDone)
	switch {
	case err != nil:
		return err
	case r.Err != "":
		return fmt.Errorf("agent: Claude Code refused %s: %s", what, session.Clip(r.Err, 600))
	case out != nil && len(r.Response) > 0:
		if err := json.Unmarshal(r.Response, out); err != nil {
			return fmt.Errorf("agent: Claude Code's answer to %s: %w", what, err)
		}
	}
	return nil
}

// Prompt sends t.Text as a user message and waits for the turn's result message.
// Errors: the turn ended with an error result that no interrupt explains (the
// candidate's), or, wrapping session.ErrGone, the stream ended.
func (c *claudeAppConn) Prompt(ctx context.Context, t session.Turn) error {
	ct := &claudeAppTurn{TurnEnd: session.NewTurnEnd()}
	defer session.Running(&c.mu, &c.turn, ct)()
	msg := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": t.Text}}},
		"parent_tool_use_id": nil, "session_id": c.info.SessionID}
	if err := c.out.Send(msg); err != nil {
		return fmt.Errorf("sending the user message: %w", err)
	}
	if err := ct.Await(ctx, &c.mu, "Claude Code closed its stream"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct.isError && !(ct.interrupted && ct.subtype == claudeResultAborted) {
		return fmt.Errorf("the turn ended with %s: %s", ct.subtype, session.Clip(ct.result, 600))
	}
	return nil
}

// Cancel sends the interrupt control request (without waiting for its answer: the
// turn's result is awaited).
func (c *claudeAppConn) Cancel(context.Context) error {
	c.mu.Lock()
	ct := c.turn
	if ct == nil || ct.Ended() {
		c.mu.Unlock()
		return errors.New("no Claude Code turn is running")
	}
	ct.interrupted = true
	c.mu.Unlock()
	go func() {
		if err := c.control(context.Background(), map[string]any{"subtype": "interrupt"}, nil); err != nil && !errors.Is(err, session.ErrGone) {
			c.h.Update(func(r session.Recorder) { r.Notice("interrupt: " + err.Error()) })
		}
	}()
	return nil
}

// read consumes Claude Code's stdout until it ends (the layer logs every line).
func (c *claudeAppConn) read(out io.Reader) {
	defer close(c.readDone)
	session.ReadLines(out, MaxClaudeAppLineBytes, c.dispatch)
	c.endTurn(nil)
}

// claudeAppEnvelope is the envelope of every stream-json line of Claude Code, as both
// the driver (claudeAppIncoming) and the log's classifier (ClassifyClaudeAppLine) read
// it: the message's type and subtype, and a control request's id and subtype.
type claudeAppEnvelope struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype string `json:"subtype"`
	} `json:"request"`
}

// claudeAppIncoming is a message Claude Code sent, as the driver reads it.
type claudeAppIncoming struct {
	claudeAppEnvelope
	Message  json.RawMessage `json:"message"`
	Response struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
	IsError   bool            `json:"is_error"`
	Result    string          `json:"result"`
	Usage     json.RawMessage `json:"usage"`
	CostUSD   *float64        `json:"total_cost_usd"`
	SessionID string          `json:"session_id"`
	Version   string          `json:"claude_code_version"`
	Model     string          `json:"model"`
}

// dispatch routes one line: a control response to its request, a control request of
// Claude Code's refused, a message to the turn.
func (c *claudeAppConn) dispatch(line []byte, oversized bool) {
	var m claudeAppIncoming
	if oversized || json.Unmarshal(line, &m) != nil {
		c.h.Update(session.Recorder.Undecoded)
		return
	}
	switch m.Type {
	case "control_response":
		reply := claudeControlReply{Response: m.Response.Response}
		if m.Response.Subtype != "success" {
			reply.Err = "error: " + m.Response.Error
		}
		if !c.calls.Deliver(m.Response.RequestID, reply) {
			c.h.Update(func(r session.Recorder) { r.Count("(unexpected control response)") })
		}
	case "control_request":
		c.h.Update(func(r session.Recorder) {
			r.Notice("Claude Code's " + session.Clip(m.Request.Subtype, 100) + " control request was refused: agentproof does not answer it")
		})
		resp, _ := json.Marshal(map[string]any{"subtype": "error", "request_id": m.RequestID, "error": "agentproof does not answer " + m.Request.Subtype})
		_ = c.out.Send(claudeAppMessage{Type: "control_response", Response: resp})
	default:
		c.message(m)
	}
}

// message applies one message of the conversation: assistant and user messages fill
// the turn's record, the result message ends the turn; every message is counted.
func (c *claudeAppConn) message(m claudeAppIncoming) {
	end := false
	c.h.Update(func(r session.Recorder) {
		r.Count(m.Type)
		switch m.Type {
		case "assistant":
			c.assistant(r, m.Message)
		case "user":
			c.toolResults(r, m.Message)
		case "system":
			if m.Subtype == "init" {
				r.Notice(fmt.Sprintf("Claude Code %s, model %s, session %s", session.Clip(m.Version, 40), session.Clip(m.Model, 100), session.Clip(m.SessionID, 100)))
			}
		case "result":
			end = c.result(r, m)
		}
	})
	if end {
		c.endTurn(&m)
	}
}

// result reads the result message of the running turn into r: its stop reason (the
// subtype, or ClaudeStopInterrupted after an interrupt), the final text, usage and
// cost. It reports whether a turn was running.
func (c *claudeAppConn) result(r session.Recorder, m claudeAppIncoming) bool {
	c.mu.Lock()
	ct := c.turn
	interrupted := ct != nil && ct.interrupted
	c.mu.Unlock()
	if ct == nil {
		r.Violation("a result message while no turn is running")
		return false
	}
	reason, errText := m.Subtype, ""
	if m.IsError {
		errText = m.Result
	}
	if interrupted && m.Subtype == claudeResultAborted {
		reason = ClaudeStopInterrupted
	}
	r.Stop(reason, errText)
	if !m.IsError {
		r.SetMessage(m.Result)
	}
	if len(m.Usage) > 0 {
		r.Usage(m.Usage)
	}
	if m.CostUSD != nil {
		b, _ := json.Marshal(map[string]any{"amount": *m.CostUSD, "currency": "USD", "source": "claude code total_cost_usd"})
		r.Cost(b)
	}
	r.End()
	return true
}

// endTurn ends the running turn with its result message m (nil: the stream ended).
func (c *claudeAppConn) endTurn(m *claudeAppIncoming) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct := c.turn
	if ct == nil || ct.Ended() {
		return
	}
	if m != nil {
		ct.subtype, ct.isError, ct.result = m.Subtype, m.IsError, m.Result
	}
	ct.End(m != nil)
}

// claudeContent is one content block of a message, as the driver reads it.
type claudeContent struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
}

// claudeContentOf reads a message's content blocks (a plain string content is one text
// block).
func claudeContentOf(message json.RawMessage) []claudeContent {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(message, &msg) != nil {
		return nil
	}
	var blocks []claudeContent
	if json.Unmarshal(msg.Content, &blocks) == nil {
		return blocks
	}
	var text string
	if json.Unmarshal(msg.Content, &text) == nil {
		return []claudeContent{{Type: "text", Text: text}}
	}
	return nil
}

// assistant records an assistant message: its text, its thinking's size, its tool
// calls (kind, title, the file a file tool touches; pending until their result).
func (c *claudeAppConn) assistant(r session.Recorder, message json.RawMessage) {
	for _, b := range claudeContentOf(message) {
		switch b.Type {
		case "text":
			r.AppendMessage(b.Text)
		case "thinking":
			r.Thought(len(b.Thinking))
		case "tool_use":
			tc, _ := r.ToolCall(session.Clip(b.ID, 200), true)
			if tc == nil {
				continue
			}
			in := claudeToolInputOf(b.Input)
			tc.Kind, tc.Title, tc.Status = claudeToolKind(b.Name), session.Clip(b.Name, 200), "pending"
			if in.path != "" {
				tc.Locations = []string{in.path}
			}
			if in.command != "" {
				tc.Title = session.Clip(b.Name+": "+in.command, 1000)
			}
		}
	}
}

// toolResults records the tool results of a user message: each tool call completed or
// failed.
func (c *claudeAppConn) toolResults(r session.Recorder, message json.RawMessage) {
	for _, b := range claudeContentOf(message) {
		if b.Type != "tool_result" {
			continue
		}
		if tc, known := r.ToolCall(session.Clip(b.ToolUseID, 200), false); known && tc != nil {
			tc.Status = "completed"
			if b.IsError {
				tc.Status = "failed"
			}
		}
	}
}

// claudeToolInput is what the driver reads of a tool's input: the file it touches and
// the command it runs.
type claudeToolInput struct {
	path    string
	command string
}

func claudeToolInputOf(raw json.RawMessage) claudeToolInput {
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Path         string `json:"path"`
		Command      string `json:"command"`
	}
	_ = json.Unmarshal(raw, &in)
	return claudeToolInput{path: session.Clip(cmp.Or(in.FilePath, in.NotebookPath, in.Path), 4096), command: session.Clip(in.Command, 4096)}
}

// claudeToolKind is the tool-call kind of a Claude Code tool: execute (Bash), edit
// (Write, Edit, MultiEdit, NotebookEdit), read (Read, Glob, Grep, LS), fetch (WebFetch,
// WebSearch), other (MCP tools and the rest).
func claudeToolKind(name string) string {
	switch name {
	case "Bash":
		return "execute"
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return "edit"
	case "Read", "Glob", "Grep", "LS":
		return "read"
	case "WebFetch", "WebSearch":
		return "fetch"
	}
	return "other"
}

// ClassifyClaudeAppLine reads the envelope of one stream-json line (untrusted: any
// bytes): Method the message's type (a control message's "control_request/<subtype>"
// or "control_response/<subtype>"), ID a control message's request id, Update a
// system message's subtype or an assistant or user message's first content block's
// type. It never fails: a line that is not a JSON object has Object false.
func ClassifyClaudeAppLine(line []byte) session.WireLine {
	var env struct {
		claudeAppEnvelope
		Response struct {
			Subtype   string `json:"subtype"`
			RequestID string `json:"request_id"`
		} `json:"response"`
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if !session.DecodeObject(line, &env) {
		return session.WireLine{}
	}
	w := session.WireLine{Object: true, Method: env.Type}
	switch env.Type {
	case "control_request":
		w.Method += "/" + env.Request.Subtype
		w.ID, _ = json.Marshal(env.RequestID)
	case "control_response":
		w.Method += "/" + env.Response.Subtype
		w.ID, _ = json.Marshal(env.Response.RequestID)
	case "system", "result":
		w.Update = env.Subtype
	case "assistant", "user":
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(env.Message.Content, &blocks) == nil && len(blocks) > 0 {
			w.Update = blocks[0].Type
		}
	}
	return w
}

// serveRelay answers the permission prompts relayed on l until it is closed.
func (c *claudeAppConn) serveRelay(l net.Listener) {
	defer close(c.relayDone)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.prompt(conn)
		}()
	}
}

// claudeDecisions are the answers the driver offers for a permission prompt.
var claudeDecisions = []session.PermissionOption{
	{ID: "allow", Name: "Allow", Kind: session.PermissionAllowOnce},
	{ID: "deny", Name: "Deny", Kind: session.PermissionRejectOnce},
}

// prompt answers one relayed permission prompt ({tool_name, input, tool_use_id}): the
// layer asks the human (the request is withdrawn when the MCP server drops the
// connection: Claude Code aborted the prompt) and the answer is Claude Code's
// permission result: allow with the tool's input unchanged, deny with a message in the
// words a person's refusal has ("Permission to use Write was denied by the user.";
// when the prompt was cancelled by a Stop, "…was cancelled…" and interrupt).
func (c *claudeAppConn) prompt(conn net.Conn) {
	defer conn.Close()
	line, err := session.ReadRelayLine(conn)
	if err != nil {
		c.h.Update(func(r session.Recorder) { r.Notice("permission relay: " + err.Error()) })
		return
	}
	var p struct {
		ToolName  string          `json:"tool_name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
	}
	_ = json.Unmarshal(line, &p)
	c.h.Note("permission_prompt", map[string]any{"toolName": session.Clip(p.ToolName, 200), "toolUseId": session.Clip(p.ToolUseID, 200), "bytes": len(line)})
	in := claudeToolInputOf(p.Input)
	req := session.PermissionRequest{ToolCallID: session.Clip(p.ToolUseID, 200), Kind: claudeToolKind(p.ToolName),
		Title: session.Clip(p.ToolName, 200), Command: in.command, Options: claudeDecisions}
	if in.path != "" {
		req.Locations = []string{in.path}
		req.Title = session.Clip(p.ToolName+" "+in.path, 1000)
	}
	if in.command != "" {
		req.Title = session.Clip(p.ToolName+": "+in.command, 1000)
	}
	if len(p.Input) <= 64<<10 {
		req.RawInput = p.Input
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// The MCP server closes the connection when Claude Code aborts the prompt.
		_, _ = conn.Read(make([]byte, 1))
		cancel()
	}()
	dec := c.h.Permission(ctx, req)
	answer := map[string]any{"behavior": "deny", "message": "Permission to use " + session.Clip(p.ToolName, 200) + " was denied by the user."}
	switch {
	case dec.Cancelled:
		answer = map[string]any{"behavior": "deny", "message": "The permission request was cancelled (the turn was stopped).", "interrupt": true}
	case dec.OptionID == "allow":
		answer = map[string]any{"behavior": "allow", "updatedInput": map[string]any{}}
	}
	b, _ := json.Marshal(answer)
	_, _ = conn.Write(append(b, '\n'))
}

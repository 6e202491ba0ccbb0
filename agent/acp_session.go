package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentproof/agentproof/agent/acpagent"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/worker"
)

// The ACP protocol of the session layer (docs/acp.md): agentproof is the ACP client.
// The handshake is initialize (protocol version 1, the client capabilities below,
// agentproof as client) and session/new (cwd = the workspace, mcpServers = the
// agentproof MCP server bound to the run); a turn is one session/prompt, whose
// response (its stop reason) ends it; the native cancel is session/cancel. The
// agent's session/update notifications fill the turn's record, its
// session/request_permission goes to the layer (a permission card), and its
// fs/read_text_file and fs/write_text_file are served confined to the workspace (the
// client fs capability, unless driverConfig clientFs is false or the process runs in a
// sandbox lease); no terminal capability.

// ACPLogSchema tags every line of an ACP session log.
const ACPLogSchema = "agentproof.acp-log/v1"

// ACPResourceNotFound is ACP's JSON-RPC error code for a missing resource (a file the
// agent asked to read that does not exist).
const ACPResourceNotFound = -32002

// Bounds of what the ACP client does for the agent (bytes).
const (
	// MaxACPReadBytes bounds one fs/read_text_file answer.
	MaxACPReadBytes = 16 << 20
	// MaxACPWriteBytes bounds all fs/write_text_file content of one session.
	MaxACPWriteBytes = 64 << 20
)

// Start launches the agent in env.Run's workspace and opens its ACP session (see the
// protocol above): the MCP server of session/new is bound to env.Run's run, or, when
// env.Warm, reads the current run from the session's run binding file. The whole start
// is bounded by startTimeoutMs. Errors: a *session.StartError naming the stage
// (launch, spawn, initialize, session/new); the process is gone.
func (d *ACPDriver) Start(ctx context.Context, env SessionEnv) (*session.Session, error) {
	fail := func(err error) (*session.Session, error) {
		return nil, &session.StartError{Protocol: acpName, Stage: session.StageLaunch, Err: err}
	}
	if env.Permissions == nil {
		return fail(errors.New("no permission decider"))
	}
	n, err := nextSessionIndex(env.Run.StateDir, acpSessions)
	if err != nil {
		return fail(fmt.Errorf("reading the agent's sessions: %w", err))
	}
	l, err := d.launch(env.Run, n, env.Place != nil)
	if err != nil {
		return fail(err)
	}
	l.Spec.Marker = worker.NewMarker()
	se := d.sessionSettings.env(env)
	p := &acpProtocol{workspace: env.Run.Workspace, clientFS: d.clientFS && env.Place == nil, mcp: MCPServerFor(env.Run, l.Spec.Marker)}
	if env.Warm {
		se.Binding = filepath.Join(l.Dir, session.RunBindingFile)
		p.mcp = MCPServerBound(env.Run, se.Binding, l.Spec.Marker)
	}
	return session.Start(ctx, p, l, se)
}

// Protocol is ACPProtocol.
func (d *ACPDriver) Protocol() session.Protocol { return ACPProtocol }

// Confinable: an ACP agent's process runs inside a sandbox lease (docs/acp.md "Under a
// sandbox").
func (d *ACPDriver) Confinable() bool { return true }

// acpName is the ACP protocol's name in messages.
const acpName = "ACP"

// acpProtocol is one ACP session's handshake: the workspace (cwd, and the root of the
// client fs capability when it is offered) and the MCP server of session/new.
type acpProtocol struct {
	workspace string
	clientFS  bool
	mcp       acp.McpServer
}

// ACPProtocol describes ACP to the session layer.
var ACPProtocol = session.Protocol{Name: acpName, LogSchema: ACPLogSchema, Classify: ClassifyACPLine, Evidence: "acp-turn",
	Completed: string(acp.StopReasonEndTurn), Cancelled: string(acp.StopReasonCancelled), CancelName: "session/cancel"}

func (p *acpProtocol) Protocol() session.Protocol { return ACPProtocol }

// Open speaks initialize and session/new over rw.
func (p *acpProtocol) Open(ctx context.Context, rw io.ReadWriter, h session.Host) (session.Conn, error) {
	c := &acpConn{h: h, clientFS: p.clientFS, workspace: p.workspace}
	root, err := os.OpenRoot(p.workspace)
	if err != nil {
		return nil, &session.StartError{Stage: session.StageLaunch, Err: fmt.Errorf("opening the workspace: %w", err)}
	}
	c.root = root
	// The SDK starts reading inside NewClientSideConnection, before it has stored its
	// connection and before SetLogger: every read waits until both are done.
	out := acpagent.NewGate(rw)
	c.conn = acp.NewClientSideConnection(c, rw, out)
	c.conn.SetLogger(slog.New(&sdkLogHandler{h: h}))
	out.Open()
	if err := c.initialize(ctx); err != nil {
		return c, &session.StartError{Stage: "initialize", Err: err}
	}
	resp, err := c.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: p.workspace, McpServers: []acp.McpServer{p.mcp}})
	if err == nil && resp.SessionId == "" {
		err = errors.New("the agent returned no session id")
	}
	if err != nil {
		return c, &session.StartError{Stage: "session/new", Err: err}
	}
	c.info.SessionID = string(resp.SessionId)
	return c, nil
}

// initialize sends initialize and keeps what the agent said about itself. Errors: the
// request failed, or the agent speaks another protocol version.
func (c *acpConn) initialize(ctx context.Context) error {
	init, err := c.conn.Initialize(ctx, acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{
			Fs: acp.FileSystemCapabilities{ReadTextFile: c.clientFS, WriteTextFile: c.clientFS},
		},
		ClientInfo: &acp.Implementation{Name: "agentproof", Version: "1"},
	})
	if err != nil {
		return err
	}
	c.info.ProtocolVersion = int(init.ProtocolVersion)
	if init.AgentInfo != nil {
		c.info.Name, c.info.Version = init.AgentInfo.Name, init.AgentInfo.Version
		if init.AgentInfo.Title != nil {
			c.info.Title = *init.AgentInfo.Title
		}
	}
	c.info.Capabilities, _ = json.Marshal(init.AgentCapabilities)
	for _, m := range init.AuthMethods {
		c.info.AuthMethods = append(c.info.AuthMethods, authMethodID(m))
	}
	if init.ProtocolVersion != acp.ProtocolVersionNumber {
		return fmt.Errorf("the agent speaks ACP protocol version %d; agentproof speaks %d", init.ProtocolVersion, acp.ProtocolVersionNumber)
	}
	return nil
}

// authMethodID names an advertised authentication method.
func authMethodID(m acp.AuthMethod) string {
	b, _ := json.Marshal(m)
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &v)
	return v.ID
}

// MCPServerFor is the agentproof MCP server of a session started for run env: the
// stdio server `<executable> mcp` (named MCPServerName) whose environment carries the
// run's API URL, id, token and state directory (see `agentproof mcp`) and, when marker
// is set, the session's process marker (worker.MarkerVar), so that the server is found
// at teardown even when the agent starts it with only this environment. The token
// travels only in this session/new message, never in the agent's own environment or
// argv.
func MCPServerFor(env RunEnv, marker string) acp.McpServer {
	vars := []acp.EnvVariable{
		{Name: EnvAPIURL, Value: env.APIURL}, {Name: EnvRunToken, Value: env.RunToken},
		{Name: EnvRunID, Value: env.RunID}, {Name: EnvStateDir, Value: env.StateDir},
	}
	return mcpServer(env, vars, marker)
}

// MCPServerBound is the agentproof MCP server of a warm session: like MCPServerFor,
// but instead of one run's id and token its environment names the run binding file
// (session.EnvRunBinding) every tool call reads the current run from.
func MCPServerBound(env RunEnv, bindingPath, marker string) acp.McpServer {
	vars := []acp.EnvVariable{{Name: EnvAPIURL, Value: env.APIURL}, {Name: session.EnvRunBinding, Value: bindingPath}, {Name: EnvStateDir, Value: env.StateDir}}
	return mcpServer(env, vars, marker)
}

func mcpServer(env RunEnv, vars []acp.EnvVariable, marker string) acp.McpServer {
	if marker != "" {
		vars = append(vars, acp.EnvVariable{Name: worker.MarkerVar, Value: marker})
	}
	return acp.McpServer{Stdio: &acp.McpServerStdio{Name: MCPServerName, Command: env.Executable, Args: []string{"mcp"}, Env: vars}}
}

// acpConn is the client side of one ACP connection (acp.Client and session.Conn): it
// reports updates to the layer, routes permission requests to it and serves file
// operations.
type acpConn struct {
	h         session.Host
	conn      *acp.ClientSideConnection
	info      session.Info
	clientFS  bool
	workspace string
	root      *os.Root

	mu      sync.Mutex
	written int64 // bytes written through fs/write_text_file
}

var (
	_ acp.Client   = (*acpConn)(nil)
	_ session.Conn = (*acpConn)(nil)
)

func (c *acpConn) Info() session.Info { return c.info }

func (c *acpConn) Done() <-chan struct{} { return c.conn.Done() }

func (c *acpConn) Close() error { return c.root.Close() }

// Prompt sends one session/prompt and blocks until its response: the stop reason and
// usage go to the turn. Errors: a JSON-RPC error (the agent's), or, wrapping
// session.ErrGone, the peer went away.
func (c *acpConn) Prompt(ctx context.Context, t session.Turn) error {
	resp, err := c.conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(c.info.SessionID), Prompt: []acp.ContentBlock{acp.TextBlock(t.Text)}})
	if err != nil {
		if isDisconnect(err) {
			return fmt.Errorf("%w: %w", session.ErrGone, err)
		}
		return err
	}
	c.h.Update(func(r session.Recorder) {
		r.Stop(string(resp.StopReason), "")
		r.End()
		if u := resp.Usage; u != nil {
			m := map[string]any{"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens, "source": "acp prompt response"}
			if u.CachedReadTokens != nil {
				m["cachedInputTokens"] = *u.CachedReadTokens
			}
			if u.ThoughtTokens != nil {
				m["reasoningTokens"] = *u.ThoughtTokens
			}
			b, _ := json.Marshal(m)
			r.Usage(b)
		}
	})
	return nil
}

// Cancel sends session/cancel.
func (c *acpConn) Cancel(ctx context.Context) error {
	return c.conn.Cancel(ctx, acp.CancelNotification{SessionId: acp.SessionId(c.info.SessionID)})
}

func isDisconnect(err error) bool {
	var re *acp.RequestError
	if errors.As(err, &re) {
		b, _ := json.Marshal(re.Data)
		return strings.Contains(string(b), "peer disconnected")
	}
	return false
}

// SessionUpdate summarises one update into the running turn (the log already holds it
// verbatim); between turns (available commands, mode updates) it is logged only.
func (c *acpConn) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.h.Update(func(r session.Recorder) {
		if string(n.SessionId) != c.info.SessionID {
			r.Violation("an update for session %q, not this session", session.Clip(string(n.SessionId), 100))
			return
		}
		r.Count(acpUpdateKind(n.Update))
		acpRecord(r, n.Update)
	})
	return nil
}

// acpUpdateKind is the sessionUpdate kind of u ("unknown" for one the SDK does not
// know).
func acpUpdateKind(u acp.SessionUpdate) string {
	for _, k := range []struct {
		set  bool
		kind string
	}{
		{u.AgentMessageChunk != nil, "agent_message_chunk"}, {u.AgentThoughtChunk != nil, "agent_thought_chunk"},
		{u.UserMessageChunk != nil, "user_message_chunk"}, {u.ToolCall != nil, "tool_call"},
		{u.ToolCallUpdate != nil, "tool_call_update"}, {u.Plan != nil, "plan"}, {u.UsageUpdate != nil, "usage_update"},
		{u.AvailableCommandsUpdate != nil, "available_commands_update"}, {u.CurrentModeUpdate != nil, "current_mode_update"},
		{u.ConfigOptionUpdate != nil, "config_option_update"}, {u.SessionInfoUpdate != nil, "session_info_update"},
	} {
		if k.set {
			return k.kind
		}
	}
	return "unknown"
}

// acpRecord applies the content of update u to the turn's record.
func acpRecord(r session.Recorder, u acp.SessionUpdate) {
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			r.AppendMessage(t.Text)
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil {
			r.Thought(len(t.Text))
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		acpToolCall(r, string(tc.ToolCallId), &tc.Title, string(tc.Kind), string(tc.Status), tc.Locations, true)
	case u.ToolCallUpdate != nil:
		tc := u.ToolCallUpdate
		kind, status := "", ""
		if tc.Kind != nil {
			kind = string(*tc.Kind)
		}
		if tc.Status != nil {
			status = string(*tc.Status)
		}
		acpToolCall(r, string(tc.ToolCallId), tc.Title, kind, status, tc.Locations, false)
	case u.Plan != nil:
		plan := make([]session.PlanEntry, 0, len(u.Plan.Entries))
		for _, e := range u.Plan.Entries {
			plan = append(plan, session.PlanEntry{Content: session.Clip(e.Content, 4000), Priority: string(e.Priority), Status: string(e.Status)})
		}
		r.Plan(plan)
	case u.UsageUpdate != nil && u.UsageUpdate.Cost != nil:
		b, _ := json.Marshal(u.UsageUpdate.Cost)
		r.Cost(b)
	}
}

// acpToolCall records a tool_call (start) or tool_call_update.
func acpToolCall(r session.Recorder, id string, title *string, kind, status string, locs []acp.ToolCallLocation, start bool) {
	tc, known := r.ToolCall(id, true)
	if !known && !start {
		r.Violation("a tool_call_update for tool call %q that was never started", session.Clip(id, 100))
	}
	if tc == nil {
		return
	}
	if title != nil && *title != "" {
		tc.Title = session.Clip(*title, 1000)
	}
	if kind != "" {
		tc.Kind = kind
	}
	if status != "" {
		tc.Status = status
	}
	for _, l := range locs {
		if len(tc.Locations) < 100 {
			tc.Locations = append(tc.Locations, session.Clip(l.Path, 4096))
		}
	}
}

// RequestPermission hands the request to the layer and answers the agent with the
// decision, or "cancelled" (the turn is or gets cancelled, the session closes, the
// decider fails, the agent sends $/cancel_request).
func (c *acpConn) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	req := session.PermissionRequest{ToolCallID: session.Clip(string(p.ToolCall.ToolCallId), 200)}
	if p.ToolCall.Title != nil {
		req.Title = session.Clip(*p.ToolCall.Title, 1000)
	}
	if p.ToolCall.Kind != nil {
		req.Kind = string(*p.ToolCall.Kind)
	}
	for _, l := range p.ToolCall.Locations {
		if len(req.Locations) < 100 {
			req.Locations = append(req.Locations, session.Clip(l.Path, 4096))
		}
	}
	if p.ToolCall.RawInput != nil {
		if b, err := json.Marshal(p.ToolCall.RawInput); err == nil && len(b) <= 64<<10 {
			req.RawInput = b
			req.Command = rawCommand(b)
		}
	}
	for _, o := range p.Options {
		if len(req.Options) < 100 {
			req.Options = append(req.Options, session.PermissionOption{ID: session.Clip(string(o.OptionId), 200), Name: session.Clip(o.Name, 200), Kind: string(o.Kind)})
		}
	}
	dec := c.h.Permission(ctx, req)
	if dec.Cancelled {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(dec.OptionID))}, nil
}

// rawCommand is the command of a tool call's raw input, when it names one (a string,
// or an argv joined with spaces, under "command" or "cmd"); "" otherwise.
func rawCommand(raw []byte) string {
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	for _, k := range []string{"command", "cmd"} {
		var s string
		if json.Unmarshal(in[k], &s) == nil && s != "" {
			return session.Clip(s, 4096)
		}
		var argv []string
		if json.Unmarshal(in[k], &argv) == nil && len(argv) > 0 {
			return session.Clip(strings.Join(argv, " "), 4096)
		}
	}
	return ""
}

// sdkLogHandler records the ACP SDK's own diagnostics (a malformed message, a failed
// notification handler) in the session log, redacted like everything else there.
type sdkLogHandler struct {
	h     session.Host
	attrs []slog.Attr
}

func (h *sdkLogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *sdkLogHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	for _, a := range h.attrs {
		attrs[a.Key] = session.Clip(a.Value.String(), 2000)
	}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = session.Clip(a.Value.String(), 2000)
		return true
	})
	h.h.Note("sdk_log", map[string]any{"level": r.Level.String(), "msg": r.Message, "attrs": attrs})
	return nil
}

func (h *sdkLogHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &sdkLogHandler{h: h.h, attrs: append(append([]slog.Attr(nil), h.attrs...), a...)}
}

func (h *sdkLogHandler) WithGroup(string) slog.Handler { return h }

// ClassifyACPLine reads the JSON-RPC envelope of one ACP line (untrusted: any bytes):
// Method and ID as in the message, Update the sessionUpdate kind of a session/update.
// It never fails: a line that is not a JSON object has Object false.
func ClassifyACPLine(line []byte) session.WireLine {
	var env struct {
		Method *string          `json:"method"`
		ID     json.RawMessage  `json:"id"`
		Params *json.RawMessage `json:"params"`
	}
	if !session.DecodeObject(line, &env) {
		return session.WireLine{}
	}
	w := session.WireLine{Object: true, ID: env.ID}
	if env.Method != nil {
		w.Method = *env.Method
	}
	if w.Method == "session/update" && env.Params != nil {
		var p struct {
			Update struct {
				Kind string `json:"sessionUpdate"`
			} `json:"update"`
		}
		if json.Unmarshal(*env.Params, &p) == nil {
			w.Update = p.Update.Kind
		}
	}
	return w
}

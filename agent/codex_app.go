package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/worker"
)

// The Codex app-server driver (docs/clis.md "app:codex"): app:codex runs the pinned
// Codex CLI as `codex app-server` — JSON-RPC 2.0 without the "jsonrpc" member, one
// message per line on stdin and stdout — as a protocol of the session layer. The
// handshake is initialize, the initialized notification and thread/start (the
// workspace as cwd, Codex's own approval policy and sandbox as the profile says, an
// ephemeral thread); a turn is turn/start, ended by the turn/completed notification
// of that turn (status completed, interrupted or failed); the native cancel is
// turn/interrupt. Codex's approval requests — item/commandExecution/requestApproval
// (a command) and item/fileChange/requestApproval (a patch, whose paths its fileChange
// item named) — go to the layer as permission requests (accept, acceptForSession,
// decline), its item/tool/requestUserInput questions as native questions; turn/steer
// delivers a steering message into the running turn. One thread
// serves every turn of a session: the warm lifecycle keeps one process and one thread.
// The agentproof MCP server is configured on the command line and always reads its run
// from the session's run binding file (no run token ever reaches Codex's environment).

// CodexAppLogSchema tags every line of a Codex app-server session log (Method is the
// JSON-RPC method, ID the id, Update the item type of an item/* notification).
const CodexAppLogSchema = "agentproof.codex-app-log/v1"

// CodexAppModel is the model id the app-server driver asks the scripted model for by
// default: a slug the pinned Codex's model catalog knows, so that Codex offers its full
// tool set (apply_patch besides exec_command); the scripted model serves any id.
const CodexAppModel = "gpt-5.5"

// Codex's approval policies (its AskForApproval) the driver accepts: untrusted asks
// before every command that is not known to be read-only and every patch; on-request
// lets the model decide when to ask.
const (
	CodexApprovalUntrusted = "untrusted"
	CodexApprovalOnRequest = "on-request"
)

// CodexSandboxReadOnly is Codex's read-only sandbox mode (besides
// CodexSandboxWorkspaceWrite and CodexSandboxNone).
const CodexSandboxReadOnly = "read-only"

// MaxCodexAppLineBytes bounds one line of Codex's stream that the driver decodes
// (bytes); a longer line is counted and dropped.
const MaxCodexAppLineBytes = 16 << 20

// codexAppName is the protocol's name in messages; codexAppSessions the directory of
// an agent's app-server sessions below its state directory.
const (
	codexAppName     = "Codex app-server"
	codexAppSessions = "app-sessions"
)

// CodexAppProtocol describes Codex's app-server to the session layer.
var CodexAppProtocol = session.Protocol{Name: codexAppName, LogSchema: CodexAppLogSchema, Classify: ClassifyCodexAppLine, Evidence: "app-turn",
	Completed: "completed", Cancelled: "interrupted", CancelName: "turn/interrupt"}

// CodexAppDriver starts Codex app-server sessions. It is immutable and safe for
// concurrent use.
type CodexAppDriver struct {
	bounds   bounds
	model    string
	approval string
	sandbox  string
	sessionSettings
}

// NewCodexApp returns the app:codex driver configured by config (the profile's
// driverConfig): TimeoutMs (the whole session's life, ms), MaxOutputBytes (Codex's
// stdout, bytes; default DefaultPiMaxOutputBytes: it streams every delta),
// TurnTimeoutMs, StartTimeoutMs, CancelGraceMs (ms, > 0), Binary (the native codex
// binary), ModelBaseURL (a loopback http URL), Script (oracle, nop or wrong), Model
// (default CodexAppModel), ApprovalPolicy (untrusted, the default, or on-request) and
// SandboxMode (workspace-write, the default, read-only or danger-full-access; inside a
// sandbox lease Codex's own sandbox is always danger-full-access: the lease is the
// confinement). A key the driver does not read and a value out of range are a
// *ConfigError listing every problem.
func NewCodexApp(config api.DriverConfig) (*CodexAppDriver, error) {
	name := driver.Name{Kind: driver.KindApp, Arg: "codex"}
	ce := &ConfigError{Driver: name.String()}
	d := &CodexAppDriver{approval: CodexApprovalUntrusted, sandbox: CodexSandboxWorkspaceWrite, sessionSettings: defaultSessionSettings()}
	d.bounds = parseBounds(config, name, ce, []string{ACPKeyTurnTimeout, ACPKeyStartTimeout, ACPKeyCancelGrace,
		CLIKeyBinary, CLIKeyModelBaseURL, CLIKeyScript, CLIKeyModel, "approvalPolicy", "sandboxMode"})
	if config.MaxOutputBytes == nil {
		d.bounds.maxOutput = DefaultPiMaxOutputBytes
	}
	d.sessionSettings.parse(config, ce)
	d.model = modelID(config, CodexAppModel, ce)
	if p := config.ApprovalPolicy; p != "" {
		if p != CodexApprovalUntrusted && p != CodexApprovalOnRequest {
			ce.Problems = append(ce.Problems, fmt.Sprintf("approvalPolicy %s is not %s or %s (a policy that never asks has no native boundary to test)", p, CodexApprovalUntrusted, CodexApprovalOnRequest))
		}
		d.approval = p
	}
	if m := config.SandboxMode; m != "" {
		if m != CodexSandboxWorkspaceWrite && m != CodexSandboxReadOnly && m != CodexSandboxNone {
			ce.Problems = append(ce.Problems, fmt.Sprintf("sandboxMode %s is not %s, %s or %s", m, CodexSandboxWorkspaceWrite, CodexSandboxReadOnly, CodexSandboxNone))
		}
		d.sandbox = m
	}
	if len(ce.Problems) > 0 {
		return nil, ce
	}
	return d, nil
}

// Name is the driver's name, "app:codex".
func (d *CodexAppDriver) Name() string { return string(driver.KindApp) + "codex" }

// Protocol is CodexAppProtocol.
func (d *CodexAppDriver) Protocol() session.Protocol { return CodexAppProtocol }

// Confinable: Codex's app-server runs inside a sandbox lease (its own sandbox then
// off: the lease forbids the user namespaces it needs).
func (d *CodexAppDriver) Confinable() bool { return true }

// Start launches `codex app-server` in env.Run's workspace (STATE/app-sessions/<n>:
// HOME, XDG, TMPDIR, CODEX_HOME and the run binding file) and opens its thread. Errors:
// a *session.StartError naming the stage (launch, spawn, initialize, thread/start);
// the process is gone.
func (d *CodexAppDriver) Start(ctx context.Context, env SessionEnv) (*session.Session, error) {
	fail := func(err error) (*session.Session, error) {
		return nil, launchError(codexAppName, err)
	}
	n, err := askingSession(codexAppName, env, codexAppSessions)
	if err != nil {
		return nil, err
	}
	l, err := d.launch(env.Run, n)
	if err != nil {
		return fail(err)
	}
	catalog, err := codexModelCatalog(ctx, d.binary, d.model, env.Run.StateDir)
	if err != nil {
		return fail(err)
	}
	catalogFile := filepath.Join(l.Dir, "model-catalog.json")
	l.Files[catalogFile] = catalog
	l.Spec.Args = append(l.Spec.Args, "-c", "model_catalog_json="+strconv.Quote(catalogFile))
	se := d.sessionSettings.env(env)
	se.Binding = filepath.Join(l.Dir, session.RunBindingFile)
	sandbox := d.sandbox
	if env.Place != nil {
		sandbox = CodexSandboxNone
	}
	p := &codexAppProtocol{workspace: env.Run.Workspace, approval: d.approval, sandbox: sandbox}
	return session.Start(ctx, p, l, se)
}

// launch plans session n for env (pure: the layer creates what it lists).
func (d *CodexAppDriver) launch(env RunEnv, n int) (session.Launch, error) {
	if err := d.requireLaunch(env, d.Name(), "codex"); err != nil {
		return session.Launch{}, err
	}
	l, _, vars := d.bounds.sessionLaunch(env, codexAppSessions, n)
	codexHome := filepath.Join(l.Dir, "codex-home")
	l.Dirs = append(l.Dirs, codexHome)
	vars["CODEX_HOME"], vars[ScriptedAPIKeyVar] = codexHome, ScriptedAPIKey
	// The agentproof MCP server reads the current run from the binding file: the
	// variables Codex forwards to it name the file, never a token.
	vars[EnvAPIURL], vars[session.EnvRunBinding], vars[EnvStateDir] = env.APIURL, filepath.Join(l.Dir, session.RunBindingFile), env.StateDir
	var err error
	if l.Spec.Env, err = sessionEnviron(vars, env.Secrets); err != nil {
		return session.Launch{}, err
	}
	l.Spec.Marker = worker.NewMarker()
	modelURL := d.modelURL + "/runs/" + strconv.Itoa(n) + "/v1"
	l.Spec.Path = d.binary
	l.Spec.Args = append([]string{d.binary}, CodexAppArgs(modelURL, d.model, ScriptedAPIKeyVar, env.Executable,
		[]string{EnvAPIURL, session.EnvRunBinding, EnvStateDir, worker.MarkerVar})...)
	l.CloseGrace = session.CloseGraceIgnoringEOF
	return l, nil
}

// Bounds of the model catalog probe (`codex debug models --bundled`).
const (
	codexCatalogTimeout   = 30 * time.Second
	codexCatalogMaxOutput = 16 << 20
)

// codexModelCatalog is the model catalog the session's Codex runs with: the pinned
// binary's own bundled catalog entry of model (`codex debug models --bundled`, run
// bounded with a HOME of its own below stateDir, removed afterwards), with
// supports_search_tool off. The scripted model has no tool search, so Codex must offer
// the MCP server's tools (the semantic tools) directly rather than behind its
// tool_search tool; everything else — its tools (apply_patch), its instructions — is
// the pinned Codex's own for that model. Errors: the probe failed, or its catalog
// has no model.
func codexModelCatalog(ctx context.Context, binary, model, stateDir string) ([]byte, error) {
	dir, err := os.MkdirTemp(stateDir, ".codex-catalog-")
	if err != nil {
		return nil, fmt.Errorf("agent: the model catalog probe has no directory: %w", err)
	}
	defer os.RemoveAll(dir)
	o, err := worker.Supervise(ctx, worker.Spec{Path: binary, Args: []string{binary, "debug", "models", "--bundled"}, Dir: dir,
		Env:     []string{"PATH=" + cliPath, "HOME=" + dir, "CODEX_HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8"},
		Timeout: codexCatalogTimeout, MaxOutputBytes: codexCatalogMaxOutput, NullStdin: true})
	if err != nil || !o.Started || o.TimedOut || o.ExitCode == nil || *o.ExitCode != 0 {
		return nil, fmt.Errorf("agent: %s debug models --bundled failed (%s): %v", binary, Summarize(o), err)
	}
	var catalog struct {
		Models []map[string]json.RawMessage `json:"models"`
	}
	if err := json.Unmarshal(o.Output.Stdout(), &catalog); err != nil {
		return nil, fmt.Errorf("agent: reading Codex's model catalog: %w", err)
	}
	var slugs []string
	for _, m := range catalog.Models {
		var slug string
		_ = json.Unmarshal(m["slug"], &slug)
		if slug == model {
			m["supports_search_tool"] = json.RawMessage("false")
			return json.Marshal(map[string]any{"models": []any{m}})
		}
		slugs = append(slugs, slug)
	}
	return nil, fmt.Errorf("agent: the pinned Codex's model catalog has no model %s (driverConfig model: one of %s)", model, strings.Join(slugs, ", "))
}

// CodexAppArgs is the argv (after the program) of `codex app-server` against a custom
// Responses provider at modelURL: the provider, telemetry and plugin settings of the
// exec driver (CodexArgs), and the MCP server `<executable> mcp` forwarding mcpVars
// from Codex's environment, required (Codex waits for its handshake). The approval
// policy and sandbox are the thread's (thread/start), not the command line's.
func CodexAppArgs(modelURL, model, keyVar, executable string, mcpVars []string) []string {
	quoted := make([]string, len(mcpVars))
	for i, v := range mcpVars {
		quoted[i] = strconv.Quote(v)
	}
	return []string{
		"app-server",
		"-c", "model_provider=agentproof_model",
		"-c", fmt.Sprintf(`model_providers.agentproof_model={name="agentproof model",base_url=%s,env_key=%s,wire_api="responses",request_max_retries=0,stream_max_retries=0}`, strconv.Quote(modelURL), strconv.Quote(keyVar)),
		"-c", "model=" + strconv.Quote(model),
		"-c", "analytics.enabled=false", "-c", "feedback.enabled=false",
		"-c", "check_for_update_on_startup=false", "-c", `otel.exporter="none"`,
		"-c", "features.plugins=false", "-c", "features.shell_snapshot=false",
		"-c", fmt.Sprintf(`mcp_servers.%s={command=%s,args=["mcp"],env_vars=[%s],required=true,startup_timeout_sec=60,tool_timeout_sec=120}`, MCPServerName, strconv.Quote(executable), strings.Join(quoted, ",")),
	}
}

// codexAppProtocol is one app-server session's handshake: the workspace (the thread's
// cwd) and the thread's approval policy and sandbox mode.
type codexAppProtocol struct {
	workspace string
	approval  string
	sandbox   string
}

func (p *codexAppProtocol) Protocol() session.Protocol { return CodexAppProtocol }

// Open starts reading Codex's stream and speaks initialize, initialized and
// thread/start.
func (p *codexAppProtocol) Open(ctx context.Context, rw io.ReadWriter, h session.Host) (session.Conn, error) {
	c := &codexAppConn{h: h, out: session.NewLineWriter(rw), readDone: make(chan struct{})}
	go c.read(rw)
	var init struct {
		UserAgent string `json:"userAgent"`
	}
	if err := c.call(ctx, "initialize", map[string]any{"clientInfo": map[string]string{"name": "agentproof", "title": "agentproof", "version": "1"}}, &init); err != nil {
		return c, &session.StartError{Stage: "initialize", Err: err}
	}
	if err := c.send(codexAppMessage{Method: "initialized"}); err != nil {
		return c, &session.StartError{Stage: "initialize", Err: err}
	}
	var thread struct {
		Thread struct {
			ID         string `json:"id"`
			CLIVersion string `json:"cliVersion"`
		} `json:"thread"`
		Model          string          `json:"model"`
		ApprovalPolicy json.RawMessage `json:"approvalPolicy"`
		Sandbox        json.RawMessage `json:"sandbox"`
	}
	params := map[string]any{"cwd": p.workspace, "approvalPolicy": p.approval, "sandbox": p.sandbox, "ephemeral": true}
	if err := c.call(ctx, "thread/start", params, &thread); err != nil {
		return c, &session.StartError{Stage: "thread/start", Err: err}
	}
	if thread.Thread.ID == "" {
		return c, &session.StartError{Stage: "thread/start", Err: errors.New("agent: Codex returned no thread id")}
	}
	caps, _ := json.Marshal(map[string]json.RawMessage{"approvalPolicy": thread.ApprovalPolicy, "sandbox": thread.Sandbox})
	c.info = session.Info{SessionID: thread.Thread.ID, Name: "codex", Version: thread.Thread.CLIVersion, Model: thread.Model,
		Title: session.Clip(init.UserAgent, 200), Capabilities: caps}
	return c, nil
}

// codexAppMessage is one JSON-RPC message of the app-server (the "jsonrpc" member
// omitted, as Codex does): a request (ID and Method), a notification (Method only) or
// a response (ID, and Result or Error).
type codexAppMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params any             `json:"params,omitempty"`
	Result any             `json:"result,omitempty"`
	Error  *codexAppError  `json:"error,omitempty"`
}

// codexAppError is a JSON-RPC error.
type codexAppError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// codexAppReply is the answer to one request.
type codexAppReply struct {
	Result json.RawMessage
	Err    *codexAppError
}

// codexAppConn is one app-server connection (session.Conn, session.Steerer).
type codexAppConn struct {
	h        session.Host
	out      *session.LineWriter // Codex's stdin
	info     session.Info
	calls    session.Calls[codexAppReply]
	readDone chan struct{}

	mu    sync.Mutex
	turn  *codexAppTurn // the running turn's own state, nil between turns
	total codexUsage    // the thread's token usage so far
}

var _ session.Conn = (*codexAppConn)(nil)

// codexAppTurn is what the connection keeps of the running turn: its id (from
// turn/start's answer), its end (turn/completed, or the stream's end), its final
// status and error, the paths of its fileChange items (for their approval requests),
// the thread's usage when it began, and whether an interrupt waits for its id;
// guarded by codexAppConn.mu.
type codexAppTurn struct {
	session.TurnEnd
	id          string
	status      string
	errMsg      string
	paths       map[string][]string
	mcpCalls    map[string]string // MCP tool name → its latest mcpToolCall item id
	usageStart  codexUsage
	interruptAt bool
}

func (c *codexAppConn) Info() session.Info { return c.info }

func (c *codexAppConn) Done() <-chan struct{} { return c.readDone }

func (c *codexAppConn) Close() error { return nil }

// send writes one message line.
func (c *codexAppConn) send(m codexAppMessage) error { return c.out.Send(m) }

// call sends request method with params and decodes its result into out (nil: not
// read), waiting at most PiRequestTimeout or until ctx ends. Errors: the request could
// not be sent, Codex answered with an error, its stream ended (wrapping
// session.ErrGone), no answer in time.
func (c *codexAppConn) call(ctx context.Context, method string, params any, out any) error {
	id, answer, done := c.calls.Open("")
	defer done()
	if err := c.send(codexAppMessage{ID: json.RawMessage(id), Method: method, Params: params}); err != nil {
		return fmt.Errorf("sending %s: %w", method, err)
	}
	r, err := session.Await(ctx, "Codex's "+method, PiRequestTimeout, answer, c.readDone)
	switch {
	case err != nil:
		return err
	case r.Err != nil:
		return fmt.Errorf("agent: Codex refused %s: %s (%d)", method, r.Err.Message, r.Err.Code)
	case out != nil:
		if err := json.Unmarshal(r.Result, out); err != nil {
			return fmt.Errorf("agent: Codex's answer to %s: %w", method, err)
		}
	}
	return nil
}

// Prompt starts a turn of the thread with t.Text and waits for its turn/completed.
// Errors: Codex refused turn/start, the turn failed (the candidate's), or, wrapping
// session.ErrGone, its stream ended.
func (c *codexAppConn) Prompt(ctx context.Context, t session.Turn) error {
	ct := &codexAppTurn{TurnEnd: session.NewTurnEnd(), paths: map[string][]string{}, mcpCalls: map[string]string{}}
	c.mu.Lock()
	ct.usageStart = c.total
	c.turn = ct
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.turn = nil
		c.mu.Unlock()
	}()
	var started struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	input := []map[string]any{{"type": "text", "text": t.Text}}
	if err := c.call(ctx, "turn/start", map[string]any{"threadId": c.info.SessionID, "input": input}, &started); err != nil {
		return err
	}
	c.mu.Lock()
	if ct.id == "" {
		ct.id = started.Turn.ID
	}
	interrupt := ct.interruptAt && !ct.Ended()
	c.mu.Unlock()
	if interrupt {
		c.interrupt(ct.id)
	}
	if err := ct.Await(ctx, &c.mu, "Codex closed its stream"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct.status == "failed" {
		return fmt.Errorf("the turn failed: %s", session.Clip(ct.errMsg, 600))
	}
	return nil
}

// Cancel sends turn/interrupt for the running turn (without waiting for its answer:
// the turn's end is awaited), or, before turn/start answered, as soon as it does.
func (c *codexAppConn) Cancel(context.Context) error {
	c.mu.Lock()
	ct := c.turn
	if ct == nil || ct.Ended() {
		c.mu.Unlock()
		return errors.New("no Codex turn is running")
	}
	id := ct.id
	ct.interruptAt = id == ""
	c.mu.Unlock()
	if id != "" {
		c.interrupt(id)
	}
	return nil
}

// Steer delivers text into the running turn (turn/steer, naming the running turn as
// the one expected) and returns once Codex accepted it; Codex adds it to the
// conversation before the model's next request (a userMessage item, which marks it
// delivered). Errors: no turn is running (or its id is not known yet), Codex refused
// it or did not answer.
func (c *codexAppConn) Steer(ctx context.Context, text string) error {
	c.mu.Lock()
	id := ""
	if ct := c.turn; ct != nil && !ct.Ended() {
		id = ct.id
	}
	c.mu.Unlock()
	if id == "" {
		return errors.New("no Codex turn is running (or turn/start has not answered yet)")
	}
	input := []map[string]any{{"type": "text", "text": text}}
	return c.call(ctx, "turn/steer", map[string]any{"threadId": c.info.SessionID, "expectedTurnId": id, "input": input}, nil)
}

// interrupt sends turn/interrupt for turn id now; Codex's answer is awaited in the
// background (the log keeps it; a refusal is noted in the turn).
func (c *codexAppConn) interrupt(id string) {
	rid, answer, done := c.calls.Open("")
	err := c.send(codexAppMessage{ID: json.RawMessage(rid), Method: "turn/interrupt", Params: map[string]string{"threadId": c.info.SessionID, "turnId": id}})
	go func() {
		defer done()
		var r codexAppReply
		if err == nil {
			r, err = session.Await(context.Background(), "Codex's turn/interrupt", PiRequestTimeout, answer, c.readDone)
		}
		switch {
		case err != nil && !errors.Is(err, session.ErrGone):
			c.h.Update(func(rec session.Recorder) { rec.Notice("turn/interrupt: " + err.Error()) })
		case err == nil && r.Err != nil:
			c.h.Update(func(rec session.Recorder) { rec.Notice("Codex refused turn/interrupt: " + r.Err.Message) })
		}
	}()
}

// read consumes Codex's stdout until it ends (the layer logs every line).
func (c *codexAppConn) read(out io.Reader) {
	defer close(c.readDone)
	session.ReadLines(out, MaxCodexAppLineBytes, c.dispatch)
	c.endTurn(codexAppTurnEnd{})
}

// codexAppIncoming is a message Codex sent, as the driver reads it.
type codexAppIncoming struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *codexAppError  `json:"error"`
}

// dispatch routes one line: a response to its request, a server request to its
// handler (in its own goroutine: it may wait for the human), a notification to the
// turn.
func (c *codexAppConn) dispatch(line []byte, oversized bool) {
	var m codexAppIncoming
	if oversized || json.Unmarshal(line, &m) != nil {
		c.h.Update(session.Recorder.Undecoded)
		return
	}
	switch {
	case m.Method != "" && len(m.ID) > 0:
		go c.serverRequest(m)
	case m.Method != "":
		c.notification(m)
	case len(m.ID) > 0:
		if !c.calls.Deliver(string(m.ID), codexAppReply{Result: m.Result, Err: m.Error}) {
			c.h.Update(func(r session.Recorder) { r.Count("(unexpected response)") })
		}
	}
}

// codexAppTurnEnd is what turn/completed said of a turn: its status and error.
type codexAppTurnEnd struct {
	completed bool
	status    string
	errMsg    string
}

// endTurn ends the running turn with e (a zero e: the stream ended).
func (c *codexAppConn) endTurn(e codexAppTurnEnd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct := c.turn; ct != nil && !ct.Ended() {
		ct.status, ct.errMsg = e.status, e.errMsg
		ct.End(e.completed)
	}
}

// respond answers server request id with result, or with a JSON-RPC error.
func (c *codexAppConn) respond(id json.RawMessage, result any, rpcErr *codexAppError) {
	_ = c.send(codexAppMessage{ID: id, Result: result, Error: rpcErr})
}

// ClassifyCodexAppLine reads the JSON-RPC envelope of one app-server line (untrusted:
// any bytes): Method and ID as in the message, Update the item type of an item/*
// notification. It never fails: a line that is not a JSON object has Object false.
func ClassifyCodexAppLine(line []byte) session.WireLine {
	var env struct {
		Method *string         `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params struct {
			Item struct {
				Type string `json:"type"`
			} `json:"item"`
		} `json:"params"`
	}
	if !session.DecodeObject(line, &env) {
		return session.WireLine{}
	}
	w := session.WireLine{Object: true, ID: env.ID}
	if env.Method != nil {
		w.Method = *env.Method
	}
	if strings.HasPrefix(w.Method, "item/") {
		w.Update = env.Params.Item.Type
	}
	return w
}

// notification applies one notification: turn/completed ends the turn it names,
// thread/tokenUsage/updated is the turn's usage, item/* fill the turn's record; every
// notification is counted.
func (c *codexAppConn) notification(m codexAppIncoming) {
	var end *codexAppTurnEnd
	c.h.Update(func(r session.Recorder) {
		r.Count(m.Method)
		switch m.Method {
		case "item/started", "item/completed":
			c.item(r, m.Params, m.Method == "item/completed")
		case "thread/tokenUsage/updated":
			if u := c.usage(m.Params); u != nil {
				r.Usage(u)
			}
		case "error":
			var p struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
				WillRetry bool `json:"willRetry"`
			}
			_ = json.Unmarshal(m.Params, &p)
			r.Notice(fmt.Sprintf("error (will retry: %v): %s", p.WillRetry, p.Error.Message))
		case "turn/completed":
			end = c.completed(r, m.Params)
		case "turn/started":
			var p struct {
				Turn struct {
					ID string `json:"id"`
				} `json:"turn"`
			}
			_ = json.Unmarshal(m.Params, &p)
			c.learnTurn(p.Turn.ID)
		}
	})
	if end != nil {
		c.endTurn(*end)
	}
}

// completed reads turn/completed: when it ends the running turn (its id, or any turn
// while turn/start has not answered yet), the turn's stop reason is its status and
// its end is returned; nil for another turn.
func (c *codexAppConn) completed(r session.Recorder, params json.RawMessage) *codexAppTurnEnd {
	var p struct {
		Turn struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(params, &p)
	c.mu.Lock()
	ct := c.turn
	ours := ct != nil && (ct.id == "" || ct.id == p.Turn.ID)
	if ours && ct.id == "" {
		ct.id = p.Turn.ID
	}
	c.mu.Unlock()
	if !ours {
		r.Violation("turn/completed for turn %q, which is not the running turn", session.Clip(p.Turn.ID, 100))
		return nil
	}
	e := codexAppTurnEnd{completed: true, status: p.Turn.Status}
	if p.Turn.Error != nil {
		e.errMsg = p.Turn.Error.Message
	}
	r.Stop(e.status, e.errMsg)
	r.End()
	return &e
}

// codexUsage is a token usage breakdown of Codex (its TokenUsageBreakdown).
type codexUsage struct {
	Input     int64 `json:"inputTokens"`
	Cached    int64 `json:"cachedInputTokens"`
	Output    int64 `json:"outputTokens"`
	Reasoning int64 `json:"reasoningOutputTokens"`
}

// usage keeps the thread's total usage from a thread/tokenUsage/updated and returns
// the running turn's share (the total now less the total when it began) as JSON for
// billing.ExtractLLM; nil between turns.
func (c *codexAppConn) usage(params json.RawMessage) json.RawMessage {
	var p struct {
		TokenUsage struct {
			Total codexUsage `json:"total"`
		} `json:"tokenUsage"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total = p.TokenUsage.Total
	if c.turn == nil {
		return nil
	}
	s := c.turn.usageStart
	b, _ := json.Marshal(map[string]any{"inputTokens": c.total.Input - s.Input, "cachedInputTokens": c.total.Cached - s.Cached,
		"outputTokens": c.total.Output - s.Output, "reasoningTokens": c.total.Reasoning - s.Reasoning, "source": "codex app-server"})
	return b
}

// codexAppItem is a ThreadItem as the driver reads it.
type codexAppItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Status  string `json:"status"`
	Command string `json:"command"`
	Changes []struct {
		Path string `json:"path"`
	} `json:"changes"`
	Server  string          `json:"server"`
	Tool    string          `json:"tool"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
	Summary []string        `json:"summary"`
}

// codexToolItems are the item types that are a tool call, with the kind the turn
// records for each.
var codexToolItems = map[string]string{"commandExecution": "execute", "fileChange": "edit", "mcpToolCall": "other",
	"dynamicToolCall": "other", "webSearch": "fetch", "imageView": "read", "collabAgentToolCall": "other", "imageGeneration": "other"}

// item records an item/started or item/completed (done) in the turn: a tool call, the
// agent's message, a user message Codex delivered, its reasoning's size.
func (c *codexAppConn) item(r session.Recorder, params json.RawMessage, done bool) {
	var p struct {
		Item codexAppItem `json:"item"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	it := p.Item
	if kind, ok := codexToolItems[it.Type]; ok {
		c.toolItem(r, it, kind)
		return
	}
	if !done {
		return
	}
	switch it.Type {
	case "agentMessage":
		r.SetMessage(it.Text)
	case "userMessage":
		var content []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(it.Content, &content)
		var text strings.Builder
		for _, b := range content {
			text.WriteString(b.Text)
		}
		r.UserMessage(text.String())
	case "reasoning":
		r.Thought(len(strings.Join(it.Summary, "")) + len(it.Content))
	}
}

// toolItem records a tool-call item: its kind, title, status and the paths of a file
// change (kept for its approval request).
func (c *codexAppConn) toolItem(r session.Recorder, it codexAppItem, kind string) {
	tc, _ := r.ToolCall(it.ID, true)
	if tc == nil {
		return
	}
	tc.Kind, tc.Status = kind, it.Status
	if it.Status == "inProgress" {
		tc.Status = "in_progress"
	}
	switch it.Type {
	case "commandExecution":
		tc.Title = session.Clip(it.Command, 1000)
	case "fileChange":
		var paths []string
		for _, ch := range it.Changes {
			paths = append(paths, session.Clip(ch.Path, 4096))
		}
		tc.Title, tc.Locations = "apply_patch", paths[:min(len(paths), 100)]
		c.mu.Lock()
		if c.turn != nil {
			c.turn.paths[it.ID] = paths
		}
		c.mu.Unlock()
	case "mcpToolCall", "dynamicToolCall", "collabAgentToolCall":
		tc.Title = session.Clip(strings.Trim(it.Server+"/"+it.Tool, "/"), 1000)
		c.mu.Lock()
		if c.turn != nil && it.Tool != "" {
			c.turn.mcpCalls[it.Tool] = it.ID
		}
		c.mu.Unlock()
	default:
		tc.Title = it.Type
	}
}

// serverRequest answers one request Codex sent: an approval — of a command, a file
// change, or an MCP tool call (an MCP elicitation Codex makes to approve the call) — is
// a permission request of the layer, a question of request_user_input a native
// question, anything else a JSON-RPC error (method not found), noted in the turn.
func (c *codexAppConn) serverRequest(m codexAppIncoming) {
	switch m.Method {
	case "item/commandExecution/requestApproval":
		c.respond(m.ID, c.approval(m.Params, "execute"), nil)
	case "item/fileChange/requestApproval":
		c.respond(m.ID, c.approval(m.Params, "edit"), nil)
	case "item/tool/requestUserInput":
		c.respond(m.ID, c.userInput(m.Params), nil)
	case "mcpServer/elicitation/request":
		c.respond(m.ID, c.elicitation(m.Params), nil)
	default:
		c.h.Update(func(r session.Recorder) {
			r.Notice("Codex's " + m.Method + " was refused: agentproof does not answer it")
		})
		c.respond(m.ID, nil, &codexAppError{Code: -32601, Message: "agentproof does not answer " + m.Method})
	}
}

// Codex's approval decisions the driver offers, with the permission option kinds they
// are: "cancel", a decline that also interrupts the turn, is the reject that remains
// when Codex offers no plain "decline" (as for most commands), and what the agent is
// told when the layer answers cancelled.
var codexDecisions = []session.PermissionOption{
	{ID: "accept", Name: "Accept", Kind: session.PermissionAllowOnce},
	{ID: "acceptForSession", Name: "Accept for the session", Kind: session.PermissionAllowAlways},
	{ID: "decline", Name: "Decline", Kind: session.PermissionRejectOnce},
	{ID: "cancel", Name: "Decline and interrupt the turn", Kind: session.PermissionRejectAlways},
}

// approval asks the layer about one approval request of kind (execute: a command;
// edit: a file change, whose paths its item named) and returns the response: the
// decision chosen, or "cancel" when the layer answers cancelled.
func (c *codexAppConn) approval(params json.RawMessage, kind string) map[string]any {
	var p struct {
		ItemID             string            `json:"itemId"`
		TurnID             string            `json:"turnId"`
		Command            string            `json:"command"`
		AvailableDecisions []json.RawMessage `json:"availableDecisions"`
	}
	_ = json.Unmarshal(params, &p)
	c.learnTurn(p.TurnID)
	req := session.PermissionRequest{ToolCallID: session.Clip(p.ItemID, 200), Kind: kind, Options: codexOptions(p.AvailableDecisions)}
	if len(params) <= 64<<10 {
		req.RawInput = params
	}
	if kind == "execute" {
		req.Command, req.Title = session.Clip(p.Command, 4096), session.Clip(p.Command, 1000)
	} else {
		c.mu.Lock()
		if c.turn != nil {
			req.Locations = slices.Clone(c.turn.paths[p.ItemID])
		}
		c.mu.Unlock()
		req.Title = session.Clip("apply_patch "+strings.Join(req.Locations, " "), 1000)
	}
	dec := c.h.Permission(context.Background(), req)
	if dec.Cancelled {
		return map[string]any{"decision": "cancel"}
	}
	return map[string]any{"decision": dec.OptionID}
}

// elicitation answers an MCP elicitation: Codex's approval of an MCP tool call (its
// _meta.codex_approval_kind mcp_tool_call: kind other, the tool call's item id, the
// tool's parameters as its raw input; accept, decline or cancel) goes to the layer;
// any other elicitation (a form or a URL an MCP server asks the human to fill in) is
// declined and noted.
func (c *codexAppConn) elicitation(params json.RawMessage) map[string]any {
	var p struct {
		ServerName string `json:"serverName"`
		Message    string `json:"message"`
		Meta       struct {
			Kind       string          `json:"codex_approval_kind"`
			ToolName   string          `json:"tool_name"`
			ToolParams json.RawMessage `json:"tool_params"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	if p.Meta.Kind != "mcp_tool_call" {
		c.h.Update(func(r session.Recorder) {
			r.Notice("an MCP elicitation of " + p.ServerName + " was declined: " + p.Message)
		})
		return map[string]any{"action": "decline"}
	}
	req := session.PermissionRequest{Kind: "other", Title: session.Clip(p.Message, 1000),
		Options: []session.PermissionOption{codexDecisions[0], codexDecisions[2], codexDecisions[3]}}
	if len(p.Meta.ToolParams) <= 64<<10 {
		req.RawInput = p.Meta.ToolParams
	}
	c.mu.Lock()
	if c.turn != nil {
		req.ToolCallID = c.turn.mcpCalls[p.Meta.ToolName]
	}
	c.mu.Unlock()
	dec := c.h.Permission(context.Background(), req)
	switch {
	case dec.Cancelled:
		return map[string]any{"action": "cancel"}
	case dec.OptionID == "accept":
		return map[string]any{"action": "accept", "content": map[string]any{}}
	}
	return map[string]any{"action": dec.OptionID}
}

// learnTurn keeps id as the running turn's when turn/start has not answered yet (an
// approval request or turn/started named it first): a Stop while the request is
// pending then interrupts that turn at once.
func (c *codexAppConn) learnTurn(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct := c.turn; ct != nil && ct.id == "" && id != "" {
		ct.id = id
	}
}

// codexOptions are the options of an approval request: the decisions of
// codexDecisions that Codex says are available (all of them when it does not say).
func codexOptions(available []json.RawMessage) []session.PermissionOption {
	if len(available) == 0 {
		return slices.Clone(codexDecisions)
	}
	var out []session.PermissionOption
	for _, o := range codexDecisions {
		if slices.ContainsFunc(available, func(a json.RawMessage) bool { return string(a) == strconv.Quote(o.ID) }) {
			out = append(out, o)
		}
	}
	return out
}

// userInput asks the layer each question of a request_user_input (a select of its
// options, or free input) and returns the answers by question id (an unanswered one
// is left out).
func (c *codexAppConn) userInput(params json.RawMessage) map[string]any {
	var p struct {
		ItemID    string `json:"itemId"`
		Questions []struct {
			ID       string `json:"id"`
			Header   string `json:"header"`
			Question string `json:"question"`
			Options  []struct {
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	_ = json.Unmarshal(params, &p)
	answers := map[string]any{}
	for _, q := range p.Questions {
		req := session.QuestionRequest{ID: session.Clip(q.ID, 200), Method: session.QuestionInput, Title: session.Clip(q.Header, 1000), Message: session.Clip(q.Question, 4000)}
		for _, o := range q.Options {
			req.Options = append(req.Options, session.Clip(o.Label, 200))
		}
		if len(req.Options) > 0 {
			req.Method = session.QuestionSelect
		}
		if a := c.h.Question(context.Background(), req); !a.Cancelled {
			answers[q.ID] = map[string]any{"answers": []string{a.Value}}
		}
	}
	return map[string]any{"answers": answers}
}

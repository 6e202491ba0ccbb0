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
	"slices"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
)

// ACPEnv is what ACPDriver.Start needs besides the driver's configuration:
//
//   - Run: the run that starts the session (RunEnv: executable, workspace, API URL, run
//     id and token, state directory, resolved secrets, adapter configuration). The
//     agentproof MCP server of session/new is bound to this run.
//   - Decider: answers the agent's permission requests (required).
//   - Log: where the whole session's evidence log goes (JSONL, ACPLogEntry); may be nil
//     (each turn's share is in TurnResult.Evidence either way).
//   - Redact: values to redact from the log besides the run token and the resolved
//     secrets, which are always redacted.
//   - Now: the clock of the log and the turn times (default time.Now).
//   - ExtraMarkers: process markers the agent process carries besides the session's
//     own (worker.Spec.ExtraMarkers; for example the attempt's, so that the caller can
//     sweep escaped descendants after the server is gone).
//   - Warm: the session will serve several runs (lifecycle warm). Its MCP server then
//     gets no run token: it reads the current run from the session's run binding file
//     (EnvRunBinding, RunBindingFile in the session directory), which Start writes for
//     Run's run and ACPSession.Bind rewrites per turn.
//   - Launch: places the process somewhere other than directly on the host (nil: on
//     the host). Under a sandbox lease it wraps the agent's own spec into the
//     provider's trampoline (docs/acp.md "Under a sandbox"); the client fs capability is
//     then not offered (the agent writes with its own tools, inside the sandbox, as
//     the sandbox user).
type ACPEnv struct {
	Run          RunEnv
	Decider      PermissionDecider
	Log          io.Writer
	Redact       *redact.Set
	Now          func() time.Time
	ExtraMarkers []string
	Warm         bool
	Launch       ACPLaunchFunc
}

// ACPLaunchFunc turns the agent's own process spec (explicit environment, working
// directory in the workspace, bounds) into the spec agentproof starts in its place
// (for a sandbox lease: the provider's trampoline, which keeps the agent's stdin,
// stdout and stderr and the spec's Timeout and MaxOutputBytes) and returns settle,
// which is called exactly once after that process ended (or failed to spawn) with its
// exit as the host saw it and returns the agent's own exit (the sandbox init's
// report). Errors: the launch was refused (naming why); nothing was started.
type ACPLaunchFunc func(spec worker.Spec) (started worker.Spec, settle func(ProcessExit) ProcessExit, err error)

// ACPSession is one running ACP agent process with one ACP session: the warm lifecycle
// sends several prompts to it, per_turn one. Prompt and Cancel may be called from
// different goroutines; Prompt calls are serialised (one turn at a time). Close retires
// the process; it must always be called.
type ACPSession struct {
	d      *ACPDriver
	env    ACPEnv
	proc   *agentProcess
	conn   *acp.ClientSideConnection
	log    *acpLog
	client *acpClient
	root   *os.Root
	// clientFS: the fs capability is offered in this session (the driver's clientFs,
	// never under ACPEnv.Launch).
	clientFS bool

	// Index is the session's index among the agent's ACP sessions (1-based; the
	// scripted model serves it at /runs/<Index>/v1).
	Index int
	// ID is the agent's session id (session/new).
	ID string
	// Agent is what the agent said about itself in initialize: its name, title and
	// version, the protocol version and its capabilities (raw JSON).
	Agent ACPAgentInfo
	// Path and Args are the agent process's program (absolute) and argv as launched.
	Path string
	Args []string
	// BindingPath is the run binding file of a warm session's MCP server ("" for a
	// session started for one run).
	BindingPath string

	promptMu sync.Mutex // one turn at a time

	mu          sync.Mutex
	turns       int
	cur         *turnState
	closed      bool
	broken      error // the session cannot serve another turn (why)
	permissions int   // permission requests so far
	written     int64 // bytes written through fs/write_text_file
}

// ACPAgentInfo is the agent's side of initialize.
type ACPAgentInfo struct {
	Name            string          `json:"name,omitempty"`
	Title           string          `json:"title,omitempty"`
	Version         string          `json:"version,omitempty"`
	ProtocolVersion int             `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`
	AuthMethods     []string        `json:"authMethods,omitempty"`
}

// StartError is a session that could not start, with what was observed of the process
// (Exit is nil when no process was started).
type StartError struct {
	Stage string // "launch", "spawn", "initialize", "session/new"
	Err   error
	Exit  *ProcessExit
}

// Error renders "agent: ACP session: <stage>: <cause> (<exit summary>; stderr: …)".
func (e *StartError) Error() string {
	msg := fmt.Sprintf("agent: ACP session: %s: %v", e.Stage, e.Err)
	if e.Exit != nil {
		msg += " (" + e.Exit.Summary()
		if tail := tailText(e.Exit.Stderr, 400); tail != "" {
			msg += "; stderr: " + tail
		}
		msg += ")"
	}
	return msg
}

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// Start launches the agent in env.Run's workspace and opens its ACP session: it creates
// the session's directories (ACPSessionDir), starts the process (explicit environment,
// its own process group, no shell), sends initialize (protocol version 1, the client
// capabilities below, agentproof as client) and session/new (cwd = the workspace,
// mcpServers = the agentproof MCP server bound to env.Run's run). Client capabilities:
// fs/read_text_file and fs/write_text_file confined to the workspace (unless
// driverConfig clientFs is false); no terminal. The whole start is bounded by
// startTimeoutMs. Errors: a *StartError naming the stage; the process is gone.
func (d *ACPDriver) Start(ctx context.Context, env ACPEnv) (*ACPSession, error) {
	if env.Decider == nil {
		return nil, &StartError{Stage: "launch", Err: errors.New("no permission decider")}
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	n, err := nextSessionIndex(env.Run.StateDir, "acp-sessions")
	if err != nil {
		return nil, &StartError{Stage: "launch", Err: fmt.Errorf("reading the agent's sessions: %w", err)}
	}
	l, err := d.launch(env.Run, n, env.Launch != nil)
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
	root, err := os.OpenRoot(env.Run.Workspace)
	if err != nil {
		return nil, &StartError{Stage: "launch", Err: fmt.Errorf("opening the workspace: %w", err)}
	}
	secrets := env.Redact.With(env.Run.RunToken)
	for _, v := range env.Run.Secrets {
		secrets = secrets.WithCredentials(v)
	}
	s := &ACPSession{d: d, env: env, Index: n, root: root, log: newACPLog(env.Log, secrets, env.Now), clientFS: d.clientFS && env.Launch == nil}
	grace := ACPCloseGrace
	if d.agent == ACPCodex || d.agent == ACPClaude || d.agent == ACPGemini {
		grace = ACPCloseGraceIgnoringEOF
	}
	marker := worker.NewMarker()
	l.spec.Marker = marker
	l.spec.ExtraMarkers = env.ExtraMarkers
	s.Path, s.Args = l.spec.Path, slices.Clone(l.spec.Args)
	spec := l.spec
	var settle func(ProcessExit) ProcessExit
	if env.Launch != nil {
		if spec, settle, err = env.Launch(l.spec); err != nil {
			root.Close()
			return nil, &StartError{Stage: "launch", Err: err}
		}
	}
	proc, err := startProcess(spec, grace)
	if err != nil {
		if settle != nil {
			settle(ProcessExit{NotSpawned: true, Error: "not started: " + err.Error()})
		}
		root.Close()
		return nil, &StartError{Stage: "spawn", Err: err}
	}
	proc.settle = settle
	s.proc = proc
	s.log.note("process_start", map[string]any{"pid": proc.identity.PID, "startTime": proc.identity.StartTime,
		"argv0": l.spec.Path, "args": len(l.spec.Args) - 1, "session": n})
	s.client = &acpClient{s: s}
	in := &tapWriter{w: proc.stdin, tap: &lineTap{maxLine: MaxACPLineBytes, emit: func(b []byte, n int) { s.log.wire(DirClient, b, n) }}}
	// The SDK starts reading inside NewClientSideConnection, before it has stored its
	// connection and before SetLogger: the tap holds every read until both are done.
	out := &tapReader{r: proc.stdout, tap: &lineTap{maxLine: MaxACPLineBytes, emit: func(b []byte, n int) { s.log.wire(DirAgent, b, n) }}, open: make(chan struct{})}
	s.conn = acp.NewClientSideConnection(s.client, in, out)
	s.conn.SetLogger(slog.New(&sdkLogHandler{log: s.log}))
	close(out.open)

	startCtx, cancel := context.WithTimeout(ctx, d.startTimeout)
	defer cancel()
	fail := func(stage string, err error) (*ACPSession, error) {
		exit := s.Close()
		return nil, &StartError{Stage: stage, Err: err, Exit: &exit}
	}
	init, err := s.conn.Initialize(startCtx, acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{
			Fs: acp.FileSystemCapabilities{ReadTextFile: s.clientFS, WriteTextFile: s.clientFS},
		},
		ClientInfo: &acp.Implementation{Name: "agentproof", Version: "1"},
	})
	if err != nil {
		return fail("initialize", err)
	}
	s.Agent.ProtocolVersion = int(init.ProtocolVersion)
	if init.AgentInfo != nil {
		s.Agent.Name, s.Agent.Version = init.AgentInfo.Name, init.AgentInfo.Version
		if init.AgentInfo.Title != nil {
			s.Agent.Title = *init.AgentInfo.Title
		}
	}
	s.Agent.Capabilities, _ = json.Marshal(init.AgentCapabilities)
	for _, m := range init.AuthMethods {
		s.Agent.AuthMethods = append(s.Agent.AuthMethods, authMethodID(m))
	}
	if init.ProtocolVersion != acp.ProtocolVersionNumber {
		return fail("initialize", fmt.Errorf("the agent speaks ACP protocol version %d; agentproof speaks %d", init.ProtocolVersion, acp.ProtocolVersionNumber))
	}
	mcpServer := MCPServerFor(env.Run, marker)
	if env.Warm {
		s.BindingPath = filepath.Join(l.dir, RunBindingFile)
		if err := WriteRunBinding(s.BindingPath, env.Run.RunID, env.Run.RunToken); err != nil {
			return fail("launch", err)
		}
		mcpServer = MCPServerBound(env.Run, s.BindingPath, marker)
	}
	resp, err := s.conn.NewSession(startCtx, acp.NewSessionRequest{Cwd: env.Run.Workspace, McpServers: []acp.McpServer{mcpServer}})
	if err != nil {
		return fail("session/new", err)
	}
	if resp.SessionId == "" {
		return fail("session/new", errors.New("the agent returned no session id"))
	}
	s.ID = string(resp.SessionId)
	return s, nil
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
	if marker != "" {
		vars = append(vars, acp.EnvVariable{Name: worker.MarkerVar, Value: marker})
	}
	return acp.McpServer{Stdio: &acp.McpServerStdio{Name: MCPServerName, Command: env.Executable, Args: []string{"mcp"}, Env: vars}}
}

// MCPServerBound is the agentproof MCP server of a warm session: like MCPServerFor,
// but instead of one run's id and token its environment names the run binding file
// (EnvRunBinding) every tool call reads the current run from.
func MCPServerBound(env RunEnv, bindingPath, marker string) acp.McpServer {
	vars := []acp.EnvVariable{{Name: EnvAPIURL, Value: env.APIURL}, {Name: EnvRunBinding, Value: bindingPath}, {Name: EnvStateDir, Value: env.StateDir}}
	if marker != "" {
		vars = append(vars, acp.EnvVariable{Name: worker.MarkerVar, Value: marker})
	}
	return acp.McpServer{Stdio: &acp.McpServerStdio{Name: MCPServerName, Command: env.Executable, Args: []string{"mcp"}, Env: vars}}
}

// Bind makes run runID (with its token) the run a warm session's MCP server acts for
// from now on, and adds the token to the values the session log redacts; an empty
// runID and token unbind it (between turns every tool call is refused). Errors: the
// session is not warm, or the file could not be written.
func (s *ACPSession) Bind(runID, token string) error {
	if s.BindingPath == "" {
		return errors.New("agent: the ACP session was not started warm: it has no run binding")
	}
	if token != "" {
		s.log.addSecrets(token)
	}
	return WriteRunBinding(s.BindingPath, runID, token)
}

// Alive reports whether the session can serve another turn: its process has not
// exited, it is not closed and no earlier turn broke it.
func (s *ACPSession) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && s.broken == nil && !s.proc.exited()
}

// Identity is the agent process's identity, read afresh from /proc (it is still
// running: agentproof has not reaped it). Errors: the process is gone.
func (s *ACPSession) Identity() (ProcessIdentity, error) {
	if s.proc.exited() {
		return ProcessIdentity{}, fmt.Errorf("agent: the ACP agent process %s has exited", s.proc.identity)
	}
	st, err := ProcStartTime(s.proc.identity.PID)
	if err != nil {
		return ProcessIdentity{}, err
	}
	return ProcessIdentity{PID: s.proc.identity.PID, StartTime: st}, nil
}

// Turn is one prompt: the run it belongs to and the prompt text (see Prompt).
type Turn struct {
	RunID string
	Text  string
}

// TurnFailure classifies a turn that did not end with a stop reason.
type TurnFailure string

// Turn failures. The agent's faults: it answered the prompt with a JSON-RPC error, it
// went away (exited, closed its stream, exceeded its output), or it did not end the
// turn in time (TurnTimedOut: the turn deadline passed, session/cancel was sent and the
// turn still did not end within the cancel grace). Misuse is the caller's (harness)
// fault: a closed or broken session.
const (
	TurnAgentError TurnFailure = "agent_error"
	TurnAgentGone  TurnFailure = "agent_gone"
	TurnTimedOut   TurnFailure = "timed_out"
	TurnMisuse     TurnFailure = "misuse"
)

// TurnError is a turn that did not end with a stop reason.
type TurnError struct {
	Failure TurnFailure
	Err     error
}

// Error renders "agent: ACP turn: <failure>: <cause>".
func (e *TurnError) Error() string { return fmt.Sprintf("agent: ACP turn: %s: %v", e.Failure, e.Err) }

// Unwrap returns the cause.
func (e *TurnError) Unwrap() error { return e.Err }

// Prompt sends one session/prompt with t.Text and blocks until the agent ends the turn.
// Meanwhile every session/update is recorded and summarised, permission requests go to
// the decider, and file operations are served in the workspace. The result is returned
// even on error (what was observed before the failure). Errors: a *TurnError.
func (s *ACPSession) Prompt(ctx context.Context, t Turn) (TurnResult, error) {
	s.promptMu.Lock()
	defer s.promptMu.Unlock()
	s.mu.Lock()
	if s.closed || s.broken != nil {
		why := s.broken
		if s.closed {
			why = errors.New("the session is closed")
		}
		s.mu.Unlock()
		return TurnResult{}, &TurnError{Failure: TurnMisuse, Err: why}
	}
	s.turns++
	ts := newTurnState(s.turns, t.RunID, s.env.Now())
	s.cur = ts
	s.mu.Unlock()
	s.log.beginTurn(ts.n)
	id, idErr := s.Identity()
	s.log.note("turn_start", map[string]any{"turn": ts.n, "runId": t.RunID, "pid": id.PID, "startTime": id.StartTime})

	// The request's context ends only at the turn's hard deadline: a Stop is the
	// protocol's session/cancel (Cancel), after which the agent must still answer.
	turnCtx, cancelTurn := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTurn()
	done := make(chan promptAnswer, 1)
	go func() {
		r, err := s.conn.Prompt(turnCtx, acp.PromptRequest{SessionId: acp.SessionId(s.ID), Prompt: []acp.ContentBlock{acp.TextBlock(t.Text)}})
		done <- promptAnswer{r, err}
	}()
	deadline := time.NewTimer(s.d.turnTimeout)
	defer deadline.Stop()
	var a promptAnswer
	var failure TurnFailure
	stuck := false // the agent did not end the turn even after session/cancel
	select {
	case a = <-done:
	case <-ctx.Done():
		// The caller gives up: cancel as a Stop would, then wait the grace.
		var answered bool
		if a, answered = s.cancelAndWait(done, "the caller's context ended: "+context.Cause(ctx).Error()); !answered {
			failure, stuck = TurnTimedOut, true
		}
	case <-deadline.C:
		why := fmt.Sprintf("the turn deadline (%v) passed", s.d.turnTimeout)
		ans, answered := s.cancelAndWait(done, why)
		a = promptAnswer{resp: ans.resp, err: errors.New(why + "; the turn ended after session/cancel")}
		if !answered {
			a.err, stuck = ans.err, true
		}
		failure = TurnTimedOut
	case <-s.conn.Done():
		select {
		case a = <-done:
		case <-time.After(time.Second):
			a = promptAnswer{err: errors.New("the agent closed its ACP stream")}
		}
	}
	res := s.finishTurn(ts, id, idErr, a.resp)
	if failure == "" && a.err != nil {
		failure = TurnAgentError
		if s.proc.exited() || isDisconnect(a.err) {
			failure = TurnAgentGone
		}
	}
	if failure != "" {
		err := a.err
		if err == nil {
			err = errors.New("the turn did not end")
		}
		res.Failure = string(failure) + ": " + err.Error()
		s.mu.Lock()
		if failure == TurnAgentGone || stuck {
			s.broken = fmt.Errorf("turn %d: %s", ts.n, res.Failure)
		}
		s.mu.Unlock()
		s.log.note("turn_end", map[string]any{"turn": ts.n, "failure": res.Failure})
		res.Evidence = s.turnEvidence()
		return res, &TurnError{Failure: failure, Err: err}
	}
	s.log.note("turn_end", map[string]any{"turn": ts.n, "stopReason": res.StopReason, "durationMs": res.DurationMS})
	res.Evidence = s.turnEvidence()
	return res, nil
}

// cancelAndWait sends session/cancel for a turn that must end now (why) and waits the
// cancel grace for the agent's answer.
func (s *ACPSession) cancelAndWait(done <-chan promptAnswer, why string) (promptAnswer, bool) {
	_ = s.cancel(why)
	select {
	case a := <-done:
		return a, true
	case <-time.After(s.d.cancelGrace):
		return promptAnswer{err: fmt.Errorf("%s; session/cancel was sent and the turn did not end within %v", why, s.d.cancelGrace)}, false
	}
}

// promptAnswer is the outcome of one session/prompt request.
type promptAnswer struct {
	resp acp.PromptResponse
	err  error
}

func isDisconnect(err error) bool {
	var re *acp.RequestError
	if errors.As(err, &re) {
		b, _ := json.Marshal(re.Data)
		return strings.Contains(string(b), "peer disconnected")
	}
	return false
}

// Cancel is the native Stop of the running turn: it sends session/cancel, then answers
// every pending permission request "cancelled" (and any that arrives later in the
// turn). The turn's Prompt then returns once the agent ends it, which must be with stop
// reason "cancelled" (TurnResult.CancelHonoured). Errors: no turn is running, or the
// notification could not be sent.
func (s *ACPSession) Cancel(reason string) error {
	return s.cancel(reason)
}

func (s *ACPSession) cancel(reason string) error {
	s.mu.Lock()
	ts := s.cur
	s.mu.Unlock()
	if ts == nil {
		return errors.New("agent: no ACP turn is running")
	}
	ts.mu.Lock()
	running, first := ts.requestCancel(s.env.Now())
	ts.mu.Unlock()
	if !running {
		return errors.New("agent: no ACP turn is running")
	}
	if !first {
		return nil
	}
	s.log.note("cancel", map[string]any{"turn": ts.n, "reason": reason})
	err := s.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: acp.SessionId(s.ID)})
	// After the notification: pending permission requests are answered "cancelled".
	ts.cancelPending()
	return err
}

// Close ends the session: it closes the agent's stdin, waits for the process to exit
// (escalating to SIGTERM and SIGKILL of its process group), kills every descendant
// left, and returns how the process ended (its stderr redacted with the session's
// secrets). Pending permission requests are released.
// It is idempotent.
func (s *ACPSession) Close() ProcessExit {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		exit := s.proc.stop()
		exit.Stderr = []byte(s.log.set().RedactText(string(exit.Stderr)))
		return exit
	}
	s.closed = true
	ts := s.cur
	s.mu.Unlock()
	if ts != nil {
		ts.cancelPending()
	}
	exit := s.proc.stop()
	// The agent's stderr is agent text: it may echo the run token it got in session/new.
	exit.Stderr = []byte(s.log.set().RedactText(string(exit.Stderr)))
	s.log.note("process_exit", exit)
	_ = s.log.close()
	_ = s.root.Close()
	return exit
}

// LogError returns the first error writing the session log, if any (a harness fault).
func (s *ACPSession) LogError() error {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.err
}

func (s *ACPSession) turnEvidence() []Evidence {
	b, cut := s.log.turnEvidence()
	ev := []Evidence{{Name: "acp-turn.jsonl", MediaType: "application/jsonl", Body: b}}
	if cut > 0 {
		ev[0].Name = fmt.Sprintf("acp-turn.jsonl (%d lines over %d bytes not kept)", cut, MaxACPTurnLogBytes)
	}
	return ev
}

// sdkLogHandler records the ACP SDK's own diagnostics (a malformed message, a failed
// notification handler) in the session log, redacted like everything else there.
type sdkLogHandler struct {
	log   *acpLog
	attrs []slog.Attr
}

func (h *sdkLogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *sdkLogHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	for _, a := range h.attrs {
		attrs[a.Key] = clip(a.Value.String(), 2000)
	}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = clip(a.Value.String(), 2000)
		return true
	})
	h.log.note("sdk_log", map[string]any{"level": r.Level.String(), "msg": r.Message, "attrs": attrs})
	return nil
}

func (h *sdkLogHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &sdkLogHandler{log: h.log, attrs: append(append([]slog.Attr(nil), h.attrs...), a...)}
}

func (h *sdkLogHandler) WithGroup(string) slog.Handler { return h }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
)

// Env is what Start needs besides the protocol and its launch:
//
//   - RunID, RunToken: the run that starts the session (the token is redacted from
//     everything the session keeps; a warm session's later runs add theirs with Bind).
//   - Secrets: resolved secret values, redacted in every form (credential forms too).
//   - Permissions, Questions: the human's side (Questions may be nil: every question
//     is then dismissed; Permissions may be nil only for a protocol that never asks).
//   - Log: where the whole session's log goes (JSONL, LogEntry); may be nil (each
//     turn's share is in TurnResult.Log either way). Redact: values to redact besides
//     the run token and the secrets. Now: the clock (default time.Now).
//   - ExtraMarkers: process markers the agent process carries besides the session's own
//     (the attempt's, so that the caller can sweep escaped descendants).
//   - Place: places the process somewhere other than directly on the host (a sandbox
//     lease); nil on the host.
//   - Binding: the run binding file of a session that serves several runs (its MCP
//     server reads the current run from it); Start writes RunID's binding there before
//     the handshake and Bind rewrites it per turn. "" for none.
//   - Bounds: the turn, start and cancel bounds.
type Env struct {
	RunID        string
	RunToken     string
	Secrets      []string
	Permissions  PermissionDecider
	Questions    QuestionDecider
	Log          io.Writer
	Redact       *redact.Set
	Now          func() time.Time
	ExtraMarkers []string
	Place        LaunchFunc
	Binding      string
	Bounds       Bounds
}

// Session is one running agent process with one protocol session: a warm lifecycle
// sends several prompts to it, per_turn one. Prompt calls are serialised (one turn at
// a time); Cancel, Steer and FollowUp may be called from other goroutines while a turn
// runs. Close retires the process; it must always be called.
type Session struct {
	proto Protocol
	env   Env
	proc  *agentProcess
	conn  Conn
	log   *wireLog

	// Index is the session's index among the agent's sessions (1-based).
	Index int
	// Info is what the handshake told about the session (its id, the agent).
	Info Info
	// Path and Args are the agent process's program (absolute) and argv as launched.
	Path string
	Args []string

	promptMu sync.Mutex // one turn at a time

	mu      sync.Mutex
	turns   int
	cur     *turn
	closed  bool
	broken  error // the session cannot serve another turn (why)
	asks    int   // permission requests and questions so far
	outside int   // events, requests and questions that arrived while no turn ran
}

// Start launches the agent planned by l for protocol d and opens its session: it
// creates the session's directories and files, writes the run binding (env.Binding),
// starts the process (explicit environment, its own process group, no shell; through
// env.Place when set) and lets the protocol speak its handshake, all bounded by
// env.Bounds.Start. Errors: a *StartError naming the stage; the process is gone.
func Start(ctx context.Context, d Driver, l Launch, env Env) (*Session, error) {
	proto := d.Protocol()
	fail := func(stage string, err error) (*Session, error) {
		return nil, &StartError{Protocol: proto.Name, Stage: stage, Err: err}
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Questions == nil {
		env.Questions = CancelQuestions
	}
	if err := prepare(l, env); err != nil {
		return fail(StageLaunch, err)
	}
	secrets := env.Redact.WithCredentials(env.RunToken).WithCredentials(env.Secrets...)
	s := &Session{proto: proto, env: env, Index: l.Index, log: newWireLog(env.Log, secrets, env.Now, proto.LogSchema, proto.Classify),
		Path: l.Spec.Path, Args: slices.Clone(l.Spec.Args)}
	if err := s.spawn(l); err != nil {
		return nil, err
	}
	startCtx, cancel := context.WithTimeout(ctx, env.Bounds.Start)
	defer cancel()
	in := &tapWriter{w: s.proc.stdin, tap: &lineTap{maxLine: MaxLineBytes, emit: func(b []byte, n int) { s.log.wire(DirClient, b, n) }}}
	out := &tapReader{r: s.proc.stdout, tap: &lineTap{maxLine: MaxLineBytes, emit: func(b []byte, n int) { s.log.wire(DirAgent, b, n) }}}
	conn, err := d.Open(startCtx, stream{out, in}, s)
	if err != nil {
		var se *StartError
		if !errors.As(err, &se) {
			se = &StartError{Protocol: proto.Name, Stage: "initialize", Err: err}
		}
		se.Protocol = proto.Name
		if conn != nil {
			_ = conn.Close()
		}
		exit := s.Close()
		se.Exit = &exit
		return nil, se
	}
	s.conn, s.Info = conn, conn.Info()
	return s, nil
}

// prepare creates what launch l lists, the run-id file and the run binding.
func prepare(l Launch, env Env) error {
	for _, dir := range append([]string{l.Dir}, l.Dirs...) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(l.Dir, "run-id"), []byte(env.RunID), 0o600); err != nil {
		return err
	}
	for name, body := range l.Files {
		if err := os.WriteFile(name, body, 0o600); err != nil {
			return err
		}
	}
	if env.Binding != "" {
		return WriteRunBinding(env.Binding, env.RunID, env.RunToken)
	}
	return nil
}

// spawn starts l's process (through env.Place when set) and notes its start.
func (s *Session) spawn(l Launch) error {
	spec := l.Spec
	if spec.Marker == "" {
		spec.Marker = worker.NewMarker()
	}
	spec.ExtraMarkers = s.env.ExtraMarkers
	var settle func(ProcessExit) ProcessExit
	if s.env.Place != nil {
		var err error
		if spec, settle, err = s.env.Place(spec); err != nil {
			return &StartError{Protocol: s.proto.Name, Stage: StageLaunch, Err: err}
		}
	}
	proc, err := startProcess(spec, l.CloseGrace)
	if err != nil {
		if settle != nil {
			settle(ProcessExit{NotSpawned: true, Error: "not started: " + err.Error()})
		}
		return &StartError{Protocol: s.proto.Name, Stage: StageSpawn, Err: err}
	}
	proc.settle = settle
	s.proc = proc
	s.log.note("process_start", map[string]any{"pid": proc.identity.PID, "startTime": proc.identity.StartTime,
		"argv0": l.Spec.Path, "args": len(l.Spec.Args) - 1, "session": l.Index})
	return nil
}

// stream is the agent's stdout and stdin as one io.ReadWriter.
type stream struct {
	io.Reader
	io.Writer
}

// Protocol is the session's protocol.
func (s *Session) Protocol() Protocol { return s.proto }

// Bind makes run runID (with its token) the run the session acts for from now on: the
// token joins the values the log redacts and, for a session with a run binding file
// (Env.Binding), the file names the run. An empty runID and token unbind it. Errors:
// the binding file could not be written.
func (s *Session) Bind(runID, token string) error {
	if token != "" {
		s.log.addSecrets(token)
	}
	if s.env.Binding == "" {
		return nil
	}
	return WriteRunBinding(s.env.Binding, runID, token)
}

// Alive reports whether the session can serve another turn: its process has not
// exited, it is not closed and no earlier turn broke it.
func (s *Session) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && s.broken == nil && !s.proc.exited()
}

// Identity is the agent process's identity, read afresh from /proc (it is still
// running: agentproof has not reaped it). Errors: the process is gone.
func (s *Session) Identity() (ProcessIdentity, error) {
	if s.proc.exited() {
		return ProcessIdentity{}, fmt.Errorf("agent: the %s agent process %s has exited", s.proto.Name, s.proc.identity)
	}
	st, err := ProcStartTime(s.proc.identity.PID)
	if err != nil {
		return ProcessIdentity{}, err
	}
	return ProcessIdentity{PID: s.proc.identity.PID, StartTime: st}, nil
}

// Cancel is the native Stop of the running turn: the protocol's cancel is sent, then
// every pending permission request and question is answered "cancelled" (and any that
// arrives later in the turn). The turn's Prompt then returns once the agent ends it,
// which must be with the protocol's cancelled stop reason (TurnResult.CancelHonoured).
// Errors: no turn is running, or the cancel could not be sent.
func (s *Session) Cancel(reason string) error {
	s.mu.Lock()
	t := s.cur
	s.mu.Unlock()
	if t == nil {
		return fmt.Errorf("agent: no %s turn is running", s.proto.Name)
	}
	return s.cancel(t, reason)
}

func (s *Session) cancel(t *turn, reason string) error {
	running, first := t.requestCancel(s.env.Now())
	if !running {
		return fmt.Errorf("agent: no %s turn is running", s.proto.Name)
	}
	if !first {
		return nil
	}
	s.log.note("cancel", map[string]any{"turn": t.n, "reason": reason})
	err := s.conn.Cancel(context.Background())
	// After the protocol's cancel: what is pending is answered "cancelled".
	t.releasePending()
	return err
}

// Close ends the session: what is pending is released, the connection closed, the
// agent's stdin closed, the process given its close grace to exit, then SIGTERM and
// SIGKILL of its process group, every descendant left killed, and the exit returned
// (its stderr redacted with the session's secrets: the agent may echo a token). It is
// idempotent.
func (s *Session) Close() ProcessExit {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	t := s.cur
	s.mu.Unlock()
	if t != nil {
		t.releasePending()
	}
	if first && s.conn != nil {
		_ = s.conn.Close()
	}
	exit := s.proc.stop()
	exit.Stderr = []byte(s.log.set().RedactText(string(exit.Stderr)))
	if first {
		s.log.note("process_exit", exit)
		_ = s.log.close()
	}
	return exit
}

// EventsOutsideTurns counts the events, permission requests and questions the agent
// sent while no turn was running.
func (s *Session) EventsOutsideTurns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outside
}

// LogError returns the first error writing the session log, if any (a harness fault).
func (s *Session) LogError() error {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.err
}

// Package session is the one session layer of the protocol-driven runners (ACP agents,
// Pi in its RPC mode, Codex through its app-server): a long-lived agent process that
// serves one prompt turn after another over a protocol on its stdin and stdout. In the
// spirit of database/sql/driver, a protocol implements Driver and Conn — the wire — and
// the layer does everything else once for all of them (docs/ARCHITECTURE.md "The
// session layer"):
//
//   - the process: explicit environment, its own process group, bounded life and
//     output, the close-grace, SIGTERM, SIGKILL teardown, descendants and escaped
//     processes killed (process.go);
//   - the evidence: every line of the stream both ways and the layer's notes, redacted,
//     bounded, per session and per turn (log.go);
//   - the turn: its record (TurnResult), its deadline, the native cancel (Stop) with the
//     cancel grace, the failure classes (agent_error, agent_gone, timed_out, misuse)
//     and when a session is broken (session.go, turn.go);
//   - the human's side: every permission request and native question the protocol
//     reports goes to the session's deciders with a sequence number, timestamps, the
//     cancel of whatever is pending at Stop, and a record (ask.go);
//   - optional capabilities a protocol may have (steering, follow-ups), checked by
//     interface assertion (deliver.go);
//   - the warm binding: a session that serves several runs rebinds its MCP server's run
//     (binding.go) and its log's secrets at every turn.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentproof/agentproof/worker"
)

// Protocol describes a protocol to the layer: its name in messages ("ACP", "Pi"), the
// schema of its log lines and the reader of a wire line's envelope (Classify, which
// must never fail on untrusted bytes), the base name of a turn's evidence files
// (Evidence: "acp-turn" makes acp-turn.jsonl and acp-turn.json), the stop reason of a
// turn the agent ended by itself (Completed), the stop reason that honours a cancel
// (Cancelled), and how a cancel is named in a violation (CancelName: "session/cancel",
// "the abort").
type Protocol struct {
	Name       string
	LogSchema  string
	Classify   func(line []byte) WireLine
	Evidence   string
	Completed  string
	Cancelled  string
	CancelName string
}

// Driver is one protocol's side of a session's start: Open speaks the handshake over
// the started process's streams and returns the connection. The layer has started the
// process; rw.Read reads the agent's stdout and rw.Write writes its stdin, both logged
// line by line. h is the layer's side, for the connection's whole life. ctx bounds the
// handshake only. Errors: the handshake failed (a *StartError naming the stage is kept
// as it is; any other error is a start error of stage "initialize").
type Driver interface {
	Protocol() Protocol
	Open(ctx context.Context, rw io.ReadWriter, h Host) (Conn, error)
}

// Conn is one open protocol session.
//
//   - Info is what the handshake told: the session's id, the agent's name, version and
//     capabilities.
//   - Prompt sends one turn and blocks until the protocol's terminal event of the turn,
//     ctx's end (the layer's hard limit, after the cancel grace) or the stream's end.
//     What the turn carries (messages, tool calls, usage, the stop reason, the terminal
//     event itself: Recorder.Stop, Recorder.End) goes to the Host while Prompt runs.
//     Errors: the agent refused the prompt or ended the turn with an error (the
//     candidate's), or, wrapping ErrGone, the agent's stream ended.
//   - Cancel sends the protocol's native cancel of the running turn (Stop); the layer
//     then releases what is pending.
//   - Done is closed when the agent's stream ended.
//   - Close releases what the connection holds (not the process, which the layer
//     retires).
type Conn interface {
	Info() Info
	Prompt(ctx context.Context, t Turn) error
	Cancel(ctx context.Context) error
	Done() <-chan struct{}
	Close() error
}

// Steerer is a Conn that can deliver a message into the running turn (before the
// model's next request); FollowUpper one that can queue a message delivered when the
// agent would otherwise stop, in the same turn. Each returns once the agent accepted
// the message; errors: the agent refused it or did not answer.
type (
	Steerer interface {
		Steer(ctx context.Context, text string) error
	}
	FollowUpper interface {
		FollowUp(ctx context.Context, text string) error
	}
)

// ErrGone is what a Conn's error wraps when the agent's stream ended (it exited or
// closed its stdout).
var ErrGone = errors.New("the agent's stream ended")

// Info is what a session's handshake told about it: the protocol's session id, the
// agent's name, title and version, the protocol version, its capabilities (raw JSON)
// and authentication methods, and the model it said it uses.
type Info struct {
	SessionID       string          `json:"sessionId"`
	Name            string          `json:"name,omitempty"`
	Title           string          `json:"title,omitempty"`
	Version         string          `json:"version,omitempty"`
	ProtocolVersion int             `json:"protocolVersion,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`
	AuthMethods     []string        `json:"authMethods,omitempty"`
	Model           string          `json:"model,omitempty"`
}

// Turn is one prompt: the run it belongs to (RunID; RunToken, for a protocol that
// tells the agent its run with the prompt, and to redact from then on) and the text.
type Turn struct {
	RunID    string
	RunToken string
	Text     string
}

// Launch is one session's process as its driver planned it: the agent's own spec
// (explicit environment, working directory, Timeout: the session's whole life,
// MaxOutputBytes: its stdout; a Marker, made when empty), the session's index among the
// agent's sessions, its directory (created 0700 with the run-id file of the run that
// started it), the directories and files to create first (0700, 0600), and how long the
// process gets to exit after its stdin closes (CloseGrace, or CloseGraceIgnoringEOF).
type Launch struct {
	Spec       worker.Spec
	Index      int
	Dir        string
	Dirs       []string
	Files      map[string][]byte
	CloseGrace time.Duration
}

// LaunchFunc turns the agent's own process spec into the spec agentproof starts in its
// place (for a sandbox lease: bubblewrap, started through the spec's Fork, Credential
// and Stop, which keeps the agent's stdin, stdout and stderr and the spec's Timeout
// and MaxOutputBytes) and returns settle,
// which is called exactly once after that process ended (or failed to spawn) with its
// exit as the host saw it and returns the agent's own exit (the sandbox init's
// report). Errors: the launch was refused (naming why); nothing was started.
type LaunchFunc func(spec worker.Spec) (started worker.Spec, settle func(ProcessExit) ProcessExit, err error)

// Bounds are a session's time bounds: one turn (at its deadline the layer cancels and,
// when the turn still does not end within CancelGrace, gives up on the session) and
// the start (process and handshake).
type Bounds struct {
	Turn        time.Duration
	Start       time.Duration
	CancelGrace time.Duration
}

// StartError is a session that could not start, with what was observed of the process
// (Exit is nil when no process was started). Stage is "launch", "spawn" or the
// handshake's step the protocol names ("initialize", "session/new", "get_state", …).
type StartError struct {
	Protocol string
	Stage    string
	Err      error
	Exit     *ProcessExit
}

// Stages of a start that are the harness's: nothing of the agent ran.
const (
	StageLaunch = "launch"
	StageSpawn  = "spawn"
)

// Error renders "agent: <protocol> session: <stage>: <cause> (<exit summary>; stderr: …)".
func (e *StartError) Error() string {
	msg := fmt.Sprintf("agent: %s session: %s: %v", e.Protocol, e.Stage, e.Err)
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

// Started reports whether the agent's process ran (a failure after the spawn: the
// agent broke off the handshake).
func (e *StartError) Started() bool { return e.Stage != StageLaunch && e.Stage != StageSpawn }

// TurnFailure classifies a turn that did not end with a stop reason.
type TurnFailure string

// Turn failures. The agent's faults: it refused the prompt or ended the turn with an
// error (agent_error), it went away (exited, closed its stream, exceeded its output),
// or it did not end the turn in time (timed_out: the turn deadline passed, the cancel
// was sent and the turn still did not end within the cancel grace, or ended only
// after it). Misuse is the caller's (harness) fault: a closed or broken session.
const (
	TurnAgentError TurnFailure = "agent_error"
	TurnAgentGone  TurnFailure = "agent_gone"
	TurnTimedOut   TurnFailure = "timed_out"
	TurnMisuse     TurnFailure = "misuse"
)

// TurnError is a turn that did not end with a stop reason.
type TurnError struct {
	Protocol string
	Failure  TurnFailure
	Err      error
}

// Error renders "agent: <protocol> turn: <failure>: <cause>".
func (e *TurnError) Error() string {
	return fmt.Sprintf("agent: %s turn: %s: %v", e.Protocol, e.Failure, e.Err)
}

// Unwrap returns the cause.
func (e *TurnError) Unwrap() error { return e.Err }

package api

import (
	"encoding/json"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/controlplane"
)

// HeartbeatRunSchema tags a HeartbeatRun.
const HeartbeatRunSchema = "agentproof.heartbeat-run/v1"

// HeartbeatState is HeartbeatRun.State: what the heartbeat runner did with a wake.
type HeartbeatState string

// Heartbeat run states (HeartbeatRun.State).
const (
	// RunOpening: the runner is opening the run (checkout) for the wake.
	RunOpening HeartbeatState = "opening"
	// RunLaunching: the run is open and its agent process is being started or runs.
	RunLaunching HeartbeatState = "launching"
	// RunFinished: the process ended (or never started) and the run is terminal.
	RunFinished HeartbeatState = "finished"
	// RunNotOpened: the checkout was refused; Reason says why. No process was started.
	RunNotOpened HeartbeatState = "not_opened"
	// RunOrphaned: the server stopped while the run's process was (possibly) running;
	// after the restart the run was completed as interrupted (its home saved when it
	// had been materialised), never relaunched; Retry starts a new run bound to it.
	RunOrphaned HeartbeatState = "orphaned"
)

// HeartbeatRun is the heartbeat runner's durable record of one run (board route
// GET /api/heartbeat-runs/{runId}): which wake it carried, the agent's driver, the
// process's termination, bounded output evidence, wall-clock times (RFC 3339 UTC, ms),
// the usage the driver reported (null: unavailable, never zero) and the Stop intent.
// Status is the run's status in the control plane when the record was last written
// (running, succeeded, failed, cancelled, budget_stopped; "" before the run exists).
// The run token and secret values are never part of it. ACP is the prompt turn of an
// acp:<agent> run, Pi the prompt turn of an rpc:pi run (nil for every other driver;
// SessionTurn returns whichever is set).
type HeartbeatRun struct {
	Schema           string                  `json:"schema"`
	RunID            string                  `json:"runId"`
	CompanyID        string                  `json:"companyId"`
	ActorID          string                  `json:"actorId"`
	TaskID           string                  `json:"taskId"`
	WakeID           string                  `json:"wakeId"`
	WakeReason       controlplane.WakeReason `json:"wakeReason"`
	Driver           driver.Name             `json:"driver"`
	State            HeartbeatState          `json:"state"`
	Status           controlplane.RunStatus  `json:"status"`
	Reason           string                  `json:"reason,omitempty"`
	Workspace        string                  `json:"workspace,omitempty"`
	WakeObservedAt   string                  `json:"wakeObservedAt"`
	OpenedAt         string                  `json:"openedAt,omitempty"`
	ProcessStartedAt string                  `json:"processStartedAt,omitempty"`
	ProcessEndedAt   string                  `json:"processEndedAt,omitempty"`
	FinishedAt       string                  `json:"finishedAt,omitempty"`
	Launch           *LaunchFacts            `json:"launch,omitempty"`
	Termination      *Termination            `json:"termination,omitempty"`
	Usage            json.RawMessage         `json:"usage"`
	Evidence         []EvidenceRef           `json:"evidence"`
	Cancellation     *CancelIntent           `json:"cancellation,omitempty"`
	ACP              *SessionTurn            `json:"acp,omitempty"`
	// WorkspaceWatch is what the workspace watcher observed while the run's agent
	// could act (a session driver's run: from before its prompt until its process
	// exited, or until its turn ended in a warm session); nil when no watcher ran.
	WorkspaceWatch *WorkspaceWatch `json:"workspaceWatch,omitempty"`
	// Pi is the Pi turn of an rpc:pi run (docs/pi.md).
	Pi *SessionTurn `json:"pi,omitempty"`
	// App is the turn of an app:<agent> run (Codex's app-server, docs/clis.md).
	App *SessionTurn `json:"app,omitempty"`
	// AgentHome is the run's AGENT_HOME directory (absent for a fixture program);
	// HomeReceiptID the control plane's receipt of its save at the end of the run, and
	// HomeSaveError why the save failed.
	AgentHome     string `json:"agentHome,omitempty"`
	HomeReceiptID string `json:"homeReceiptId,omitempty"`
	HomeSaveError string `json:"homeSaveError,omitempty"`
	// IdempotentStops are the Stop requests with an Idempotency-Key the run received:
	// the key, the SHA-256 of the request body and the response it got, which a replay
	// with the same key answers again (written in the same atomic record write as the
	// intent they reserved or joined).
	IdempotentStops []IdempotentStop `json:"idempotentStops,omitempty"`
}

// IdempotentStop is one keyed Stop request of a run and its stored response.
type IdempotentStop struct {
	Key           string            `json:"key"`
	RequestSHA256 string            `json:"requestSha256"`
	Response      CancelRunResponse `json:"response"`
}

// Termination is how an agent process ended (worker.Outcome, summarised): Summary is
// one line; DurationMs is the process's wall time in ms; ExitCode is nil unless it
// exited normally; Signal names the killing signal; SignalsSent lists the escalation.
type Termination struct {
	Summary        string   `json:"summary"`
	Started        bool     `json:"started"`
	PID            int      `json:"pid,omitempty"`
	ExitCode       *int     `json:"exitCode"`
	Signal         string   `json:"signal,omitempty"`
	TimedOut       bool     `json:"timedOut"`
	OutputExceeded bool     `json:"outputExceeded"`
	Aborted        bool     `json:"aborted"`
	SignalsSent    []string `json:"signalsSent"`
	DurationMs     int64    `json:"durationMs"`
	OutputBytes    int64    `json:"outputBytes"`
	CollectorError string   `json:"collectorError,omitempty"`
	// LeftOpen: the agent exited 0 leaving its run open, so the runner completed the run
	// as failed (an exec agent must complete its own run: docs/agent-protocol.md);
	// Summary then starts with what it should have called.
	LeftOpen bool `json:"leftOpen,omitempty"`
	// SecretsRedacted counts the pieces of the agent's output (the termination summary,
	// stdout, stderr) in which the runner found and redacted an exact secret value of
	// the run (its resolved secrets or its run token): the agent printed a secret.
	SecretsRedacted int `json:"secretsRedacted,omitempty"`
	// EventStreamComplete is set for an agent that reports through a JSON event stream
	// (the real CLIs): whether the stream carried its terminal event (Codex
	// turn.completed or turn.failed, Claude Code result, OpenCode step_finish with a
	// finish reason). false: the agent did not finish cleanly, whatever its exit code.
	// Absent for agents without an event stream.
	EventStreamComplete *bool `json:"eventStreamComplete,omitempty"`
	// StoppedAfterResult: the agent emitted its terminal event but did not exit within
	// its result grace (driverConfig resultGraceMs, default 5 s) and was stopped
	// (SignalsSent); the run was graded on that result.
	StoppedAfterResult bool `json:"stoppedAfterResult,omitempty"`
	// EscapedProcesses are the agent's descendants that had left its process group and
	// were still alive when it ended, found by the run's process marker and killed at
	// teardown. Any entry means the agent's cleanup failed.
	EscapedProcesses []EscapedProcess `json:"escapedProcesses,omitempty"`
	// Limits are the resource limits of the run's environment lease the host observed
	// the agent hit (a sandbox's OOM kill, refused forks, a full disk), each naming its
	// limit; the agent exceeded its pinned shape (docs/environments.md "Resource
	// shape"). Absent for local runs.
	Limits []LimitHit `json:"limits,omitempty"`
	// EnvironmentProblems are what the environment provider could not observe about
	// the launch (no exit report from the sandbox's init, unreadable counters): the
	// account of the run is incomplete.
	EnvironmentProblems []string `json:"environmentProblems,omitempty"`
	// Environment holds the provider's facts of the launch ("provider": "sandbox",
	// "lease", "bwrap" version, "uid", "agentPid", "connections.<endpoint>").
	Environment map[string]string `json:"environment,omitempty"`
}

// LimitHit is one pinned resource limit a run was observed to hit
// (environment.LimitHit): Resource is memory, pids or disk; Limit the pinned value
// (bytes for memory and disk, a count for pids); Events how often the host counted it;
// Detail the sentence naming the limit ("memory limit 268435456 bytes: 1 OOM kill(s)").
type LimitHit struct {
	Resource string `json:"resource"`
	Limit    int64  `json:"limit"`
	Events   int64  `json:"events"`
	Detail   string `json:"detail"`
}

// EscapedProcess is one escaped descendant of an agent process: its PID (in the
// server's PID namespace), Command (the process's name as /proc/<pid>/comm gives it, at
// most 15 bytes, redacted; never its arguments or environment) and Killed (SIGKILL was
// delivered and its exit confirmed).
type EscapedProcess struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Killed  bool   `json:"killed"`
}

// EvidenceRef is one stored piece of run evidence: the file (relative to the run's
// record directory), its media type, size in bytes and SHA-256 (hex) of the stored,
// redacted bytes.
type EvidenceRef struct {
	Name      string `json:"name"`
	MediaType string `json:"mediaType"`
	Bytes     int64  `json:"bytes"`
	SHA256    string `json:"sha256"`
}

// CancelIntent is a reserved Stop of a run (the correlated Stop of a native run):
// IntentID is "native-cancellation:<uuid>"; RequestID the caller's
// cancellationRequestId (Correlated) or a UUID the server drew for a Stop without one;
// Actor the board actor ("local-board" for the instance board token).
type CancelIntent struct {
	IntentID    string `json:"intentId"`
	RequestID   string `json:"requestId"`
	Correlated  bool   `json:"correlated"`
	Actor       string `json:"actor"`
	RequestedAt string `json:"requestedAt"`
}

// CancelRunRequest is the body of POST /api/heartbeat-runs/{runId}/cancel (optional:
// an empty body is a Stop without a cancellationRequestId).
type CancelRunRequest struct {
	CancellationRequestID string `json:"cancellationRequestId,omitempty"`
}

// SteerRunRequest is the body of POST /api/heartbeat-runs/{runId}/steer (the Steer
// button of a running Pi turn): Body is the human's message, posted as a
// comment on the run's task and delivered to the running turn as a steering message
// (Pi's steer: the same turn, before the model's next request). A comment posted
// without it while a Pi turn runs is a queued follow-up (Pi's follow_up).
type SteerRunRequest struct {
	Body string `json:"body"`
}

// SteerRunResponse answers a Steer: the run, the comment posted on its task and that
// the agent accepted the message into its running turn (always true: a refusal is an
// error, 409 run_not_steerable, and the comment then stays a follow-up).
type SteerRunResponse struct {
	RunID     string `json:"runId"`
	CommentID string `json:"commentId"`
	Accepted  bool   `json:"accepted"`
}

// CancelRunResponse answers a Stop: the run, the intent it reserved (Disposition
// "reserved", HTTP 202) or joined ("joined", HTTP 200) and the run's status in the
// control plane at the time of the answer (the process may still be stopping).
type CancelRunResponse struct {
	RunID       string                 `json:"runId"`
	Disposition CancelDisposition      `json:"disposition"`
	Intent      CancelIntent           `json:"intent"`
	Status      controlplane.RunStatus `json:"status"`
}

// CancelDisposition is CancelRunResponse.Disposition.
type CancelDisposition string

// Stop dispositions.
const (
	// CancelReserved: this Stop reserved the run's intent (HTTP 202).
	CancelReserved CancelDisposition = "reserved"
	// CancelJoined: this Stop joined the intent an earlier one reserved (HTTP 200).
	CancelJoined CancelDisposition = "joined"
)

// HeartbeatRunList lists a company's heartbeat runs in the order their wakes were taken.
type HeartbeatRunList struct {
	Runs []HeartbeatRun `json:"runs"`
}

// Changes is the answer of the board route GET /api/changes?after=N&waitMs=M: Seq is
// the instance's change sequence number, which grows by at least one with every board
// or agent write and every heartbeat run record update (in any company). It is a hint
// to look again, never a state: a caller reads Seq first (after=0, waitMs=0), then
// reads the state, then waits with after=Seq; the wait ends as soon as something
// changed after its look, or after waitMs (at most MaxChangesWaitMs) when nothing did.
type Changes struct {
	Seq uint64 `json:"seq"`
}

// MaxChangesWaitMs bounds the waitMs of GET /api/changes, in milliseconds.
const MaxChangesWaitMs = 5000

// WorkspaceWatch is a run's workspace watch (package workspace/watch; docs/acp.md
// "Observing nothing happened"): whether it is complete (no kernel queue overflow, no
// event dropped, every directory watched), the first MaxWatchEvents mutations (op:
// create, write, close_write, move_from, move_to, delete; the workspace-relative path,
// redacted; whether it is a directory), how many more there were (the run's
// workspace-watch.json evidence lists them) and the watch's problems.
type WorkspaceWatch struct {
	Complete bool             `json:"complete"`
	Events   []WorkspaceEvent `json:"events"`
	More     int              `json:"more,omitempty"`
	Problems []string         `json:"problems,omitempty"`
}

// MaxWatchEvents bounds WorkspaceWatch.Events in a run's record.
const MaxWatchEvents = 200

// WorkspaceEvent is one observed workspace mutation: its op, path, whether a directory,
// and when the watcher saw it (RFC 3339 UTC, µs).
type WorkspaceEvent struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	Dir  bool   `json:"dir,omitempty"`
	At   string `json:"at,omitempty"`
}

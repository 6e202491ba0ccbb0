package evidence

// Metadata describes one evidence record. It is hashed in its RFC 8785 canonical form
// (canonjson.Sorted), so field order in Go does not matter, but every field is part of
// the record's identity.
//
//   - Pins and Check: the caller's, stored verbatim.
//   - CollectedAt: when the collector finished, RFC 3339 UTC with millisecond precision
//     (e.g. "2026-11-30T03:40:00.123Z"). Two records with identical metadata and body,
//     including a CollectedAt in the same millisecond, are one record.
//   - Observation: what the collector saw of the process (never a verdict).
type Metadata struct {
	Pins        Pins               `json:"pins"`
	Check       string             `json:"check"`
	CollectedAt string             `json:"collectedAt"`
	Observation ProcessObservation `json:"observation"`
}

// ProcessObservation is what a collector saw of one child process, including why its
// observation is incomplete. It records, never judges:
//
//   - Program: the fixture name (or program label) that ran.
//   - ProcessEnd: how it ended.
//   - CollectorError: nil when the collector saw a clean, complete run; otherwise why the
//     observation is incomplete (at most 1024 characters). A timeout, output overflow,
//     abort, lost contact or unconfirmed exit always sets TimedOut or CollectorError, so
//     that such a run is never read as a clean exit.
//   - Workspace: WorkspaceRemoved or WorkspaceQuarantined; WorkspaceReason says why it
//     was quarantined.
type ProcessObservation struct {
	Program string `json:"program"`
	ProcessEnd
	MaxOutputBytes  int64          `json:"maxOutputBytes"`
	CollectorError  *string        `json:"collectorError"`
	Workspace       WorkspaceState `json:"workspace"`
	WorkspaceReason string         `json:"workspaceReason,omitempty"`
}

// ProcessEnd is how one child process ended, as its collector saw it:
//
//   - ExitCode: nil when no exit was observed; never defaults to 0.
//   - Signal: the terminating signal name ("SIGKILL"), nil when it exited normally.
//   - Exited: the process was confirmed gone (reaped). StdioClosed: its stdout and
//     stderr reached end-of-file within the close grace.
//   - TimedOut, OutputExceeded, Aborted: which bound or request stopped it.
//   - SignalsSent: signals the collector sent to the process group, in order.
//   - DurationMs: spawn to settle, milliseconds. OutputBytes: every byte received;
//     CapturedBytes: bytes kept (never more than the budget).
type ProcessEnd struct {
	ExitCode       *int     `json:"exitCode"`
	Signal         *string  `json:"signal"`
	Exited         bool     `json:"exited"`
	StdioClosed    bool     `json:"stdioClosed"`
	TimedOut       bool     `json:"timedOut"`
	OutputExceeded bool     `json:"outputExceeded"`
	Aborted        bool     `json:"aborted"`
	SignalsSent    []string `json:"signalsSent"`
	DurationMs     int64    `json:"durationMs"`
	OutputBytes    int64    `json:"outputBytes"`
	CapturedBytes  int64    `json:"capturedBytes"`
}

// WorkspaceState is what became of a run's working directory
// (ProcessObservation.Workspace). Its JSON form is the plain string.
type WorkspaceState string

// Workspace dispositions recorded in ProcessObservation.Workspace.
const (
	// WorkspaceRemoved: the empty directory was removed after a confirmed exit.
	WorkspaceRemoved WorkspaceState = "removed"
	// WorkspaceQuarantined: the directory was kept exactly as it was, with a reason.
	WorkspaceQuarantined WorkspaceState = "quarantined"
)

// MaxCollectorErrorLength is the longest CollectorError text in characters.
const MaxCollectorErrorLength = 1024

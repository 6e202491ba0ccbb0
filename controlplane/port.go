package controlplane

import (
	"context"
	"encoding/json"
)

// Port is the control-plane port (docs/control-plane.md). Memory implements it in memory; the
// durable store and the HTTP client implement it too, and package conformance checks
// any implementation. Every method returns errors whose chain carries an *Error with
// the state machine's code (see CodeOf); implementations add transport errors of their
// own (context cancellation, I/O) that carry no code.
type Port interface {
	// Start sets the lifecycle to running; mock_already_running when it already is.
	Start(ctx context.Context) error
	// Stop sets the lifecycle to stopped and clears the active run. It is idempotent.
	Stop(ctx context.Context) error
	// OpenRun opens (atomically checks out) a run and discards its context.
	OpenRun(ctx context.Context, in OpenInput) error
	// OpenFixtureRun opens (atomically checks out) a run and returns its context.
	OpenFixtureRun(ctx context.Context, in OpenInput) (RunContext, error)
	// Context returns a run's context; run_missing when the run is unknown.
	Context(ctx context.Context, runID string) (RunContext, error)
	// AppendEvent appends a PRP event (has sourceEventId) or a native run event.
	AppendEvent(ctx context.Context, event json.RawMessage) (Receipt, error)
	// ReplayEvents replays PRP events after an exclusive cursor.
	ReplayEvents(ctx context.Context, q ReplayQuery) (Replay, error)
	// ApplyCommand applies a semantic command with idempotency.
	ApplyCommand(ctx context.Context, env CommandEnvelope) (CommandResult, error)
	// TryApplyCommand is ApplyCommand with state-machine errors folded into the outcome;
	// only errors without a code (transport) are returned as error.
	TryApplyCommand(ctx context.Context, env CommandEnvelope) (CommandOutcome, error)
	// LoadSessionCheckpoint returns the active run's opaque checkpoint (nil when none).
	LoadSessionCheckpoint(ctx context.Context) (json.RawMessage, error)
	// CheckpointSession stores an opaque checkpoint on the active, writable run.
	CheckpointSession(ctx context.Context, snapshot json.RawMessage) error
	// CompleteRun reconciles a run's terminal disposition: input is a NativeRunResult
	// (has runId) or a CompleteInput (acts on the active run).
	CompleteRun(ctx context.Context, input json.RawMessage) error
	// Snapshot returns a deep copy of the whole state.
	Snapshot(ctx context.Context) (State, error)
	// DecisionRecords returns a copy of the decision records, oldest first.
	DecisionRecords(ctx context.Context) ([]Decision, error)
	// Serialize returns the state as sorted-key canonical JSON (tag StateSchema).
	Serialize(ctx context.Context) ([]byte, error)
}

// Board is the board side of one company's control plane beyond the port: board
// operations (with idempotency keys) and content-addressed blobs (files.go). Memory,
// the durable store's Company and the HTTP client's Company implement it, and package
// conformance checks it with the Port.
type Board interface {
	// ApplyBoard applies one board operation (BoardOp).
	ApplyBoard(ctx context.Context, op BoardOp) (BoardResult, error)
	// PutBlob stores bytes and returns their reference.
	PutBlob(ctx context.Context, in BlobPut) (BlobRef, error)
	// Blob returns the bytes stored under a SHA-256 (blob_missing when none).
	Blob(ctx context.Context, sha256 string) ([]byte, error)
}

var _ Board = (*Memory)(nil)

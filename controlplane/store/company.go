package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentproof/agentproof/controlplane"
)

// Journal operation names (the op column): each replays one state-changing call.
const (
	opStart      = "start"
	opStop       = "stop"
	opOpenRun    = "open_run"
	opAppend     = "append_event"
	opCommand    = "apply_command"
	opCheckpoint = "checkpoint_session"
	opComplete   = "complete_run"
	opBoard      = "board"
	opPutBlob    = "put_blob"
	opSaveHome   = "save_home"
)

// Company is one durable company: a controlplane.Memory whose state-changing calls are
// journaled and committed before they return. It implements controlplane.Port and the
// board operations; reads go straight to the Memory, so a read may see a write whose
// group commit is still in flight (never one that failed: once a commit fails the
// company refuses every further call, reads included, with a retryable
// store_unavailable error — its memory may be ahead of the disk; reopening the
// instance reloads it from the journal).
type Company struct {
	inst *Instance
	id   string

	mu           sync.Mutex // orders memory application and journal order
	mem          *controlplane.Memory
	seq          int64
	lastSnapshot int64
	// lastSnapshotSize is the size in bytes of the last snapshot (see SnapshotEvery).
	lastSnapshotSize int
	broken           error
}

var (
	_ controlplane.Port  = (*Company)(nil)
	_ controlplane.Board = (*Company)(nil)
)

// ID returns the company's instance id.
func (c *Company) ID() string { return c.id }

// Version is the company's journal sequence number. Every operation that can change
// the state (accepted or denied: a denial records a decision) is journaled and raises
// it, so two reads of the state with the same Version between them see the same state.
func (c *Company) Version() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

func (c *Company) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken == nil {
		c.broken = err
	}
}

// readable fails once a commit has failed.
func (c *Company) readable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return unavailable(c.broken)
	}
	return nil
}

func unavailable(err error) error {
	return fmt.Errorf("%w (%v)", &controlplane.Error{Code: controlplane.CodeStoreUnavailable, Message: "the company's journal could not be committed", Retryable: true}, err)
}

// do applies one state-changing call under the company lock, queues its journal entry
// in the same order and waits for the commit. apply's error is the call's result; it
// is journaled whatever it is (denials change the state too) unless it carries no
// state-machine code, which means the Memory was not reached.
func (c *Company) do(ctx context.Context, op string, input any, apply func() error) error {
	return c.doBlob(ctx, op, input, "", nil, apply)
}

// doBlob is do for an operation that stores bytes: when apply succeeds, content is
// written to the blobs table under sha in the journal entry's transaction, so that no
// committed entry refers to bytes that are not. Bytes the Memory took in itself
// (inline register_deliverable content) are written the same way.
func (c *Company) doBlob(ctx context.Context, op string, input any, sha string, content []byte, apply func() error) error {
	data, err := json.Marshal(input)
	if err != nil {
		return fmt.Errorf("store: encoding %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.broken != nil {
		c.mu.Unlock()
		return unavailable(c.broken)
	}
	callErr := apply()
	if callErr != nil && controlplane.CodeOf(callErr) == "" {
		c.mu.Unlock()
		return callErr
	}
	blobs := c.mem.TakeContents()
	if content != nil && callErr == nil {
		if blobs == nil {
			blobs = map[string][]byte{}
		}
		blobs[sha] = content
	}
	c.seq++
	seq := c.seq
	ack := make(chan error, 1)
	if err := c.inst.enqueue(pending{kind: "journal", company: c.id, seq: seq, op: op, data: data, blobs: blobs, ack: ack}); err != nil {
		c.broken = err
		c.mu.Unlock()
		return unavailable(err)
	}
	var snapAck chan error
	if seq-c.lastSnapshot >= max(SnapshotEvery, int64(c.lastSnapshotSize/SnapshotBytesPerEntry)) {
		state, err := c.mem.SnapshotJSON(context.Background())
		if err == nil {
			snapAck = make(chan error, 1)
			if c.inst.enqueue(pending{kind: "snapshot", company: c.id, seq: seq, data: state, ack: snapAck}) == nil {
				c.lastSnapshot = seq
				c.lastSnapshotSize = len(state)
			} else {
				snapAck = nil
			}
		}
	}
	c.mu.Unlock()
	if err := <-ack; err != nil {
		c.fail(err)
		return unavailable(err)
	}
	if snapAck != nil {
		if err := <-snapAck; err != nil {
			c.fail(err)
		}
	}
	return callErr
}

// applyEntry replays one journal entry on m; the call's own state-machine error is the
// recorded outcome, not a replay failure.
func applyEntry(ctx context.Context, m *controlplane.Memory, op string, input []byte) error {
	var err error
	switch op {
	case opStart:
		err = m.Start(ctx)
	case opStop:
		err = m.Stop(ctx)
	case opOpenRun:
		var in controlplane.OpenInput
		if err := json.Unmarshal(input, &in); err != nil {
			return err
		}
		err = m.OpenRun(ctx, in)
	case opAppend:
		arg, derr := decodeRawArg(input)
		if derr != nil {
			return derr
		}
		_, err = m.AppendEvent(ctx, arg)
	case opCommand:
		var a struct {
			RunID            string          `json:"runId"`
			IdempotencyKey   string          `json:"idempotencyKey"`
			ExpectedRevision *int64          `json:"expectedRevision"`
			Command          json.RawMessage `json:"command"`
		}
		if err := json.Unmarshal(input, &a); err != nil {
			return err
		}
		cmd, derr := decodeRawArg(a.Command)
		if derr != nil {
			return derr
		}
		_, err = m.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: a.RunID, IdempotencyKey: a.IdempotencyKey, ExpectedRevision: a.ExpectedRevision, Command: cmd})
	case opCheckpoint, opComplete:
		arg, derr := decodeRawArg(input)
		if derr != nil {
			return derr
		}
		if op == opCheckpoint {
			err = m.CheckpointSession(ctx, arg)
		} else {
			err = m.CompleteRun(ctx, arg)
		}
	case opBoard:
		var b struct {
			Kind           controlplane.BoardKind `json:"kind"`
			Input          json.RawMessage        `json:"input"`
			IdempotencyKey string                 `json:"idempotencyKey"`
		}
		if err := json.Unmarshal(input, &b); err != nil {
			return err
		}
		arg, derr := decodeRawArg(b.Input)
		if derr != nil {
			return derr
		}
		_, err = m.ApplyBoard(ctx, controlplane.BoardOp{Kind: b.Kind, Input: arg, IdempotencyKey: b.IdempotencyKey})
	case opPutBlob:
		var in controlplane.BlobRecord
		if err := json.Unmarshal(input, &in); err != nil {
			return err
		}
		_, err = m.RecordBlob(ctx, in)
	case opSaveHome:
		var in controlplane.HomeSave
		if err := json.Unmarshal(input, &in); err != nil {
			return err
		}
		_, err = m.SaveHome(ctx, in)
	default:
		return fmt.Errorf("unknown journal operation %q", op)
	}
	if err != nil && controlplane.CodeOf(err) == "" {
		return err
	}
	return nil
}

// doRaw journals a raw JSON argument (see rawArg: invalid JSON is kept as a string and
// replayed as its bytes, so that its rejection replays too).
func (c *Company) doRaw(ctx context.Context, op string, arg json.RawMessage, apply func() error) error {
	return c.do(ctx, op, newRawArg(arg), apply)
}

// readValue is a read of the company's state: get's answer, or store_unavailable once
// a commit has failed.
func readValue[T any](c *Company, get func() (T, error)) (T, error) {
	if err := c.readable(); err != nil {
		var zero T
		return zero, err
	}
	return get()
}

// doValue is do for an operation whose apply also returns a value: apply's value and
// do's error.
func doValue[T any](ctx context.Context, c *Company, op string, input any, apply func() (T, error)) (T, error) {
	var out T
	err := c.do(ctx, op, input, func() error {
		var err error
		out, err = apply()
		return err
	})
	return out, err
}

// rawArg is a raw argument in the journal: {"v": <json>} when valid, {"s": "<bytes>"}
// otherwise.
type rawArg struct {
	valid bool
	bytes []byte
}

// newRawArg is b as a raw argument.
func newRawArg(b []byte) rawArg { return rawArg{valid: json.Valid(b), bytes: b} }

// MarshalJSON writes {"v": <json>} or {"s": "<bytes>"}.
func (r rawArg) MarshalJSON() ([]byte, error) {
	if r.valid {
		return json.Marshal(struct {
			V json.RawMessage `json:"v"`
		}{r.bytes})
	}
	return json.Marshal(struct {
		S string `json:"s"`
	}{string(r.bytes)})
}

func decodeRawArg(input []byte) ([]byte, error) {
	var a struct {
		V json.RawMessage `json:"v"`
		S *string         `json:"s"`
	}
	if err := json.Unmarshal(input, &a); err != nil {
		return nil, err
	}
	if a.S != nil {
		return []byte(*a.S), nil
	}
	if a.V == nil {
		return nil, errors.New("raw argument has neither v nor s")
	}
	return a.V, nil
}

// Start implements controlplane.Port.
func (c *Company) Start(ctx context.Context) error {
	return c.do(ctx, opStart, struct{}{}, func() error { return c.mem.Start(context.Background()) })
}

// Stop implements controlplane.Port.
func (c *Company) Stop(ctx context.Context) error {
	return c.do(ctx, opStop, struct{}{}, func() error { return c.mem.Stop(context.Background()) })
}

// OpenRun implements controlplane.Port.
func (c *Company) OpenRun(ctx context.Context, in controlplane.OpenInput) error {
	return c.do(ctx, opOpenRun, in, func() error { return c.mem.OpenRun(context.Background(), in) })
}

// OpenFixtureRun implements controlplane.Port: the journal records an open_run; the
// context is read under the same lock.
func (c *Company) OpenFixtureRun(ctx context.Context, in controlplane.OpenInput) (controlplane.RunContext, error) {
	return doValue(ctx, c, opOpenRun, in, func() (controlplane.RunContext, error) {
		return c.mem.OpenFixtureRun(context.Background(), in)
	})
}

// Context implements controlplane.Port (a read).
func (c *Company) Context(ctx context.Context, runID string) (controlplane.RunContext, error) {
	return readValue(c, func() (controlplane.RunContext, error) { return c.mem.Context(ctx, runID) })
}

// AppendEvent implements controlplane.Port.
func (c *Company) AppendEvent(ctx context.Context, event json.RawMessage) (controlplane.Receipt, error) {
	return doValue(ctx, c, opAppend, newRawArg(event), func() (controlplane.Receipt, error) {
		return c.mem.AppendEvent(context.Background(), event)
	})
}

// ReplayEvents implements controlplane.Port (a read).
func (c *Company) ReplayEvents(ctx context.Context, q controlplane.ReplayQuery) (controlplane.Replay, error) {
	return readValue(c, func() (controlplane.Replay, error) { return c.mem.ReplayEvents(ctx, q) })
}

// ApplyCommand implements controlplane.Port.
func (c *Company) ApplyCommand(ctx context.Context, env controlplane.CommandEnvelope) (controlplane.CommandResult, error) {
	return doValue(ctx, c, opCommand, newEnvelopeArg(env), func() (controlplane.CommandResult, error) {
		return c.mem.ApplyCommand(context.Background(), env)
	})
}

// TryApplyCommand implements controlplane.Port.
func (c *Company) TryApplyCommand(ctx context.Context, env controlplane.CommandEnvelope) (controlplane.CommandOutcome, error) {
	var o controlplane.CommandOutcome
	var denied error
	err := c.do(ctx, opCommand, newEnvelopeArg(env), func() error {
		var err error
		o, err = c.mem.TryApplyCommand(context.Background(), env)
		if err == nil && !o.OK && o.Error != nil {
			denied = o.Error // journaled like any denial; folded back below
			return denied
		}
		return err
	})
	if denied != nil && err == denied {
		return o, nil
	}
	return o, err
}

// envelopeArg journals a command envelope whose command may be invalid JSON.
type envelopeArg struct {
	RunID            string `json:"runId"`
	IdempotencyKey   string `json:"idempotencyKey"`
	ExpectedRevision *int64 `json:"expectedRevision,omitempty"`
	Command          rawArg `json:"command"`
}

// newEnvelopeArg is env as journaled.
func newEnvelopeArg(env controlplane.CommandEnvelope) envelopeArg {
	return envelopeArg{RunID: env.RunID, IdempotencyKey: env.IdempotencyKey, ExpectedRevision: env.ExpectedRevision,
		Command: newRawArg(env.Command)}
}

// LoadSessionCheckpoint implements controlplane.Port (a read).
func (c *Company) LoadSessionCheckpoint(ctx context.Context) (json.RawMessage, error) {
	return readValue(c, func() (json.RawMessage, error) { return c.mem.LoadSessionCheckpoint(ctx) })
}

// CheckpointSession implements controlplane.Port.
func (c *Company) CheckpointSession(ctx context.Context, snapshot json.RawMessage) error {
	return c.doRaw(ctx, opCheckpoint, snapshot, func() error { return c.mem.CheckpointSession(context.Background(), snapshot) })
}

// CompleteRun implements controlplane.Port.
func (c *Company) CompleteRun(ctx context.Context, input json.RawMessage) error {
	return c.doRaw(ctx, opComplete, input, func() error { return c.mem.CompleteRun(context.Background(), input) })
}

// Snapshot implements controlplane.Port (a read).
func (c *Company) Snapshot(ctx context.Context) (controlplane.State, error) {
	return readValue(c, func() (controlplane.State, error) { return c.mem.Snapshot(ctx) })
}

// SnapshotJSON is Snapshot's state as plain JSON (controlplane.Memory.SnapshotJSON),
// without decoding it into a copy: for a caller that only sends it on (the board's
// snapshot route).
func (c *Company) SnapshotJSON(ctx context.Context) ([]byte, error) {
	return readValue(c, func() ([]byte, error) { return c.mem.SnapshotJSON(ctx) })
}

// Read is controlplane.Memory.Read of the company's state.
func (c *Company) Read(ctx context.Context, read func(st *controlplane.State)) error {
	if err := c.readable(); err != nil {
		return err
	}
	return c.mem.Read(ctx, read)
}

// ReadJSON is controlplane.Memory.ReadJSON of the company's state.
func (c *Company) ReadJSON(ctx context.Context, read func(st *controlplane.State) (any, error)) ([]byte, error) {
	if err := c.readable(); err != nil {
		return nil, err
	}
	return c.mem.ReadJSON(ctx, read)
}

// DecisionRecords implements controlplane.Port (a read).
func (c *Company) DecisionRecords(ctx context.Context) ([]controlplane.Decision, error) {
	return readValue(c, func() ([]controlplane.Decision, error) { return c.mem.DecisionRecords(ctx) })
}

// Serialize implements controlplane.Port (a read).
func (c *Company) Serialize(ctx context.Context) ([]byte, error) {
	return readValue(c, func() ([]byte, error) { return c.mem.Serialize(ctx) })
}

// ApplyBoard applies and journals one board operation (controlplane.Memory.ApplyBoard).
func (c *Company) ApplyBoard(ctx context.Context, op controlplane.BoardOp) (controlplane.BoardResult, error) {
	arg := boardArg{Kind: op.Kind, Input: newRawArg(op.Input), IdempotencyKey: op.IdempotencyKey}
	return doValue(ctx, c, opBoard, arg, func() (controlplane.BoardResult, error) {
		return c.mem.ApplyBoard(context.Background(), op)
	})
}

type boardArg struct {
	Kind           controlplane.BoardKind `json:"kind"`
	Input          rawArg                 `json:"input"`
	IdempotencyKey string                 `json:"idempotencyKey,omitempty"`
}

// PutBlob implements controlplane.Board: the bytes are written to the blobs table in
// the transaction of (or one before) the journal entry that records the blob.
// Errors: request_too_large, Memory.PutBlob's, store_unavailable.
func (c *Company) PutBlob(ctx context.Context, in controlplane.BlobPut) (controlplane.BlobRef, error) {
	if len(in.Content) > controlplane.MaxFileBytes {
		return controlplane.BlobRef{}, &controlplane.Error{Code: controlplane.CodeRequestTooLarge,
			Message: fmt.Sprintf("the blob is %d bytes; at most %d bytes are stored", len(in.Content), controlplane.MaxFileBytes)}
	}
	content := in.Content
	if content == nil {
		content = []byte{}
	}
	rec := controlplane.BlobRecord{SHA256: controlplane.SHA256Hex(content), ByteSize: int64(len(content)), IdempotencyKey: in.IdempotencyKey}
	var ref controlplane.BlobRef
	err := c.doBlob(ctx, opPutBlob, rec, rec.SHA256, content, func() error {
		var err error
		ref, err = c.mem.RecordBlob(context.Background(), rec)
		return err
	})
	return ref, err
}

// Blob implements controlplane.Board: the bytes of a blob the company recorded, read
// from the blobs table and checked against their SHA-256. Errors: blob_invalid,
// blob_missing, store_unavailable (bytes not committed yet, or damaged).
func (c *Company) Blob(ctx context.Context, sha string) ([]byte, error) {
	if err := c.readable(); err != nil {
		return nil, err
	}
	if !controlplane.ValidSHA256(sha) {
		return nil, &controlplane.Error{Code: controlplane.CodeBlobInvalid, Message: "not a SHA-256 of 64 lower-case hex digits"}
	}
	if _, ok, err := c.mem.HasBlob(ctx, sha); err != nil {
		return nil, err
	} else if !ok {
		return nil, &controlplane.Error{Code: controlplane.CodeBlobMissing, Message: "no blob " + sha + " is stored"}
	}
	var data []byte
	err := c.inst.db.QueryRowContext(ctx, c.inst.q("SELECT content FROM blobs WHERE company_id = ? AND sha256 = ?"), c.id, sha).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, unavailable(fmt.Errorf("the bytes of blob %s are not committed yet", sha))
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading blob %s: %w", sha, err)
	}
	if controlplane.SHA256Hex(data) != sha {
		return nil, unavailable(fmt.Errorf("the stored bytes of blob %s do not hash to it", sha))
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// HasBlob reports whether the company recorded a blob under sha, and its size in bytes.
func (c *Company) HasBlob(ctx context.Context, sha string) (int64, bool, error) {
	if err := c.readable(); err != nil {
		return 0, false, err
	}
	return c.mem.HasBlob(ctx, sha)
}

// SaveHome applies and journals one home save (controlplane.Memory.SaveHome).
func (c *Company) SaveHome(ctx context.Context, in controlplane.HomeSave) (controlplane.HomeReceipt, error) {
	return doValue(ctx, c, opSaveHome, in, func() (controlplane.HomeReceipt, error) {
		return c.mem.SaveHome(context.Background(), in)
	})
}

// ListWakes returns the company's scheduled wakes (controlplane.Memory.ListWakes).
func (c *Company) ListWakes(ctx context.Context, dueAtOrBefore string) ([]controlplane.ScheduledWake, error) {
	return readValue(c, func() ([]controlplane.ScheduledWake, error) { return c.mem.ListWakes(ctx, dueAtOrBefore) })
}

// ActiveRun returns the active run id (controlplane.Memory.ActiveRun).
func (c *Company) ActiveRun(ctx context.Context) (string, bool, error) { return c.mem.ActiveRun(ctx) }

// RunRunning reports whether a run is still running, with its status
// (controlplane.Memory.RunRunning).
func (c *Company) RunRunning(ctx context.Context, runID string) (bool, controlplane.RunStatus, error) {
	return c.mem.RunRunning(ctx, runID)
}

// RunActor returns a run's actor and state company id (controlplane.Memory.RunActor).
func (c *Company) RunActor(ctx context.Context, runID string) (string, string, error) {
	return c.mem.RunActor(ctx, runID)
}

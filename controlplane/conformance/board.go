package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/controlplane"
)

// BoardCases are the cases of the board side beyond the port
// (controlplane.Board: content-addressed blobs, byte-verified deliverables, managed
// files, keyed board writes, Retry); each restarts its Port once, so the behaviour is
// checked durable too. A Port that does not implement controlplane.Board fails them.
func BoardCases() []Case {
	return []Case{
		{"board/01-blob-round-trip", board01}, {"board/02-deliverable-bytes-verified", board02},
		{"board/03-managed-file-revision", board03}, {"board/04-idempotent-board-write", board04},
		{"board/05-retry-bound-to-run", board05}, {"board/06-retry-interrupted-run", board06},
	}
}

// boardEnv is a started Port that is also a Board.
type boardEnv struct {
	*env
	b controlplane.Board
}

func boardSetup(ctx context.Context, h Harness) (*boardEnv, error) {
	e, err := setup(ctx, h, defaultSeed)
	if err != nil {
		return nil, err
	}
	b, ok := e.p.(controlplane.Board)
	if !ok {
		return nil, failf("the port (%T) does not implement controlplane.Board", e.p)
	}
	return &boardEnv{env: e, b: b}, nil
}

// boardOpen is boardSetup with run-1 open on task-1 for actor-1 (the start of the
// cases about a run's board operations).
func boardOpen(ctx context.Context, h Harness) (*boardEnv, error) {
	e, err := boardSetup(ctx, h)
	if err != nil {
		return nil, err
	}
	if _, err := e.open("run-1", "task-1", "actor-1"); err != nil {
		return nil, noErr(err, "open")
	}
	return e, nil
}

// retryOfRun1 is the open input of runID on task-1 for actor-1 as the retry of run-1,
// woken by the retry wake the board's retry_run scheduled.
func retryOfRun1(runID string) controlplane.OpenInput {
	in := openInput(runID, "task-1", "actor-1")
	in.RetryOf = "run-1"
	in.Wake = &controlplane.Wake{Reason: controlplane.WakeRetry, Payload: json.RawMessage(`{"retryOf":"run-1"}`)}
	return in
}

// restart restarts the Port and keeps the Board.
func (e *boardEnv) restart() error {
	p, err := e.h.Restart(e.ctx, e.p)
	if err != nil {
		return noErr(err, "restart")
	}
	b, ok := p.(controlplane.Board)
	if !ok {
		return failf("the restarted port (%T) does not implement controlplane.Board", p)
	}
	e.p, e.b = p, b
	return nil
}

// restartSnap restarts the Port (restart) and returns a snapshot of the restarted state.
func (e *boardEnv) restartSnap() (controlplane.State, error) {
	if err := e.restart(); err != nil {
		return controlplane.State{}, err
	}
	return e.snap()
}

func (e *boardEnv) board(kind controlplane.BoardKind, input any, key string) (controlplane.BoardResult, error) {
	return e.b.ApplyBoard(e.ctx, controlplane.BoardOp{Kind: kind, Input: mustJSON(input), IdempotencyKey: key})
}

// wantBlob checks that the Board returns exactly want for its SHA-256.
func (e *boardEnv) wantBlob(want []byte, what string) error {
	got, err := e.b.Blob(e.ctx, controlplane.SHA256Hex(want))
	if err != nil {
		return noErr(err, what)
	}
	if !bytes.Equal(got, want) {
		return failf("%s: %d bytes that differ from the %d stored", what, len(got), len(want))
	}
	return nil
}

// completeNative completes run natively with status.
func (e *boardEnv) completeNative(runID string, status controlplane.RunStatus) error {
	if _, err := e.appendEvent(controlplane.NativeEvent{EventID: runID + ":completed", RunID: runID, Sequence: 1, Type: "run.completed"}); err != nil {
		return noErr(err, "run.completed")
	}
	return noErr(e.p.CompleteRun(e.ctx, mustJSON(controlplane.NativeRunResult{RunID: runID, Status: status, Summary: "done"})), "native completion")
}

// binary is bytes no text encoding would keep: NUL, invalid UTF-8, a lone CR.
var binary = []byte("\x00\xff\xfe\r binary \x00\x80\xc0")

func board01(ctx context.Context, h Harness) error {
	e, err := boardSetup(ctx, h)
	if err != nil {
		return err
	}
	ref, err := e.b.PutBlob(ctx, controlplane.BlobPut{Content: binary})
	if err != nil {
		return noErr(err, "put blob")
	}
	if ref.SHA256 != controlplane.SHA256Hex(binary) || ref.ByteSize != int64(len(binary)) {
		return failf("blob ref %+v, want sha256 %s and %d bytes", ref, controlplane.SHA256Hex(binary), len(binary))
	}
	again, err := e.b.PutBlob(ctx, controlplane.BlobPut{Content: binary})
	if err != nil || again != ref {
		return failf("second put of the same bytes: %+v %v, want %+v", again, err, ref)
	}
	if err := e.wantBlob(binary, "blob"); err != nil {
		return err
	}
	if err := e.restart(); err != nil {
		return err
	}
	if err := e.wantBlob(binary, "blob after restart"); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	if len(st.Blobs) != 1 || st.Blobs[0].SHA256 != ref.SHA256 || st.Blobs[0].Content != nil {
		return failf("state blobs %+v, want one record without bytes", st.Blobs)
	}
	_, err = e.b.Blob(ctx, strings.Repeat("0", 64))
	return wantCode(err, controlplane.CodeBlobMissing)
}

func board02(ctx context.Context, h Harness) error {
	e, err := boardOpen(ctx, h)
	if err != nil {
		return err
	}
	ref, err := e.b.PutBlob(ctx, controlplane.BlobPut{Content: binary})
	if err != nil {
		return noErr(err, "put blob")
	}
	deliver := func(key string, fields map[string]any) error {
		f := map[string]any{"filename": "out.bin", "contentType": "application/octet-stream", "title": "Out"}
		for k, v := range fields {
			f[k] = v
		}
		_, err := e.cmd("run-1", key, string(controlplane.CommandRegisterDeliverable), f)
		return err
	}
	if err := wantCode(deliver("k1", map[string]any{"sha256": ref.SHA256, "byteSize": ref.ByteSize + 1}), controlplane.CodeArtifactDigestMismatch); err != nil {
		return fmt.Errorf("declared size not the bytes': %w", err)
	}
	if err := wantCode(deliver("k2", map[string]any{"sha256": strings.Repeat("0", 64), "byteSize": 0}), controlplane.CodeArtifactContentMissing); err != nil {
		return fmt.Errorf("a SHA-256 without bytes: %w", err)
	}
	inline := []byte("inline\x00deliverable")
	if err := wantCode(deliver("k3", map[string]any{"sha256": ref.SHA256, "byteSize": len(inline), "contentBase64": base64.StdEncoding.EncodeToString(inline)}),
		controlplane.CodeArtifactDigestMismatch); err != nil {
		return fmt.Errorf("inline bytes that are not the declared digest: %w", err)
	}
	if err := noErr(deliver("k4", map[string]any{"sha256": ref.SHA256, "byteSize": ref.ByteSize}), "deliverable by reference"); err != nil {
		return err
	}
	if err := noErr(deliver("k5", map[string]any{"sha256": controlplane.SHA256Hex(inline), "byteSize": len(inline),
		"contentBase64": base64.StdEncoding.EncodeToString(inline)}), "inline deliverable"); err != nil {
		return err
	}
	st, err := e.restartSnap()
	if err != nil {
		return err
	}
	if len(st.Artifacts) != 2 {
		return failf("%d artifacts, want 2 (the refused ones registered nothing)", len(st.Artifacts))
	}
	for i, want := range [][]byte{binary, inline} {
		a := st.Artifacts[i]
		if a.SHA256 != controlplane.SHA256Hex(want) || a.ByteSize != int64(len(want)) {
			return failf("artifact %d: sha256 %s, %d bytes", i, a.SHA256, a.ByteSize)
		}
		if err := e.wantBlob(want, "artifact "+a.ID+" after restart"); err != nil {
			return err
		}
	}
	return nil
}

func board03(ctx context.Context, h Harness) error {
	e, err := boardSetup(ctx, h)
	if err != nil {
		return err
	}
	v1, err := e.b.PutBlob(ctx, controlplane.BlobPut{Content: []byte("v1")})
	if err != nil {
		return noErr(err, "put blob")
	}
	v2, err := e.b.PutBlob(ctx, controlplane.BlobPut{Content: binary})
	if err != nil {
		return noErr(err, "put blob")
	}
	home := map[string]any{"scope": controlplane.FileScopeAgentHome, "ownerId": "actor-1", "path": "notes/memory.md"}
	with := func(extra map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range home {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	first, err := e.board(controlplane.BoardPutFile, with(map[string]any{"sha256": v1.SHA256, "expectedSha256": ""}), "")
	if err != nil {
		return noErr(err, "put_file")
	}
	_, err = e.board(controlplane.BoardPutFile, with(map[string]any{"sha256": v2.SHA256, "expectedSha256": ""}), "")
	if err := wantCode(err, controlplane.CodeFileRevisionConflict); err != nil {
		return fmt.Errorf("a lost update: %w", err)
	}
	if _, err := e.board(controlplane.BoardPutFile, with(map[string]any{"sha256": v2.SHA256, "expectedSha256": v1.SHA256}), ""); err != nil {
		return noErr(err, "put_file revision 2")
	}
	_, err = e.board(controlplane.BoardPutFile, with(map[string]any{"sha256": strings.Repeat("1", 64)}), "")
	if err := wantCode(err, controlplane.CodeBlobMissing); err != nil {
		return fmt.Errorf("a file of bytes never uploaded: %w", err)
	}
	st, err := e.restartSnap()
	if err != nil {
		return err
	}
	if len(st.Files) != 1 {
		return failf("%d files, want 1", len(st.Files))
	}
	f := st.Files[0]
	if f.ID != first.ID || f.Revision != 2 || f.SHA256 != v2.SHA256 || f.ByteSize != v2.ByteSize || f.Scope != controlplane.FileScopeAgentHome || f.OwnerID != "actor-1" {
		return failf("file %+v, want %s at revision 2 holding %s", f, first.ID, v2.SHA256)
	}
	return e.wantBlob(binary, "the file's bytes after restart")
}

func board04(ctx context.Context, h Harness) error {
	e, err := boardSetup(ctx, h)
	if err != nil {
		return err
	}
	in := map[string]any{"issueId": "task-1", "body": "exactly once"}
	first, err := e.board(controlplane.BoardComment, in, "comment-key")
	if err != nil {
		return noErr(err, "comment")
	}
	if err := e.restart(); err != nil {
		return err
	}
	again, err := e.board(controlplane.BoardComment, in, "comment-key")
	if err != nil {
		return noErr(err, "replayed comment")
	}
	if again.ID != first.ID || again.StateRevision != first.StateRevision || strings.Join(again.ScheduledWakeIDs, ",") != strings.Join(first.ScheduledWakeIDs, ",") {
		return failf("replay %+v, want the stored %+v", again, first)
	}
	_, err = e.board(controlplane.BoardComment, map[string]any{"issueId": "task-1", "body": "another body"}, "comment-key")
	if err := wantCode(err, controlplane.CodeIdempotencyConflict); err != nil {
		return fmt.Errorf("the key with another body: %w", err)
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	n := count(st.Comments, func(c *controlplane.Comment) bool { return c.Body == "exactly once" })
	if n != 1 || len(countWakes(st, controlplane.WakeIssueCommented)) != 1 {
		return failf("%d comments and %d issue_commented wakes, want 1 and 1", n, len(countWakes(st, controlplane.WakeIssueCommented)))
	}
	return e.wantLastDecision(controlplane.BoardComment.Operation(), "denied", string(controlplane.CodeIdempotencyConflict))
}

func board05(ctx context.Context, h Harness) error {
	e, err := boardOpen(ctx, h)
	if err != nil {
		return err
	}
	retry := func(run string) (controlplane.BoardResult, error) {
		return e.board(controlplane.BoardRetryRun, map[string]any{"runId": run}, "")
	}
	if _, err := retry("run-1"); wantCode(err, controlplane.CodeRunNotRetryable) != nil {
		return failf("retry of a running run: %v, want run_not_retryable", err)
	}
	if err := e.completeNative("run-1", controlplane.RunFailed); err != nil {
		return err
	}
	res, err := retry("run-1")
	if err != nil {
		return noErr(err, "retry of the failed run")
	}
	if _, err := retry("run-1"); wantCode(err, controlplane.CodeRunAlreadyRetried) != nil {
		return failf("second retry: %v, want run_already_retried", err)
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	ws := countWakes(st, controlplane.WakeRetry)
	if len(ws) != 1 || ws[0].ID != res.ID || ws[0].ActorID != "actor-1" || ws[0].TaskID != "task-1" || string(ws[0].Payload) != `{"retryOf":"run-1"}` {
		return failf("retry wakes %+v, want one for actor-1 on task-1 with retryOf run-1", ws)
	}
	if t := taskByID(st, "task-1"); t.Status != controlplane.TaskTodo || t.CheckoutRunID != nil {
		return failf("task-1 is %s (checkout %s) after the retry, want todo and free", t.Status, deref(t.CheckoutRunID))
	}
	in := retryOfRun1("run-2")
	if _, err := e.p.OpenFixtureRun(ctx, in); err != nil {
		return noErr(err, "open the retry")
	}
	if err := e.completeNative("run-2", controlplane.RunSucceeded); err != nil {
		return err
	}
	in.Identity.RunID = "run-3"
	if _, err := e.p.OpenFixtureRun(ctx, in); wantCode(err, controlplane.CodeRunAlreadyRetried) != nil {
		return failf("a second run retrying run-1: %v, want run_already_retried", err)
	}
	if _, err := retry("run-2"); wantCode(err, controlplane.CodeRunNotRetryable) != nil {
		return failf("retry of a succeeded run: %v, want run_not_retryable", err)
	}
	if err := e.restart(); err != nil {
		return err
	}
	st, err = e.snap()
	if err != nil {
		return err
	}
	r1, r2 := runByID(st, "run-1"), runByID(st, "run-2")
	if r2 == nil || r2.RetryOf == nil || *r2.RetryOf != "run-1" || r1.RetriedByRunID == nil || *r1.RetriedByRunID != "run-2" || deref(r1.RetryWakeID) != res.ID {
		return failf("after restart run-2 retries %s, run-1 is retried by %s (wake %s)", deref(r2.RetryOf), deref(r1.RetriedByRunID), deref(r1.RetryWakeID))
	}
	rc, err := e.p.Context(ctx, "run-2")
	if err != nil {
		return noErr(err, "context of the retry")
	}
	return equal(deref(rc.RetryOf), "run-1", "the retry's context retryOf")
}

// board06: a run left interrupted (the server died while its agent ran: the heartbeat
// runner's recovery completes it so) is retryable like a failed one, and the retry is
// bound to it durably; a cancelled run (a Stop) is not retryable.
func board06(ctx context.Context, h Harness) error {
	e, err := boardOpen(ctx, h)
	if err != nil {
		return err
	}
	if err := e.completeNative("run-1", controlplane.RunInterrupted); err != nil {
		return err
	}
	st, err := e.restartSnap()
	if err != nil {
		return err
	}
	if r := runByID(st, "run-1"); r == nil || r.Status != controlplane.RunInterrupted {
		return failf("run-1 after the restart: %+v, want interrupted", r)
	}
	res, err := e.board(controlplane.BoardRetryRun, map[string]any{"runId": "run-1"}, "retry-interrupted")
	if err != nil {
		return noErr(err, "retry of the interrupted run")
	}
	in := retryOfRun1("run-2")
	if _, err := e.p.OpenFixtureRun(ctx, in); err != nil {
		return noErr(err, "open the retry of the interrupted run")
	}
	if err := e.completeNative("run-2", controlplane.RunCancelled); err != nil {
		return err
	}
	if _, err := e.board(controlplane.BoardRetryRun, map[string]any{"runId": "run-2"}, ""); wantCode(err, controlplane.CodeRunNotRetryable) != nil {
		return failf("retry of a cancelled run: %v, want run_not_retryable", err)
	}
	if err := e.restart(); err != nil {
		return err
	}
	again, err := e.board(controlplane.BoardRetryRun, map[string]any{"runId": "run-1"}, "retry-interrupted")
	if err != nil || again.ID != res.ID {
		return failf("the keyed Retry replayed after a restart answered %q, %v; want the stored %q", again.ID, err, res.ID)
	}
	if st, err = e.snap(); err != nil {
		return err
	}
	r1, r2 := runByID(st, "run-1"), runByID(st, "run-2")
	if r2 == nil || deref(r2.RetryOf) != "run-1" || deref(r1.RetriedByRunID) != "run-2" || deref(r1.RetryWakeID) != res.ID {
		return failf("after restart run-2 retries %q, run-1 is retried by %q (wake %q, want %q)", deref(r2.RetryOf), deref(r1.RetriedByRunID), deref(r1.RetryWakeID), res.ID)
	}
	return nil
}

package store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/controlplane/store"
	"github.com/agentproof/agentproof/controlplane/store/storetest"
)

// TestFilesSurviveRestart (SQLite): blobs (an 8 MiB binary, bytes with NUL), a keyed
// comment, a managed home, a save receipt with a conflict and an inline deliverable are
// all there, byte for byte, after the instance is reopened; the keyed comment replays
// its stored result (same id, one comment) and refuses another body; a whole-journal
// replay equals the restored state; and no snapshot carries blob bytes.
func TestFilesSurviveRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "i.db")
	testFilesSurviveRestart(t, func(ctx context.Context) (*store.Instance, error) { return store.OpenSQLite(ctx, path) })
}

// TestFilesSurviveRestartPostgres is the same against PostgreSQL.
func TestFilesSurviveRestartPostgres(t *testing.T) {
	t.Parallel()
	u := storetest.PostgresURL(t, "storefiles")
	testFilesSurviveRestart(t, func(ctx context.Context) (*store.Instance, error) { return store.OpenPostgres(ctx, u) })
}

func testFilesSurviveRestart(t *testing.T, openInstance func(context.Context) (*store.Instance, error)) {
	ctx := context.Background()
	inst, err := openInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := inst.CreateBoardCompany(ctx, "Acme", "ACME")
	if err != nil {
		t.Fatal(err)
	}
	c := inst.Company(id)
	apply := func(kind controlplane.BoardKind, in, key string) controlplane.BoardResult {
		t.Helper()
		r, err := c.ApplyBoard(ctx, controlplane.BoardOp{Kind: kind, Input: json.RawMessage(in), IdempotencyKey: key})
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		return r
	}
	agent := apply(controlplane.BoardCreateAgent, `{"name":"Eng","role":"engineer"}`, "")
	issue := apply(controlplane.BoardCreateIssue, `{"title":"T","assigneeActorId":"`+agent.ID+`"}`, "")
	comment := apply(controlplane.BoardComment, `{"issueId":"`+issue.ID+`","body":"once"}`, "comment-key-1")
	big := bytes.Repeat([]byte{0, 0xff, 'b', 0x80}, 2<<20) // 8 MiB
	small := []byte("nonce\x00\xfe")
	bigRef, err := c.PutBlob(ctx, controlplane.BlobPut{Content: big})
	if err != nil {
		t.Fatal(err)
	}
	smallRef, err := c.PutBlob(ctx, controlplane.BlobPut{Content: small, IdempotencyKey: "upload-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBlob(ctx, controlplane.BlobPut{Content: []byte("other"), IdempotencyKey: "upload-1"}); controlplane.CodeOf(err) != controlplane.CodeIdempotencyConflict {
		t.Fatalf("keyed upload of other bytes: %v", err)
	}
	apply(controlplane.BoardPutFile, `{"scope":"agent_home","ownerId":"`+agent.ID+`","path":"bin/big.bin","sha256":"`+bigRef.SHA256+`"}`, "")
	apply(controlplane.BoardPutFile, `{"scope":"agent_home","ownerId":"`+agent.ID+`","path":"memory.md","sha256":"`+smallRef.SHA256+`"}`, "put-1")
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.OpenRun(ctx, controlplane.OpenInput{Identity: controlplane.Identity{RunID: "run-1", SessionID: "s", CompanyID: id, IssueID: issue.ID, AgentID: agent.ID}, BackendKind: "mock"}); err != nil {
		t.Fatal(err)
	}
	inline := []byte("deliverable \x00 bytes")
	cmd, _ := json.Marshal(map[string]any{"kind": "register_deliverable", "filename": "out.bin", "contentType": "application/octet-stream",
		"byteSize": len(inline), "sha256": controlplane.SHA256Hex(inline), "contentBase64": base64.StdEncoding.EncodeToString(inline), "title": "Out"})
	if _, err := c.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "deliver", Command: cmd}); err != nil {
		t.Fatal(err)
	}
	board, _ := c.PutBlob(ctx, controlplane.BlobPut{Content: []byte("board's")})
	runs, _ := c.PutBlob(ctx, controlplane.BlobPut{Content: []byte("run's")})
	apply(controlplane.BoardPutFile, `{"scope":"agent_home","ownerId":"`+agent.ID+`","path":"memory.md","sha256":"`+board.SHA256+`"}`, "")
	rc, err := c.SaveHome(ctx, controlplane.HomeSave{ActorID: agent.ID, RunID: "run-1",
		Changes:   []controlplane.HomeChange{{Path: "memory.md", OldSHA256: smallRef.SHA256, NewSHA256: runs.SHA256, ByteSize: runs.ByteSize}},
		Unchanged: []controlplane.HomeEntry{{Path: "bin/big.bin", SHA256: bigRef.SHA256, ByteSize: bigRef.ByteSize}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.ConflictIDs) != 1 || len(rc.Changes) != 0 {
		t.Fatalf("receipt %+v: want the change kept as a conflict", rc)
	}
	before, err := c.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}

	inst, err = openInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	c = inst.Company(id)
	after, err := c.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("state after restart differs from state before")
	}
	if bytes.Contains(after, []byte(`"content"`)) {
		t.Fatal("the store's state carries blob bytes")
	}
	full, err := inst.ReplayFromStart(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(full, after) {
		t.Fatal("replay of the whole journal differs from the restored state")
	}
	for name, want := range map[string][]byte{"8 MiB binary": big, "small": small, "inline deliverable": inline, "run's version": []byte("run's")} {
		got, err := c.Blob(ctx, controlplane.SHA256Hex(want))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after restart: %d bytes, %v", name, len(got), err)
		}
	}
	if _, err := c.Blob(ctx, controlplane.SHA256Hex([]byte("other"))); controlplane.CodeOf(err) != controlplane.CodeBlobMissing {
		t.Fatalf("the refused upload's bytes: %v", err)
	}
	again, err := c.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardComment, Input: json.RawMessage(`{"issueId":"` + issue.ID + `","body":"once"}`), IdempotencyKey: "comment-key-1"})
	if err != nil || again.ID != comment.ID {
		t.Fatalf("replay after restart: %+v %v, want %s", again, err, comment.ID)
	}
	_, err = c.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardComment, Input: json.RawMessage(`{"issueId":"` + issue.ID + `","body":"twice"}`), IdempotencyKey: "comment-key-1"})
	if controlplane.CodeOf(err) != controlplane.CodeIdempotencyConflict {
		t.Fatalf("other body after restart: %v", err)
	}
	st, _ := c.Snapshot(ctx)
	n := 0
	for _, cm := range st.Comments {
		if cm.Body == "once" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d comments, want 1", n)
	}
	if len(st.FileConflicts) != 1 || st.FileConflicts[0].IncomingSHA256 != runs.SHA256 || len(st.HomeReceipts) != 1 {
		t.Fatalf("conflicts %+v receipts %d", st.FileConflicts, len(st.HomeReceipts))
	}
	if _, err := c.SaveHome(ctx, controlplane.HomeSave{ActorID: agent.ID, RunID: "run-1"}); controlplane.CodeOf(err) != controlplane.CodeHomeSaveConflict {
		t.Fatalf("a second, different save of run-1 after restart: %v", err)
	}
	if strings.Contains(string(after), string(big[:64])) {
		t.Fatal("binary bytes in the state")
	}
}

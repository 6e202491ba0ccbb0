package controlplane_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
)

// boardMemory is a bare board company with one agent (fixture-actor-0001) and one
// assigned issue (fixture-task-0001), started.
func boardMemory(t *testing.T) *controlplane.Memory {
	t.Helper()
	ctx := context.Background()
	m, err := controlplane.NewMemory(controlplane.Seed{Bare: true, Company: &controlplane.Company{ID: "c", Name: "C", IssuePrefix: "C", BudgetID: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []controlplane.BoardOp{
		{Kind: controlplane.BoardCreateAgent, Input: json.RawMessage(`{"name":"Eng","role":"engineer"}`)},
		{Kind: controlplane.BoardCreateIssue, Input: json.RawMessage(`{"title":"T","assigneeActorId":"fixture-actor-0001"}`)},
	} {
		if _, err := m.ApplyBoard(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return m
}

func board(kind controlplane.BoardKind, input, key string) controlplane.BoardOp {
	return controlplane.BoardOp{Kind: kind, Input: json.RawMessage(input), IdempotencyKey: key}
}

func roundTrip(t *testing.T, m *controlplane.Memory) *controlplane.Memory {
	t.Helper()
	ctx := context.Background()
	b, err := m.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := controlplane.Restore(b)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := r.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, rb) {
		t.Fatal("Serialize after Restore differs")
	}
	return r
}

// TestBlobs: bytes (binary, with NUL and invalid UTF-8) are stored by their SHA-256,
// a second put is a duplicate, the bytes survive Serialize/Restore byte for byte (and
// Snapshot never carries them), a keyed upload replays and refuses other bytes, and a
// state whose content does not hash to its blob is refused.
func TestBlobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := boardMemory(t)
	data := []byte("\x00\xffbinary\x00\x80")
	ref, err := m.PutBlob(ctx, controlplane.BlobPut{Content: data})
	if err != nil {
		t.Fatal(err)
	}
	if ref.SHA256 != controlplane.SHA256Hex(data) || ref.ByteSize != int64(len(data)) {
		t.Fatalf("ref %+v", ref)
	}
	again, err := m.PutBlob(ctx, controlplane.BlobPut{Content: data})
	if err != nil || again != ref {
		t.Fatalf("second put: %+v %v", again, err)
	}
	st, _ := m.Snapshot(ctx)
	if len(st.Blobs) != 1 || st.Blobs[0].Content != nil {
		t.Fatalf("snapshot blobs %+v", st.Blobs)
	}
	r := roundTrip(t, m)
	got, err := r.Blob(ctx, ref.SHA256)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("restored blob %q %v", got, err)
	}
	if _, err := r.Blob(ctx, strings.Repeat("1", 64)); controlplane.CodeOf(err) != controlplane.CodeBlobMissing {
		t.Fatalf("unknown blob: %v", err)
	}
	if _, err := r.Blob(ctx, "../etc/passwd"); controlplane.CodeOf(err) != controlplane.CodeBlobInvalid {
		t.Fatalf("bad sha: %v", err)
	}
	if _, err := m.PutBlob(ctx, controlplane.BlobPut{Content: make([]byte, controlplane.MaxFileBytes+1)}); controlplane.CodeOf(err) != controlplane.CodeRequestTooLarge {
		t.Fatalf("oversized blob: %v", err)
	}
	// keyed uploads
	k1, err := m.PutBlob(ctx, controlplane.BlobPut{Content: []byte("one"), IdempotencyKey: "up-1"})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := m.PutBlob(ctx, controlplane.BlobPut{Content: []byte("one"), IdempotencyKey: "up-1"}); err != nil || k != k1 {
		t.Fatalf("keyed replay: %+v %v", k, err)
	}
	if _, err := m.PutBlob(ctx, controlplane.BlobPut{Content: []byte("two"), IdempotencyKey: "up-1"}); controlplane.CodeOf(err) != controlplane.CodeIdempotencyConflict {
		t.Fatalf("keyed upload of other bytes: %v", err)
	}
	if size, ok, _ := m.HasBlob(ctx, controlplane.SHA256Hex([]byte("two"))); ok || size != 0 {
		t.Fatal("a refused keyed upload stored its bytes")
	}
	// a tampered state
	b, _ := m.Serialize(ctx)
	bad := bytes.Replace(b, []byte(base64.StdEncoding.EncodeToString(data)), []byte(base64.StdEncoding.EncodeToString([]byte("other!!!!!!"))), 1)
	if _, err := controlplane.Restore(bad); controlplane.CodeOf(err) != controlplane.CodeFixtureStateInvalid {
		t.Fatalf("tampered content restored: %v", err)
	}
	// TakeContents leaves metadata only
	taken := r.TakeContents()
	if !bytes.Equal(taken[ref.SHA256], data) {
		t.Fatalf("taken %v", taken)
	}
	if _, err := r.Blob(ctx, ref.SHA256); controlplane.CodeOf(err) != controlplane.CodeBlobMissing {
		t.Fatalf("blob after TakeContents: %v", err)
	}
}

// TestPutFile: a managed file names a stored blob; its revision advances only when its
// bytes change; expectedSha256 guards against a lost update; the path and scope are
// checked.
func TestPutFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := boardMemory(t)
	a, _ := m.PutBlob(ctx, controlplane.BlobPut{Content: []byte("a")})
	b, _ := m.PutBlob(ctx, controlplane.BlobPut{Content: []byte("b")})
	put := func(in string) (controlplane.BoardResult, error) {
		return m.ApplyBoard(ctx, board(controlplane.BoardPutFile, in, ""))
	}
	res, err := put(`{"path":"notes/a.txt","sha256":"` + a.SHA256 + `","contentType":"text/plain"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := put(`{"path":"notes/a.txt","sha256":"` + b.SHA256 + `","expectedSha256":"` + b.SHA256 + `"}`); controlplane.CodeOf(err) != controlplane.CodeFileRevisionConflict {
		t.Fatalf("stale expectedSha256: %v", err)
	}
	if _, err := put(`{"path":"notes/a.txt","sha256":"` + b.SHA256 + `","expectedSha256":"` + a.SHA256 + `"}`); err != nil {
		t.Fatal(err)
	}
	st, _ := m.Snapshot(ctx)
	if len(st.Files) != 1 || st.Files[0].ID != res.ID || st.Files[0].Revision != 2 || st.Files[0].SHA256 != b.SHA256 || st.Files[0].ContentType != "text/plain" {
		t.Fatalf("files %+v", st.Files[0])
	}
	for in, code := range map[string]controlplane.Code{
		`{"path":"../x","sha256":"` + a.SHA256 + `"}`:                                               controlplane.CodeBoardInputInvalid,
		`{"path":"/abs","sha256":"` + a.SHA256 + `"}`:                                               controlplane.CodeBoardInputInvalid,
		`{"path":"a//b","sha256":"` + a.SHA256 + `"}`:                                               controlplane.CodeBoardInputInvalid,
		`{"path":"x","sha256":"` + strings.Repeat("2", 64) + `"}`:                                   controlplane.CodeBlobMissing,
		`{"path":"x","scope":"agent_home","ownerId":"nobody","sha256":"` + a.SHA256 + `"}`:          controlplane.CodeActorMissing,
		`{"path":"x","scope":"company","ownerId":"fixture-actor-0001","sha256":"` + a.SHA256 + `"}`: controlplane.CodeBoardInputInvalid,
		`{"path":"x","scope":"elsewhere","sha256":"` + a.SHA256 + `"}`:                              controlplane.CodeBoardInputInvalid,
	} {
		if _, err := put(in); controlplane.CodeOf(err) != code {
			t.Errorf("%s: %v, want %s", in, err, code)
		}
	}
	roundTrip(t, m)
}

// TestBoardIdempotency: a keyed board write replays its stored result (same id, one
// comment), refuses the key with another body or kind (409 class), bounds the key, and
// the record survives Serialize/Restore; a failed write remembers nothing.
func TestBoardIdempotency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := boardMemory(t)
	first, err := m.ApplyBoard(ctx, board(controlplane.BoardComment, `{"issueId":"fixture-task-0001","body":"hello"}`, "k-1"))
	if err != nil {
		t.Fatal(err)
	}
	r := roundTrip(t, m)
	for _, p := range []*controlplane.Memory{m, r} {
		again, err := p.ApplyBoard(ctx, board(controlplane.BoardComment, `{"body":"hello","issueId":"fixture-task-0001"}`, "k-1"))
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != first.ID || again.StateRevision != first.StateRevision || len(again.ScheduledWakeIDs) != 1 || again.ScheduledWakeIDs[0] != first.ScheduledWakeIDs[0] {
			t.Fatalf("replay %+v, want %+v", again, first)
		}
		if _, err := p.ApplyBoard(ctx, board(controlplane.BoardComment, `{"issueId":"fixture-task-0001","body":"other"}`, "k-1")); controlplane.CodeOf(err) != controlplane.CodeIdempotencyConflict {
			t.Fatalf("other body: %v", err)
		}
		if _, err := p.ApplyBoard(ctx, board(controlplane.BoardCreateProject, `{"name":"P"}`, "k-1")); controlplane.CodeOf(err) != controlplane.CodeIdempotencyConflict {
			t.Fatalf("other kind: %v", err)
		}
		st, _ := p.Snapshot(ctx)
		n := 0
		for _, c := range st.Comments {
			if c.Body == "hello" {
				n++
			}
		}
		if n != 1 || len(st.Wakes) != 2 {
			t.Fatalf("%d comments hello, %d wakes", n, len(st.Wakes))
		}
	}
	if _, err := m.ApplyBoard(ctx, board(controlplane.BoardComment, `{"issueId":"nope","body":"x"}`, "k-2")); controlplane.CodeOf(err) != controlplane.CodeTaskMissing {
		t.Fatal(err)
	}
	if _, err := m.ApplyBoard(ctx, board(controlplane.BoardComment, `{"issueId":"fixture-task-0001","body":"x"}`, "k-2")); err != nil {
		t.Fatalf("a key whose first use failed: %v", err)
	}
	long := strings.Repeat("k", controlplane.MaxIdempotencyKeyBytes+1)
	if _, err := m.ApplyBoard(ctx, board(controlplane.BoardComment, `{"issueId":"fixture-task-0001","body":"x"}`, long)); controlplane.CodeOf(err) != controlplane.CodeBoardInputInvalid {
		t.Fatalf("long key: %v", err)
	}
	if _, err := m.ApplyBoard(ctx, board(controlplane.BoardComment, `{"issueId":"fixture-task-0001","body":"y"}`, long[1:])); err != nil {
		t.Fatalf("a key of exactly %d bytes: %v", controlplane.MaxIdempotencyKeyBytes, err)
	}
}

func failRun(t *testing.T, m *controlplane.Memory, runID, retryOf string, status controlplane.RunStatus) {
	t.Helper()
	ctx := context.Background()
	in := controlplane.OpenInput{Identity: controlplane.Identity{RunID: runID, SessionID: "s", CompanyID: "c", IssueID: "fixture-task-0001", AgentID: "fixture-actor-0001"},
		BackendKind: "mock", RetryOf: retryOf}
	if err := m.OpenRun(ctx, in); err != nil {
		t.Fatal(err)
	}
	if status == "" {
		return
	}
	ev, _ := json.Marshal(controlplane.NativeEvent{EventID: runID + ":done", RunID: runID, Sequence: 1, Type: "run.completed"})
	if _, err := m.AppendEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	res, _ := json.Marshal(controlplane.NativeRunResult{RunID: runID, Status: status, Summary: "s"})
	if err := m.CompleteRun(ctx, res); err != nil {
		t.Fatal(err)
	}
}

// TestRetryRun: Retry of a failed run schedules one retry wake and returns the task to
// todo; a second Retry is run_already_retried; Retry of a running or succeeded run is
// run_not_retryable; the run opened with retryOf is bound to it (in its context too), and
// only once; an interrupted run is retried like a failed one.
func TestRetryRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := boardMemory(t)
	failRun(t, m, "run-1", "", "")
	retry := func(run string) (controlplane.BoardResult, error) {
		return m.ApplyBoard(ctx, board(controlplane.BoardRetryRun, `{"runId":"`+run+`"}`, ""))
	}
	if _, err := retry("run-1"); controlplane.CodeOf(err) != controlplane.CodeRunNotRetryable {
		t.Fatalf("retry of a running run: %v", err)
	}
	res, _ := json.Marshal(controlplane.NativeRunResult{RunID: "run-1", Status: controlplane.RunFailed})
	ev, _ := json.Marshal(controlplane.NativeEvent{EventID: "e", RunID: "run-1", Sequence: 1, Type: "run.completed"})
	if _, err := m.AppendEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if err := m.CompleteRun(ctx, res); err != nil {
		t.Fatal(err)
	}
	// a run may not claim a retry that was never asked for
	in := controlplane.OpenInput{Identity: controlplane.Identity{RunID: "run-x", SessionID: "s", CompanyID: "c", IssueID: "fixture-task-0001", AgentID: "fixture-actor-0001"},
		BackendKind: "mock", RetryOf: "run-1"}
	if err := m.OpenRun(ctx, in); controlplane.CodeOf(err) != controlplane.CodeRunNotRetryable {
		t.Fatalf("open with an unasked retryOf: %v", err)
	}
	r, err := retry("run-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := retry("run-1"); controlplane.CodeOf(err) != controlplane.CodeRunAlreadyRetried {
		t.Fatalf("second retry: %v", err)
	}
	st, _ := m.Snapshot(ctx)
	var wake *controlplane.ScheduledWake
	for _, w := range st.Wakes {
		if w.ID == r.ID {
			wake = w
		}
	}
	if wake == nil || wake.Reason != controlplane.WakeRetry || string(wake.Payload) != `{"retryOf":"run-1"}` || st.Tasks[0].Status != controlplane.TaskTodo {
		t.Fatalf("wake %+v task %s", wake, st.Tasks[0].Status)
	}
	failRun(t, m, "run-2", "run-1", "")
	rc, err := m.Context(ctx, "run-2")
	if err != nil || rc.RetryOf == nil || *rc.RetryOf != "run-1" {
		t.Fatalf("context of the retry: %+v %v", rc.RetryOf, err)
	}
	st, _ = m.Snapshot(ctx)
	for _, run := range st.Runs {
		if run.ID == "run-1" && (run.RetriedByRunID == nil || *run.RetriedByRunID != "run-2") {
			t.Fatalf("run-1 not bound to its retry: %+v", run)
		}
	}
	// the interrupted retry is retried in turn; a succeeded run is not
	ev, _ = json.Marshal(controlplane.NativeEvent{EventID: "e2", RunID: "run-2", Sequence: 1, Type: "run.completed"})
	m.AppendEvent(ctx, ev)
	res, _ = json.Marshal(controlplane.NativeRunResult{RunID: "run-2", Status: controlplane.RunInterrupted})
	if err := m.CompleteRun(ctx, res); err != nil {
		t.Fatal(err)
	}
	if _, err := retry("run-2"); err != nil {
		t.Fatalf("retry of an interrupted run: %v", err)
	}
	failRun(t, m, "run-3", "run-2", controlplane.RunSucceeded)
	if _, err := retry("run-3"); controlplane.CodeOf(err) != controlplane.CodeRunNotRetryable {
		t.Fatalf("retry of a succeeded run: %v", err)
	}
	roundTrip(t, m)
}

// TestSaveHome: a save applies the run's changes and deletions, records what it verified
// unchanged, keeps a change whose file the board changed during the run as a conflict
// (the board's file untouched), is a duplicate when repeated and refused when repeated
// with other input; the board resolves a conflict only against the current SHA-256.
func TestSaveHome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := boardMemory(t)
	failRun(t, m, "run-1", "", "")
	blob := func(s string) controlplane.BlobRef {
		ref, err := m.PutBlob(ctx, controlplane.BlobPut{Content: []byte(s)})
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	v1, v2, board2, big := blob("v1"), blob("v2"), blob("board"), blob(strings.Repeat("8", 4096))
	const actor = "fixture-actor-0001"
	for path, ref := range map[string]controlplane.BlobRef{"memory.md": v1, "notes/keep.txt": v1, "bin/blob.bin": big, "old.txt": v1} {
		if _, err := m.ApplyBoard(ctx, board(controlplane.BoardPutFile, `{"scope":"agent_home","ownerId":"`+actor+`","path":"`+path+`","sha256":"`+ref.SHA256+`"}`, "")); err != nil {
			t.Fatal(err)
		}
	}
	// during the run the board changes notes/keep.txt
	if _, err := m.ApplyBoard(ctx, board(controlplane.BoardPutFile, `{"scope":"agent_home","ownerId":"`+actor+`","path":"notes/keep.txt","sha256":"`+board2.SHA256+`"}`, "")); err != nil {
		t.Fatal(err)
	}
	save := controlplane.HomeSave{ActorID: actor, RunID: "run-1",
		Changes: []controlplane.HomeChange{
			{Path: "memory.md", OldSHA256: v1.SHA256, NewSHA256: v2.SHA256, ByteSize: 2},
			{Path: "notes/keep.txt", OldSHA256: v1.SHA256, NewSHA256: v2.SHA256, ByteSize: 2},
			{Path: "new.txt", NewSHA256: v1.SHA256, ByteSize: 2},
		},
		Deletions:   []controlplane.HomeDeletion{{Path: "old.txt", OldSHA256: v1.SHA256}},
		Unchanged:   []controlplane.HomeEntry{{Path: "bin/blob.bin", SHA256: big.SHA256, ByteSize: big.ByteSize}},
		CopiedBytes: 4,
	}
	rc, err := m.SaveHome(ctx, save)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Changes) != 2 || len(rc.Deletions) != 1 || len(rc.Unchanged) != 1 || len(rc.ConflictIDs) != 1 || rc.CopiedBytes != 4 {
		t.Fatalf("receipt %+v", rc)
	}
	home := func(mm *controlplane.Memory) map[string]string {
		st, _ := mm.Snapshot(ctx)
		out := map[string]string{}
		for _, f := range st.Files {
			if f.Scope == controlplane.FileScopeAgentHome && f.OwnerID == actor {
				out[f.Path] = f.SHA256
			}
		}
		return out
	}
	h := home(m)
	want := map[string]string{"memory.md": v2.SHA256, "notes/keep.txt": board2.SHA256, "new.txt": v1.SHA256, "bin/blob.bin": big.SHA256}
	if len(h) != len(want) {
		t.Fatalf("home %v, want %v", h, want)
	}
	for p, s := range want {
		if h[p] != s {
			t.Fatalf("home %s = %s, want %s", p, h[p], s)
		}
	}
	if rc.HomeDigest != controlplane.HomeDigest(want) {
		t.Fatal("receipt digest is not the home's")
	}
	st, _ := m.Snapshot(ctx)
	fc := st.FileConflicts[0]
	if fc.Path != "notes/keep.txt" || fc.BaseSHA256 != v1.SHA256 || fc.CurrentSHA256 != board2.SHA256 || fc.IncomingSHA256 != v2.SHA256 || fc.Status != controlplane.ConflictOpen {
		t.Fatalf("conflict %+v", fc)
	}
	if again, err := m.SaveHome(ctx, save); err != nil || again.ID != rc.ID {
		t.Fatalf("repeated save: %+v %v", again, err)
	}
	other := save
	other.CopiedBytes = 5
	if _, err := m.SaveHome(ctx, other); controlplane.CodeOf(err) != controlplane.CodeHomeSaveConflict {
		t.Fatalf("repeated save with other input: %v", err)
	}
	resolve := func(res controlplane.ConflictResolution, current string) error {
		_, err := m.ApplyBoard(ctx, board(controlplane.BoardResolveFileConflict, `{"conflictId":"`+fc.ID+`","resolution":"`+string(res)+`","currentSha256":"`+current+`"}`, ""))
		return err
	}
	if err := resolve(controlplane.ResolveTakeIncoming, v1.SHA256); controlplane.CodeOf(err) != controlplane.CodeFileConflictStale {
		t.Fatalf("resolve against a stale hash: %v", err)
	}
	if err := resolve(controlplane.ResolveTakeIncoming, board2.SHA256); err != nil {
		t.Fatal(err)
	}
	if err := resolve(controlplane.ResolveKeepCurrent, v2.SHA256); controlplane.CodeOf(err) != controlplane.CodeFileConflictResolved {
		t.Fatalf("second resolution: %v", err)
	}
	if home(m)["notes/keep.txt"] != v2.SHA256 {
		t.Fatal("take_incoming did not apply the run's version")
	}
	// bad saves change nothing but a denied decision
	before := home(m)
	for name, bad := range map[string]controlplane.HomeSave{
		"missing blob":  {ActorID: actor, RunID: "run-2", Changes: []controlplane.HomeChange{{Path: "x", NewSHA256: strings.Repeat("3", 64), ByteSize: 1}}},
		"unknown run":   {ActorID: actor, RunID: "nope"},
		"traversal":     {ActorID: actor, RunID: "run-1b", Deletions: []controlplane.HomeDeletion{{Path: "../x"}}},
		"repeated path": {ActorID: actor, RunID: "run-1c", Deletions: []controlplane.HomeDeletion{{Path: "x"}}, Unchanged: []controlplane.HomeEntry{{Path: "x", SHA256: v1.SHA256}}},
	} {
		if _, err := m.SaveHome(ctx, bad); err == nil {
			t.Errorf("%s: saved", name)
		}
	}
	after := home(m)
	if len(after) != len(before) {
		t.Fatal("a refused save changed the home")
	}
	roundTrip(t, m)
}

// TestRegisterDeliverableInlineStoresBytes: inline content becomes a blob the artifact
// downloads from, byte for byte.
func TestRegisterDeliverableInlineStoresBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := boardMemory(t)
	failRun(t, m, "run-1", "", "")
	data := []byte{0, 1, 2, 0xff, 'x'}
	c, _ := json.Marshal(map[string]any{"kind": "register_deliverable", "filename": "d.bin", "contentType": "application/octet-stream", "byteSize": len(data),
		"sha256": controlplane.SHA256Hex(data), "contentBase64": base64.StdEncoding.EncodeToString(data), "title": "D"})
	if _, err := m.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "d", Command: c}); err != nil {
		t.Fatal(err)
	}
	st, _ := m.Snapshot(ctx)
	a := st.Artifacts[0]
	got, err := roundTrip(t, m).Blob(ctx, a.SHA256)
	if err != nil || !bytes.Equal(got, data) || a.ByteSize != int64(len(data)) || a.ContentRef != "sha256:"+a.SHA256 {
		t.Fatalf("artifact %+v bytes %v %v", a, got, err)
	}
}

// FuzzBoardFiles feeds random file operations (put_file, resolve_file_conflict,
// retry_run and a home save of random paths) to a board company: nothing panics, a
// refused operation changes nothing but its one denied decision, every stored file path
// passes ValidFilePath, and Serialize/Restore stays byte-identical.
func FuzzBoardFiles(f *testing.F) {
	for _, seed := range []struct {
		kind        controlplane.BoardKind
		input, path string
	}{
		{controlplane.BoardPutFile, `{"path":"notes/a.txt","sha256":"SHA"}`, "a/b"},
		{controlplane.BoardPutFile, `{"path":"../x","sha256":"SHA","scope":"agent_home","ownerId":"fixture-actor-0001"}`, "../../etc"},
		{controlplane.BoardPutFile, `{"path":"x","sha256":"SHA","expectedSha256":""}`, "x\x00y"},
		{controlplane.BoardResolveFileConflict, `{"conflictId":"fixture-file-conflict-0001","resolution":"take_incoming","currentSha256":""}`, "memory.md"},
		{controlplane.BoardRetryRun, `{"runId":"run-1"}`, "./a"},
	} {
		f.Add(string(seed.kind), seed.input, seed.path)
	}
	f.Fuzz(func(t *testing.T, kind, input, path string) {
		ctx := context.Background()
		m := boardMemory(t)
		ref, err := m.PutBlob(ctx, controlplane.BlobPut{Content: []byte("fuzz")})
		if err != nil {
			t.Fatal(err)
		}
		input = strings.ReplaceAll(input, "SHA", ref.SHA256)
		before, _ := m.Serialize(ctx)
		ds0, _ := m.DecisionRecords(ctx)
		if _, err := m.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardKind(kind), Input: json.RawMessage(input)}); err != nil {
			ds, _ := m.DecisionRecords(ctx)
			if len(ds) != len(ds0)+1 || ds[len(ds)-1].Outcome != "denied" {
				t.Fatalf("a refused %s left %d new decisions", kind, len(ds)-len(ds0))
			}
			if after, _ := m.Serialize(ctx); bytes.Equal(before, after) {
				t.Fatal("the denied decision is missing")
			}
		}
		failRun(t, m, "run-1", "", "")
		_, _ = m.SaveHome(ctx, controlplane.HomeSave{ActorID: "fixture-actor-0001", RunID: "run-1",
			Changes: []controlplane.HomeChange{{Path: path, NewSHA256: ref.SHA256, ByteSize: ref.ByteSize}}})
		st, _ := m.Snapshot(ctx)
		for _, f := range st.Files {
			if msg := controlplane.ValidFilePath(f.Path); msg != "" {
				t.Fatalf("stored path %q: %s", f.Path, msg)
			}
			if strings.Contains("/"+f.Path+"/", "/../") {
				t.Fatalf("stored path %q escapes", f.Path)
			}
		}
		roundTrip(t, m)
	})
}

package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
)

// TestBlobAndFileRoutes: bytes uploaded raw (binary, NUL, invalid UTF-8) come back
// byte for byte with their SHA-256 as ETag and Content-Digest; Range requests answer
// 206 with exactly the range, If-None-Match 304, an unsatisfiable range 416; a managed
// file lists and downloads; an upload over api.MaxFileBytes is 413.
func TestBlobAndFileRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	co := "/api/companies/" + w.co.ID()
	data := []byte("\x00\x01binary\xff\xfe\x00tail")
	status, _, b, _ := callHeaders(t, w.base, "POST", co+"/blobs", w.boardTk, data, map[string]string{"Content-Type": "application/octet-stream"})
	var ref api.BlobRef
	if status != 201 || json.Unmarshal(b, &ref) != nil || ref.SHA256 != controlplane.SHA256Hex(data) || ref.ByteSize != int64(len(data)) {
		t.Fatalf("upload: %d %s", status, b)
	}
	status, _, got, h := callHeaders(t, w.base, "GET", co+"/blobs/"+ref.SHA256, w.boardTk, nil, nil)
	if status != 200 || !bytes.Equal(got, data) || h.Get("ETag") != `"`+ref.SHA256+`"` || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("download: %d %q %v", status, got, h)
	}
	sum := func(b []byte) string {
		raw, _ := hex.DecodeString(controlplane.SHA256Hex(b))
		return "sha-256=:" + base64.StdEncoding.EncodeToString(raw) + ":"
	}
	if h.Get("Content-Digest") != sum(data) {
		t.Fatalf("Content-Digest %q", h.Get("Content-Digest"))
	}
	status, _, got, h = callHeaders(t, w.base, "GET", co+"/blobs/"+ref.SHA256, w.boardTk, nil, map[string]string{"Range": "bytes=2-7"})
	if status != 206 || !bytes.Equal(got, data[2:8]) || h.Get("Content-Range") != fmt.Sprintf("bytes 2-7/%d", len(data)) {
		t.Fatalf("range: %d %q %q", status, got, h.Get("Content-Range"))
	}
	if status, _, _, _ := callHeaders(t, w.base, "GET", co+"/blobs/"+ref.SHA256, w.boardTk, nil, map[string]string{"If-None-Match": `"` + ref.SHA256 + `"`}); status != 304 {
		t.Fatalf("If-None-Match: %d", status)
	}
	if status, _, _, _ := callHeaders(t, w.base, "GET", co+"/blobs/"+ref.SHA256, w.boardTk, nil, map[string]string{"Range": "bytes=1000-2000"}); status != 416 {
		t.Fatalf("unsatisfiable range: %d", status)
	}
	for path, code := range map[string]string{
		co + "/blobs/" + strings.Repeat("0", 64): "blob_missing",
		co + "/blobs/ABC":                        "blob_invalid",
		co + "/files/nope/content":               "file_missing",
		co + "/artifacts/nope/content":           "file_missing",
	} {
		if _, got, _ := call(t, w.base, "GET", path, w.boardTk, nil); got != code {
			t.Errorf("GET %s: %s, want %s", path, got, code)
		}
	}
	// a managed file
	res, err := w.co.PutFile(ctx, api.PutFileRequest{Path: "docs/spec.bin", SHA256: ref.SHA256, ContentType: "application/x-test"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := w.co.Files(ctx, controlplane.FileScopeCompany, "")
	if err != nil || len(list.Files) != 1 || list.Files[0].ID != res.ID || list.Files[0].Path != "docs/spec.bin" {
		t.Fatalf("files %+v %v", list, err)
	}
	d, err := w.co.FileContent(ctx, res.ID)
	if err != nil || !bytes.Equal(d.Bytes, data) || d.ContentType != "application/x-test" {
		t.Fatalf("file content %+v %v", d, err)
	}
	stale := strings.Repeat("a", 64)
	if _, err := w.co.PutFile(ctx, api.PutFileRequest{Path: "docs/spec.bin", SHA256: ref.SHA256, ExpectedSHA256: &stale}); controlplane.CodeOf(err) != controlplane.CodeFileRevisionConflict {
		t.Fatalf("stale expectedSha256: %v", err)
	}
	big := make([]byte, api.MaxFileBytes+1)
	if status, code, _ := call(t, w.base, "POST", co+"/blobs", w.boardTk, big); status != 413 || code != "request_too_large" {
		t.Fatalf("oversized upload: %d %s", status, code)
	}
	if _, err := w.co.PutBlob(ctx, controlplane.BlobPut{Content: big[:api.MaxFileBytes]}); err != nil {
		t.Fatalf("an upload of exactly %d bytes: %v", api.MaxFileBytes, err)
	}
}

// TestDeliverableBytesVerified: an agent uploads bytes and registers them by SHA-256,
// or sends them inline; the artifact's download returns exactly those bytes. A
// declared digest or size that is not the bytes' is artifact_digest_mismatch (400), a
// SHA-256 without bytes artifact_content_missing (404). An agent reads its own home and
// the company's files but not another agent's home.
func TestDeliverableBytesVerified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	agent := client.New(w.base, w.runTok, nil).Company(w.co.ID())
	data := bytes.Repeat([]byte{0xde, 0xad, 0, 'x'}, 1000)
	ref, err := agent.PutBlob(ctx, controlplane.BlobPut{Content: data})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(key string, fields map[string]any) (controlplane.CommandResult, error) {
		c := map[string]any{"kind": "register_deliverable", "filename": "out.bin", "contentType": "application/octet-stream", "title": "Out"}
		for k, v := range fields {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		return agent.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: key, Command: b})
	}
	if _, err := apply("d1", map[string]any{"sha256": ref.SHA256, "byteSize": ref.ByteSize}); err != nil {
		t.Fatal(err)
	}
	inline := []byte("inline \x00 bytes")
	if _, err := apply("d2", map[string]any{"sha256": controlplane.SHA256Hex(inline), "byteSize": len(inline), "contentBase64": base64.StdEncoding.EncodeToString(inline)}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		fields map[string]any
		code   controlplane.Code
	}{
		"wrong size":   {map[string]any{"sha256": ref.SHA256, "byteSize": ref.ByteSize + 1}, controlplane.CodeArtifactDigestMismatch},
		"wrong digest": {map[string]any{"sha256": ref.SHA256, "byteSize": len(inline), "contentBase64": base64.StdEncoding.EncodeToString(inline)}, controlplane.CodeArtifactDigestMismatch},
		"no bytes":     {map[string]any{"sha256": strings.Repeat("5", 64), "byteSize": 1}, controlplane.CodeArtifactContentMissing},
		"zero hash":    {map[string]any{"sha256": strings.Repeat("0", 64), "byteSize": 0}, controlplane.CodeArtifactContentMissing},
		// Records that cannot lie: a name that is not a relative, clean path, a
		// contentRef that does not name the stored bytes.
		"name escapes":      {map[string]any{"filename": "../escape.txt", "sha256": ref.SHA256, "byteSize": ref.ByteSize}, controlplane.CodeArtifactInvalid},
		"name absolute":     {map[string]any{"filename": "/etc/passwd-x", "sha256": ref.SHA256, "byteSize": ref.ByteSize}, controlplane.CodeArtifactInvalid},
		"name CR LF":        {map[string]any{"filename": "a\r\nb.txt", "sha256": ref.SHA256, "byteSize": ref.ByteSize}, controlplane.CodeArtifactInvalid},
		"name too long":     {map[string]any{"filename": strings.Repeat("n", 5000), "sha256": ref.SHA256, "byteSize": ref.ByteSize}, controlplane.CodeArtifactInvalid},
		"name not clean":    {map[string]any{"filename": "out/./x.bin", "sha256": ref.SHA256, "byteSize": ref.ByteSize}, controlplane.CodeArtifactInvalid},
		"contentRef other":  {map[string]any{"sha256": ref.SHA256, "byteSize": ref.ByteSize, "contentRef": "sha256:" + controlplane.SHA256Hex(inline)}, controlplane.CodeArtifactInvalid},
		"contentRef a path": {map[string]any{"sha256": ref.SHA256, "byteSize": ref.ByteSize, "contentRef": "out.bin"}, controlplane.CodeArtifactInvalid},
	} {
		if _, err := apply("bad-"+name, c.fields); controlplane.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
	if _, err := apply("d3", map[string]any{"filename": "out/report.md", "sha256": ref.SHA256, "byteSize": ref.ByteSize, "contentRef": "sha256:" + ref.SHA256}); err != nil {
		t.Fatalf("a nested name and the contentRef of the stored bytes: %v", err)
	}
	bad, _ := json.Marshal(map[string]any{"runId": "run-1", "idempotencyKey": "raw", "command": map[string]any{"kind": "register_deliverable",
		"filename": "../escape.txt", "contentType": "text/plain", "title": "T", "sha256": ref.SHA256, "byteSize": ref.ByteSize}})
	if status, code, body := call(t, w.base, "POST", "/api/companies/"+w.co.ID()+"/commands", w.runTok, bad); status != 400 || code != "artifact_invalid" || !strings.Contains(string(body), "artifact filename") {
		t.Errorf("POST /commands with ../escape.txt: %d %s %s", status, code, body)
	}
	st, err := w.co.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Artifacts) != 3 {
		t.Fatalf("%d artifacts", len(st.Artifacts))
	}
	for i, want := range [][]byte{data, inline} {
		for _, who := range []*client.Company{w.co, agent} {
			d, err := who.ArtifactContent(ctx, st.Artifacts[i].ID)
			if err != nil || !bytes.Equal(d.Bytes, want) || d.SHA256 != st.Artifacts[i].SHA256 {
				t.Fatalf("artifact %d: %d bytes %v", i, len(d.Bytes), err)
			}
		}
	}
	// what an agent may read
	other, err := w.co.CreateAgent(ctx, api.CreateAgentRequest{Name: "Other", Role: "engineer"})
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := w.co.PutBlob(ctx, controlplane.BlobPut{Content: []byte("mine")})
	theirs, _ := w.co.PutBlob(ctx, controlplane.BlobPut{Content: []byte("theirs")})
	own, _ := w.co.PutFile(ctx, api.PutFileRequest{Scope: controlplane.FileScopeAgentHome, OwnerID: w.agent, Path: "memory.md", SHA256: mine.SHA256})
	foreign, _ := w.co.PutFile(ctx, api.PutFileRequest{Scope: controlplane.FileScopeAgentHome, OwnerID: other.ID, Path: "memory.md", SHA256: theirs.SHA256})
	list, err := agent.Files(ctx, "", "")
	if err != nil || len(list.Files) != 1 || list.Files[0].ID != own.ID {
		t.Fatalf("the agent lists %+v %v, want its own home file only", list.Files, err)
	}
	if _, err := agent.FileContent(ctx, own.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.FileContent(ctx, foreign.ID); controlplane.CodeOf(err) != controlplane.CodeForbidden {
		t.Fatalf("another agent's home file: %v", err)
	}
	if _, err := agent.Blob(ctx, theirs.SHA256); controlplane.CodeOf(err) != controlplane.CodeForbidden {
		t.Fatalf("another agent's blob: %v", err)
	}
	if _, err := agent.Files(ctx, controlplane.FileScopeAgentHome, other.ID); controlplane.CodeOf(err) != controlplane.CodeForbidden {
		t.Fatalf("another agent's home listing: %v", err)
	}
}

// TestBoardWritesIdempotent: every board write route takes an Idempotency-Key: a
// replay answers the same status and body (same ids) and writes nothing, also after a
// restart; the same key with another body or on another route is 409
// idempotency_conflict; a key of 256 bytes is taken, 257 refused (400); a route that
// takes no key, and an agent token, refuse the header.
func TestBoardWritesIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	co := "/api/companies/" + w.co.ID()
	agent := client.New(w.base, w.runTok, nil).Company(w.co.ID())
	// an interaction and an approval to answer
	for key, c := range map[string]string{
		"q": `{"kind":"request_human_input","interactionKind":"questions","title":"Q","prompt":"?","continuationPolicy":"wake_assignee"}`,
	} {
		if _, err := agent.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: key, Command: json.RawMessage(c)}); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := w.co.Snapshot(ctx)
	interaction := st.Interactions[0].ID
	blob, _ := w.co.PutBlob(ctx, controlplane.BlobPut{Content: []byte("file bytes")})
	type write struct {
		name, method, path, body, other string
		raw                             bool
	}
	writes := []write{
		{"agent", "POST", co + "/agents", `{"name":"A","role":"engineer"}`, `{"name":"B","role":"engineer"}`, false},
		{"project", "POST", co + "/projects", `{"name":"P"}`, `{"name":"Q"}`, false},
		{"environment", "POST", co + "/environments", `{"name":"e","kind":"docker"}`, `{"name":"f","kind":"docker"}`, false},
		{"issue", "POST", co + "/issues", `{"title":"T","assigneeActorId":"` + w.agent + `"}`, `{"title":"U"}`, false},
		{"comment", "POST", co + "/issues/" + w.issue + "/comments", `{"body":"once"}`, `{"body":"twice"}`, false},
		{"answer", "POST", co + "/interactions/" + interaction + "/resolve", `{"outcome":"answered","result":{"a":1}}`, `{"outcome":"answered","result":{"a":2}}`, false},
		{"file", "PUT", co + "/files", `{"path":"f.txt","sha256":"` + blob.SHA256 + `"}`, `{"path":"g.txt","sha256":"` + blob.SHA256 + `"}`, false},
		{"upload", "POST", co + "/blobs", "bytes one", "bytes two", true},
	}
	first := map[string][]byte{}
	for i, wr := range writes {
		key := fmt.Sprintf("key-%d-%s", i, wr.name)
		s1, _, b1, _ := callHeaders(t, w.base, wr.method, wr.path, w.boardTk, []byte(wr.body), map[string]string{api.IdempotencyKeyHeader: key})
		if s1 >= 300 {
			t.Fatalf("%s: %d %s", wr.name, s1, b1)
		}
		before, _ := w.co.Serialize(ctx)
		s2, _, b2, _ := callHeaders(t, w.base, wr.method, wr.path, w.boardTk, []byte(wr.body), map[string]string{api.IdempotencyKeyHeader: key})
		if s2 != s1 || !bytes.Equal(b1, b2) {
			t.Fatalf("%s replay: %d %s, want %d %s", wr.name, s2, b2, s1, b1)
		}
		after, _ := w.co.Serialize(ctx)
		if countNonDecision(t, before) != countNonDecision(t, after) {
			t.Fatalf("%s: the replay wrote more than its decision", wr.name)
		}
		if s, code, b, _ := callHeaders(t, w.base, wr.method, wr.path, w.boardTk, []byte(wr.other), map[string]string{api.IdempotencyKeyHeader: key}); s != 409 || code != "idempotency_conflict" {
			t.Fatalf("%s with another body: %d %s", wr.name, s, b)
		}
		first[key] = b1
	}
	// a key reused on another route
	if s, code, _, _ := callHeaders(t, w.base, "POST", co+"/projects", w.boardTk, []byte(`{"name":"P"}`), map[string]string{api.IdempotencyKeyHeader: "key-4-comment"}); s != 409 || code != "idempotency_conflict" {
		t.Fatalf("a key reused on another route: %d %s", s, code)
	}
	// bounds and refusals
	at := strings.Repeat("k", api.MaxIdempotencyKeyBytes)
	if s, _, b, _ := callHeaders(t, w.base, "POST", co+"/projects", w.boardTk, []byte(`{"name":"Long"}`), map[string]string{api.IdempotencyKeyHeader: at}); s != 201 {
		t.Fatalf("a %d-byte key: %d %s", len(at), s, b)
	}
	for name, c := range map[string]struct {
		method, path, token, key string
		code                     string
	}{
		"257 bytes":       {"POST", co + "/projects", w.boardTk, at + "k", "invalid_request"},
		"empty":           {"POST", co + "/projects", w.boardTk, " ", "idempotency_key_invalid"},
		"no key route":    {"POST", co + "/start", w.boardTk, "k", "idempotency_key_invalid"},
		"agent token":     {"POST", co + "/blobs", w.runTok, "k", "idempotency_key_invalid"},
		"agent commands":  {"POST", co + "/commands", w.runTok, "k", "idempotency_key_invalid"},
		"secrets (board)": {"POST", co + "/secrets", w.boardTk, "k", "idempotency_key_invalid"},
	} {
		if s, code, b, _ := callHeaders(t, w.base, c.method, c.path, c.token, []byte(`{"name":"x"}`), map[string]string{api.IdempotencyKeyHeader: c.key}); s != 400 || code != c.code {
			t.Errorf("%s: %d %s %s, want 400 %s", name, s, code, b, c.code)
		}
	}
	// after a restart every key replays its first response
	if _, err := w.in.restart(ctx); err != nil {
		t.Fatal(err)
	}
	for i, wr := range writes {
		key := fmt.Sprintf("key-%d-%s", i, wr.name)
		s, _, b, _ := callHeaders(t, w.in.run.URL, wr.method, wr.path, w.in.run.BoardToken(), []byte(wr.body), map[string]string{api.IdempotencyKeyHeader: key})
		if s >= 300 || !bytes.Equal(b, first[key]) {
			t.Fatalf("%s after restart: %d %s, want %s", wr.name, s, b, first[key])
		}
	}
	st, _ = w.in.board().Company(w.co.ID()).Snapshot(ctx)
	n := 0
	for _, c := range st.Comments {
		if c.Body == "once" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d comments \"once\", want exactly 1", n)
	}
}

// countNonDecision counts the entities of a serialized state besides its decision
// records and revision (a replay records one duplicate decision).
func countNonDecision(t *testing.T, state []byte) int {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(state, &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	for k, v := range m {
		if k == "decisions" || k == "revision" || k == "clock" || k == "counters" {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(v, &list) == nil {
			n += len(list)
		}
	}
	return n
}

// TestRetryRoute: the board Retry of a failed run answers its retry wake; replayed with
// its key the same; a second Retry is 409 run_already_retried; a Retry of a running run
// is 409 run_not_retryable.
func TestRetryRoute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	co := "/api/companies/" + w.co.ID()
	if s, code, _ := call(t, w.base, "POST", co+"/runs/run-1/retry", w.boardTk, nil); s != 409 || code != "run_not_retryable" {
		t.Fatalf("retry of a running run: %d %s", s, code)
	}
	ev, _ := json.Marshal(controlplane.NativeEvent{EventID: "e", RunID: "run-1", Sequence: 1, Type: "run.completed"})
	if _, err := w.co.AppendEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	res, _ := json.Marshal(controlplane.NativeRunResult{RunID: "run-1", Status: controlplane.RunFailed, Summary: "killed"})
	if err := w.co.CompleteRun(ctx, res); err != nil {
		t.Fatal(err)
	}
	r1, err := w.co.RetryRun(ctx, "run-1", client.IdempotencyKey("retry"))
	if err != nil {
		t.Fatal(err)
	}
	if r2, err := w.co.RetryRun(ctx, "run-1", client.IdempotencyKey("retry")); err != nil || r2.ID != r1.ID {
		t.Fatalf("replayed retry %+v %v", r2, err)
	}
	if _, err := w.co.RetryRun(ctx, "run-1"); controlplane.CodeOf(err) != controlplane.CodeRunAlreadyRetried {
		t.Fatalf("second retry: %v", err)
	}
	if _, err := w.co.RetryRun(ctx, "nope"); controlplane.CodeOf(err) != controlplane.CodeRunMissing {
		t.Fatalf("retry of no run: %v", err)
	}
}

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server"
)

// call sends a raw request and returns the status and the decoded error code ("" on
// success bodies).
func call(t *testing.T, base, method, path, token string, body []byte) (int, string, []byte) {
	t.Helper()
	status, code, b, _ := callHeaders(t, base, method, path, token, body, nil)
	return status, code, b
}

// callHeaders is call with request headers, returning the response headers too.
func callHeaders(t *testing.T, base, method, path, token string, body []byte, headers map[string]string) (int, string, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e api.Error
	if resp.StatusCode >= 400 && resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		if err := json.Unmarshal(b, &e); err != nil || e.Code == "" {
			t.Fatalf("%s %s: status %d with a non-error body %q", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, string(e.Code), b, resp.Header
}

const secretValue = "sk-proj-AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH1234"

// boardWorld is a board company with a secret, an agent, an issue and an open run.
type boardWorld struct {
	in      *instance
	co      *client.Company
	ref     api.SecretRef
	agent   string
	issue   string
	runTok  string
	base    string
	boardTk string
}

func newBoardWorld(t *testing.T) *boardWorld {
	t.Helper()
	ctx := context.Background()
	in := startInstance(t, server.Options{})
	c := in.board()
	co, err := c.CreateCompany(ctx, "Acme", "ACME")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := co.CreateSecret(ctx, api.CreateSecretRequest{Name: "openai", Key: "OPENAI_API_KEY", Value: secretValue})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"command": "codex", "env": map[string]any{"OPENAI_API_KEY": ref}})
	agent, err := co.CreateAgent(ctx, api.CreateAgentRequest{Name: "Eng", Role: "engineer", AdapterConfig: cfg,
		CapabilityGrants: []string{"control_plane:interactions", "governance:approvals:request"}})
	if err != nil {
		t.Fatal(err)
	}
	issue, err := co.CreateIssue(ctx, api.CreateIssueRequest{Title: "Fix the bug", AssigneeActorID: &agent.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv := in.run.Server
	if _, err := srv.OpenRun(ctx, co.ID(), controlplane.OpenInput{Identity: controlplane.Identity{RunID: "run-1", SessionID: "s-1",
		CompanyID: co.ID(), IssueID: issue.ID, AgentID: agent.ID}, BackendKind: "codex"}); err != nil {
		t.Fatal(err)
	}
	return &boardWorld{in: in, co: co, ref: ref, agent: agent.ID, issue: issue.ID, runTok: srv.MintAgentToken(co.ID(), agent.ID, "run-1"),
		base: in.run.URL, boardTk: srv.BoardToken()}
}

// TestRunDocuments: GET runs/{run}/documents lists the documents of the run's active
// task only, with every revision, for the run's agent token.
func TestRunDocuments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	agentCo, err := client.DialAgent(ctx, w.base+"/api/companies/"+w.co.ID(), w.runTok)
	if err != nil {
		t.Fatal(err)
	}
	for i, cmd := range []string{
		`{"kind":"write_document","key":"plan","title":"Plan","body":"v1","baseRevisionId":null}`,
		`{"kind":"write_document","key":"notes","title":"Notes","body":"n1","baseRevisionId":null}`,
	} {
		if _, err := agentCo.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: fmt.Sprint("k", i), Command: json.RawMessage(cmd)}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := agentCo.(*client.Company).RunDocuments(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if list.TaskID != w.issue || len(list.Documents) != 2 || list.Documents[0].Key != "plan" || list.Documents[1].Key != "notes" ||
		len(list.Documents[0].Revisions) != 1 || list.Documents[0].Revisions[0].Body != "v1" {
		t.Fatalf("documents of run-1 = %+v", list)
	}
}

// TestBoardOperations walks the board: local environment, secrets, agents, issues
// with wakes, comments, an interaction and an approval resolved by the board.
func TestBoardOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	co := w.co

	st, err := co.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Environments) != 1 || st.Environments[0].Kind != "local" || len(st.Tasks) != 1 || len(st.Actors) != 1 {
		t.Fatalf("board company: %d environments, %d tasks, %d actors; want 1 local, 1, 1", len(st.Environments), len(st.Tasks), len(st.Actors))
	}
	_, err = co.CreateEnvironment(ctx, api.CreateEnvironmentRequest{Name: "second", Kind: "local"})
	if controlplane.CodeOf(err) != "environment_conflict" {
		t.Fatalf("second local environment: %v", err)
	}
	status, code, _ := call(t, w.base, "POST", "/api/companies/"+co.ID()+"/environments", w.boardTk, []byte(`{"name":"again","kind":"local"}`))
	if status != 409 || code != "environment_conflict" {
		t.Fatalf("second local environment over HTTP: %d %s, want 409 environment_conflict", status, code)
	}
	if _, err := co.CreateProject(ctx, api.CreateProjectRequest{Name: "Core"}); err != nil {
		t.Fatal(err)
	}
	wakes, err := co.Wakes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(wakes) != 1 || wakes[0].Reason != "issue_assigned" || wakes[0].ActorID != w.agent {
		t.Fatalf("wakes after an assigned issue: %+v", wakes)
	}
	res, err := co.Comment(ctx, w.issue, "please also add a test")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ScheduledWakeIDs) != 1 {
		t.Fatalf("comment scheduled %v, want one issue_commented wake", res.ScheduledWakeIDs)
	}
	wakes, _ = co.Wakes(ctx, "")
	if wakes[len(wakes)-1].Reason != "issue_commented" {
		t.Fatalf("last wake %+v, want issue_commented", wakes[len(wakes)-1])
	}

	// the agent asks for input and approval with its run token; the board resolves
	agent := client.New(w.base, w.runTok, nil).Company(co.ID())
	r1, err := agent.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "k1",
		Command: json.RawMessage(`{"kind":"request_human_input","interactionKind":"confirmation","title":"Ship?","prompt":"OK to ship?","continuationPolicy":"wake_assignee"}`)})
	if err != nil {
		t.Fatal(err)
	}
	interaction := strings.TrimPrefix(r1.EntityRefs[0], "interaction:")
	if _, err := co.ResolveInteraction(ctx, interaction, api.ResolveInteractionRequest{Outcome: "accepted"}); err != nil {
		t.Fatal(err)
	}
	_, err = co.ResolveInteraction(ctx, interaction, api.ResolveInteractionRequest{Outcome: "accepted"})
	if controlplane.CodeOf(err) != "interaction_already_resolved" {
		t.Fatalf("resolving twice: %v", err)
	}
	r2, err := agent.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "k2",
		Command: json.RawMessage(`{"kind":"request_approval","approvalType":"deploy"}`)})
	if err != nil {
		t.Fatal(err)
	}
	approval := ""
	for _, ref := range r2.EntityRefs {
		if id, ok := strings.CutPrefix(ref, "approval:"); ok {
			approval = id
		}
	}
	if _, err := co.DecideApproval(ctx, approval, api.DecideApprovalRequest{Decision: "approved", Note: "go"}); err != nil {
		t.Fatal(err)
	}
	ds, err := co.DecisionRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var boardOps []string
	for _, d := range ds {
		if strings.HasPrefix(d.Operation, "board_") {
			boardOps = append(boardOps, d.Operation+"/"+d.Outcome)
		}
	}
	want := "board_create_environment/allowed board_create_agent/allowed board_create_issue/allowed board_create_environment/denied board_create_environment/denied board_create_project/allowed board_comment/allowed board_resolve_interaction/allowed board_resolve_interaction/denied board_decide_approval/allowed"
	if strings.Join(boardOps, " ") != want {
		t.Fatalf("board decisions:\n%s\nwant:\n%s", strings.Join(boardOps, " "), want)
	}
}

// TestSecretsNeverLeak: the value is sealed (not in any response, state, decision or
// database file) and only ResolveSecret returns it; raw credentials are refused.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	if cs := w.in.run.Companies(); len(cs) != 1 || cs[0] != w.co.ID() {
		t.Fatalf("Companies() = %v", cs)
	}
	got, err := w.in.run.ResolveSecret(ctx, w.co.ID(), w.ref)
	if err != nil || got != secretValue {
		t.Fatalf("ResolveSecret: %q, %v", got, err)
	}
	if _, err := w.in.run.ResolveSecret(ctx, "company-9999", w.ref); controlplane.CodeOf(err) != "secret_missing" {
		t.Fatalf("another company's secret: %v, want secret_missing", err)
	}
	bad := map[string]string{
		"raw value under a credential key": `{"name":"a","role":"r","adapterConfig":{"env":{"OPENAI_API_KEY":"hello"}}}`,
		"secret-shaped value":              `{"name":"a","role":"r","adapterConfig":{"args":["--key","` + secretValue + `"]}}`,
		"unknown secret":                   `{"name":"a","role":"r","adapterConfig":{"apiKey":{"type":"secret_ref","secretId":"secret-nope","version":"latest"}}}`,
		"number as a token":                `{"name":"a","role":"r","adapterConfig":{"token":12345}}`,
	}
	for name, body := range bad {
		status, code, _ := call(t, w.base, "POST", "/api/companies/"+w.co.ID()+"/agents", w.boardTk, []byte(body))
		if status != 400 || code != "secret_ref_required" {
			t.Errorf("%s: %d %s, want 400 secret_ref_required", name, status, code)
		}
	}
	status, code, _ := call(t, w.base, "POST", "/api/companies/"+w.co.ID()+"/environments", w.boardTk,
		[]byte(`{"name":"cloud","kind":"ssh","config":{"password":"hunter2"}}`))
	if status != 400 || code != "secret_ref_required" {
		t.Errorf("environment with a raw password: %d %s", status, code)
	}
	var everything []byte
	for _, p := range []string{"/state", "/snapshot", "/decisions", "/wakes"} {
		_, _, b := call(t, w.base, "GET", "/api/companies/"+w.co.ID()+p, w.boardTk, nil)
		everything = append(everything, b...)
	}
	if bytes.Contains(everything, []byte(secretValue)) || !bytes.Contains(everything, []byte(w.ref.SecretID)) {
		t.Fatal("the secret value leaked into a response, or the reference is missing from the state")
	}
	if err := w.in.run.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	w.in.run, err = server.Start(ctx, w.in.opts, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.in.run.ResolveSecret(ctx, w.co.ID(), w.ref); err != nil || got != secretValue {
		t.Fatalf("ResolveSecret after restart: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(w.in.opts.Home, "instance.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secretValue)) {
			t.Fatalf("%s holds the secret value in clear", filepath.Base(f))
		}
	}
}

// TestAuthAndBadInput: missing, forged and foreign tokens; malformed bodies; path
// traversal; oversized bodies.
func TestAuthAndBadInput(t *testing.T) {
	t.Parallel()
	w := newBoardWorld(t)
	srv := w.in.run.Server
	co := "/api/companies/" + w.co.ID()
	other, err := w.in.board().CreateCompany(context.Background(), "Other", "OTH")
	if err != nil {
		t.Fatal(err)
	}
	forged := w.runTok[:len(w.runTok)-4] + "AAAA"
	cmd := []byte(`{"runId":"run-1","idempotencyKey":"x","command":{"kind":"report_progress","body":"hi"}}`)
	big := append([]byte(`{"name":"`), bytes.Repeat([]byte("a"), api.MaxBodyBytes+10)...)
	big = append(big, `","role":"r"}`...)
	cases := []struct {
		name, method, path, token string
		body                      []byte
		status                    int
		code                      string
	}{
		{"no token", "GET", "/api/companies", "", nil, 401, "unauthorized"},
		{"wrong board token", "GET", "/api/companies", "nope", nil, 401, "unauthorized"},
		{"forged agent token", "GET", co + "/runs/run-1/context", forged, nil, 401, "unauthorized"},
		{"agent on a board route", "GET", co + "/state", w.runTok, nil, 403, "forbidden"},
		{"agent on another company", "GET", "/api/companies/" + other.ID() + "/runs/run-1/context", w.runTok, nil, 403, "forbidden"},
		{"token of a run that does not exist", "GET", co + "/runs/run-2/context", srv.MintAgentToken(w.co.ID(), w.agent, "run-2"), nil, 401, "unauthorized"},
		{"agent token for another actor", "GET", co + "/runs/run-1/context", srv.MintAgentToken(w.co.ID(), "actor-x", "run-1"), nil, 403, "forbidden"},
		{"agent command with the token of a run that does not exist", "POST", co + "/commands", srv.MintAgentToken(w.co.ID(), w.agent, "run-9"), cmd, 401, "unauthorized"},
		{"agent's own context", "GET", co + "/runs/run-1/context", w.runTok, nil, 200, ""},
		{"agent's own documents", "GET", co + "/runs/run-1/documents", w.runTok, nil, 200, ""},
		{"agent documents of another run", "GET", co + "/runs/run-2/documents", w.runTok, nil, 403, "forbidden"},
		{"documents with the token of an unknown run", "GET", co + "/runs/run-2/documents", srv.MintAgentToken(w.co.ID(), w.agent, "run-2"), nil, 401, "unauthorized"},
		{"agent token of another company's run", "GET", co + "/runs/run-1/context", srv.MintAgentToken(other.ID(), w.agent, "run-1"), nil, 403, "forbidden"},
		{"agent command", "POST", co + "/commands", w.runTok, cmd, 200, ""},
		{"malformed JSON", "POST", co + "/issues", w.boardTk, []byte(`{"title":`), 400, "invalid_request"},
		{"wrong type", "POST", co + "/issues", w.boardTk, []byte(`{"title":5}`), 400, "invalid_request"},
		{"unknown field", "POST", co + "/issues", w.boardTk, []byte(`{"title":"t","owner":"me"}`), 400, "invalid_request"},
		{"trailing data", "POST", co + "/issues", w.boardTk, []byte(`{"title":"t"} {}`), 400, "invalid_request"},
		{"missing title", "POST", co + "/issues", w.boardTk, []byte(`{}`), 400, "board_input_invalid"},
		{"unknown assignee", "POST", co + "/issues", w.boardTk, []byte(`{"title":"t","assigneeActorId":"nobody"}`), 404, "actor_missing"},
		{"oversized body", "POST", co + "/agents", w.boardTk, big, 413, "request_too_large"},
		{"traversal in a company id", "GET", "/api/companies/..%2F..%2Fetc/state", w.boardTk, nil, 400, "invalid_request"},
		{"dot-dot run id", "GET", co + "/runs/..%2Frun-1/context", w.boardTk, nil, 400, "invalid_request"},
		{"unknown company", "GET", "/api/companies/company-9999/state", w.boardTk, nil, 404, "company_missing"},
		{"unknown route", "GET", "/api/nothing", w.boardTk, nil, 404, "not_found"},
		{"unknown route without a token", "GET", "/api/nothing", "", nil, 401, "unauthorized"},
		{"unknown route with a forged token", "POST", "/nothing", forged, nil, 401, "unauthorized"},
		{"unknown route with an agent token", "GET", "/api/nothing", w.runTok, nil, 404, "not_found"},
		{"bad company prefix", "POST", "/api/companies", w.boardTk, []byte(`{"name":"x","issuePrefix":"lower"}`), 400, "invalid_request"},
		{"invalid fixture state", "POST", "/api/companies", w.boardTk, []byte(`{"state":{"schema":"nope"}}`), 400, "fixture_state_invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, code, _ := call(t, w.base, c.method, c.path, c.token, c.body)
			if status != c.status || code != c.code {
				t.Fatalf("%s %s: %d %q, want %d %q", c.method, c.path, status, code, c.status, c.code)
			}
		})
	}
}

// TestOpenAPIMatchesRoutes: the document /openapi.json serves and the routes the
// server's muxes serve are the same set, for Start (board and agent routes) and for
// Serve (plus the heartbeat routes): every documented operation is routed (never the
// catch-all 404 not_found, never 405) and answers with a status and body its
// responses document; every served pattern besides the document itself and the
// catch-all is documented; every schema reference resolves.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	t.Run("Start", func(t *testing.T) {
		t.Parallel()
		w := newBoardWorld(t)
		ref, err := w.co.PutBlob(context.Background(), controlplane.BlobPut{Content: []byte("bytes")})
		if err != nil {
			t.Fatal(err)
		}
		checkOpenAPI(t, w.base, w.boardTk, server.ServedPatterns(w.in.run), map[string]string{
			"{company}": w.co.ID(), "{run}": "run-1", "{issue}": w.issue, "{interaction}": "x", "{approval}": "y",
			"{sha256}": ref.SHA256, "{file}": "x", "{artifact}": "x", "{conflict}": "x", "{conversation}": "x"})
	})
	t.Run("Serve", func(t *testing.T) {
		t.Parallel()
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		// a company without an assigned issue: no wake, so the runner launches nothing
		sv, err := server.Serve(context.Background(), server.Options{Home: t.TempDir()}, "127.0.0.1:0", server.RunnerOptions{Executable: exe})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sv.Shutdown(context.Background()) })
		co, err := client.New(sv.URL, sv.BoardToken(), nil).CreateCompany(context.Background(), "Acme", "ACME")
		if err != nil {
			t.Fatal(err)
		}
		checkOpenAPI(t, sv.URL, sv.BoardToken(), server.ServedPatterns(sv.Running), map[string]string{
			"{company}": co.ID(), "{run}": "run-1", "{issue}": "x", "{interaction}": "x", "{approval}": "y", "{permission}": "perm-x",
			"{sha256}": strings.Repeat("0", 64), "{file}": "x", "{artifact}": "x", "{conflict}": "x", "{conversation}": "x"})
	})
}

// checkOpenAPI checks the document served at base against served (the patterns of
// the server's muxes); ids substitutes the path parameters.
func checkOpenAPI(t *testing.T, base, boardTk string, served []string, ids map[string]string) {
	t.Helper()
	_, _, raw := call(t, base, "GET", "/openapi.json", "", nil)
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi document: %v (version %q)", err, doc.OpenAPI)
	}
	sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	const docURL = "https://agentproof.invalid/openapi.json"
	if err := comp.AddResource(docURL, sdoc); err != nil {
		t.Fatal(err)
	}
	var subst []string
	for k, v := range ids {
		subst = append(subst, k, v)
	}
	replacer := strings.NewReplacer(subst...)
	documented := map[string]bool{}
	for path, methods := range doc.Paths {
		for method, rawOp := range methods {
			op := strings.ToUpper(method) + " " + path
			documented[op] = true
			var responses struct {
				Responses map[string]struct {
					Content map[string]json.RawMessage `json:"content"`
				} `json:"responses"`
			}
			if err := json.Unmarshal(rawOp, &responses); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			p := replacer.Replace(path)
			if strings.Contains(p, "{") {
				t.Errorf("%s: a path parameter the test does not know", op)
				continue
			}
			status, code, b, hdr := callHeaders(t, base, strings.ToUpper(method), p, boardTk, []byte(`{"unknownField":1}`), nil)
			if code == "not_found" || status == 405 {
				t.Errorf("%s is documented but not routed (%d %s)", op, status, code)
				continue
			}
			key := strconv.Itoa(status)
			r, ok := responses.Responses[key]
			if !ok && status >= 400 {
				key = "default"
				r, ok = responses.Responses[key]
			}
			if !ok {
				t.Errorf("%s answered %d, a status its responses do not document: %s", op, status, b)
				continue
			}
			if r.Content == nil {
				if len(b) != 0 {
					t.Errorf("%s answered %d with a body its response %s does not document: %s", op, status, key, b)
				}
				continue
			}
			if _, isJSON := r.Content["application/json"]; !isJSON {
				ct, _, _ := strings.Cut(hdr.Get("Content-Type"), ";")
				if _, ok := r.Content[ct]; !ok {
					t.Errorf("%s answered %d with Content-Type %q, which its response %s does not document", op, status, ct, key)
				}
				continue
			}
			ptr := "#/paths/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(path) + "/" + method + "/responses/" + key + "/content/application~1json/schema"
			sch, err := comp.Compile(docURL + ptr)
			if err != nil {
				t.Fatalf("%s: compiling %s: %v", op, ptr, err)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v: %s", op, err, b)
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s answered %d with a body that does not match its response %s: %v\n%s", op, status, key, err, b)
			}
		}
	}
	n := 0
	for _, pattern := range served {
		if pattern == "/" || pattern == "GET /openapi.json" {
			continue // the catch-all and the document itself
		}
		n++
		if !documented[pattern] {
			t.Errorf("the server serves %q, which /openapi.json does not document", pattern)
		}
	}
	if n != len(documented) {
		t.Errorf("the server serves %d routes, the document has %d operations", n, len(documented))
	}
	for _, ref := range regexpRefs(raw) {
		if _, ok := doc.Components.Schemas[ref]; !ok {
			t.Errorf("schema %s is referenced but not defined", ref)
		}
	}
}

func regexpRefs(b []byte) []string {
	var out []string
	for _, part := range strings.Split(string(b), `"$ref":"#/components/schemas/`)[1:] {
		out = append(out, part[:strings.IndexByte(part, '"')])
	}
	return out
}

// TestHomeIsExclusive: a second instance on the same home is refused while the first
// is open, and accepted after it closes.
func TestHomeIsExclusive(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ctx := context.Background()
	s, err := server.Open(ctx, server.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Open(ctx, server.Options{Home: home}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open: %v, want in use", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = server.Open(ctx, server.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// TestHomeLock: a home is served by one server. A second server of this process on
// it is refused at once (and its refusal leaves the first one's lock: a serve process
// is refused too), and so is a server while an `agentproof serve` process holds
// it; once that process is killed (SIGKILL) the home opens at once, and a closed
// server's home opens again at once.
func TestHomeLock(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s, err := server.Open(context.Background(), server.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Open(context.Background(), server.Options{Home: home}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second server of this process: %v, want in use", err)
	}
	// the refused second open left the first server's lock in place: a serve process
	// on the home is refused too
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	serve := exec.Command(exe, "serve", "--home", home, "--addr", "127.0.0.1:0")
	serve.Env = []string{childEnv + "=1"}
	if out, err := serve.CombinedOutput(); err == nil || !strings.Contains(string(out), "in use by another process") {
		t.Fatalf("a serve process while this process serves the home: %v %s, want in use", err, out)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c := startServe(t, home)
	if _, err := server.Open(context.Background(), server.Options{Home: home}); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("open while a serve process holds the home: %v, want in use by another process", err)
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	s, err = server.Open(context.Background(), server.Options{Home: home})
	if err != nil {
		t.Fatalf("open after the serve process was killed: %v", err)
	}
	s.Close()
}

// TestReopenWhileForking: a server closed and opened again on the same home in this
// process, while other goroutines start child processes without pause (as the
// heartbeat runner and parallel tests do), finds its home free every time. (With an
// flock, 39 of 100 reopens found it held by a child forked before the close, its copy
// of the lock's descriptor kept until its exec.)
func TestReopenWhileForking(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_ = exec.Command("/bin/true").Run()
			}
		})
	}
	defer wg.Wait()
	defer stop()
	for i := range 100 {
		s, err := server.Open(context.Background(), server.Options{Home: home})
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
	}
}

// TestResponsesMatchOpenAPISchemas validates real responses of the board and agent
// routes against the schemas the document gives for them (JSON Schema 2020-12).
func TestResponsesMatchOpenAPISchemas(t *testing.T) {
	t.Parallel()
	w := newBoardWorld(t)
	_, _, raw := call(t, w.base, "GET", "/openapi.json", "", nil)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	if err := comp.AddResource("https://agentproof.invalid/openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	co := "/api/companies/" + w.co.ID()
	cases := []struct {
		method, path, token, body, pathKey string
		status                             string
	}{
		{"GET", "/api/companies", w.boardTk, "", "/api/companies", "200"},
		{"POST", co + "/projects", w.boardTk, `{"name":"P"}`, "/api/companies/{company}/projects", "201"},
		{"POST", co + "/issues", w.boardTk, `{"title":"x","assigneeActorId":"` + w.agent + `"}`, "/api/companies/{company}/issues", "201"},
		{"POST", co + "/secrets", w.boardTk, `{"name":"n","key":"K","value":"v"}`, "/api/companies/{company}/secrets", "201"},
		{"GET", co + "/wakes", w.boardTk, "", "/api/companies/{company}/wakes", "200"},
		{"GET", co + "/decisions", w.boardTk, "", "/api/companies/{company}/decisions", "200"},
		{"GET", co + "/runs/run-1/context", w.runTok, "", "/api/companies/{company}/runs/{run}/context", "200"},
		{"POST", co + "/commands", w.runTok, `{"runId":"run-1","idempotencyKey":"s1","command":{"kind":"report_progress","body":"b"}}`, "/api/companies/{company}/commands", "200"},
		{"POST", co + "/commands/try", w.runTok, `{"runId":"run-1","idempotencyKey":"s2","command":{"kind":"nope"}}`, "/api/companies/{company}/commands/try", "200"},
		{"POST", co + "/events", w.runTok, `{"eventId":"e1","runId":"run-1","sequence":1,"type":"run.started"}`, "/api/companies/{company}/events", "200"},
		{"GET", co + "/runs/run-1/events?sourceInstanceId=capability-mock", w.runTok, "", "/api/companies/{company}/runs/{run}/events", "200"},
		{"GET", co + "/session/checkpoint", w.runTok, "", "/api/companies/{company}/session/checkpoint", "200"},
		{"POST", co + "/issues", w.boardTk, `{"title":"  "}`, "/api/companies/{company}/issues", "default"},
	}
	for _, c := range cases {
		status, _, b := call(t, w.base, c.method, c.path, c.token, []byte(c.body))
		method := strings.ToLower(c.method)
		ptr := "#/paths/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(c.pathKey) + "/" + method + "/responses/" + c.status + "/content/application~1json/schema"
		sch, err := comp.Compile("https://agentproof.invalid/openapi.json" + ptr)
		if err != nil {
			t.Fatalf("%s %s: compiling %s: %v", c.method, c.pathKey, ptr, err)
		}
		if (c.status == "default") != (status >= 400) {
			t.Fatalf("%s %s: status %d %s", c.method, c.path, status, b)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s %s: response does not match its schema: %v\n%s", c.method, c.path, err, b)
		}
	}
	// the schemas are strict: an error body is not a BoardResult
	sch, err := comp.Compile("https://agentproof.invalid/openapi.json#/paths/~1api~1companies~1{company}~1issues/post/responses/201/content/application~1json/schema")
	if err != nil {
		t.Fatal(err)
	}
	if sch.Validate(map[string]any{"code": "x", "message": "m", "retryable": false}) == nil {
		t.Fatal("an error body validates as a BoardResult")
	}
}

// TestConcurrentBoardAndAgentWrites: the board and the agent send
// 50 concurrent writes to the same task; none fails with a 5xx or a lock error, and
// all are in the state.
func TestConcurrentBoardAndAgentWrites(t *testing.T) {
	t.Parallel()
	w := newBoardWorld(t)
	co := "/api/companies/" + w.co.ID()
	var wg sync.WaitGroup
	errs := make(chan string, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var status int
			var code string
			if i%2 == 0 {
				status, code, _ = call(t, w.base, "POST", co+"/issues/"+w.issue+"/comments", w.boardTk, []byte(fmt.Sprintf(`{"body":"board %d"}`, i)))
			} else {
				status, code, _ = call(t, w.base, "POST", co+"/commands", w.runTok,
					[]byte(fmt.Sprintf(`{"runId":"run-1","idempotencyKey":"c%d","command":{"kind":"report_progress","body":"agent %d"}}`, i, i)))
			}
			if status >= 300 {
				errs <- fmt.Sprintf("write %d: %d %s", i, status, code)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	st, err := w.co.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Comments) != 50 {
		t.Fatalf("%d comments, want 50", len(st.Comments))
	}
}

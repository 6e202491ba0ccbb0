package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/session"
)

// fakeCodexApp is a Codex app-server on stdio (the test binary started as
// `<binary> app-server …`): it answers initialize and thread/start, and plays each turn
// by the first word of its prompt:
//
//	patch     a fileChange item adding proof.txt, its approval request, the write when
//	          accepted, then the answer "DONE <decision>"
//	command   a commandExecution item `touch ran.txt`, its approval request, the file
//	          when accepted, then the answer
//	fail      the turn completes failed (an upstream error)
//	exit      exits 3 in the middle of the turn
//	elicit    an MCP elicitation asking for a form (which agentproof declines), then
//	          the answer
//	mcp       an mcpToolCall item and Codex's elicitation approving it, then the answer
//	steer     waits for a turn/steer of this turn, delivers it (a userMessage item),
//	          then the answer "DONE steered <text>"
//
// A turn/interrupt while an approval is pending completes the turn interrupted. Every
// turn reports a token usage of 100 more input and 10 more output tokens.
func fakeCodexApp() int {
	f := &fakeApp{out: bufio.NewWriter(os.Stdout), answers: map[string]chan json.RawMessage{}, steers: make(chan string, 1)}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		f.handle(m.ID, m.Method, m.Params, m.Result)
	}
	return 0
}

type fakeApp struct {
	mu      sync.Mutex
	out     *bufio.Writer
	cwd     string
	turns   int
	total   int
	active  string
	answers map[string]chan json.RawMessage
	reqs    int
	steers  chan string
}

func (f *fakeApp) emit(v any) {
	b, _ := json.Marshal(v)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Write(append(b, '\n'))
	f.out.Flush()
}

func (f *fakeApp) notify(method string, params any) {
	f.emit(map[string]any{"method": method, "params": params})
}

func (f *fakeApp) handle(id json.RawMessage, method string, params, result json.RawMessage) {
	switch {
	case method == "initialize":
		f.emit(map[string]any{"id": id, "result": map[string]any{"userAgent": "fake/0.1", "codexHome": "/x", "platformFamily": "unix", "platformOs": "linux"}})
	case method == "thread/start":
		var p struct {
			Cwd string `json:"cwd"`
		}
		_ = json.Unmarshal(params, &p)
		f.cwd = p.Cwd
		f.emit(map[string]any{"id": id, "result": map[string]any{"thread": map[string]any{"id": "thr-fake", "cliVersion": "0.0-fake"},
			"model": "fake-model", "approvalPolicy": "untrusted", "sandbox": map[string]any{"type": "workspaceWrite"}}})
	case method == "turn/start":
		var p struct {
			Input []struct {
				Text string `json:"text"`
			} `json:"input"`
		}
		_ = json.Unmarshal(params, &p)
		f.turns++
		turn := fmt.Sprintf("turn-%d", f.turns)
		// The turn is active before turn/start answers, as Codex's is (its answer says
		// inProgress): a steer sent on the answer must find it, not race play.
		f.mu.Lock()
		f.active = turn
		f.mu.Unlock()
		f.emit(map[string]any{"id": id, "result": map[string]any{"turn": map[string]any{"id": turn, "status": "inProgress", "items": []any{}}}})
		go f.play(turn, strings.Fields(p.Input[0].Text)[0])
	case method == "turn/steer":
		var p struct {
			ExpectedTurnID string `json:"expectedTurnId"`
			Input          []struct {
				Text string `json:"text"`
			} `json:"input"`
		}
		_ = json.Unmarshal(params, &p)
		f.mu.Lock()
		active := f.active
		f.mu.Unlock()
		if p.ExpectedTurnID != active || len(p.Input) != 1 {
			f.emit(map[string]any{"id": id, "error": map[string]any{"code": -32600, "message": "no such active turn"}})
			return
		}
		f.emit(map[string]any{"id": id, "result": map[string]any{"turnId": active}})
		f.steers <- p.Input[0].Text
	case method == "turn/interrupt":
		f.emit(map[string]any{"id": id, "result": map[string]any{}})
		f.mu.Lock()
		turn := f.active
		f.active = ""
		f.mu.Unlock()
		if turn != "" {
			f.notify("turn/completed", map[string]any{"threadId": "thr-fake", "turn": map[string]any{"id": turn, "status": "interrupted", "items": []any{}}})
		}
	case method == "" && len(id) > 0:
		f.mu.Lock()
		ch := f.answers[string(id)]
		f.mu.Unlock()
		if ch != nil {
			ch <- result
		}
	}
}

// request sends a server request and waits for its answer (nil: the turn was
// interrupted meanwhile).
func (f *fakeApp) request(method string, params any) json.RawMessage {
	f.mu.Lock()
	id := fmt.Sprint(f.reqs)
	f.reqs++
	ch := make(chan json.RawMessage, 1)
	f.answers[id] = ch
	f.mu.Unlock()
	f.emit(map[string]any{"id": json.RawMessage(id), "method": method, "params": params})
	return <-ch
}

// play plays one turn (see fakeCodexApp).
func (f *fakeApp) play(turn, what string) {
	f.mu.Lock()
	f.active = turn
	f.mu.Unlock()
	f.notify("turn/started", map[string]any{"threadId": "thr-fake", "turn": map[string]any{"id": turn, "status": "inProgress"}})
	answer, status := "", "completed"
	switch what {
	case "patch":
		answer = f.approve(turn, "fileChange", "item/fileChange/requestApproval", "proof.txt")
	case "command":
		answer = f.approve(turn, "commandExecution", "item/commandExecution/requestApproval", "ran.txt")
	case "steer":
		text := <-f.steers
		f.notify("item/completed", map[string]any{"turnId": turn, "item": map[string]any{"type": "userMessage", "id": "user-" + turn,
			"content": []any{map[string]any{"type": "text", "text": text}}}})
		answer = "steered " + text
	case "exit":
		os.Exit(3)
	case "fail":
		status = "failed"
	case "elicit":
		answer = "elicited " + string(f.request("mcpServer/elicitation/request", map[string]any{"threadId": "thr-fake", "turnId": turn, "serverName": "x",
			"mode": "form", "message": "your name?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}}))
	case "mcp":
		f.notify("item/started", map[string]any{"turnId": turn, "item": map[string]any{"type": "mcpToolCall", "id": "mcp-" + turn, "server": "agentproof", "tool": "finish_task", "status": "inProgress"}})
		answer = "mcp " + string(f.request("mcpServer/elicitation/request", map[string]any{"threadId": "thr-fake", "turnId": turn, "serverName": "agentproof",
			"mode": "form", "message": "Allow the agentproof MCP server to run tool \"finish_task\"?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
			"_meta": map[string]any{"codex_approval_kind": "mcp_tool_call", "tool_name": "finish_task", "tool_params": map[string]any{"summary": "x"}}}))
	}
	f.mu.Lock()
	still := f.active == turn
	f.active = ""
	f.total++
	total := f.total
	f.mu.Unlock()
	if !still {
		return // interrupted
	}
	f.notify("item/completed", map[string]any{"turnId": turn, "item": map[string]any{"type": "agentMessage", "id": "msg-" + turn, "text": "DONE " + answer}})
	f.notify("thread/tokenUsage/updated", map[string]any{"threadId": "thr-fake", "turnId": turn, "tokenUsage": map[string]any{
		"total": map[string]any{"inputTokens": 100 * total, "cachedInputTokens": 0, "outputTokens": 10 * total, "reasoningOutputTokens": 0, "totalTokens": 110 * total},
		"last":  map[string]any{"inputTokens": 100, "cachedInputTokens": 0, "outputTokens": 10, "reasoningOutputTokens": 0, "totalTokens": 110}}})
	turnObj := map[string]any{"id": turn, "status": status, "items": []any{}}
	if status == "failed" {
		turnObj["error"] = map[string]any{"message": "upstream refused"}
	}
	f.notify("turn/completed", map[string]any{"threadId": "thr-fake", "turn": turnObj})
}

// approve plays an item of type itemType that touches file, asks method's approval and
// carries it out when accepted; it returns the decision.
func (f *fakeApp) approve(turn, itemType, method, file string) string {
	path := filepath.Join(f.cwd, file)
	item := map[string]any{"type": itemType, "id": "call-" + turn, "status": "inProgress"}
	params := map[string]any{"threadId": "thr-fake", "turnId": turn, "itemId": "call-" + turn, "startedAtMs": 1}
	if itemType == "fileChange" {
		item["changes"] = []any{map[string]any{"path": path, "kind": map[string]any{"type": "add"}, "diff": "proof\n"}}
	} else {
		item["command"], params["command"], params["cwd"] = "touch "+file, "touch "+file, f.cwd
		params["availableDecisions"] = []any{"accept", "acceptForSession", map[string]any{"acceptWithExecpolicyAmendment": map[string]any{}}, "decline", "cancel"}
	}
	f.notify("item/started", map[string]any{"turnId": turn, "item": item})
	var r struct {
		Decision string `json:"decision"`
	}
	_ = json.Unmarshal(f.request(method, params), &r)
	item["status"] = "declined"
	if r.Decision == "accept" || r.Decision == "acceptForSession" {
		_ = os.WriteFile(path, []byte("proof\n"), 0o644)
		item["status"] = "completed"
	}
	f.notify("item/completed", map[string]any{"turnId": turn, "item": item})
	return r.Decision
}

// codexAppSession starts an app:codex session of the fake app-server.
func codexAppSession(t *testing.T, perms session.PermissionDecider, extra map[string]any) (*session.Session, *acpWorld, *lockedBuffer) {
	t.Helper()
	self, _ := os.Executable()
	cfg := map[string]any{"binary": self, "modelBaseUrl": "http://127.0.0.1:9", "turnTimeoutMs": 20000, "cancelGraceMs": 5000}
	for k, v := range extra {
		cfg[k] = v
	}
	d, err := agent.NewCodexApp(piDriverConfig(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	w := newACPWorld(t, "", nil)
	log := &lockedBuffer{}
	s, err := d.Start(context.Background(), agent.SessionEnv{Run: w.run("run-1"), Permissions: perms, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, w, log
}

func TestCodexAppApprovals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, prompt, file, kind string
		d                        session.PermissionDecider
		decision                 string
	}{
		{"patch accepted", "patch", "proof.txt", "edit", session.Approve, "accept"},
		{"patch declined", "patch", "proof.txt", "edit", session.Decline, "decline"},
		{"command accepted", "command", "ran.txt", "execute", session.Approve, "accept"},
		{"command declined", "command", "ran.txt", "execute", session.Decline, "decline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, w, _ := codexAppSession(t, tc.d, nil)
			res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: tc.prompt})
			if err != nil {
				t.Fatal(err)
			}
			_, written := readFile(t, filepath.Join(w.workspace, tc.file))
			if written != (tc.decision == "accept") || res.StopReason != "completed" || !res.Ended || res.Message != "DONE "+tc.decision {
				t.Errorf("file written %v, turn stop %q ended %v message %q; want decision %s", written, res.StopReason, res.Ended, res.Message, tc.decision)
			}
			if len(res.Permissions) != 1 {
				t.Fatalf("permissions %+v, want one", res.Permissions)
			}
			p := res.Permissions[0]
			ids := []string{}
			for _, o := range p.Request.Options {
				ids = append(ids, o.ID)
			}
			if p.Request.Kind != tc.kind || p.Decision.OptionID != tc.decision || p.Request.ToolCallID != "call-turn-1" ||
				!slices.Equal(ids, []string{"accept", "acceptForSession", "decline", "cancel"}) {
				t.Errorf("permission %+v (options %v)", p, ids)
			}
			if tc.kind == "edit" && !slices.Equal(p.Request.Locations, []string{filepath.Join(w.workspace, "proof.txt")}) ||
				tc.kind == "execute" && p.Request.Command != "touch ran.txt" {
				t.Errorf("permission request %+v does not name what it touches", p.Request)
			}
			if len(res.ToolCalls) != 1 || res.ToolCalls[0].Kind != tc.kind {
				t.Errorf("tool calls %+v", res.ToolCalls)
			}
			if !strings.Contains(string(res.Usage), `"inputTokens":100`) {
				t.Errorf("usage %s, want the turn's 100 input tokens", res.Usage)
			}
		})
	}
}

// TestCodexAppStopWhilePending: Stop sends turn/interrupt before the pending approval
// is answered (cancel); the turn ends interrupted, which honours the cancel; the file
// is never written.
func TestCodexAppStopWhilePending(t *testing.T) {
	t.Parallel()
	hold := session.NewHoldDecider(1)
	s, w, log := codexAppSession(t, hold, nil)
	go func() {
		<-hold.Pending
		_ = s.Cancel("the human pressed Stop")
	}()
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "patch"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "interrupted" || !res.CancelHonoured || len(res.Permissions) != 1 || res.Permissions[0].By != session.AnsweredByCancel {
		t.Errorf("turn %+v, want interrupted with the pending approval cancelled", res)
	}
	if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
		t.Error("proof.txt written after Stop")
	}
	// The cancelled answer is written once the decider's record is in the turn, which
	// the turn's end awaits; its write can follow Prompt's return by a moment, and a
	// Close first would cut it from the log (the order, not the timing, is the point).
	for i := 0; i < 500 && !strings.Contains(log.String(), `"decision":"cancel"`); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	s.Close()
	var order []string
	for _, e := range logEntries(t, []byte(log.String())) {
		if e.Method == "turn/interrupt" {
			order = append(order, "interrupt")
		}
		if e.Dir == session.DirClient && e.Method == "" && bytes.Contains(e.Message, []byte(`"decision":"cancel"`)) {
			order = append(order, "cancel")
		}
	}
	if !slices.Equal(order, []string{"interrupt", "cancel"}) {
		t.Errorf("wire order %v, want turn/interrupt before the cancelled answer", order)
	}
}

// TestCodexAppWarmTurns: one thread, one process across turns; each turn's usage is
// its own (the thread's total less the total before it).
func TestCodexAppWarmTurns(t *testing.T) {
	t.Parallel()
	s, _, _ := codexAppSession(t, session.Approve, nil)
	var ids []session.ProcessIdentity
	for i := range 3 {
		res, err := s.Prompt(context.Background(), session.Turn{RunID: fmt.Sprintf("run-%d", i+1), Text: "command"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Turn != i+1 || res.SessionID != "thr-fake" || !strings.Contains(string(res.Usage), `"inputTokens":100,`) {
			t.Errorf("turn %d: %+v usage %s", i+1, res, res.Usage)
		}
		ids = append(ids, res.Process)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] || ids[0].PID == 0 {
		t.Errorf("process identities %v, want one process", ids)
	}
}

// TestCodexAppSteer: a steering message goes to the running turn as turn/steer (the
// turn's id expected), is accepted, and is delivered when Codex adds it to the
// conversation; without a running turn there is nothing to steer.
func TestCodexAppSteer(t *testing.T) {
	t.Parallel()
	s, _, log := codexAppSession(t, session.Approve, nil)
	if !s.Steerable() {
		t.Fatal("an app-server session is not steerable")
	}
	if err := s.Steer(context.Background(), "too early"); err == nil {
		t.Error("Steer without a running turn succeeded")
	}
	done := make(chan struct{})
	var res session.TurnResult
	var err error
	go func() {
		defer close(done)
		res, err = s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "steer"})
	}()
	var serr error
	for range 200 {
		if serr = s.Steer(context.Background(), "go left"); serr == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	<-done
	if serr != nil || err != nil || res.Message != "DONE steered go left" {
		t.Fatalf("Steer: %v; Prompt = %+v, %v", serr, res, err)
	}
	// Attempts before turn/start answered are refused (no turn id to name yet) and
	// recorded so, never delivered; exactly one is accepted and delivered.
	accepted := 0
	for _, st := range res.Steers {
		switch {
		case st.Error == "" && st.Accepted && st.Delivered:
			accepted++
		case st.Error == "" || st.Delivered:
			t.Errorf("steer %+v: neither accepted and delivered nor refused", st)
		}
	}
	if accepted != 1 {
		t.Errorf("steers %+v, want one accepted and delivered", res.Steers)
	}
	s.Close()
	var steer []byte
	for _, e := range logEntries(t, []byte(log.String())) {
		if e.Dir == session.DirClient && e.Method == "turn/steer" {
			steer = e.Message
		}
	}
	var m struct {
		Params any `json:"params"`
	}
	if err := json.Unmarshal(steer, &m); err != nil {
		t.Fatalf("no turn/steer in the log: %v", err)
	}
	if err := codexAppSchema(t, "v2/TurnSteerParams").Validate(m.Params); err != nil {
		t.Errorf("turn/steer params %s: %v", steer, err)
	}
}

// TestCodexAppFailures: a failed turn is the agent's error (its terminal event came);
// an app-server that exits is agent_gone; a server request agentproof does not answer
// is refused with method-not-found and noted.
func TestCodexAppFailures(t *testing.T) {
	t.Parallel()
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		s, _, _ := codexAppSession(t, session.Approve, nil)
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "fail"})
		var te *session.TurnError
		if !errors.As(err, &te) || te.Failure != session.TurnAgentError || !res.Ended || res.StopReason != "failed" || !strings.Contains(err.Error(), "upstream refused") {
			t.Errorf("Prompt = %+v, %v; want agent_error naming the failure", res, err)
		}
	})
	t.Run("exit", func(t *testing.T) {
		t.Parallel()
		s, _, _ := codexAppSession(t, session.Approve, nil)
		_, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "exit"})
		var te *session.TurnError
		if !errors.As(err, &te) || te.Failure != session.TurnAgentGone {
			t.Errorf("err = %v, want agent_gone", err)
		}
	})
	t.Run("elicit", func(t *testing.T) {
		t.Parallel()
		s, _, _ := codexAppSession(t, session.Approve, nil)
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "elicit"})
		if err != nil || res.Message != `DONE elicited {"action":"decline"}` || len(res.Notices) != 1 || !strings.Contains(res.Notices[0], "your name?") {
			t.Errorf("Prompt = %+v, %v", res, err)
		}
	})
}

// TestCodexAppMCPToolApproval: Codex's approval of an MCP tool call (an elicitation
// with codex_approval_kind mcp_tool_call) is a permission request of kind other, for
// the tool call's item, answered accept.
func TestCodexAppMCPToolApproval(t *testing.T) {
	t.Parallel()
	s, _, _ := codexAppSession(t, session.Approve, nil)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "mcp"})
	if err != nil || res.Message != `DONE mcp {"action":"accept","content":{}}` || len(res.Permissions) != 1 {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	if p := res.Permissions[0]; p.Request.Kind != "other" || p.Request.ToolCallID != "mcp-turn-1" || p.Decision.OptionID != "accept" || !strings.Contains(string(p.Request.RawInput), `"summary"`) {
		t.Errorf("permission %+v", p)
	}
}

func TestNewCodexAppConfig(t *testing.T) {
	t.Parallel()
	_, err := agent.NewCodexApp(piDriverConfig(t, map[string]any{"approvalPolicy": "never", "sandboxMode": "yolo", "gateTools": []any{}, "binary": "rel"}))
	for _, want := range []string{"approvalPolicy never is not untrusted or on-request", "sandboxMode yolo is not", "driverConfig gateTools does not apply to driver app:codex", "binary rel must be an absolute path"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if _, err := agent.NewCodexApp(piDriverConfig(t, map[string]any{"approvalPolicy": "on-request", "sandboxMode": "read-only"})); err != nil {
		t.Errorf("a valid configuration: %v", err)
	}
}

// codexAppSchema compiles the pinned Codex's app-server schema (testdata) for
// definition def (for example "v2/TurnStartParams").
func codexAppSchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	codexAppSchemas.Lock()
	defer codexAppSchemas.Unlock()
	if s := codexAppSchemas.compiled[def]; s != nil {
		return s
	}
	if codexAppSchemas.c == nil {
		f, err := os.Open(filepath.Join("testdata", "codex-app-server", "codex_app_server_protocol.schemas.json"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mem://codex.json", doc); err != nil {
			t.Fatal(err)
		}
		codexAppSchemas.c, codexAppSchemas.compiled = c, map[string]*jsonschema.Schema{}
	}
	s, err := codexAppSchemas.c.Compile("mem://codex.json#/definitions/" + def)
	if err != nil {
		t.Fatalf("compiling %s: %v", def, err)
	}
	codexAppSchemas.compiled[def] = s
	return s
}

// codexAppSchemas is the pinned bundle (790 kB) parsed once into one compiler, and
// the definitions compiled from it so far, for every test of the package.
var codexAppSchemas struct {
	sync.Mutex
	c        *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// TestCodexAppWireMatchesSchema: every request the driver sends and every answer it
// gives to Codex's requests, as the session log kept them in a turn of each kind,
// validates against the pinned Codex's own schema (testdata, checked against the CLI
// by TestCodexAppSchemaDrift).
func TestCodexAppWireMatchesSchema(t *testing.T) {
	t.Parallel()
	params := map[string]string{"initialize": "InitializeParams", "thread/start": "v2/ThreadStartParams", "turn/start": "v2/TurnStartParams",
		"turn/interrupt": "v2/TurnInterruptParams"}
	answers := map[string]string{"item/fileChange/requestApproval": "FileChangeRequestApprovalResponse",
		"item/commandExecution/requestApproval": "CommandExecutionRequestApprovalResponse", "mcpServer/elicitation/request": "McpServerElicitationRequestResponse"}
	seen := map[string]bool{}
	for _, prompt := range []string{"patch", "command", "mcp", "elicit", "stop"} {
		hold := session.NewHoldDecider(1)
		var d session.PermissionDecider = session.Approve
		if prompt == "stop" {
			d = hold
		}
		s, _, log := codexAppSession(t, d, nil)
		if prompt == "stop" {
			go func() { <-hold.Pending; _ = s.Cancel("Stop") }()
			prompt = "patch"
		}
		if _, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: prompt}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		asked := map[string]string{} // request id → method of Codex's requests
		for _, e := range logEntries(t, []byte(log.String())) {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params any             `json:"params"`
				Result any             `json:"result"`
			}
			if e.Message == nil || json.Unmarshal(e.Message, &m) != nil {
				continue
			}
			switch {
			case e.Dir == session.DirAgent && m.Method != "" && len(m.ID) > 0:
				asked[string(m.ID)] = m.Method
			case e.Dir == session.DirClient && params[m.Method] != "":
				seen[m.Method] = true
				if err := codexAppSchema(t, params[m.Method]).Validate(m.Params); err != nil {
					t.Errorf("%s params %s: %v", m.Method, e.Message, err)
				}
			case e.Dir == session.DirClient && m.Method == "" && answers[asked[string(m.ID)]] != "":
				seen[asked[string(m.ID)]] = true
				if err := codexAppSchema(t, answers[asked[string(m.ID)]]).Validate(m.Result); err != nil {
					t.Errorf("answer to %s %s: %v", asked[string(m.ID)], e.Message, err)
				}
			}
		}
	}
	for _, m := range []string{"initialize", "thread/start", "turn/start", "turn/interrupt", "item/fileChange/requestApproval", "item/commandExecution/requestApproval", "mcpServer/elicitation/request"} {
		if !seen[m] {
			t.Errorf("no %s was checked", m)
		}
	}
}

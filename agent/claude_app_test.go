package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/session"
)

// fakeClaude is Claude Code in stream-json print mode (the test binary started as
// `<binary> -p --input-format stream-json …`): it answers the initialize and interrupt
// control requests and plays each turn as its user message's text says:
//
//	ok                 a text answer, the result success with usage and cost
//	ask                a Write tool_use; the permission prompt goes to the relay
//	                   (AGENTPROOF_PERMISSION_RELAY) as Claude Code's permission
//	                   prompt tool sends it; the file is written when the answer allows;
//	                   the result's text is the answer it got
//	hold               a Write tool_use whose prompt stays pending until an interrupt,
//	                   which ends the turn error_during_execution
//	ignore-interrupt   like hold, but the interrupt ends the turn success
//	exit               exits 3 in the middle of the turn
//	error              the result error_max_turns (is_error)
//	agent-request      sends a control request of its own (can_use_tool) and puts the
//	                   answer's subtype in the result
func fakeClaude() int {
	f := &fakeClaudeState{out: bufio.NewWriter(os.Stdout), lines: make(chan map[string]any, 16)}
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				f.lines <- m
			}
		}
		close(f.lines)
	}()
	for m := range f.lines {
		f.handle(m)
	}
	return 0
}

type fakeClaudeState struct {
	out   *bufio.Writer
	lines chan map[string]any
	turns int
}

func (f *fakeClaudeState) send(v any) {
	b, _ := json.Marshal(v)
	_, _ = f.out.Write(append(b, '\n'))
	_ = f.out.Flush()
}

func (f *fakeClaudeState) controlOK(id string, resp any) {
	f.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": id, "response": resp}})
}

func (f *fakeClaudeState) result(subtype, text string, isError bool) {
	f.send(map[string]any{"type": "result", "subtype": subtype, "is_error": isError, "result": text, "session_id": "s1",
		"total_cost_usd": 0.5, "usage": map[string]any{"input_tokens": 10, "output_tokens": 2}})
}

func (f *fakeClaudeState) handle(m map[string]any) {
	switch m["type"] {
	case "control_request":
		req, _ := m["request"].(map[string]any)
		id, _ := m["request_id"].(string)
		if req["subtype"] == "initialize" {
			f.controlOK(id, map[string]any{"pid": os.Getpid()})
		} else {
			f.controlOK(id, nil)
		}
	case "user":
		f.turns++
		msg, _ := m["message"].(map[string]any)
		content, _ := msg["content"].([]any)
		block, _ := content[0].(map[string]any)
		text, _ := block["text"].(string)
		f.send(map[string]any{"type": "system", "subtype": "init", "session_id": "s1", "model": "scripted-model", "claude_code_version": "2.1.197"})
		f.turn(text)
	}
}

func (f *fakeClaudeState) turn(text string) {
	switch text {
	case "ok":
		f.send(map[string]any{"type": "assistant", "message": map[string]any{"id": "m1", "content": []any{map[string]any{"type": "text", "text": "hi"}}}})
		f.result("success", fmt.Sprintf("DONE %d", f.turns), false)
	case "ask":
		f.ask()
	case "hold", "ignore-interrupt":
		f.send(map[string]any{"type": "assistant", "message": map[string]any{"id": "m1", "content": []any{map[string]any{"type": "tool_use", "id": "tu1", "name": "Write", "input": map[string]any{"file_path": "/w/proof.txt"}}}}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			_, _ = session.AskRelay(ctx, os.Getenv(session.EnvPermissionRelay), []byte(`{"tool_name":"Write","input":{"file_path":"/w/proof.txt"},"tool_use_id":"tu1"}`))
		}()
		for m := range f.lines {
			req, _ := m["request"].(map[string]any)
			if m["type"] == "control_request" && req["subtype"] == "interrupt" {
				cancel() // Claude Code aborts the pending prompt itself
				id, _ := m["request_id"].(string)
				f.controlOK(id, nil)
				if text == "hold" {
					f.result("error_during_execution", "", true)
				} else {
					f.result("success", "went on", false)
				}
				return
			}
		}
	case "exit":
		f.send(map[string]any{"type": "assistant", "message": map[string]any{"id": "m1", "content": []any{map[string]any{"type": "text", "text": "bye"}}}})
		os.Exit(3)
	case "error":
		f.result("error_max_turns", "too many turns", true)
	case "agent-request":
		f.send(map[string]any{"type": "control_request", "request_id": "c1", "request": map[string]any{"subtype": "can_use_tool", "tool_name": "Bash"}})
		for m := range f.lines {
			if m["type"] == "control_response" {
				resp, _ := m["response"].(map[string]any)
				f.result("success", fmt.Sprintf("answered %v", resp["subtype"]), false)
				return
			}
		}
	}
}

// ask plays a Write that asks permission through the relay, then writes the file
// when allowed.
func (f *fakeClaudeState) ask() {
	cwd, _ := os.Getwd()
	path := filepath.Join(cwd, "proof.txt")
	input := map[string]any{"file_path": path, "content": "proof"}
	f.send(map[string]any{"type": "assistant", "message": map[string]any{"id": "m1", "content": []any{map[string]any{"type": "tool_use", "id": "tu1", "name": "Write", "input": input}}}})
	req, _ := json.Marshal(map[string]any{"tool_name": "Write", "input": input, "tool_use_id": "tu1"})
	answer, err := session.AskRelay(context.Background(), os.Getenv(session.EnvPermissionRelay), req)
	if err != nil {
		f.result("error_during_execution", "relay: "+err.Error(), true)
		return
	}
	var a struct {
		Behavior string `json:"behavior"`
	}
	_ = json.Unmarshal(answer, &a)
	if a.Behavior == "allow" {
		_ = os.WriteFile(path, []byte("proof"), 0o644)
	}
	f.send(map[string]any{"type": "user", "message": map[string]any{"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "tu1", "is_error": a.Behavior != "allow", "content": "done"}}}})
	f.result("success", string(answer), false)
}

// claudeAppSession starts an app:claude session of the fake Claude Code.
func claudeAppSession(t *testing.T, perms session.PermissionDecider) (*session.Session, *acpWorld) {
	t.Helper()
	self, _ := os.Executable()
	d, err := agent.NewClaudeApp(piDriverConfig(t, map[string]any{"binary": self, "modelBaseUrl": "http://127.0.0.1:9", "turnTimeoutMs": 20000, "cancelGraceMs": 5000}))
	if err != nil {
		t.Fatal(err)
	}
	w := newACPWorld(t, "", nil)
	s, err := d.Start(context.Background(), agent.SessionEnv{Run: w.run("run-1"), Permissions: perms})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, w
}

// TestClaudeAppPermissionPrompt: the relayed prompt is a permission request of kind
// edit naming the file, and the answer is Claude Code's permission result: allow with
// an empty updatedInput (the tool's own input), or deny with a message.
func TestClaudeAppPermissionPrompt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		decider session.PermissionDecider
		answer  string
		written bool
	}{
		{session.Approve, `{"behavior":"allow","updatedInput":{}}`, true},
		{session.Decline, `{"behavior":"deny","message":"Permission to use Write was denied by the user."}`, false},
	} {
		s, w := claudeAppSession(t, c.decider)
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "ask"})
		if err != nil || res.Message != c.answer || res.StopReason != agent.ClaudeStopSuccess {
			t.Errorf("Prompt = %q stop %q, %v; want the answer %s", res.Message, res.StopReason, err, c.answer)
		}
		if len(res.Permissions) != 1 || res.Permissions[0].Request.Kind != "edit" || res.Permissions[0].Request.ToolCallID != "tu1" ||
			len(res.Permissions[0].Request.Locations) != 1 || !strings.HasSuffix(res.Permissions[0].Request.Locations[0], "/proof.txt") {
			t.Errorf("permissions %+v", res.Permissions)
		}
		if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok != c.written {
			t.Errorf("proof.txt written %v, want %v", ok, c.written)
		}
		if len(res.ToolCalls) != 1 || res.ToolCalls[0].Kind != "edit" || res.ToolCalls[0].Status != map[bool]string{true: "completed", false: "failed"}[c.written] {
			t.Errorf("tool calls %+v", res.ToolCalls)
		}
	}
}

// TestClaudeAppStop: a Stop while the prompt is pending sends the interrupt and
// cancels the card; the turn ending error_during_execution honours it, one ending
// success does not.
func TestClaudeAppStop(t *testing.T) {
	t.Parallel()
	for text, honoured := range map[string]bool{"hold": true, "ignore-interrupt": false} {
		hold := session.NewHoldDecider(1)
		s, _ := claudeAppSession(t, hold)
		go func() {
			select {
			case <-hold.Pending:
				_ = s.Cancel("Stop")
			case <-time.After(20 * time.Second):
			}
		}()
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: text})
		if err != nil || res.CancelHonoured != honoured || (honoured && res.StopReason != agent.ClaudeStopInterrupted) {
			t.Errorf("%s: stop %q honoured %v, %v; want honoured %v", text, res.StopReason, res.CancelHonoured, err, honoured)
		}
		if len(res.Permissions) != 1 || res.Permissions[0].By != session.AnsweredByCancel {
			t.Errorf("%s: permissions %+v, want the pending one cancelled", text, res.Permissions)
		}
	}
}

// TestClaudeAppTurns: three turns in one process; a refused control request of Claude
// Code's own; usage and cost from the result.
func TestClaudeAppTurns(t *testing.T) {
	t.Parallel()
	s, _ := claudeAppSession(t, session.Approve)
	var pids []int
	for i := 1; i <= 3; i++ {
		res, err := s.Prompt(context.Background(), session.Turn{RunID: fmt.Sprintf("run-%d", i), Text: "ok"})
		if err != nil || res.Message != fmt.Sprintf("DONE %d", i) || len(res.Usage) == 0 || len(res.Cost) == 0 {
			t.Fatalf("turn %d: %+v, %v", i, res, err)
		}
		pids = append(pids, res.Process.PID)
	}
	if pids[0] != pids[1] || pids[1] != pids[2] {
		t.Errorf("pids %v, want one process", pids)
	}
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-4", Text: "agent-request"})
	if err != nil || res.Message != "answered error" || len(res.Notices) == 0 {
		t.Errorf("agent-request: %+v, %v; want the control request refused and noted", res, err)
	}
}

// TestClaudeAppFailures: an error result is the candidate's agent_error; a process
// that exits mid-turn is agent_gone.
func TestClaudeAppFailures(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]session.TurnFailure{"error": session.TurnAgentError, "exit": session.TurnAgentGone} {
		s, _ := claudeAppSession(t, session.Approve)
		_, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: text})
		var te *session.TurnError
		if !errors.As(err, &te) || te.Failure != want {
			t.Errorf("%s: %v, want %s", text, err, want)
		}
	}
}

func TestNewClaudeAppConfig(t *testing.T) {
	t.Parallel()
	_, err := agent.NewClaudeApp(piDriverConfig(t, map[string]any{"permissionMode": "plan", "approvalPolicy": "never", "binary": "rel"}))
	for _, want := range []string{"permissionMode plan is not default or bypassPermissions", "driverConfig approvalPolicy does not apply to driver app:claude", "binary rel must be an absolute path"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	if _, err := agent.NewCodexApp(piDriverConfig(t, map[string]any{"permissionMode": "default"})); err == nil || !strings.Contains(err.Error(), "permissionMode does not apply to driver app:codex") {
		t.Errorf("app:codex with permissionMode: %v", err)
	}
}

func TestClassifyClaudeAppLine(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]session.WireLine{
		`{"type":"control_request","request_id":"x1","request":{"subtype":"interrupt"}}`: {Object: true, Method: "control_request/interrupt", ID: json.RawMessage(`"x1"`)},
		`{"type":"control_response","response":{"subtype":"success","request_id":"x1"}}`: {Object: true, Method: "control_response/success", ID: json.RawMessage(`"x1"`)},
		`{"type":"assistant","message":{"content":[{"type":"tool_use"}]}}`:               {Object: true, Method: "assistant", Update: "tool_use"},
		`{"type":"result","subtype":"success"}`:                                          {Object: true, Method: "result", Update: "success"},
		`not json`:                                                                       {},
	} {
		got := agent.ClassifyClaudeAppLine([]byte(line))
		if got.Object != want.Object || got.Method != want.Method || got.Update != want.Update || string(got.ID) != string(want.ID) {
			t.Errorf("%s: %+v, want %+v", line, got, want)
		}
	}
}

// FuzzClassifyClaudeAppLine: any bytes are classified without a panic.
func FuzzClassifyClaudeAppLine(f *testing.F) {
	f.Add([]byte(`{"type":"user","message":{"content":"text"}}`))
	f.Add([]byte(`{"type":"control_request","request":{"subtype":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = agent.ClassifyClaudeAppLine(b)
	})
}

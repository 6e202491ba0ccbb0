package scriptedmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
)

const writeScript = `steps:
  - call: write_file
    args: {path: "/ws/proof.txt", content: "it's {{nonce}}"}
  - answer: "DONE_{{nonce}}"
`

// TestDecideWriteFile maps the write_file role onto each agent's own write tool (names
// and parameter names as the pinned agents send them), and onto the shell tool for an
// agent without one (Codex).
func TestDecideWriteFile(t *testing.T) {
	t.Parallel()
	s := mustScript(t, writeScript)
	tests := []struct {
		name, body         string
		format             Format
		wantTool, wantArgs string
	}{
		{name: "opencode write", format: FormatChat,
			body:     `{"messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}},{"type":"function","function":{"name":"write","parameters":{"type":"object","properties":{"content":{"type":"string"},"filePath":{"type":"string"}}}}}]}`,
			wantTool: "write", wantArgs: `{"content":"it's n1","filePath":"/ws/proof.txt"}`},
		{name: "claude Write", format: FormatMessages,
			body:     `{"messages":[{"role":"user","content":"go"}],"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}},{"name":"Write","input_schema":{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}}}}]}`,
			wantTool: "Write", wantArgs: `{"content":"it's n1","file_path":"/ws/proof.txt"}`},
		{name: "gemini write_file", format: FormatGemini,
			body:     `{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"}}}},{"name":"write_file","parametersJsonSchema":{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}}}}]}]}`,
			wantTool: "write_file", wantArgs: `{"content":"it's n1","file_path":"/ws/proof.txt"}`},
		{name: "codex: no write tool, the shell writes", format: FormatResponses,
			body:     `{"input":[{"role":"user","content":"go"}],"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}},{"type":"custom","name":"apply_patch"}]}`,
			wantTool: "exec_command", wantArgs: `{"cmd":"printf '%s' 'it'\\''s n1' > '/ws/proof.txt'"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := DecodeRequest(tc.format, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Decide(req)
			if err != nil {
				t.Fatal(err)
			}
			if got.ToolName != tc.wantTool || got.Arguments != tc.wantArgs || got.Step != 0 {
				t.Errorf("reply = %+v, want %s %s", got, tc.wantTool, tc.wantArgs)
			}
		})
	}
	// A write tool without a path parameter is refused naming the step.
	req, _ := DecodeRequest(FormatChat, []byte(`{"messages":[],"tools":[{"type":"function","function":{"name":"write","parameters":{"type":"object","properties":{"text":{"type":"string"}}}}}]}`))
	var se *StepError
	if _, err := s.Decide(req); !errors.As(err, &se) || !strings.Contains(err.Error(), "step 1 (call write_file") {
		t.Errorf("err = %v", err)
	}
}

func TestParseWriteFileStep(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"steps: [{call: write_file, args: {path: p}}]",
		"steps: [{call: write_file, args: {path: '', content: x}}]",
		"steps: [{call: write_file, args: {path: p, content: x, mode: 1}}]",
	} {
		if _, err := ParseScript("t", []byte(src), nil); err == nil || !strings.Contains(err.Error(), "call write_file needs exactly args.path") {
			t.Errorf("%s: err = %v", src, err)
		}
	}
}

func TestDecodeGemini(t *testing.T) {
	t.Parallel()
	body := `{"contents":[{"role":"user","parts":[{"text":"ctx"},{"text":"go"}]},
	  {"role":"model","parts":[{"text":"thinking","thought":true},{"functionCall":{"name":"write_file","args":{"file_path":"/x"}}}]},
	  {"role":"user","parts":[{"functionResponse":{"name":"write_file","response":{"output":"ok"}}}]},
	  {"role":"model","parts":[{"text":"DONE"}]}],
	 "tools":[{"functionDeclarations":[{"name":"a","parameters":{"type":"object"}},{"name":"b","parametersJsonSchema":{"type":"object"}}]}]}`
	r, err := DecodeRequest(FormatGemini, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []ItemKind
	for _, it := range r.Items {
		kinds = append(kinds, it.Kind)
	}
	want := []ItemKind{ItemUser, ItemUser, ItemAssistantCall, ItemToolResult, ItemAssistantText}
	if len(kinds) != len(want) || r.AssistantTurns() != 2 || len(r.Tools) != 2 || r.Items[4].Text != "DONE" || r.Items[2].Name != "write_file" {
		t.Errorf("items %v (want %v), tools %v", kinds, want, r.Tools)
	}
	if _, err := DecodeRequest(FormatGemini, []byte(`{"contents":[{"role":"tool","parts":[]}]}`)); err == nil {
		t.Error("an unknown role decoded")
	}
}

// TestServeGemini plays a two-step script over the Gemini routes: the streamed call
// (data-only SSE, functionCall with object args), the non-streamed answer, countTokens,
// and an unknown method (404).
func TestServeGemini(t *testing.T) {
	t.Parallel()
	srv, err := New(Options{Script: mustScript(t, writeScript)})
	if err != nil {
		t.Fatal(err)
	}
	running, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close(context.Background())
	base := "http://" + running.Addr + "/v1beta/models/scripted-model"
	tools := `"tools":[{"functionDeclarations":[{"name":"write_file","parametersJsonSchema":{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}}}}]}]`
	post := func(suffix, body string) (int, string) {
		resp, err := http.Post(base+suffix, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post(":streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"go"}]}],`+tools+`}`)
	if status != 200 || !strings.HasPrefix(body, "data: {") || strings.Contains(body, "event:") {
		t.Fatalf("stream = %d %q", status, body)
	}
	var frame struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					FunctionCall struct {
						Name string            `json:"name"`
						Args map[string]string `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		Usage struct {
			Total int `json:"totalTokenCount"`
		} `json:"usageMetadata"`
	}
	if err := json.Unmarshal(bytes.TrimSpace([]byte(strings.TrimPrefix(body, "data: "))), &frame); err != nil {
		t.Fatal(err)
	}
	fc := frame.Candidates[0].Content.Parts[0].FunctionCall
	if fc.Name != "write_file" || fc.Args["file_path"] != "/ws/proof.txt" || frame.Candidates[0].FinishReason != "STOP" || frame.Usage.Total == 0 {
		t.Errorf("frame = %+v", frame)
	}
	status, body = post(":generateContent", `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"write_file","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"write_file","response":{}}}]}],`+tools+`}`)
	if status != 200 || !strings.Contains(body, `"text":"DONE_n1"`) {
		t.Errorf("generateContent = %d %s", status, body)
	}
	if status, body = post(":countTokens", `{"contents":[]}`); status != 200 || !strings.Contains(body, "totalTokens") {
		t.Errorf("countTokens = %d %s", status, body)
	}
	if status, _ = post(":embedContent", `{}`); status != 404 {
		t.Errorf("embedContent = %d, want 404", status)
	}
	var steps []int
	for _, e := range srv.Requests() {
		steps = append(steps, e.Step)
	}
	if len(steps) != 4 || steps[0] != 1 || steps[1] != 2 {
		t.Errorf("logged steps %v", steps)
	}
}

func TestForACP(t *testing.T) {
	t.Parallel()
	w1, w3, app := "one", "three", "+two"
	ref := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{
		{Trigger: "assignment", Steps: []*catalog.ReferenceStep{{Edit: &catalog.WorkspaceEdit{Path: "d/f.txt", Write: &w1}}}},
		{Trigger: "follow_up", Steps: []*catalog.ReferenceStep{{Edit: &catalog.WorkspaceEdit{Path: "d/f.txt", Append: &app}}}},
		{Trigger: "follow_up", Steps: []*catalog.ReferenceStep{{Edit: &catalog.WorkspaceEdit{Path: "d/f.txt", Write: &w3}}, {Command: "finish_task", Args: map[string]any{"summary": "S"}, Present: true}}},
	}}
	per, err := ForACP(ref, "/ws", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(per) != 3 || per[0].Steps[0].Call != RoleWrite || per[0].Steps[0].Args["path"] != "/ws/d/f.txt" ||
		per[1].Steps[0].Call != RoleShell || per[2].Steps[1].Call != "finish_task" || per[2].Steps[2].Answer != "S" {
		t.Errorf("per-turn scripts = %+v %+v %+v", per[0].Steps, per[1].Steps, per[2].Steps)
	}
	warm, err := ForACP(ref, "/ws", true)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, st := range warm[0].Steps {
		roles = append(roles, st.Call+st.Answer)
	}
	if want := []string{RoleWrite, DefaultFinalAnswer, RoleShell, DefaultFinalAnswer, RoleWrite, "finish_task", "S"}; strings.Join(roles, ",") != strings.Join(want, ",") {
		t.Errorf("warm script roles = %v, want %v", roles, want)
	}
	if _, err := ForACP(ref, "ws", false); err == nil {
		t.Error("a relative workspace was accepted")
	}
}

// TestDecideReadFile maps the read_file role onto each agent's own read tool (names and
// parameter names as the pinned agents send them), and onto the shell for an agent
// without one.
func TestDecideReadFile(t *testing.T) {
	t.Parallel()
	s := mustScript(t, "steps:\n  - call: read_file\n    args: {path: \"/ws/it's.py\"}\n  - answer: done\n")
	tests := []struct {
		name, body         string
		format             Format
		wantTool, wantArgs string
	}{
		{name: "opencode read", format: FormatChat,
			body:     `{"messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}},{"type":"function","function":{"name":"read","parameters":{"type":"object","properties":{"filePath":{"type":"string"},"offset":{"type":"number"}}}}}]}`,
			wantTool: "read", wantArgs: `{"filePath":"/ws/it's.py"}`},
		{name: "claude Read", format: FormatMessages,
			body:     `{"messages":[{"role":"user","content":"go"}],"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}},{"name":"Read","input_schema":{"type":"object","properties":{"file_path":{"type":"string"},"limit":{"type":"number"}}}}]}`,
			wantTool: "Read", wantArgs: `{"file_path":"/ws/it's.py"}`},
		{name: "gemini read_file", format: FormatGemini,
			body:     `{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"read_many_files","parametersJsonSchema":{"type":"object","properties":{"paths":{"type":"array"}}}},{"name":"read_file","parametersJsonSchema":{"type":"object","properties":{"absolute_path":{"type":"string"}}}}]}]}`,
			wantTool: "read_file", wantArgs: `{"absolute_path":"/ws/it's.py"}`},
		{name: "no read tool, the shell prints the file", format: FormatResponses,
			body:     `{"input":[{"role":"user","content":"go"}],"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}]}`,
			wantTool: "exec_command", wantArgs: `{"cmd":"cat -- '/ws/it'\\''s.py'"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := DecodeRequest(tc.format, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Decide(req)
			if err != nil {
				t.Fatal(err)
			}
			if got.ToolName != tc.wantTool || got.Arguments != tc.wantArgs || got.Step != 0 {
				t.Errorf("reply = %+v, want %s %s", got, tc.wantTool, tc.wantArgs)
			}
		})
	}
	for _, src := range []string{
		"steps: [{call: read_file, args: {}}]",
		"steps: [{call: read_file, args: {path: p, content: x}}]",
	} {
		if _, err := ParseScript("t", []byte(src), nil); err == nil || !strings.Contains(err.Error(), "call read_file needs exactly args.path") {
			t.Errorf("%s: err = %v", src, err)
		}
	}
}

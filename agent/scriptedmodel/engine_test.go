package scriptedmodel

import (
	"errors"
	"strings"
	"testing"
)

func mustScript(t testing.TB, src string) *Script {
	t.Helper()
	s, err := ParseScript("test", []byte(src), map[string]string{"nonce": "n1"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const threeSteps = `steps:
  - call: shell
    args: {command: "echo n > f.txt"}
  - call: finish_task
    args: {summary: "done"}
    expect: "exit code 0"
  - answer: "OK_{{nonce}}"
`

// Request bodies as the CLIs send them (trimmed to what matters), per format.
var (
	codexTools   = `[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"},"workdir":{"type":"string"}},"required":["cmd"]}},{"type":"web_search"},{"type":"namespace","name":"multi_agent_v1","tools":[{"type":"function","name":"spawn"}]},{"type":"function","name":"mcp__agentproof__finish_task","parameters":{"type":"object"}}]`
	opencodeChat = `[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"}},"required":["command","description"]}}},{"type":"function","function":{"name":"agentproof_finish_task","parameters":{"type":"object"}}}]`
	claudeTools  = `[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}},{"name":"mcp__agentproof__finish_task","input_schema":{"type":"object"}}]`
)

func TestDecide(t *testing.T) {
	t.Parallel()
	s := mustScript(t, threeSteps)
	tests := []struct {
		name     string
		format   Format
		body     string
		wantTool string
		wantArgs string
		wantText string
		wantStep int
		wantErr  string
	}{
		{name: "codex turn 1", format: FormatResponses,
			body:     `{"model":"x","stream":true,"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"sys"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}],"tools":` + codexTools + `}`,
			wantTool: "exec_command", wantArgs: `{"cmd":"echo n > f.txt"}`, wantStep: 0},
		{name: "codex turn 2 (MCP tool by suffix)", format: FormatResponses,
			body:    `{"input":[{"role":"user","content":"go"},{"type":"function_call","name":"exec_command","call_id":"c1","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"Process exited with code 0"}],"tools":` + codexTools + `}`,
			wantErr: `step 2 (call finish_task, line 4): the latest input does not contain "exit code 0"`},
		{name: "codex turn 2, expect met", format: FormatResponses,
			body:     `{"input":[{"role":"user","content":"go"},{"type":"reasoning"},{"type":"function_call","name":"exec_command","call_id":"c1","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"exit code 0"}]}],"tools":` + codexTools + `}`,
			wantTool: "mcp__agentproof__finish_task", wantArgs: `{"summary":"done"}`, wantStep: 1},
		{name: "codex turn 3", format: FormatResponses,
			body:     `{"input":[{"role":"user","content":"go"},{"type":"function_call","name":"a"},{"type":"function_call_output","output":"x"},{"type":"function_call","name":"b"},{"type":"function_call_output","output":"y"}],"tools":` + codexTools + `}`,
			wantText: "OK_n1", wantStep: 2},
		{name: "script exhausted", format: FormatResponses,
			body:    `{"input":[{"type":"function_call"},{"type":"function_call"},{"role":"assistant","content":[{"type":"output_text","text":"OK"}]},{"role":"user","content":"more"}],"tools":` + codexTools + `}`,
			wantErr: "script exhausted: the conversation has 3 assistant turns, so it asks for step 4, but the script has 3 steps"},
		{name: "opencode chat turn 1 fills required description", format: FormatChat,
			body:     `{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"go"}]}],"tools":` + opencodeChat + `,"stream":true}`,
			wantTool: "bash", wantArgs: `{"command":"echo n > f.txt","description":"agentproof scripted step 1"}`, wantStep: 0},
		{name: "opencode chat turn 2", format: FormatChat,
			body:     `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"exit code 0"}],"tools":` + opencodeChat + `}`,
			wantTool: "agentproof_finish_task", wantArgs: `{"summary":"done"}`, wantStep: 1},
		{name: "title request is auxiliary", format: FormatChat,
			body:     `{"messages":[{"role":"system","content":"You are a title generator"},{"role":"user","content":"go"}]}`,
			wantText: DefaultAuxAnswer, wantStep: -1},
		{name: "claude turn 1", format: FormatMessages,
			body:     `{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"go"}],"tools":` + claudeTools + `}`,
			wantTool: "Bash", wantArgs: `{"command":"echo n > f.txt"}`, wantStep: 0},
		{name: "claude turn 2 with a system entry", format: FormatMessages,
			body:     `{"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"x"}}]},{"role":"system","content":"note"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"exit code 0"}]}]}],"tools":` + claudeTools + `}`,
			wantTool: "mcp__agentproof__finish_task", wantArgs: `{"summary":"done"}`, wantStep: 1},
		{name: "no shell tool", format: FormatChat,
			body:    `{"messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"read"}}]}`,
			wantErr: "step 1 (call shell, line 2): the request offers no shell tool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := DecodeRequest(tc.format, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Decide(req)
			if tc.wantErr != "" {
				var se *StepError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a StepError containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Step != tc.wantStep || got.ToolName != tc.wantTool || got.Arguments != tc.wantArgs || got.Text != tc.wantText {
				t.Errorf("reply = %+v, want step %d tool %q args %s text %q", got, tc.wantStep, tc.wantTool, tc.wantArgs, tc.wantText)
			}
			if got.IsCall() && got.CallID == "" {
				t.Error("a call without a call id")
			}
		})
	}
}

func TestResolveTool(t *testing.T) {
	t.Parallel()
	tools := func(names ...string) []Tool {
		var out []Tool
		for _, n := range names {
			out = append(out, Tool{Name: n})
		}
		return out
	}
	tests := []struct {
		role    string
		tools   []Tool
		want    string
		wantErr string
	}{
		{"finish_task", tools("finish_task", "mcp__agentproof__finish_task"), "finish_task", ""},
		{"finish_task", tools("read", "mcp__agentproof__finish_task"), "mcp__agentproof__finish_task", ""},
		{"finish_task", tools("agentproof_finish_task"), "agentproof_finish_task", ""},
		{"finish_task", tools("agentproof.finish_task"), "agentproof.finish_task", ""},
		{"finish_task", tools("myfinish_task"), "", "offers no tool"},
		{"finish_task", tools("a_finish_task", "b_finish_task"), "", "matches several"},
		{"shell", tools("read", "Bash"), "Bash", ""},
		{"shell", tools("bash", "exec_command"), "exec_command", ""},
		{"report_progress", nil, "", "offers no tool"},
	}
	for _, tc := range tests {
		got, err := resolveTool(tc.role, tc.tools)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s in %v: err = %v, want %q", tc.role, tc.tools, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.Name != tc.want {
			t.Errorf("%s in %v = %q, %v; want %q", tc.role, tc.tools, got.Name, err, tc.want)
		}
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format Format
		body   string
		want   string
	}{
		{FormatResponses, `[]`, "not a JSON object"},
		{FormatResponses, `null`, "not a JSON object"},
		{FormatResponses, `{"stream":"yes"}`, "stream"},
		{FormatResponses, `{"input":5}`, "input: neither"},
		{FormatResponses, `{"input":[{"content":"x"}]}`, "input[0]: an item needs a type or a role"},
		{FormatResponses, `{"tools":{}}`, "tools: not a list"},
		{FormatChat, `{"messages":{}}`, "messages"},
		{FormatChat, `{"tools":[1]}`, "tools"},
		{FormatMessages, `{"messages":[{"role":"user","content":5}]}`, "neither a string nor a list"},
		{FormatMessages, `{"model":1}`, "model"},
	}
	for _, tc := range tests {
		_, err := DecodeRequest(tc.format, []byte(tc.body))
		var de *DecodeError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: err = %v, want a DecodeError containing %q", tc.format, tc.body, err, tc.want)
		}
	}
}

// FuzzDecodeRequest: decoding any body in any format never panics, and a decoded
// request can always be decided (a reply or a StepError, never another error or panic)
// and encoded in its format.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(0, `{"input":[{"type":"function_call","name":"exec_command"}],"tools":`+codexTools+`,"stream":true}`)
	f.Add(1, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"bash"}}]}],"tools":`+opencodeChat+`,"stream_options":{"include_usage":true}}`)
	f.Add(2, `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}],"tools":`+claudeTools+`}`)
	f.Add(2, `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`)
	f.Add(3, `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"write_file","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"write_file","response":{}}}]}],"tools":[{"functionDeclarations":[{"name":"write_file","parametersJsonSchema":{"properties":{"file_path":{},"content":{}}}}]}]}`)
	f.Add(7, `{"messages":[],"tools":[{"type":"function","function":{"name":"write","parameters":{"properties":{"filePath":{},"content":{}}}}}]}`)
	s := mustScript(f, threeSteps)
	ws := mustScript(f, writeScript)
	formats := []Format{FormatResponses, FormatChat, FormatMessages, FormatGemini}
	f.Fuzz(func(t *testing.T, which int, body string) {
		format := formats[(which%4+4)%4]
		req, err := DecodeRequest(format, []byte(body))
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		sc := s
		if (which/4)%2 != 0 {
			sc = ws // the write_file role
		}
		reply, err := sc.Decide(req)
		if err != nil {
			var se *StepError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "step ") {
				t.Fatalf("decide: %v", err)
			}
			return
		}
		m := Meta{ID: "f", Model: "m"}
		for _, fr := range StreamFrames(format, reply, m, true) {
			if len(fr.Data) == 0 {
				t.Fatal("empty frame")
			}
		}
		_ = Body(format, reply, m)
	})
}

package scriptedmodel

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
)

// piChatTools are Pi's tools as its Chat Completions requests offer them (trimmed).
const piChatTools = `[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}},{"type":"function","function":{"name":"ask_user","parameters":{"type":"object"}}},{"type":"function","function":{"name":"agentproof_finish_task","parameters":{"type":"object"}}}]`

// piToolResult is a Pi conversation after one tool call whose result is text.
func piToolResult(text string) string {
	return `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"ask_user","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":` + quoteJSON(text) + `}],"tools":` + piChatTools + `}`
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestCaptureAndPiScripts: a Capture step puts the first group of its expression in the
// latest input in place of CaptureToken (the native question's answer into the shell
// write; the steered marker into finish_task) and refuses a request without a match;
// ForPiQuestion asks first and writes the captured answer; ForPiSteering holds its
// first call and needs a group.
func TestCaptureAndPiScripts(t *testing.T) {
	t.Parallel()
	w := "placeholder"
	ref := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
		{Edit: &catalog.WorkspaceEdit{Path: "answer.txt", Write: &w}},
		{Command: "finish_task", Args: map[string]any{"summary": "M"}, Present: true}}}}}
	scripts, err := ForPiQuestion(ref, "Which value?")
	if err != nil {
		t.Fatal(err)
	}
	s := scripts[0]
	if len(s.Steps) != 4 || s.Steps[0].Call != PiQuestionTool || s.Steps[0].Args["kind"] != "input" || s.Steps[1].Capture == nil {
		t.Fatalf("question script steps %+v", s.Steps)
	}
	for _, tc := range []struct {
		name, result, wantArgs, wantErr string
	}{
		{"answer captured", `{"kind":"input","value":"v-0a1b2c"}`, `{"command":"printf '%s' 'v-0a1b2c' > 'answer.txt'"}`, ""},
		{"dismissed", `{"kind":"input","value":null}`, "", "no answer arrived"},
		{"unsafe value refused", `{"kind":"input","value":"a'; rm -rf /"}`, "", "no answer arrived"},
	} {
		req, err := DecodeRequest(FormatChat, []byte(piToolResult(tc.result)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Decide(req)
		if tc.wantErr != "" {
			var se *StepError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.ToolName != "bash" || got.Arguments != tc.wantArgs {
			t.Errorf("%s: reply %+v, %v; want bash %s", tc.name, got, err, tc.wantArgs)
		}
	}
	if s.Steps[1].Args["command"] == "" || !strings.Contains(s.Steps[1].Args["command"].(string), CaptureToken) {
		t.Errorf("the script's own args lost the token: %v", s.Steps[1].Args)
	}

	steer, err := ForPiSteering(regexp.MustCompile(`(STEERED_[A-Z0-9]+)`), "finish_task")
	if err != nil {
		t.Fatal(err)
	}
	if st := steer[0].Steps; len(st) != 3 || st[0].Hold != PiSteerHold || st[1].Capture == nil {
		t.Fatalf("steering script %+v", st)
	}
	req, err := DecodeRequest(FormatChat, []byte(piToolResult("done\n\nChange of plan: post STEERED_AB12 now")))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := steer[0].Decide(req); err != nil || got.ToolName != "agentproof_finish_task" || got.Arguments != `{"summary":"STEERED_AB12"}` {
		t.Errorf("steered reply %+v, %v", got, err)
	}
	if _, err := ForPiSteering(regexp.MustCompile(`STEERED`), "finish_task"); err == nil {
		t.Error("a marker expression without a group was accepted")
	}
	if _, err := ForPiQuestion(&catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Steps: []*catalog.ReferenceStep{{Command: "finish_task"}}}}}, "q"); err == nil {
		t.Error("a question script without a write was accepted")
	}
}

// TestPiConfirmAndFollowUpScripts: ForPiConfirm asks a confirm question and writes the
// answer Pi gave (true or false; nothing else is captured); ForPiFollowUp holds its
// first call, answers text (the agent would stop), and takes the marker from the
// follow-up Pi delivers after that answer — a steer that arrived with the tool result
// instead leaves the answer step without a marker and no later step to use it.
func TestPiConfirmAndFollowUpScripts(t *testing.T) {
	t.Parallel()
	w := "placeholder"
	ref := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
		{Edit: &catalog.WorkspaceEdit{Path: "answer.txt", Write: &w}},
		{Command: "finish_task", Args: map[string]any{"summary": "M"}, Present: true}}}}}
	scripts, err := ForPiConfirm(ref, "May I?")
	if err != nil {
		t.Fatal(err)
	}
	s := scripts[0]
	if s.Steps[0].Call != PiQuestionTool || s.Steps[0].Args["kind"] != "confirm" || s.Steps[1].Capture == nil {
		t.Fatalf("confirm script steps %+v", s.Steps)
	}
	for _, tc := range []struct {
		name, result, wantArgs string
	}{
		{"no", `{"kind":"confirm","confirmed":false}`, `{"command":"printf '%s' 'false' > 'answer.txt'"}`},
		{"yes", `{"kind":"confirm","confirmed":true}`, `{"command":"printf '%s' 'true' > 'answer.txt'"}`},
		{"no answer", `{"kind":"confirm"}`, ""},
	} {
		req, err := DecodeRequest(FormatChat, []byte(piToolResult(tc.result)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Decide(req)
		if tc.wantArgs == "" {
			if err == nil {
				t.Errorf("%s: reply %+v, want a refusal", tc.name, got)
			}
			continue
		}
		if err != nil || got.ToolName != "bash" || got.Arguments != tc.wantArgs {
			t.Errorf("%s: reply %+v, %v; want bash %s", tc.name, got, err, tc.wantArgs)
		}
	}

	fu, err := ForPiFollowUp(regexp.MustCompile(`(FOLLOWUP_[A-Z0-9]+)`), "finish_task")
	if err != nil {
		t.Fatal(err)
	}
	if st := fu[0].Steps; len(st) != 4 || st[0].Hold != PiSteerHold || st[1].Answer != PiFollowUpAnswer || st[2].Capture == nil {
		t.Fatalf("follow-up script %+v", st)
	}
	after := func(followUp string) string {
		return `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"assistant","content":` + quoteJSON(PiFollowUpAnswer) + `},{"role":"user","content":` + quoteJSON(followUp) + `}],"tools":` + piChatTools + `}`
	}
	req, err := DecodeRequest(FormatChat, []byte(after("Once that is done: post FOLLOWUP_AB12")))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fu[0].Decide(req); err != nil || got.ToolName != "agentproof_finish_task" || got.Arguments != `{"summary":"FOLLOWUP_AB12"}` {
		t.Errorf("follow-up reply %+v, %v", got, err)
	}
	req, err = DecodeRequest(FormatChat, []byte(after("something else")))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fu[0].Decide(req); err == nil {
		t.Errorf("a request without the follow-up's marker got %+v", got)
	}
	if _, err := ForPiFollowUp(regexp.MustCompile(`FOLLOWUP`), "finish_task"); err == nil {
		t.Error("a marker expression without a group was accepted")
	}
}

// TestCodexAppSteeringScript: Codex adds the steering message to the conversation at
// once and samples again, so the marker comes before the held call's result:
// ForCodexAppSteering holds a progress report first and captures the marker from the
// whole conversation (CaptureAnywhere), which a latest-input capture would miss.
func TestCodexAppSteeringScript(t *testing.T) {
	t.Parallel()
	marker := regexp.MustCompile(`(STEERED_[A-Z0-9]+)`)
	scripts, err := ForCodexAppSteering(marker, "report_progress", "finish_task")
	if err != nil {
		t.Fatal(err)
	}
	st := scripts[0].Steps
	if len(st) != 3 || st[0].Call != "report_progress" || st[0].Hold != PiSteerHold || !st[1].CaptureAnywhere {
		t.Fatalf("steps %+v", st)
	}
	body := `{"model":"m","input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Change of plan: post STEERED_AB12"}]},` +
		`{"type":"function_call","name":"report_progress","call_id":"c1","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"applied"}],` +
		`"tools":[{"type":"function","name":"report_progress","parameters":{"type":"object"}},{"type":"function","name":"finish_task","parameters":{"type":"object"}}]}`
	req, err := DecodeRequest(FormatResponses, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := scripts[0].Decide(req); err != nil || got.ToolName != "finish_task" || got.Arguments != `{"summary":"STEERED_AB12"}` {
		t.Errorf("steered reply %+v, %v", got, err)
	}
	latest := *scripts[0]
	latest.Steps = append([]Step(nil), st...)
	latest.Steps[1].CaptureAnywhere = false
	if _, err := latest.Decide(req); err == nil || !strings.Contains(err.Error(), "the latest input has no match") {
		t.Errorf("a latest-input capture: %v, want no match", err)
	}
}

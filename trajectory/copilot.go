package trajectory

import "fmt"

// FormatCopilot is GitHub Copilot CLI's JSON event stream (`copilot -p …
// --output-format json`, events.jsonl; docs/clis.md).
const FormatCopilot = "copilot-json"

func init() {
	register(Format{Name: FormatCopilot, File: "events.jsonl", Accepts: cliDriver("copilot"), Convert: fromCopilot})
}

// fromCopilot reads Copilot CLI's event stream:
//
//   - user.message is a user step (its content);
//   - every assistant.message is an agent step (one model call: its content, its
//     toolRequests as calls with their arguments); tool.execution_complete is the
//     result of its call (result.content; success false an error);
//   - the final result event ends the stream (a non-zero exitCode adds a system step),
//     and its sessionId names the session.
//
// The stream reports no token usage (its result's usage has request counts and
// durations only): Usage stays nil, unavailable, never zero. The ephemeral session.*,
// model.call_* and delta events are not steps (the whole message follows them). A
// stream without result, with a line that is not JSON, or cut is partial.
func fromCopilot(in Input) Trajectory {
	t := Trajectory{RunID: in.RunID, Agent: in.Agent, Format: FormatCopilot}
	callStep := map[string]int{}
	terminal := false
	eachObject(&t, in.Stream, in.Cut, func(e map[string]any) {
		at := rfc3339(str(e["timestamp"]))
		d := obj(e["data"])
		switch str(e["type"]) {
		case "user.message":
			t.Add(Step{Role: RoleUser, Kind: "user.message", Time: at, Message: NewText(str(d["content"]))})
		case "assistant.message":
			s := Step{Role: RoleAgent, Kind: "assistant.message", Time: at, LLMCalls: intp(1), Message: NewText(str(d["content"]))}
			for _, r := range list(d["toolRequests"]) {
				rm := obj(r)
				a, cut := argumentsOf(rm["arguments"])
				s.ToolCalls = append(s.ToolCalls, ToolCall{ID: str(rm["toolCallId"]), Name: str(rm["name"]), Arguments: a, ArgumentsTruncated: cut})
			}
			if i := t.Add(s); i >= 0 {
				for _, c := range s.ToolCalls {
					callStep[c.ID] = i
				}
			}
		case "tool.execution_complete":
			id := str(d["toolCallId"])
			i, ok := callStep[id]
			if !ok || i < 0 || i >= len(t.Steps) || t.Steps[i].hasResult(id) {
				return
			}
			r := obj(d["result"])
			text := str(r["content"])
			if text == "" {
				text = str(obj(d["error"])["message"])
			}
			t.Steps[i].Results = append(t.Steps[i].Results, Result{CallID: id, Content: NewText(text), Error: d["success"] != true})
		case "result":
			terminal = true
			if t.SessionID == "" {
				t.SessionID = str(e["sessionId"])
			}
			if code, ok := e["exitCode"].(float64); ok && code != 0 {
				t.Add(Step{Role: RoleSystem, Kind: "result", Time: at, Message: NewText(fmt.Sprintf("Copilot CLI ended with exit code %v", code))})
			}
		}
	})
	if !terminal {
		t.Gap("the stream ended without its result event: the agent did not finish cleanly")
	}
	t.Finish()
	return t
}

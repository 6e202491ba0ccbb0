package trajectory

// FormatOpenCode is the JSON event stream of `opencode run --format json`
// (events.jsonl).
const FormatOpenCode = "opencode-run-json"

func init() {
	register(Format{Name: FormatOpenCode, File: "events.jsonl", Accepts: cliDriver("opencode", "kilo"), Convert: fromOpenCode})
}

// fromOpenCode reads an OpenCode event stream: every step_start opens one agent step
// (one model call: llm_call_count 1), text and reasoning parts fill its message and
// reasoning, a tool_use part adds a call with its input and, once its state is
// completed or error, its output; step_finish gives the step its usage (OpenCode's
// input excludes cache reads and writes: the prompt is their sum) and, with a reason
// other than "tool-calls", ends the stream; error events are system steps. Event
// times (Unix ms) become step times. A stream without a final step_finish is partial.
func fromOpenCode(in Input) Trajectory {
	t := Trajectory{RunID: in.RunID, Agent: in.Agent, Format: FormatOpenCode}
	cur := -1 // the open step
	terminal := false
	current := func(m map[string]any) *Step {
		if cur < 0 || cur >= len(t.Steps) {
			cur = t.Add(Step{Role: RoleAgent, Kind: "step", Time: millis(m["timestamp"])})
			if cur < 0 {
				return &Step{} // beyond MaxSteps: counted, not kept
			}
		}
		return &t.Steps[cur]
	}
	eachObject(&t, in.Stream, in.Cut, func(m map[string]any) {
		if t.SessionID == "" {
			t.SessionID = str(m["sessionID"])
		}
		part := obj(m["part"])
		switch str(m["type"]) {
		case "step_start":
			cur = t.Add(Step{Role: RoleAgent, Kind: "step", Time: millis(m["timestamp"]), LLMCalls: intp(1)})
		case "text":
			s := current(m)
			s.Message = NewText(s.Message.S + str(part["text"]))
		case "reasoning":
			s := current(m)
			s.Reasoning = NewText(s.Reasoning.S + str(part["text"]))
		case "tool_use":
			s := current(m)
			state := obj(part["state"])
			id := str(part["callID"])
			if id == "" {
				id = str(part["id"])
			}
			a, argCut := argumentsOf(state["input"])
			s.ToolCalls = append(s.ToolCalls, ToolCall{ID: id, Name: str(part["tool"]), Arguments: a, ArgumentsTruncated: argCut})
			switch str(state["status"]) {
			case "completed":
				s.Results = append(s.Results, Result{CallID: id, Content: NewText(str(state["output"]))})
			case "error":
				s.Results = append(s.Results, Result{CallID: id, Content: NewText(str(state["error"])), Error: true})
			}
		case "step_finish":
			s := current(m)
			if tk := obj(part["tokens"]); tk != nil {
				cache := obj(tk["cache"])
				u := Usage{Input: count(tk["input"]) + count(cache["read"]) + count(cache["write"]), Cached: count(cache["read"]),
					Output: count(tk["output"]) + count(tk["reasoning"])}
				s.Usage = &u
				t.addUsage(u)
			}
			if r := str(part["reason"]); r != "" && r != "tool-calls" {
				terminal = true
			}
			cur = -1
		case "error":
			e := obj(m["error"])
			msg := str(obj(e["data"])["message"])
			if msg == "" {
				msg = str(e["name"])
			}
			t.Add(Step{Role: RoleSystem, Kind: "error", Time: millis(m["timestamp"]), Message: NewText(msg)})
			cur = -1
		}
	})
	if !terminal {
		t.Gap("the stream ended without a final step_finish: the agent did not finish cleanly")
	}
	t.Finish()
	return t
}

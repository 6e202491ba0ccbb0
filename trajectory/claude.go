package trajectory

import "math"

// FormatClaude is the JSON event stream of `claude -p --output-format stream-json`
// (events.jsonl).
const FormatClaude = "claude-stream-json"

func init() {
	register(Format{Name: FormatClaude, File: "events.jsonl", Accepts: cliDriver("claude", "qwen"), Convert: fromClaude})
}

// fromClaude reads a Claude Code event stream: system init names the session and the
// model; every assistant event is one agent step (events of one message id are one
// step: text blocks its message, thinking its reasoning, tool_use blocks its calls;
// the message's usage its usage, cache reads and writes counted into the prompt); a
// user event's tool_result blocks are the results of the calls they name and its text
// a user step; the result event ends the stream, gives the totals (and the dollars
// Claude Code reports, total_cost_usd) and, when is_error, a system step. A stream
// without a result event is partial.
func fromClaude(in Input) Trajectory {
	t := Trajectory{RunID: in.RunID, Agent: in.Agent, Format: FormatClaude}
	callStep := map[string]int{} // tool_use id -> step index
	lastID, last := "", -1
	terminal := false
	eachObject(&t, in.Stream, in.Cut, func(m map[string]any) {
		if t.SessionID == "" {
			t.SessionID = str(m["session_id"])
		}
		msg := obj(m["message"])
		switch str(m["type"]) {
		case "system":
			if str(m["subtype"]) == "init" && t.Agent.Model == "" {
				t.Agent.Model = str(m["model"])
			}
		case "assistant":
			id := str(msg["id"])
			if id == "" || id != lastID || last < 0 {
				last = t.Add(Step{Role: RoleAgent, Kind: "assistant", LLMCalls: intp(1)})
				lastID = id
			}
			if last < 0 {
				return
			}
			s := &t.Steps[last]
			for _, c := range list(msg["content"]) {
				cm := obj(c)
				switch str(cm["type"]) {
				case "text":
					s.Message = NewText(joinText(s.Message.S, str(cm["text"])))
				case "thinking":
					s.Reasoning = NewText(joinText(s.Reasoning.S, str(cm["thinking"])))
				case "tool_use":
					a, cut := argumentsOf(cm["input"])
					cid := str(cm["id"])
					s.ToolCalls = append(s.ToolCalls, ToolCall{ID: cid, Name: str(cm["name"]), Arguments: a, ArgumentsTruncated: cut})
					callStep[cid] = last
				}
			}
			if u := obj(msg["usage"]); u != nil {
				su := Usage{Input: count(u["input_tokens"]) + count(u["cache_read_input_tokens"]) + count(u["cache_creation_input_tokens"]),
					Cached: count(u["cache_read_input_tokens"]), Output: count(u["output_tokens"])}
				s.Usage = &su
			}
		case "user":
			var text string
			if s, ok := msg["content"].(string); ok {
				text = s
			}
			for _, c := range list(msg["content"]) {
				cm := obj(c)
				switch str(cm["type"]) {
				case "tool_result":
					cid := str(cm["tool_use_id"])
					r := Result{CallID: cid, Content: NewText(contentText(cm["content"])), Error: cm["is_error"] == true}
					if i, ok := callStep[cid]; ok {
						t.Steps[i].Results = append(t.Steps[i].Results, r)
					} else {
						t.Add(Step{Role: RoleSystem, Kind: "tool_result", Results: []Result{{Content: r.Content, Error: r.Error}},
							Message: NewText("result of tool call " + cid + ", which the stream does not show")})
					}
				case "text":
					text = joinText(text, str(cm["text"]))
				}
			}
			if text != "" {
				t.Add(Step{Role: RoleUser, Kind: "user", Time: rfc3339(str(m["timestamp"])), Message: NewText(text)})
			}
			lastID = ""
		case "result":
			terminal = true
			var total Usage
			if u := obj(m["usage"]); u != nil {
				total = Usage{Input: count(u["input_tokens"]) + count(u["cache_read_input_tokens"]) + count(u["cache_creation_input_tokens"]),
					Cached: count(u["cache_read_input_tokens"]), Output: count(u["output_tokens"])}
			}
			if c, ok := m["total_cost_usd"].(float64); ok && c >= 0 && !math.IsInf(c, 0) && !math.IsNaN(c) {
				total.CostUSD = &c
			}
			t.addUsage(total)
			if m["is_error"] == true {
				t.Add(Step{Role: RoleSystem, Kind: "result", Message: NewText(str(m["subtype"]) + ": " + str(m["result"]))})
			}
		}
	})
	if !terminal {
		t.Gap("the stream ended without its result event: the agent did not finish cleanly")
	}
	t.Finish()
	return t
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "\n" + b
}

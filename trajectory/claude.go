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
	r := &claudeReader{t: Trajectory{RunID: in.RunID, Agent: in.Agent, Format: FormatClaude}, callStep: map[string]int{}, last: -1}
	t := &r.t
	eachObject(t, in.Stream, in.Cut, func(m map[string]any) {
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
			r.assistant(msg)
		case "user":
			r.user(m, msg)
		case "result":
			r.result(m)
		}
	})
	if !r.terminal {
		t.Gap("the stream ended without its result event: the agent did not finish cleanly")
	}
	t.Finish()
	return r.t
}

// claudeReader is the state of reading one Claude Code event stream: the trajectory
// built so far, the step of each tool_use id, the message id and index of the last
// agent step (-1 before the first), and whether the result event was seen.
type claudeReader struct {
	t        Trajectory
	callStep map[string]int
	lastID   string
	last     int
	terminal bool
}

// assistant adds an assistant message to the trajectory: a new agent step unless it
// continues the last step's message id, with its text, thinking and tool calls
// appended and its usage (cache reads and writes counted into the prompt) set.
func (r *claudeReader) assistant(msg map[string]any) {
	id := str(msg["id"])
	if id == "" || id != r.lastID || r.last < 0 {
		r.last = r.t.Add(Step{Role: RoleAgent, Kind: "assistant", LLMCalls: intp(1)})
		r.lastID = id
	}
	if r.last < 0 {
		return
	}
	for _, cid := range claudeMessage(&r.t.Steps[r.last], msg) {
		r.callStep[cid] = r.last
	}
}

// claudeMessage appends an assistant message of Claude Code to step s: its text
// blocks to the message, thinking to the reasoning, tool_use blocks as calls (whose
// ids it returns), and its usage (cache reads and writes counted into the prompt).
func claudeMessage(s *Step, msg map[string]any) (calls []string) {
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
			calls = append(calls, cid)
		}
	}
	if u := obj(msg["usage"]); u != nil {
		su := claudeUsage(u)
		s.Usage = &su
	}
	return calls
}

// user adds a user event: each tool_result goes to the step of the call it names (or,
// for a call the stream does not show, to a system step of its own), and its text,
// if any, is a user step. The next assistant event starts a new step.
func (r *claudeReader) user(m, msg map[string]any) {
	var text string
	if s, ok := msg["content"].(string); ok {
		text = s
	}
	for _, c := range list(msg["content"]) {
		cm := obj(c)
		switch str(cm["type"]) {
		case "tool_result":
			cid := str(cm["tool_use_id"])
			res := Result{CallID: cid, Content: NewText(contentText(cm["content"])), Error: cm["is_error"] == true}
			if i, ok := r.callStep[cid]; ok {
				r.t.Steps[i].Results = append(r.t.Steps[i].Results, res)
			} else {
				r.t.Add(Step{Role: RoleSystem, Kind: "tool_result", Results: []Result{{Content: res.Content, Error: res.Error}},
					Message: NewText("result of tool call " + cid + ", which the stream does not show")})
			}
		case "text":
			text = joinText(text, str(cm["text"]))
		}
	}
	if text != "" {
		r.t.Add(Step{Role: RoleUser, Kind: "user", Time: rfc3339(str(m["timestamp"])), Message: NewText(text)})
	}
	r.lastID = ""
}

// result ends the stream: its usage and the dollars Claude Code reports
// (total_cost_usd, when a finite non-negative number) are the totals, and an error
// result is a system step "<subtype>: <result>".
func (r *claudeReader) result(m map[string]any) {
	r.terminal = true
	claudeResult(&r.t, m, "")
}

// claudeResult applies Claude Code's result message m to t (at its time at): its
// usage and the dollars Claude Code reports (total_cost_usd, when a finite
// non-negative number) are the totals, and an error result is a system step
// "<subtype>: <result>".
func claudeResult(t *Trajectory, m map[string]any, at string) {
	var total Usage
	if u := obj(m["usage"]); u != nil {
		total = claudeUsage(u)
	}
	if c, ok := m["total_cost_usd"].(float64); ok && c >= 0 && !math.IsInf(c, 0) && !math.IsNaN(c) {
		total.CostUSD = &c
	}
	t.addUsage(total)
	if m["is_error"] == true {
		t.Add(Step{Role: RoleSystem, Kind: "result", Time: at, Message: NewText(str(m["subtype"]) + ": " + str(m["result"]))})
	}
}

// claudeUsage reads a Claude usage object in tokens: the prompt counts input, cache
// reads and cache writes; cached is the cache reads.
func claudeUsage(u map[string]any) Usage {
	return Usage{Input: count(u["input_tokens"]) + count(u["cache_read_input_tokens"]) + count(u["cache_creation_input_tokens"]),
		Cached: count(u["cache_read_input_tokens"]), Output: count(u["output_tokens"])}
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

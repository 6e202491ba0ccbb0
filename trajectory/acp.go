package trajectory

import (
	"bytes"
	"encoding/json"

	"github.com/agentproof/agentproof/agent/driver"
)

// FormatACP is a turn's share of an ACP session log (acp-turn.jsonl, one
// agentproof.acp-log/v1 line per JSON-RPC message or driver note; docs/acp.md
// "Evidence").
const FormatACP = "acp-session-log"

func init() {
	register(Format{Name: FormatACP, File: "acp-turn.jsonl", Accepts: func(d driver.Name) bool {
		return d.Kind == driver.KindACP
	}, Convert: fromACP})
}

// fromACP reads an ACP session log:
//
//   - the client's session/prompt is a user step (its text blocks);
//   - session/update notifications fill agent steps: agent_message_chunk the
//     message, agent_thought_chunk the reasoning, tool_call a call (toolCallId, the
//     title as its name, rawInput as its arguments), tool_call_update with status
//     completed or failed its result (the text of its content, else its rawOutput);
//     plan a step of its entries; user_message_chunk a user step. A message or call
//     after a result starts the next agent step (the agent saw the result: another
//     inference);
//   - the agent's session/request_permission and the driver's permission_decision
//     are a system step (what was asked, what was decided, by whom); the driver's
//     fs_read, fs_write and cancel notes are system steps;
//   - the response to session/prompt (its stopReason) ends the turn; a stop other
//     than end_turn, or an error, is a system step.
//
// A log without the prompt's response, with a cut line (truncated), a line that is
// not JSON, or a log_overflow note is partial.
func fromACP(in Input) Trajectory {
	t := Trajectory{RunID: in.RunID, Agent: in.Agent, Format: FormatACP}
	cur := -1 // the open agent step
	callStep := map[string]int{}
	permStep := map[string]int{}
	var promptID string
	terminal := false
	agentStep := func(fresh bool) *Step {
		if cur >= 0 && cur < len(t.Steps) && !(fresh && len(t.Steps[cur].Results) > 0) {
			return &t.Steps[cur]
		}
		cur = t.Add(Step{Role: RoleAgent, Kind: "session/update"})
		if cur < 0 {
			return &Step{}
		}
		return &t.Steps[cur]
	}
	cuts := 0
	eachObject(&t, in.Stream, in.Cut, func(e map[string]any) {
		if e["truncated"] == true {
			cuts++
		}
		if t.SessionID == "" {
			t.SessionID = str(obj(obj(e["message"])["params"])["sessionId"])
		}
		at := rfc3339(str(e["time"]))
		msg := obj(e["message"])
		params := obj(msg["params"])
		switch str(e["dir"]) {
		case "client":
			switch {
			case str(e["method"]) == "session/prompt":
				promptID = string(rawID(msg["id"]))
				t.Add(Step{Role: RoleUser, Kind: "session/prompt", Time: at, Message: NewText(blocksText(params["prompt"]))})
				cur = -1
			}
		case "agent":
			switch method := str(e["method"]); {
			case method == "session/update":
				acpUpdate(&t, obj(params["update"]), at, agentStep, callStep, &cur)
			case method == "session/request_permission":
				tc := obj(params["toolCall"])
				i := t.Add(Step{Role: RoleSystem, Kind: "session/request_permission", Time: at,
					Message: NewText("the agent asked permission for " + str(tc["title"]) + " (" + str(tc["toolCallId"]) + ")")})
				if i >= 0 {
					permStep[str(tc["toolCallId"])] = i
				}
			case method == "" && promptID != "" && string(rawID(msg["id"])) == promptID:
				terminal = true
				if er := obj(msg["error"]); er != nil {
					t.Add(Step{Role: RoleSystem, Kind: "error", Time: at, Message: NewText("the prompt failed: " + str(er["message"]))})
				} else if r := str(obj(msg["result"])["stopReason"]); r != "end_turn" {
					t.Add(Step{Role: RoleSystem, Kind: "stop", Time: at, Message: NewText("the turn stopped: " + r)})
				}
			}
		case "driver":
			data := obj(e["data"])
			switch ev := str(e["event"]); ev {
			case "permission_decision":
				note := "decided: " + str(data["optionId"]) + " by " + str(data["by"])
				if data["cancelled"] == true {
					note = "cancelled before a decision"
				}
				if i, ok := permStep[str(data["toolCallId"])]; ok {
					t.Steps[i].Message = NewText(t.Steps[i].Message.S + "; " + note)
				} else {
					t.Add(Step{Role: RoleSystem, Kind: ev, Time: at, Message: NewText("permission for " + str(data["toolCallId"]) + " " + note)})
				}
			case "fs_read", "fs_write", "cancel":
				b, _ := json.Marshal(data)
				t.Add(Step{Role: RoleSystem, Kind: ev, Time: at, Message: NewText(ev + " " + string(b))})
			case "log_overflow":
				t.Gap("the session log overflowed: later lines were counted, not kept")
			}
		}
	})
	if cuts > 0 {
		t.Gap("%d line(s) of the session log were cut at %d bytes", cuts, 1<<20)
	}
	if !terminal {
		t.Gap("the log has no response to session/prompt: the turn did not end cleanly")
	}
	t.Finish()
	return t
}

// acpUpdate applies one session/update.
func acpUpdate(t *Trajectory, u map[string]any, at string, agentStep func(bool) *Step, callStep map[string]int, cur *int) {
	switch str(u["sessionUpdate"]) {
	case "agent_message_chunk":
		s := agentStep(true)
		s.Message = NewText(s.Message.S + blocksText([]any{u["content"]}))
	case "agent_thought_chunk":
		s := agentStep(true)
		s.Reasoning = NewText(s.Reasoning.S + blocksText([]any{u["content"]}))
	case "user_message_chunk":
		t.Add(Step{Role: RoleUser, Kind: "user_message_chunk", Time: at, Message: NewText(blocksText([]any{u["content"]}))})
		*cur = -1
	case "plan":
		b, _ := json.Marshal(u["entries"])
		s := agentStep(true)
		s.Message = NewText(joinText(s.Message.S, "plan: "+string(b)))
	case "tool_call":
		id := str(u["toolCallId"])
		if _, seen := callStep[id]; seen || id == "" {
			return
		}
		s := agentStep(true)
		name := str(u["title"])
		if name == "" {
			name = str(u["kind"])
		}
		a, cut := argumentsOf(u["rawInput"])
		s.ToolCalls = append(s.ToolCalls, ToolCall{ID: id, Name: name, Arguments: a, ArgumentsTruncated: cut})
		callStep[id] = *cur
		acpResult(t, u, callStep)
	case "tool_call_update":
		acpResult(t, u, callStep)
	}
}

// acpResult records the result of a finished tool call (status completed or failed).
func acpResult(t *Trajectory, u map[string]any, callStep map[string]int) {
	status := str(u["status"])
	if status != "completed" && status != "failed" {
		return
	}
	id := str(u["toolCallId"])
	i, ok := callStep[id]
	if !ok || i < 0 || i >= len(t.Steps) || t.Steps[i].hasResult(id) {
		return
	}
	text := toolContent(u["content"])
	if text == "" && u["rawOutput"] != nil {
		var b bytes.Buffer
		raw, _ := json.Marshal(u["rawOutput"])
		_ = json.Compact(&b, raw)
		text = b.String()
	}
	t.Steps[i].Results = append(t.Steps[i].Results, Result{CallID: id, Content: NewText(text), Error: status == "failed"})
}

// blocksText is the text of ACP content blocks (text blocks; other blocks named).
func blocksText(v any) string {
	var b bytes.Buffer
	for _, c := range list(v) {
		cm := obj(c)
		if cm == nil {
			continue
		}
		if s, ok := cm["text"].(string); ok {
			b.WriteString(s)
		} else {
			b.WriteString("[" + str(cm["type"]) + "]")
		}
		if b.Len() > MaxTextBytes {
			break
		}
	}
	return b.String()
}

// toolContent is the text of a tool call's content: {type: content} blocks' text, a
// diff named by its path, a terminal by its id.
func toolContent(v any) string {
	var parts []string
	for _, c := range list(v) {
		cm := obj(c)
		switch str(cm["type"]) {
		case "content":
			parts = append(parts, blocksText([]any{cm["content"]}))
		case "diff":
			parts = append(parts, "diff of "+str(cm["path"])+":\n"+str(cm["newText"]))
		case "terminal":
			parts = append(parts, "[terminal "+str(cm["terminalId"])+"]")
		}
	}
	out := ""
	for _, p := range parts {
		out = joinText(out, p)
	}
	return out
}

// rawID renders a JSON-RPC id (number or string) for comparison.
func rawID(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

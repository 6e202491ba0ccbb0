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

// fromACP reads an ACP session log (the layer's notes: fromSession):
//
//   - the client's session/prompt is a user step (its text blocks);
//   - session/update notifications fill agent steps: agent_message_chunk the
//     message, agent_thought_chunk the reasoning, tool_call a call (toolCallId, the
//     title as its name, rawInput as its arguments), tool_call_update with status
//     completed or failed its result (the text of its content, else its rawOutput);
//     plan a step of its entries; user_message_chunk a user step. A message or call
//     after a result starts the next agent step (the agent saw the result: another
//     inference);
//   - the agent's session/request_permission is a system step (what was asked; the
//     layer's decision note adds what was decided, by whom);
//   - the response to session/prompt (its stopReason) ends the turn; a stop other
//     than end_turn, or an error, is a system step.
func fromACP(in Input) Trajectory {
	return fromSession(in, sessionWire{format: FormatACP, client: acpClient, agent: acpAgent,
		noEnd: "the log has no response to session/prompt: the turn did not end cleanly"})
}

// acpClient applies a line the client sent.
func acpClient(c *sessionConv, at string, msg map[string]any) {
	if c.t.SessionID == "" {
		c.t.SessionID = str(obj(msg["params"])["sessionId"])
	}
	if str(msg["method"]) == "session/prompt" {
		c.promptID = string(rawID(msg["id"]))
		c.t.Add(Step{Role: RoleUser, Kind: "session/prompt", Time: at, Message: NewText(blocksText(obj(msg["params"])["prompt"]))})
		c.cur = -1
	}
}

// acpAgent applies a line the agent sent.
func acpAgent(c *sessionConv, at string, msg map[string]any) {
	params := obj(msg["params"])
	if c.t.SessionID == "" {
		c.t.SessionID = str(params["sessionId"])
	}
	switch method := str(msg["method"]); {
	case method == "session/update":
		acpUpdate(c, obj(params["update"]), at)
	case method == "session/request_permission":
		tc := obj(params["toolCall"])
		c.asked(str(tc["toolCallId"]), method, at, "the agent asked permission for "+str(tc["title"])+" ("+str(tc["toolCallId"])+")")
	case method == "" && c.promptID != "" && string(rawID(msg["id"])) == c.promptID:
		c.terminal = true
		if er := obj(msg["error"]); er != nil {
			c.t.Add(Step{Role: RoleSystem, Kind: "error", Time: at, Message: NewText("the prompt failed: " + str(er["message"]))})
		} else if r := str(obj(msg["result"])["stopReason"]); r != "end_turn" {
			c.t.Add(Step{Role: RoleSystem, Kind: "stop", Time: at, Message: NewText("the turn stopped: " + r)})
		}
	}
}

// acpUpdate applies one session/update.
func acpUpdate(c *sessionConv, u map[string]any, at string) {
	const kind = "session/update"
	switch str(u["sessionUpdate"]) {
	case "agent_message_chunk":
		s := c.agentStep(kind)
		s.Message = NewText(s.Message.S + blocksText([]any{u["content"]}))
	case "agent_thought_chunk":
		s := c.agentStep(kind)
		s.Reasoning = NewText(s.Reasoning.S + blocksText([]any{u["content"]}))
	case "user_message_chunk":
		c.t.Add(Step{Role: RoleUser, Kind: "user_message_chunk", Time: at, Message: NewText(blocksText([]any{u["content"]}))})
		c.cur = -1
	case "plan":
		b, _ := json.Marshal(u["entries"])
		s := c.agentStep(kind)
		s.Message = NewText(joinText(s.Message.S, "plan: "+string(b)))
	case "tool_call":
		id := str(u["toolCallId"])
		if _, seen := c.calls[id]; seen || id == "" {
			return
		}
		s := c.agentStep(kind)
		name := str(u["title"])
		if name == "" {
			name = str(u["kind"])
		}
		a, cut := argumentsOf(u["rawInput"])
		s.ToolCalls = append(s.ToolCalls, ToolCall{ID: id, Name: name, Arguments: a, ArgumentsTruncated: cut})
		c.calls[id] = c.cur
		acpResult(c, u)
	case "tool_call_update":
		acpResult(c, u)
	}
}

// acpResult records the result of a finished tool call (status completed or failed).
func acpResult(c *sessionConv, u map[string]any) {
	status := str(u["status"])
	if status != "completed" && status != "failed" {
		return
	}
	text := toolContent(u["content"])
	if text == "" && u["rawOutput"] != nil {
		var b bytes.Buffer
		raw, _ := json.Marshal(u["rawOutput"])
		_ = json.Compact(&b, raw)
		text = b.String()
	}
	c.result(str(u["toolCallId"]), text, status == "failed")
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

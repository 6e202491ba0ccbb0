package trajectory

import (
	"encoding/json"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
)

// FormatPi is a turn's share of a Pi session log (pi-turn.jsonl, one
// agentproof.pi-rpc-log/v1 line per RPC line of Pi's --mode rpc stream, either way, or
// driver note; docs/pi.md "RPC mapping").
const FormatPi = "pi-rpc-log"

// piIdentityPrefix starts the prompt that tells agentproof's Pi extension the turn's
// run (not a message to the model: it never reaches the conversation).
const piIdentityPrefix = "/agentproof-run "

// piGatePrefix starts the title of the write gate's confirm dialogs (the permission
// requests of agentproof's Pi extension).
const piGatePrefix = "agentproof-permission:"

func init() {
	register(Format{Name: FormatPi, File: "pi-turn.jsonl", Accepts: func(d driver.Name) bool {
		return d.Kind == driver.KindRPC
	}, Convert: fromPi})
}

// fromPi reads a Pi session log (the layer's notes: fromSession):
//
//   - Pi's message_end events carry whole messages: a user message is a user step (the
//     prompt, then steering and follow-up messages as Pi delivered them), an assistant
//     message an agent step (its text, thinking as reasoning, toolCall blocks as calls,
//     its usage: input plus cache reads and writes as prompt tokens, cache reads as
//     cached), a toolResult message the result of its call (isError an error);
//   - the client's steer and follow_up commands are system steps (a message queued
//     into the running turn), its abort a system step, and the run-identity prompt of
//     agentproof's extension is skipped (it never reaches the model);
//   - Pi's dialogs (extension_ui_request) are system steps (a write gate's request
//     then gets the layer's decision);
//   - an assistant message with stop reason error or aborted adds a system step;
//     agent_end ends the turn;
//   - the session id is Pi's own (its get_state answer), as the layer's turn_start
//     note repeats it.
func fromPi(in Input) Trajectory {
	return fromSession(in, sessionWire{format: FormatPi, client: piClient, agent: piAgent,
		noEnd: "the log has no agent_end: the turn did not end cleanly"})
}

// piClient applies a command the client sent.
func piClient(c *sessionConv, at string, line map[string]any) {
	switch kind := str(line["type"]); kind {
	case "steer", "follow_up":
		c.t.Add(Step{Role: RoleSystem, Kind: kind, Time: at, Message: NewText("the human's message was sent with " + kind + ": " + str(line["message"]))})
	case "abort":
		c.t.Add(Step{Role: RoleSystem, Kind: kind, Time: at, Message: NewText("the turn was aborted (Stop)")})
	}
}

// piAgent applies a line Pi sent.
func piAgent(c *sessionConv, at string, line map[string]any) {
	switch str(line["type"]) {
	case "message_end":
		piMessage(&c.t, obj(line["message"]), at, c.calls)
	case "extension_ui_request":
		if strings.HasPrefix(str(line["title"]), piGatePrefix) {
			var call struct {
				ToolCallID string `json:"toolCallId"`
			}
			_ = json.Unmarshal([]byte(str(line["message"])), &call)
			c.asked(call.ToolCallID, "extension_ui_request", at, "the write gate asked permission: "+str(line["message"]))
			return
		}
		c.t.Add(Step{Role: RoleSystem, Kind: "extension_ui_request", Time: at, Message: NewText("Pi asked (" + str(line["method"]) + "): " + str(line["title"]))})
	case "agent_end":
		c.terminal = true
	case "response":
		if str(line["command"]) == "get_state" && c.t.SessionID == "" {
			c.t.SessionID = str(obj(line["data"])["sessionId"])
		}
	}
}

// piMessage applies one whole message of Pi's conversation.
func piMessage(t *Trajectory, m map[string]any, at string, callStep map[string]int) {
	switch str(m["role"]) {
	case "user":
		text := piText(m["content"])
		if strings.HasPrefix(text, piIdentityPrefix) {
			return
		}
		t.Add(Step{Role: RoleUser, Kind: "message", Time: at, Message: NewText(text)})
	case "assistant":
		s := Step{Role: RoleAgent, Kind: "message", Time: at, LLMCalls: intp(1)}
		var text, thinking strings.Builder
		for _, c := range list(m["content"]) {
			b := obj(c)
			switch str(b["type"]) {
			case "text":
				text.WriteString(str(b["text"]))
			case "thinking":
				thinking.WriteString(str(b["thinking"]))
			case "toolCall":
				a, cut := argumentsOf(b["arguments"])
				s.ToolCalls = append(s.ToolCalls, ToolCall{ID: str(b["id"]), Name: str(b["name"]), Arguments: a, ArgumentsTruncated: cut})
			}
		}
		s.Message, s.Reasoning = NewText(text.String()), NewText(thinking.String())
		if u := obj(m["usage"]); u != nil {
			us := Usage{Input: count(u["input"]) + count(u["cacheRead"]) + count(u["cacheWrite"]), Cached: count(u["cacheRead"]), Output: count(u["output"])}
			s.Usage = &us
			t.addUsage(us)
		}
		i := t.Add(s)
		for _, c := range s.ToolCalls {
			if i >= 0 {
				callStep[c.ID] = i
			}
		}
		switch r := str(m["stopReason"]); r {
		case "error", "aborted":
			msg := "the turn stopped: " + r
			if em := str(m["errorMessage"]); em != "" {
				msg += ": " + em
			}
			t.Add(Step{Role: RoleSystem, Kind: "stop", Time: at, Message: NewText(msg)})
		}
	case "toolResult":
		id := str(m["toolCallId"])
		i, ok := callStep[id]
		if !ok || i < 0 || i >= len(t.Steps) || t.Steps[i].hasResult(id) {
			return
		}
		t.Steps[i].Results = append(t.Steps[i].Results, Result{CallID: id, Content: NewText(piText(m["content"])), Error: m["isError"] == true})
	}
}

// piText is the text of a Pi message's content: a string, or its text blocks joined
// (other blocks named).
func piText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return blocksText(v)
}

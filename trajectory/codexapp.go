package trajectory

import (
	"encoding/json"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
)

// FormatCodexApp is a turn's share of a Codex app-server session log (app-turn.jsonl,
// one agentproof.codex-app-log/v1 line per JSON-RPC message either way, or note of the
// session layer; docs/clis.md "app:codex").
const FormatCodexApp = "codex-app-server-log"

func init() {
	register(Format{Name: FormatCodexApp, File: "app-turn.jsonl", Accepts: func(d driver.Name) bool { return d.Kind == driver.KindApp && d.Arg == driver.AppCodex }, Convert: fromCodexApp})
}

// fromCodexApp reads a Codex app-server session log (the layer's notes: fromSession):
//
//   - the client's turn/start is a user step (its text inputs; Codex's echo of it, a
//     userMessage item, is not a second one), its turn/steer and turn/interrupt system
//     steps (a steering message sent, Stop); a userMessage item that is not the
//     prompt's echo (a steering message Codex delivered) is a user step;
//   - Codex's finished items (item/completed) fill agent steps: agentMessage the
//     message, reasoning the reasoning, commandExecution, fileChange and mcpToolCall a
//     call with its result (the command's output, the patch's paths, the tool's
//     result; failed or declined an error); a message or call after a result starts
//     the next agent step;
//   - its approval requests are system steps (what was asked; the layer's decision
//     note adds what was decided, by whom);
//   - thread/tokenUsage/updated adds the last model call's usage;
//   - turn/completed ends the turn; a status other than completed is a system step;
//   - the session id is the thread's (thread/start's answer, or the layer's
//     turn_start note).
func fromCodexApp(in Input) Trajectory {
	return fromSession(in, sessionWire{format: FormatCodexApp, client: codexAppClient, agent: codexAppAgent,
		noEnd: "the log has no turn/completed: the turn did not end cleanly"})
}

// codexAppClient applies a message the client sent.
func codexAppClient(c *sessionConv, at string, msg map[string]any) {
	params := obj(msg["params"])
	switch str(msg["method"]) {
	case "turn/start":
		text := codexAppText(params["input"])
		c.t.Add(Step{Role: RoleUser, Kind: "turn/start", Time: at, Message: NewText(text)})
		c.cur, c.prompt = -1, text
	case "turn/steer":
		c.t.Add(Step{Role: RoleSystem, Kind: "turn/steer", Time: at, Message: NewText("the human sent a steering message into the running turn")})
	case "turn/interrupt":
		c.t.Add(Step{Role: RoleSystem, Kind: "turn/interrupt", Time: at, Message: NewText("the turn was interrupted (Stop)")})
	}
}

// codexAppAgent applies a message Codex sent.
func codexAppAgent(c *sessionConv, at string, msg map[string]any) {
	params := obj(msg["params"])
	switch method := str(msg["method"]); method {
	case "item/completed":
		codexAppItem(c, at, obj(params["item"]))
	case "item/commandExecution/requestApproval":
		c.asked(str(params["itemId"]), method, at, "Codex asked to run "+str(params["command"])+" ("+str(params["itemId"])+")")
	case "item/fileChange/requestApproval":
		c.asked(str(params["itemId"]), method, at, "Codex asked to change files ("+str(params["itemId"])+")")
	case "thread/tokenUsage/updated":
		last := obj(obj(params["tokenUsage"])["last"])
		c.t.addUsage(Usage{Input: count(last["inputTokens"]), Cached: count(last["cachedInputTokens"]), Output: count(last["outputTokens"])})
	case "turn/completed":
		c.terminal = true
		turn := obj(params["turn"])
		if s := str(turn["status"]); s != "completed" {
			m := "the turn ended " + s
			if e := str(obj(turn["error"])["message"]); e != "" {
				m += ": " + e
			}
			c.t.Add(Step{Role: RoleSystem, Kind: "stop", Time: at, Message: NewText(m)})
		}
	case "":
		if c.t.SessionID == "" {
			c.t.SessionID = str(obj(obj(msg["result"])["thread"])["id"])
		}
	}
}

// codexAppText is the text of a user input list (turn/start's input, a userMessage
// item's content): every element's text, joined without a separator.
func codexAppText(v any) string {
	var text []string
	for _, in := range list(v) {
		text = append(text, str(obj(in)["text"]))
	}
	return strings.Join(text, "")
}

// codexAppItem applies one finished item.
func codexAppItem(c *sessionConv, at string, it map[string]any) {
	const kind = "item"
	id := str(it["id"])
	switch str(it["type"]) {
	case "userMessage":
		if m := codexAppText(it["content"]); m != c.prompt {
			c.t.Add(Step{Role: RoleUser, Kind: "userMessage", Time: at, Message: NewText(m)})
			c.cur = -1
		}
		c.prompt = ""
	case "agentMessage":
		s := c.agentStep(kind)
		s.Message = NewText(joinText(s.Message.S, str(it["text"])))
	case "reasoning":
		b, _ := json.Marshal(it["summary"])
		s := c.agentStep(kind)
		s.Reasoning = NewText(joinText(s.Reasoning.S, string(b)))
	case "commandExecution":
		codexAppCall(c, id, "exec_command", map[string]any{"command": it["command"]}, str(it["aggregatedOutput"]), str(it["status"]))
	case "fileChange":
		var paths []string
		for _, ch := range list(it["changes"]) {
			paths = append(paths, str(obj(ch)["path"]))
		}
		codexAppCall(c, id, "apply_patch", map[string]any{"paths": paths}, strings.Join(paths, "\n"), str(it["status"]))
	case "mcpToolCall":
		b, _ := json.Marshal(it["result"])
		codexAppCall(c, id, str(it["tool"]), it["arguments"], string(b), str(it["status"]))
	}
}

// codexAppCall adds a finished tool call (name, arguments) with its result to the open
// agent step; status failed or declined makes the result an error.
func codexAppCall(c *sessionConv, id, name string, args any, result, status string) {
	if _, seen := c.calls[id]; seen || id == "" {
		return
	}
	s := c.agentStep("item")
	a, cut := argumentsOf(args)
	s.ToolCalls = append(s.ToolCalls, ToolCall{ID: id, Name: name, Arguments: a, ArgumentsTruncated: cut})
	c.calls[id] = c.cur
	if status == "declined" {
		result = "declined by the human"
	}
	c.result(id, result, status == "failed" || status == "declined")
}

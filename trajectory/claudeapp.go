package trajectory

import "github.com/agentproof/agentproof/agent/driver"

// FormatClaudeApp is a turn's share of a Claude Code stream-json session log
// (app-turn.jsonl, one agentproof.claude-app-log/v1 line per message either way, or
// note of the session layer; docs/clis.md "app:claude").
const FormatClaudeApp = "claude-app-log"

func init() {
	register(Format{Name: FormatClaudeApp, File: "app-turn.jsonl", Accepts: func(d driver.Name) bool {
		return d.Kind == driver.KindApp && d.Arg == driver.AppClaude
	}, Convert: fromClaudeApp})
}

// fromClaudeApp reads a Claude Code session log (the layer's notes: fromSession):
//
//   - the client's user message is a user step, its interrupt control request a
//     system step (Stop);
//   - Claude Code's assistant messages fill agent steps (one per message id: text its
//     message, thinking its reasoning, tool_use blocks its calls, the message's usage
//     its usage); a user message's tool_result blocks are the results of the calls
//     they name (is_error an error), its text (Claude Code's own note of an
//     interruption) a user step;
//   - the driver's permission_prompt note (what Claude Code's permission prompt tool
//     relayed) is a system step, to which the layer's decision note adds what was
//     decided, by whom;
//   - the result message ends the turn: its totals (and total_cost_usd) are the
//     trajectory's, an error result a system step; the session id is the system
//     init's (or the layer's turn_start note).
func fromClaudeApp(in Input) Trajectory {
	conv := &claudeAppConv{}
	return fromSession(in, sessionWire{format: FormatClaudeApp, client: claudeAppClient, agent: conv.agent, note: claudeAppNote,
		noEnd: "the log has no result message: the turn did not end cleanly"})
}

// claudeAppClient applies a message the client sent.
func claudeAppClient(c *sessionConv, at string, msg map[string]any) {
	switch str(msg["type"]) {
	case "user":
		c.t.Add(Step{Role: RoleUser, Kind: "user", Time: at, Message: NewText(blocksText(obj(msg["message"])["content"]))})
		c.cur = -1
	case "control_request":
		if str(obj(msg["request"])["subtype"]) == "interrupt" {
			c.t.Add(Step{Role: RoleSystem, Kind: "interrupt", Time: at, Message: NewText("the turn was interrupted (Stop)")})
		}
	}
}

// claudeAppNote applies the driver's permission_prompt note.
func claudeAppNote(c *sessionConv, event string, data map[string]any, at string) {
	if event == "permission_prompt" {
		id := str(data["toolUseId"])
		c.asked(id, event, at, "Claude Code asked permission for "+str(data["toolName"])+" ("+id+")")
	}
}

// claudeAppConv is what the conversion keeps between Claude Code's messages: the id
// of the assistant message the open agent step holds.
type claudeAppConv struct {
	lastID string
}

// agent applies a message Claude Code sent.
func (a *claudeAppConv) agent(c *sessionConv, at string, m map[string]any) {
	msg := obj(m["message"])
	switch str(m["type"]) {
	case "system":
		if str(m["subtype"]) == "init" {
			if c.t.Agent.Model == "" {
				c.t.Agent.Model = str(m["model"])
			}
			if c.t.SessionID == "" {
				c.t.SessionID = str(m["session_id"])
			}
		}
	case "assistant":
		a.assistant(c, at, msg)
	case "user":
		text := ""
		for _, b := range list(msg["content"]) {
			bm := obj(b)
			switch str(bm["type"]) {
			case "tool_result":
				c.result(str(bm["tool_use_id"]), contentText(bm["content"]), bm["is_error"] == true)
			case "text":
				text = joinText(text, str(bm["text"]))
			}
		}
		if text != "" {
			c.t.Add(Step{Role: RoleUser, Kind: "user", Time: at, Message: NewText(text)})
			c.cur = -1
		}
		a.lastID = ""
	case "result":
		c.terminal = true
		claudeResult(&c.t, m, at)
	}
}

// assistant adds an assistant message to the open agent step of its message id, or
// opens one.
func (a *claudeAppConv) assistant(c *sessionConv, at string, msg map[string]any) {
	id := str(msg["id"])
	if id == "" || id != a.lastID || c.cur < 0 {
		c.cur = c.t.Add(Step{Role: RoleAgent, Kind: "assistant", Time: at, LLMCalls: intp(1)})
		a.lastID = id
	}
	if c.cur < 0 {
		return
	}
	for _, cid := range claudeMessage(&c.t.Steps[c.cur], msg) {
		c.calls[cid] = c.cur
	}
}

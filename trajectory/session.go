package trajectory

import (
	"encoding/json"
)

// The session layer's logs (package agent/session; docs/acp.md "Evidence"): every
// session driver's turn leaves one log of the same shape — one line per wire line of
// the protocol (dir client or agent, the line as message, or as text when it was not
// JSON) and per note of the layer (dir driver: turn_start, permission_decision,
// question_answer, fs_read, fs_write, cancel, log_overflow, …). fromSession reads the
// envelope and the layer's notes once for every protocol; a protocol's sessionWire
// reads its own wire lines.

// sessionWire is one protocol's reading of its wire lines: client and agent apply one
// line (its message; at its time) to the conversion, and noEnd is the gap of a log
// without the protocol's terminal event of the turn.
type sessionWire struct {
	format string
	client func(c *sessionConv, at string, line map[string]any)
	agent  func(c *sessionConv, at string, line map[string]any)
	// note, when set, applies a note of the protocol's own (one the layer does not
	// know), before the layer's reading of it.
	note  func(c *sessionConv, event string, data map[string]any, at string)
	noEnd string
}

// sessionConv is one session log's conversion: the trajectory, whether the turn's
// terminal event arrived, the step of every tool call and permission request by its
// tool call id, the open agent step of a protocol that streams chunks (cur, -1 for
// none) and the id of the prompt request whose response ends the turn.
type sessionConv struct {
	t        Trajectory
	terminal bool
	calls    map[string]int
	perms    map[string]int
	cur      int
	promptID string
	// prompt is the text of the last prompt a protocol echoes back as a user message
	// (Codex's userMessage item): its echo is not a second user step.
	prompt string
}

// fromSession converts a session log with wire's reading of its lines. A log without
// the terminal event, with a cut line (truncated), a line that is not JSON, or a
// log_overflow note is partial.
func fromSession(in Input, wire sessionWire) Trajectory {
	c := &sessionConv{t: Trajectory{RunID: in.RunID, Agent: in.Agent, Format: wire.format}, calls: map[string]int{}, perms: map[string]int{}, cur: -1}
	cuts := 0
	eachObject(&c.t, in.Stream, in.Cut, func(e map[string]any) {
		if e["truncated"] == true {
			cuts++
		}
		at := rfc3339(str(e["time"]))
		line := obj(e["message"])
		if line == nil { // a line the log kept as text (an older log): read it if whole
			var m map[string]any
			if e["truncated"] != true && json.Unmarshal([]byte(str(e["text"])), &m) == nil {
				line = m
			}
		}
		switch str(e["dir"]) {
		case "client":
			wire.client(c, at, line)
		case "agent":
			wire.agent(c, at, line)
		case "driver":
			if wire.note != nil {
				wire.note(c, str(e["event"]), obj(e["data"]), at)
			}
			c.note(str(e["event"]), obj(e["data"]), at)
		}
	})
	if cuts > 0 {
		c.t.Gap("%d line(s) of the session log were cut at %d bytes", cuts, 1<<20)
	}
	if !c.terminal {
		c.t.Gap("%s", wire.noEnd)
	}
	c.t.Finish()
	return c.t
}

// note applies one note of the layer.
func (c *sessionConv) note(event string, data map[string]any, at string) {
	t := &c.t
	switch event {
	case "turn_start":
		if t.SessionID == "" {
			t.SessionID = str(data["sessionId"])
		}
	case "permission_decision":
		c.decision(data, at)
	case "question_answer":
		note := "answered by " + str(data["by"])
		if data["cancelled"] == true {
			note = "closed unanswered (" + str(data["by"]) + ")"
		}
		t.Add(Step{Role: RoleSystem, Kind: event, Time: at, Message: NewText("question (" + str(data["method"]) + ") " + note)})
	case "fs_read", "fs_write":
		b, _ := json.Marshal(data)
		t.Add(Step{Role: RoleSystem, Kind: event, Time: at, Message: NewText(event + " " + string(b))})
	case "cancel":
		t.Add(Step{Role: RoleSystem, Kind: event, Time: at, Message: NewText("cancel: " + str(data["reason"]))})
	case "log_overflow":
		t.Gap("the session log overflowed: later lines were counted, not kept")
	}
}

// decision applies a permission_decision note (the layer's flat note, or an older
// log's whole record with request and decision): it is added to the step of the
// request it answers, or is a system step of its own.
func (c *sessionConv) decision(data map[string]any, at string) {
	id, opt, cancelled := str(data["toolCallId"]), str(data["optionId"]), data["cancelled"] == true
	if req, dec := obj(data["request"]), obj(data["decision"]); req != nil || dec != nil {
		id, opt, cancelled = str(req["toolCallId"]), str(dec["optionId"]), dec["cancelled"] == true
	}
	note := "decided: " + opt + " by " + str(data["by"])
	if cancelled {
		note = "cancelled before a decision"
	}
	if i, ok := c.perms[id]; ok && id != "" {
		c.t.Steps[i].Message = NewText(c.t.Steps[i].Message.S + "; " + note)
		return
	}
	c.t.Add(Step{Role: RoleSystem, Kind: "permission_decision", Time: at, Message: NewText("permission for " + id + " " + note)})
}

// asked adds the system step of a permission request for tool call id.
func (c *sessionConv) asked(id, kind, at, text string) {
	if i := c.t.Add(Step{Role: RoleSystem, Kind: kind, Time: at, Message: NewText(text)}); i >= 0 && id != "" {
		c.perms[id] = i
	}
}

// agentStep is the open agent step (a message or call after a result starts the next
// one: the agent saw the result, another inference), or a new one.
func (c *sessionConv) agentStep(kind string) *Step {
	if c.cur >= 0 && c.cur < len(c.t.Steps) && len(c.t.Steps[c.cur].Results) == 0 {
		return &c.t.Steps[c.cur]
	}
	c.cur = c.t.Add(Step{Role: RoleAgent, Kind: kind})
	if c.cur < 0 {
		return &Step{}
	}
	return &c.t.Steps[c.cur]
}

// result records the result of tool call id (its step's) unless it has one.
func (c *sessionConv) result(id, text string, failed bool) {
	i, ok := c.calls[id]
	if !ok || i < 0 || i >= len(c.t.Steps) || c.t.Steps[i].hasResult(id) {
		return
	}
	c.t.Steps[i].Results = append(c.t.Steps[i].Results, Result{CallID: id, Content: NewText(text), Error: failed})
}

// blocksText is the text of ACP content blocks (text blocks; other blocks named),
// joined without a separator.
func blocksText(v any) string { return joinBlocks(v, "", "") }

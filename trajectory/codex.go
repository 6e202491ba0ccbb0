package trajectory

import (
	"encoding/json"
	"slices"

	"github.com/agentproof/agentproof/agent/driver"
)

// FormatCodex is the JSON event stream of `codex exec --json` (events.jsonl).
const FormatCodex = "codex-exec-json"

func init() {
	register(Format{Name: FormatCodex, File: "events.jsonl", Accepts: cliDriver("codex"), Convert: fromCodex})
}

// cliDriver accepts the drivers of the real CLIs names (exec:<name>; Kilo writes
// OpenCode's stream, Qwen Code Claude Code's).
func cliDriver(names ...string) func(driver.Name) bool {
	return func(d driver.Name) bool {
		cli, ok := d.CLI()
		return ok && slices.Contains(names, cli)
	}
}

// fromCodex reads a Codex event stream: thread.started names the session; every
// completed item is one agent step (agent_message its message, reasoning its
// reasoning, mcp_tool_call a tool call with its result, command_execution,
// file_change, web_search and todo_list a call of that name with what the item
// reports); an item started and never completed keeps its call without a result (a
// gap); error items and events are system steps; turn.completed usage sums into the
// total (Codex reports it per turn, not per model call). A stream without
// turn.completed or turn.failed is partial.
func fromCodex(in Input) Trajectory {
	t := Trajectory{RunID: in.RunID, Agent: in.Agent, Format: FormatCodex}
	open := map[string]int{} // item id -> step index of a started item
	terminal := false
	eachObject(&t, in.Stream, in.Cut, func(m map[string]any) {
		switch str(m["type"]) {
		case "thread.started":
			t.SessionID = str(m["thread_id"])
		case "turn.completed":
			terminal = true
			if u := obj(m["usage"]); u != nil {
				t.addUsage(Usage{Input: count(u["input_tokens"]), Cached: count(u["cached_input_tokens"]), Output: count(u["output_tokens"])})
			}
		case "turn.failed":
			terminal = true
			t.Add(Step{Role: RoleSystem, Kind: "turn.failed", Message: NewText("turn failed: " + str(obj(m["error"])["message"]))})
		case "error":
			t.Add(Step{Role: RoleSystem, Kind: "error", Message: NewText(str(m["message"]))})
		case "item.started", "item.updated":
			item := obj(m["item"])
			id := str(item["id"])
			if _, seen := open[id]; seen || id == "" {
				return
			}
			if s, ok := codexItem(item, false); ok {
				if i := t.Add(s); i >= 0 {
					open[id] = i
				}
			}
		case "item.completed":
			item := obj(m["item"])
			s, ok := codexItem(item, true)
			if !ok {
				return
			}
			if i, seen := open[str(item["id"])]; seen {
				t.Steps[i] = s
				delete(open, str(item["id"]))
				return
			}
			t.Add(s)
		}
	})
	if !terminal {
		t.Gap("the stream ended without turn.completed or turn.failed: the agent did not finish cleanly")
	}
	t.Finish()
	return t
}

// codexItem makes the step of one Codex item; done says the item completed (only then
// does a call get its result). ok is false for an item type that makes no step.
func codexItem(item map[string]any, done bool) (Step, bool) {
	id := str(item["id"])
	typ := str(item["type"])
	s := Step{Role: RoleAgent, Kind: typ}
	call := func(name string, args any, server string) {
		a, cut := argumentsOf(args)
		s.ToolCalls = []ToolCall{{ID: id, Name: name, Arguments: a, Server: server, ArgumentsTruncated: cut}}
	}
	switch typ {
	case "agent_message":
		if !done {
			return Step{}, false
		}
		s.Message = NewText(str(item["text"]))
	case "reasoning":
		if !done {
			return Step{}, false
		}
		s.Reasoning = NewText(str(item["text"]))
	case "mcp_tool_call":
		call(str(item["tool"]), item["arguments"], str(item["server"]))
		if done {
			r := Result{CallID: id}
			if e := obj(item["error"]); e != nil {
				r.Content, r.Error = NewText(str(e["message"])), true
			} else if res := obj(item["result"]); res != nil {
				r.Content = NewText(contentText(res["content"]))
			}
			if str(item["status"]) == "failed" {
				r.Error = true
			}
			s.Results = []Result{r}
		}
	case "command_execution":
		call("command_execution", map[string]any{"command": item["command"]}, "")
		if done {
			exit, hasExit := item["exit_code"].(float64)
			s.Results = []Result{{CallID: id, Content: NewText(str(item["aggregated_output"])), Error: (hasExit && exit != 0) || str(item["status"]) == "failed"}}
		}
	case "file_change":
		call("file_change", map[string]any{"changes": item["changes"]}, "")
		if done {
			s.Results = []Result{{CallID: id, Content: NewText(str(item["status"])), Error: str(item["status"]) == "failed"}}
		}
	case "web_search":
		call("web_search", map[string]any{"query": item["query"]}, "")
		if done {
			s.Results = []Result{{CallID: id}}
		}
	case "todo_list":
		if !done {
			return Step{}, false
		}
		b, _ := json.Marshal(item["items"])
		s.Message = NewText(string(b))
	case "error":
		if !done {
			return Step{}, false
		}
		s.Role, s.Message = RoleSystem, NewText(str(item["message"]))
	default:
		return Step{}, false
	}
	return s, true
}

// Package trajectory is agentproof's one model of what an agent did during one run —
// the messages it received and sent, the tool calls it made with their arguments and
// results, its reasoning and the model usage of each step — built from whatever raw
// stream the run's driver left (a CLI's JSON event stream, the control plane's record
// of a built-in agent's semantic commands, the scripted model's request log, an ACP
// session log), and written in Harbor's Agent Trajectory Interchange Format (ATIF,
// atif.go). docs/trajectories.md describes the model, the converters and the file.
//
// Every converter reads untrusted bytes and never fails: what it cannot read is a gap
// (Trajectory.Gaps) and makes the trajectory partial, never an invented step.
package trajectory

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Role is who a step comes from (ATIF StepObject.source).
type Role string

// Roles of a step.
const (
	// RoleSystem is a system prompt or a system event.
	RoleSystem Role = "system"
	// RoleUser is the human (the harness playing it) or the task the agent was given.
	RoleUser Role = "user"
	// RoleAgent is one agent turn: its message, reasoning, tool calls and their results.
	RoleAgent Role = "agent"
)

// Bounds of a trajectory, in bytes: a longer text is cut on a rune boundary and the
// cut is recorded (Text.Truncated, Text.Bytes), never silently.
const (
	// MaxTextBytes bounds one message, reasoning text, argument document or result.
	MaxTextBytes = 16 << 10
	// MaxSteps bounds the steps of one trajectory; later steps are counted in a gap.
	MaxSteps = 2000
)

// Trajectory is one run's trajectory.
//
//   - RunID is the control plane's run id ("" when the stream does not say, as for a
//     model request log keyed by run ordinal); SessionID the agent's own session or
//     thread id when its stream names one.
//   - Ordinal is the 1-based run of a stream keyed by run order (the model request
//     log), 0 otherwise.
//   - Agent names the agent system; Format the stream it was read from (a Format's
//     Name, for example "codex-exec-json").
//   - Steps are in stream order.
//   - Gaps say why the trajectory is partial (a stream without its terminal event, a
//     line that is not JSON, a tool call without its result, a cut stream); empty
//     means the stream was read whole and ended cleanly.
//   - Usage sums the model usage the stream reported (nil: none reported, which is
//     unavailable, never zero).
type Trajectory struct {
	RunID     string
	Ordinal   int
	SessionID string
	Agent     Agent
	Format    string
	Steps     []Step
	Gaps      []string
	Usage     *Usage

	dropped int // steps not kept (MaxSteps)
}

// Partial reports whether the trajectory has gaps.
func (t *Trajectory) Partial() bool { return len(t.Gaps) > 0 }

// Gap records why the trajectory is partial (formatted like fmt.Sprintf).
func (t *Trajectory) Gap(format string, args ...any) {
	t.Gaps = append(t.Gaps, fmt.Sprintf(format, args...))
}

// Add appends a step (bounded by MaxSteps: the steps beyond it are counted in one gap
// by Finish) and returns its index, or -1 when it was not kept.
func (t *Trajectory) Add(s Step) int {
	if len(t.Steps) >= MaxSteps {
		t.dropped++
		return -1
	}
	t.Steps = append(t.Steps, s)
	return len(t.Steps) - 1
}

// Finish records the gaps of the bounds (steps dropped) and of tool calls that have no
// result; converters call it once when the stream ends.
func (t *Trajectory) Finish() {
	if t.dropped > 0 {
		t.Gap("%d step(s) beyond the first %d were not kept", t.dropped, MaxSteps)
		t.dropped = 0
	}
	for _, s := range t.Steps {
		for _, c := range s.ToolCalls {
			if !s.hasResult(c.ID) {
				t.Gap("tool call %s (%s) has no result in the stream", c.ID, c.Name)
			}
		}
	}
}

// Agent names the agent system of a trajectory (ATIF AgentSchema): Name (for example
// "codex", "agentproof-reference"), Version ("unknown" when the stream does not say:
// ATIF requires one) and Model (the default model, "" when unknown).
type Agent struct {
	Name    string
	Version string
	Model   string
}

// Step is one step of a trajectory:
//
//   - Role; Time (RFC 3339, "" when the stream has no time for it).
//   - Message: the text of the step (the prompt, the agent's answer); Reasoning the
//     agent's explicit reasoning when its stream reports it.
//   - ToolCalls the agent made in this step and Results of tool calls or actions (a
//     result's CallID names its call; "" for an action without a call, such as a
//     command a CLI ran itself).
//   - Usage: the model usage of this step (nil: not reported for the step).
//   - LLMCalls: how many model inferences the step represents (nil: unknown; 0 for a
//     deterministic agent such as agentproof's reference agent, ATIF llm_call_count).
//   - Kind: what the stream called the event (for example "mcp_tool_call",
//     "semantic_command"), kept in the step's extra.
type Step struct {
	Role      Role
	Time      string
	Message   Text
	Reasoning Text
	ToolCalls []ToolCall
	Results   []Result
	Usage     *Usage
	LLMCalls  *int
	Kind      string
}

func (s *Step) hasResult(id string) bool {
	for _, r := range s.Results {
		if r.CallID == id {
			return true
		}
	}
	return false
}

// ToolCall is one tool call: ID (unique within the trajectory), Name (the tool, for
// example "finish_task"), Arguments (a JSON object; {} when there were none; an
// argument text that is not a JSON object of valid UTF-8 is kept as {"raw": text}) and Server (the
// MCP server for an MCP tool, "" otherwise).
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
	Server    string
	// ArgumentsTruncated records that the arguments document was longer than
	// MaxTextBytes; Arguments then holds {"truncated": head}.
	ArgumentsTruncated bool
}

// Result is what one tool call or action returned: CallID (its ToolCall.ID, "" for an
// action without a call), Content (the text it returned) and Error (whether the tool
// reported failure).
type Result struct {
	CallID  string
	Content Text
	Error   bool
}

// Usage is model usage in tokens: Input counts every prompt token (cached ones
// included, as ATIF prompt_tokens does), Cached the subset served from a cache, Output
// every completion token (reasoning included); CostUSD is what the stream itself
// reported in US dollars (nil: not reported, never an estimate).
type Usage struct {
	Input   int64
	Output  int64
	Cached  int64
	CostUSD *float64
}

// add sums u into t.
func (t *Usage) add(u Usage) {
	t.Input += u.Input
	t.Output += u.Output
	t.Cached += u.Cached
	if u.CostUSD != nil {
		c := *u.CostUSD
		if t.CostUSD != nil {
			c += *t.CostUSD
		}
		t.CostUSD = &c
	}
}

// addUsage sums u into the trajectory's total.
func (t *Trajectory) addUsage(u Usage) {
	if t.Usage == nil {
		t.Usage = &Usage{}
	}
	t.Usage.add(u)
}

// Text is a bounded text: S holds at most MaxTextBytes bytes of valid UTF-8; when the
// original was longer (or not valid UTF-8) Truncated is set and Bytes is its size.
type Text struct {
	S         string
	Truncated bool
	Bytes     int
}

// NewText bounds s to MaxTextBytes (on a rune boundary) and replaces invalid UTF-8.
func NewText(s string) Text {
	return boundText(s, MaxTextBytes)
}

func boundText(s string, limit int) Text {
	t := Text{S: s}
	if !utf8.ValidString(s) {
		t.S = string([]rune(s)) // invalid bytes become U+FFFD
	}
	if len(t.S) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(t.S[cut]) {
			cut--
		}
		t.S, t.Truncated, t.Bytes = t.S[:cut], true, len(s)
	}
	return t
}

// arguments makes a ToolCall's Arguments of raw argument text: a JSON object is kept
// (bounded), anything else is wrapped as {"raw": text}; "" and null are {}.
func arguments(raw string) (json.RawMessage, bool) {
	if raw == "" || raw == "null" {
		return json.RawMessage(`{}`), false
	}
	if len(raw) > MaxTextBytes {
		b, _ := json.Marshal(map[string]string{"truncated": NewText(raw).S})
		return b, true
	}
	var m map[string]json.RawMessage
	if utf8.ValidString(raw) && json.Unmarshal([]byte(raw), &m) == nil && m != nil {
		return json.RawMessage(raw), false
	}
	b, _ := json.Marshal(map[string]string{"raw": NewText(raw).S})
	return b, false
}

// argumentsOf is arguments of an already decoded JSON value.
func argumentsOf(v any) (json.RawMessage, bool) {
	if v == nil {
		return json.RawMessage(`{}`), false
	}
	if s, ok := v.(string); ok {
		return arguments(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`), false
	}
	return arguments(string(b))
}

func intp(n int) *int { return &n }

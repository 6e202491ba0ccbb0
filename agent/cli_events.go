package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// MaxEventLineBytes bounds one line of a CLI's JSON event stream (bytes); a longer line
// is counted as oversized and not parsed, never silently dropped.
const MaxEventLineBytes = 8 << 20

// CLIEvents is what a CLI's JSON event stream says about a run: token usage summed over
// its turns (InputTokens without the cached and cache-write input tokens, which are
// counted apart), the dollars the CLI itself reports (ProviderReportedUSD, Claude Code's
// total_cost_usd; nil when it reports none), the number of model responses it reports
// (ModelTurns: Codex agent messages, command executions and MCP tool calls; OpenCode
// step_finish events; Claude Code assistant messages), the MCP tool calls it made (tool
// names in order), its final text, the error messages it reported, and how many lines
// were oversized or not JSON.
// Terminal is the type of the terminal event the stream carried (see TerminalEvent;
// "" when it ended without one: the stream is incomplete) and TerminalFailed whether
// that event reports a failed turn (Codex turn.failed, Claude Code result with
// is_error).
type CLIEvents struct {
	CLI                 string
	InputTokens         int64
	OutputTokens        int64
	CachedTokens        int64
	CacheWriteTokens    int64
	ProviderReportedUSD *float64
	UsageEvents         int
	ModelTurns          int
	ToolCalls           []string
	FinalText           string
	Errors              []string
	Oversized           int
	NotJSON             int

	Terminal       string
	TerminalFailed bool
}

// Terminal events: the last event of a CLI run that finished its work (docs/clis.md).
// A run that exits without one did not finish cleanly.
const (
	// CodexTurnCompleted and CodexTurnFailed end `codex exec --json` (one turn).
	CodexTurnCompleted = "turn.completed"
	CodexTurnFailed    = "turn.failed"
	// ClaudeResult ends `claude -p --output-format stream-json`.
	ClaudeResult = "result"
	// OpenCodeStepFinish with a finish reason other than OpenCodeToolCalls ends
	// `opencode run --format json` (a "tool-calls" step is followed by another step).
	OpenCodeStepFinish = "step_finish"
	OpenCodeToolCalls  = "tool-calls"
)

// TerminalEvent reports whether line (one line of cli's JSON event stream) is the
// CLI's terminal event: Codex turn.completed or turn.failed, Claude Code result,
// OpenCode step_finish whose part.reason is set and is not "tool-calls". It is cheap
// for the other lines (a substring test before any decoding).
func TerminalEvent(cli string, line []byte) bool {
	var want string
	switch cli = eventDialect(cli); cli {
	case "copilot":
		want = CopilotResult
	case "codex":
		if !bytes.Contains(line, []byte(`"turn.`)) {
			return false
		}
	case "claude":
		want = ClaudeResult
	case "opencode":
		want = OpenCodeStepFinish
	default:
		return false
	}
	if want != "" && !bytes.Contains(line, []byte(`"`+want+`"`)) {
		return false
	}
	var ev struct {
		Type string `json:"type"`
		Part struct {
			Reason string `json:"reason"`
		} `json:"part"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &ev) != nil {
		return false
	}
	return terminal(cli, ev.Type, ev.Part.Reason)
}

// terminal decides TerminalEvent on a decoded event's type and OpenCode finish reason.
func terminal(cli, typ, reason string) bool {
	switch eventDialect(cli) {
	case "copilot":
		return typ == CopilotResult
	case "codex":
		return typ == CodexTurnCompleted || typ == CodexTurnFailed
	case "claude":
		return typ == ClaudeResult
	case "opencode":
		return typ == OpenCodeStepFinish && reason != "" && reason != OpenCodeToolCalls
	}
	return false
}

// Usage is the run's usage as JSON for billing.ExtractLLM ({inputTokens, outputTokens,
// cachedInputTokens, cacheWriteInputTokens, providerReportedUsd when the CLI reported
// dollars, source, usageEvents}), or nil when the stream reported no usage (read as
// unavailable, never as zero). providerReportedUsd is what the CLI reported, kept apart
// from any list-price estimate.
func (e CLIEvents) Usage() json.RawMessage {
	if e.UsageEvents == 0 {
		return nil
	}
	u := map[string]any{
		"inputTokens": e.InputTokens, "outputTokens": e.OutputTokens, "cachedInputTokens": e.CachedTokens,
		"cacheWriteInputTokens": e.CacheWriteTokens, "source": e.CLI + " event stream", "usageEvents": e.UsageEvents,
	}
	if e.ProviderReportedUSD != nil {
		u["providerReportedUsd"] = *e.ProviderReportedUSD
	}
	b, _ := json.Marshal(u)
	return b
}

// ParseEvents reads the JSON event stream of cli ("codex", "opencode" or "claude") line
// by line (lines split anywhere by the pipe are whole here: the worker captured the
// stream) and sums what CLIEvents describes. Unknown event types are ignored.
func ParseEvents(cli string, stream []byte) CLIEvents {
	ev := CLIEvents{CLI: cli}
	dialect := eventDialect(cli)
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 0, 64<<10), MaxEventLineBytes)
	sc.Split(scanLinesCountingOversized(&ev.Oversized))
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			ev.NotJSON++
			continue
		}
		if t, _ := m["type"].(string); terminal(cli, t, str(obj(m["part"])["reason"])) {
			ev.Terminal = t
			ev.TerminalFailed = t == CodexTurnFailed || (t == ClaudeResult && m["is_error"] == true) ||
				(dialect == "copilot" && num(m["exitCode"]) != 0)
		}
		switch dialect {
		case "copilot":
			ev.copilot(m)
		case "codex":
			ev.codex(m)
		case "opencode":
			ev.opencode(m)
		case "claude":
			ev.claude(m)
		}
	}
	return ev
}

// scanLinesCountingOversized splits lines like bufio.ScanLines but skips a line longer
// than MaxEventLineBytes (counting it) instead of stopping the scan.
func scanLinesCountingOversized(oversized *int) bufio.SplitFunc {
	skipping := false
	return func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			if skipping {
				skipping = false
				return i + 1, nil, nil
			}
			return i + 1, data[:i], nil
		}
		if len(data) >= MaxEventLineBytes {
			if !skipping {
				*oversized++
				skipping = true
			}
			return len(data), nil, nil
		}
		if atEOF && len(data) > 0 {
			if skipping {
				return len(data), nil, nil
			}
			return len(data), data, nil
		}
		return 0, nil, nil
	}
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func num(v any) int64 {
	f, _ := v.(float64)
	if f < 0 {
		return 0
	}
	return int64(f)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func (ev *CLIEvents) codex(m map[string]any) {
	switch m["type"] {
	case "turn.completed":
		u := obj(m["usage"])
		if u != nil {
			ev.UsageEvents++
			cached := num(u["cached_input_tokens"])
			written := num(u["cache_write_input_tokens"])
			// Codex's input_tokens are the whole prompt, cached and cache-written
			// tokens included; billing counts those apart.
			ev.InputTokens += max(0, num(u["input_tokens"])-cached-written)
			ev.CachedTokens += cached
			ev.CacheWriteTokens += written
			ev.OutputTokens += num(u["output_tokens"])
		}
	case "turn.failed":
		ev.Errors = append(ev.Errors, str(obj(m["error"])["message"]))
	case "error":
		ev.Errors = append(ev.Errors, str(m["message"]))
	case "item.completed":
		item := obj(m["item"])
		switch item["type"] {
		case "agent_message":
			ev.ModelTurns++
			ev.FinalText = str(item["text"])
		case "command_execution":
			ev.ModelTurns++
		case "mcp_tool_call":
			ev.ModelTurns++
			ev.ToolCalls = append(ev.ToolCalls, str(item["tool"]))
		case "error":
			// "Model metadata for `X` not found" is harmless with a custom provider.
			if msg := str(item["message"]); !strings.Contains(msg, "Model metadata for") {
				ev.Errors = append(ev.Errors, msg)
			}
		}
	}
}

func (ev *CLIEvents) opencode(m map[string]any) {
	part := obj(m["part"])
	switch m["type"] {
	case "step_finish":
		ev.ModelTurns++
		if t := obj(part["tokens"]); t != nil {
			ev.UsageEvents++
			ev.InputTokens += num(t["input"])
			ev.OutputTokens += num(t["output"]) + num(t["reasoning"])
			ev.CachedTokens += num(obj(t["cache"])["read"])
			// OpenCode's input excludes cache reads and writes, as Anthropic's does.
			// (Its part.cost is OpenCode's own list-price estimate, not provider-reported
			// dollars, so it is not read.)
			ev.CacheWriteTokens += num(obj(t["cache"])["write"])
		}
	case "text":
		ev.FinalText = str(part["text"])
	case "tool_use":
		if tool := str(part["tool"]); tool != "bash" && tool != "edit" && tool != "write" && tool != "read" {
			ev.ToolCalls = append(ev.ToolCalls, tool)
		}
	case "error":
		e := obj(m["error"])
		msg := str(obj(e["data"])["message"])
		if msg == "" {
			msg = str(e["name"])
		}
		ev.Errors = append(ev.Errors, msg)
	}
}

func (ev *CLIEvents) claude(m map[string]any) {
	switch m["type"] {
	case "assistant":
		ev.ModelTurns++
		for _, c := range sliceOf(obj(m["message"])["content"]) {
			if cm := obj(c); cm["type"] == "tool_use" && strings.HasPrefix(str(cm["name"]), "mcp__") {
				ev.ToolCalls = append(ev.ToolCalls, str(cm["name"]))
			}
		}
	case "result":
		if u := obj(m["usage"]); u != nil {
			ev.UsageEvents++
			ev.InputTokens += num(u["input_tokens"])
			ev.OutputTokens += num(u["output_tokens"])
			ev.CachedTokens += num(u["cache_read_input_tokens"])
			// Anthropic's input_tokens exclude cache reads and cache writes.
			ev.CacheWriteTokens += num(u["cache_creation_input_tokens"])
		}
		if c, ok := m["total_cost_usd"].(float64); ok && c >= 0 && !math.IsInf(c, 0) {
			total := c
			if ev.ProviderReportedUSD != nil {
				total += *ev.ProviderReportedUSD
			}
			ev.ProviderReportedUSD = &total
		}
		ev.FinalText = str(m["result"])
		if m["is_error"] == true {
			ev.Errors = append(ev.Errors, fmt.Sprintf("%s: %s", str(m["subtype"]), str(m["result"])))
		}
	}
}

func sliceOf(v any) []any {
	s, _ := v.([]any)
	return s
}

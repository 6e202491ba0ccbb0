package trajectory

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/controlplane"
)

func readStream(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dropLines removes the lines of stream that contain any of subs.
func dropLines(stream []byte, subs ...string) []byte {
	var out [][]byte
	for _, l := range bytes.Split(stream, []byte("\n")) {
		if !slices.ContainsFunc(subs, func(s string) bool { return bytes.Contains(l, []byte(s)) }) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// summary is what a converter test compares: the shape of the trajectory.
type summary struct {
	Format    string
	SessionID string
	Roles     []Role
	Calls     []string // tool names in order
	Results   int
	Errors    int
	Messages  []string // agent messages (first 60 bytes)
	Gaps      []string // gap prefixes (first 40 bytes)
	Usage     *Usage
}

func summarize(t Trajectory) summary {
	s := summary{Format: t.Format, SessionID: t.SessionID, Usage: t.Usage}
	for _, st := range t.Steps {
		s.Roles = append(s.Roles, st.Role)
		for _, c := range st.ToolCalls {
			s.Calls = append(s.Calls, c.Name)
		}
		for _, r := range st.Results {
			s.Results++
			if r.Error {
				s.Errors++
			}
		}
		if st.Role == RoleAgent && st.Message.S != "" {
			s.Messages = append(s.Messages, clip(st.Message.S, 60))
		}
	}
	for _, g := range t.Gaps {
		s.Gaps = append(s.Gaps, clip(g, 40))
	}
	return s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func cost(f float64) *float64 { return &f }

// TestConvertRecordedStreams converts real streams recorded by `agentproof run`
// (testdata/SOURCES.md), whole and damaged (the terminal event removed, a tool call's
// completion removed, a line of garbage, a cut copy), and checks the trajectory's
// shape, that the ATIF written validates, and the ATIF against its golden file.
func TestConvertRecordedStreams(t *testing.T) {
	t.Parallel()
	codex := readStream(t, "codex-ask-question.jsonl")
	opencode := readStream(t, "opencode-ask-question.jsonl")
	claude := readStream(t, "claude-ask-question.jsonl")
	acpCodex := readStream(t, "acp-codex-acp-permission-approve-write.jsonl")
	piFollowUp := readStream(t, "pi-pi-follow-up.jsonl")
	copilot := readStream(t, "copilot-message-marker.jsonl")
	codexUsage := &Usage{Input: 28051, Output: 20}
	cases := []struct {
		name   string
		driver string
		stream []byte
		cut    bool
		want   summary
	}{
		{"codex", "exec:codex", codex, false, summary{Format: FormatCodex, SessionID: "01a232fb-79e3-73c0-9ae2-94a6f53ccd8b",
			Roles: []Role{RoleSystem, RoleAgent, RoleAgent}, Calls: []string{"finish_task"}, Results: 1,
			Messages: []string{"E2E_ASK_12_7be512955759c651"}, Usage: codexUsage}},
		{"codex-nop", "exec:codex", readStream(t, "codex-nop.jsonl"), false, summary{Format: FormatCodex, SessionID: "01a232fb-881f-7632-a1bc-52ff63cdbffb",
			Roles: []Role{RoleSystem, RoleAgent}, Messages: []string{"I have looked at the task and will not do anything."}, Usage: &Usage{Input: 13929, Output: 13}}},
		{"codex-without-terminal", "exec:codex", dropLines(codex, `"turn.completed"`), false, summary{Format: FormatCodex, SessionID: "01a232fb-79e3-73c0-9ae2-94a6f53ccd8b",
			Roles: []Role{RoleSystem, RoleAgent, RoleAgent}, Calls: []string{"finish_task"}, Results: 1,
			Messages: []string{"E2E_ASK_12_7be512955759c651"}, Gaps: []string{"the stream ended without turn.completed "}}},
		{"codex-call-never-completed", "exec:codex", dropLines(codex, `"item.completed","item":{"id":"item_1"`, `"item_2"`, `"turn.completed"`), false,
			summary{Format: FormatCodex, SessionID: "01a232fb-79e3-73c0-9ae2-94a6f53ccd8b",
				Roles: []Role{RoleSystem, RoleAgent}, Calls: []string{"finish_task"},
				Gaps: []string{"the stream ended without turn.completed ", "tool call item_1 (finish_task) has no re"}}},
		{"codex-garbage-and-cut", "exec:codex", append([]byte("not json\n"), codex...), true, summary{Format: FormatCodex, SessionID: "01a232fb-79e3-73c0-9ae2-94a6f53ccd8b",
			Roles: []Role{RoleSystem, RoleAgent, RoleAgent}, Calls: []string{"finish_task"}, Results: 1,
			Messages: []string{"E2E_ASK_12_7be512955759c651"}, Usage: codexUsage,
			Gaps: []string{"1 line(s) of the stream are not JSON obj", "the stream was cut at its bound: its tai"}}},
		{"opencode", "exec:opencode", opencode, false, summary{Format: FormatOpenCode, SessionID: "ses_dcd0444eaffeX2OmF96xhnRofN",
			Roles: []Role{RoleAgent, RoleAgent}, Calls: []string{"agentproof_finish_task"}, Results: 1,
			Messages: []string{"E2E_ASK_12_7efcc9f58c56ea30"}, Usage: &Usage{Input: 22634, Output: 23}}},
		{"opencode-without-final-step", "exec:opencode", dropLines(opencode, `"reason":"stop"`), false, summary{Format: FormatOpenCode, SessionID: "ses_dcd0444eaffeX2OmF96xhnRofN",
			Roles: []Role{RoleAgent, RoleAgent}, Calls: []string{"agentproof_finish_task"}, Results: 1,
			Messages: []string{"E2E_ASK_12_7efcc9f58c56ea30"}, Usage: &Usage{Input: 11251, Output: 16}, Gaps: []string{"the stream ended without a final step_fi"}}},
		{"claude", "exec:claude", claude, false, summary{Format: FormatClaude, SessionID: "6e1fcef7-3ae8-4443-b71a-de2a059b0e73",
			Roles: []Role{RoleAgent, RoleAgent}, Calls: []string{"mcp__agentproof__finish_task"}, Results: 1,
			Messages: []string{"E2E_ASK_12_2e6dd31c5739bda5"}, Usage: &Usage{Input: 9313, Output: 25, CostUSD: cost(0.04719)}}},
		{"claude-result-lost", "exec:claude", dropLines(claude, `"tool_result"`, `"type":"result"`), false, summary{Format: FormatClaude, SessionID: "6e1fcef7-3ae8-4443-b71a-de2a059b0e73",
			Roles: []Role{RoleAgent, RoleAgent}, Calls: []string{"mcp__agentproof__finish_task"},
			Messages: []string{"E2E_ASK_12_2e6dd31c5739bda5"},
			Gaps:     []string{"the stream ended without its result even", "tool call toolu_call_ap_1 (mcp__agentpro"}}},
		{"acp-codex", "acp:codex", acpCodex, false, summary{Format: FormatACP, SessionID: "01a2330c-944e-7791-9ce8-700a354dd39f",
			Roles: []Role{RoleUser, RoleSystem, RoleAgent, RoleAgent, RoleAgent},
			Calls: []string{"printf '%s' 'proof-9084a7f84a71a138' > '/tmp/agentproof-attempt-2062471603/workspace/proof.txt'", "Tool: agentproof/finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_PERMISSION_OK_9084a7f84a71a138"}}},
		{"acp-codex-without-response", "acp:codex", dropLines(acpCodex, `"result":{"stopReason"`, `"sessionUpdate":"tool_call_update","toolCallId":"call_ap_2"`), false, summary{Format: FormatACP, SessionID: "01a2330c-944e-7791-9ce8-700a354dd39f",
			Roles: []Role{RoleUser, RoleSystem, RoleAgent, RoleAgent},
			Calls: []string{"printf '%s' 'proof-9084a7f84a71a138' > '/tmp/agentproof-attempt-2062471603/workspace/proof.txt'", "Tool: agentproof/finish_task"}, Results: 1,
			Messages: []string{"PAPERCLIP_E2E_PERMISSION_OK_9084a7f84a71a138"},
			Gaps:     []string{"the log has no response to session/promp", "tool call call_ap_2 (Tool: agentproof/fi"}}},
		{"acp-reference-approve", "acp:reference", readStream(t, "acp-acp-reference-permission-approve-write.jsonl"), false, summary{Format: FormatACP, SessionID: "acp-reference-1",
			Roles: []Role{RoleUser, RoleAgent, RoleSystem, RoleAgent, RoleAgent}, Calls: []string{"Write proof.txt", "agentproof/finish_task"}, Results: 2,
			Messages: []string{`plan: [{"content":"edit proof.txt","priority":"medium","stat`, "PAPERCLIP_E2E_PERMISSION_OK_6b498c9c7cb28103"}}},
		{"acp-reference-stopped", "acp:reference", readStream(t, "acp-acp-reference-pending-permission-stop.jsonl"), false, summary{Format: FormatACP, SessionID: "acp-reference-1",
			Roles: []Role{RoleUser, RoleAgent, RoleSystem, RoleSystem, RoleSystem}, Calls: []string{"Write proof.txt"}, Results: 1, Errors: 1,
			Messages: []string{`plan: [{"content":"edit proof.txt","priority":"medium","stat`}}},
	}
	cases = append(cases, []struct {
		name   string
		driver string
		stream []byte
		cut    bool
		want   summary
	}{
		{"kilo", "exec:kilo", readStream(t, "kilo-message-marker.jsonl"), false, summary{Format: FormatOpenCode, SessionID: "ses_dcc465f09ffet0Y7Eq0DzAp3cH",
			Roles: []Role{RoleAgent, RoleAgent, RoleAgent}, Calls: []string{"agentproof_report_progress", "agentproof_finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_OK_d655e866198030c9"}, Usage: &Usage{Input: 49789, Output: 45}}},
		{"qwen", "exec:qwen", readStream(t, "qwen-message-marker.jsonl"), false, summary{Format: FormatClaude, SessionID: "43e6e560-e1f3-42b7-86e2-b35166615c35",
			Roles: []Role{RoleAgent, RoleAgent, RoleAgent}, Calls: []string{"mcp__agentproof__report_progress", "mcp__agentproof__finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_OK_831f7bf546f93f80"}, Usage: &Usage{Input: 69536, Output: 47}}},
		{"copilot", "exec:copilot", copilot, false, summary{Format: FormatCopilot, SessionID: "46a2ab7b-ad71-4dec-bd06-7b02d5ec460e",
			Roles: []Role{RoleUser, RoleAgent, RoleAgent, RoleAgent}, Calls: []string{"agentproof-report_progress", "agentproof-finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_OK_0c8177ad13d04079"}}},
		{"copilot-without-result", "exec:copilot", dropLines(copilot, `"type":"result"`, `"toolCallId":"call_ap_2","model"`), false, summary{Format: FormatCopilot,
			Roles: []Role{RoleUser, RoleAgent, RoleAgent, RoleAgent}, Calls: []string{"agentproof-report_progress", "agentproof-finish_task"}, Results: 1,
			Messages: []string{"PAPERCLIP_E2E_OK_0c8177ad13d04079"},
			Gaps:     []string{"the stream ended without its result even", "tool call call_ap_2 (agentproof-finish_t"}}},
		{"pi-follow-up", "rpc:pi", piFollowUp, false, summary{Format: FormatPi,
			Roles: []Role{RoleUser, RoleSystem, RoleAgent, RoleAgent, RoleUser, RoleAgent, RoleAgent}, Calls: []string{"bash", "agentproof_finish_task"}, Results: 2,
			Messages: []string{"The command ran. Anything else?", "Done."}, Usage: piUsage(t, piFollowUp)}},
		{"pi-without-end", "rpc:pi", dropLines(piFollowUp, `"type":"agent_end"`, `"role":"toolResult","toolCallId":"call_ap_3"`), false,
			summary{Format: FormatPi,
				Roles: []Role{RoleUser, RoleSystem, RoleAgent, RoleAgent, RoleUser, RoleAgent, RoleAgent}, Calls: []string{"bash", "agentproof_finish_task"}, Results: 1,
				Messages: []string{"The command ran. Anything else?", "Done."}, Usage: piUsage(t, piFollowUp),
				Gaps: []string{"the log has no agent_end: the turn did n", "tool call call_ap_3 (agentproof_finish_t"}}},
		// The driver's turn_start note names Pi's session id (its get_state answer); the
		// captured streams predate that field, so it is added here as the driver now
		// writes it.
		{"pi-session-id", "rpc:pi", bytes.Replace(piFollowUp, []byte(`"event":"turn_start","data":{`), []byte(`"event":"turn_start","data":{"sessionId":"0b7c3e0e-5a51-4c9e-9d0e-pi-session",`), 1), false, summary{Format: FormatPi,
			SessionID: "0b7c3e0e-5a51-4c9e-9d0e-pi-session",
			Roles:     []Role{RoleUser, RoleSystem, RoleAgent, RoleAgent, RoleUser, RoleAgent, RoleAgent}, Calls: []string{"bash", "agentproof_finish_task"}, Results: 2,
			Messages: []string{"The command ran. Anything else?", "Done."}, Usage: piUsage(t, piFollowUp)}},
		{"pi-question-stop", "rpc:pi", readStream(t, "pi-pi-question-stop.jsonl"), false, summary{Format: FormatPi,
			Roles: []Role{RoleUser, RoleAgent, RoleSystem, RoleSystem, RoleSystem, RoleSystem, RoleAgent, RoleSystem}, Calls: []string{"ask_user"}, Results: 1,
			Usage: piUsage(t, readStream(t, "pi-pi-question-stop.jsonl"))}},
		{"pi-permission-approve", "rpc:pi", readStream(t, "pi-permission-approve-write.jsonl"), false, summary{Format: FormatPi,
			Roles: []Role{RoleUser, RoleAgent, RoleSystem, RoleAgent, RoleAgent}, Calls: []string{"write", "agentproof_finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_PERMISSION_OK_820b247cbd87568e"}, Usage: piUsage(t, readStream(t, "pi-permission-approve-write.jsonl"))}},
	}...)
	appApprove := readStream(t, "app-codex-app-app-permission-approve-write.jsonl")
	appStopped := readStream(t, "app-codex-app-app-pending-permission-stop.jsonl")
	appCommand := readStream(t, "app-codex-app-app-command-deny.jsonl")
	cases = append(cases, []struct {
		name   string
		driver string
		stream []byte
		cut    bool
		want   summary
	}{
		{"app-codex-approve", "app:codex", appApprove, false, summary{Format: FormatCodexApp, SessionID: "01a24988-1c9f-7d61-847a-59295fc5ee9a",
			Roles: []Role{RoleUser, RoleSystem, RoleAgent, RoleAgent, RoleAgent}, Calls: []string{"apply_patch", "finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_APP_PERMISSION_OK_35a02d894882dc8f"}, Usage: codexAppUsage(t, appApprove)}},
		{"app-codex-stopped", "app:codex", appStopped, false, summary{Format: FormatCodexApp, SessionID: "01a24988-2421-7223-99b4-709a5ce8bedf",
			Roles: []Role{RoleUser, RoleSystem, RoleSystem, RoleSystem, RoleSystem}, Usage: codexAppUsage(t, appStopped)}},
		{"app-codex-command-declined", "app:codex", appCommand, false, summary{Format: FormatCodexApp, SessionID: "01a24988-2413-7182-86c5-497d64a8d9cf",
			Roles: []Role{RoleUser, RoleSystem, RoleAgent, RoleSystem}, Calls: []string{"exec_command"}, Results: 1, Errors: 1, Usage: codexAppUsage(t, appCommand)}},
		{"app-codex-without-end", "app:codex", dropLines(appApprove, `"method":"turn/completed"`), false, summary{Format: FormatCodexApp, SessionID: "01a24988-1c9f-7d61-847a-59295fc5ee9a",
			Roles: []Role{RoleUser, RoleSystem, RoleAgent, RoleAgent, RoleAgent}, Calls: []string{"apply_patch", "finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_APP_PERMISSION_OK_35a02d894882dc8f"}, Usage: codexAppUsage(t, appApprove),
			Gaps: []string{"the log has no turn/completed: the turn "}}},
		// A steering message: the client's turn/steer (system), then Codex's userMessage
		// delivering it (user); the prompt's own echo is no second user step.
		{"app-codex-steered", "app:codex", steerCodexApp(t, appApprove), false, summary{Format: FormatCodexApp, SessionID: "01a24988-1c9f-7d61-847a-59295fc5ee9a",
			Roles: []Role{RoleUser, RoleSystem, RoleSystem, RoleUser, RoleAgent, RoleAgent, RoleAgent}, Calls: []string{"apply_patch", "finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_APP_PERMISSION_OK_35a02d894882dc8f"}, Usage: codexAppUsage(t, appApprove)}},
	}...)
	claudeAllow := readStream(t, "app-claude-app-claude-permission-allow-write.jsonl")
	claudeStopped := readStream(t, "app-claude-app-claude-pending-permission-stop.jsonl")
	claudeCommand := readStream(t, "app-claude-app-claude-command-deny.jsonl")
	cases = append(cases, []struct {
		name   string
		driver string
		stream []byte
		cut    bool
		want   summary
	}{
		{"app-claude-allow", "app:claude", claudeAllow, false, summary{Format: FormatClaudeApp, SessionID: "c28db139-bf53-42d3-9127-21d28fdec7af",
			Roles: []Role{RoleUser, RoleAgent, RoleSystem, RoleAgent, RoleAgent}, Calls: []string{"Write", "mcp__agentproof__finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_CLAUDE_PERMISSION_OK_d15134eeb0d81ab8"}, Usage: claudeAppUsage(t, claudeAllow)}},
		// Stop while the prompt is pending: the permission (system), the layer's cancel,
		// the client's interrupt, Claude Code's own note of it (user) and its error result.
		{"app-claude-stopped", "app:claude", claudeStopped, false, summary{Format: FormatClaudeApp, SessionID: "e3cfa489-9c13-4461-92db-dd947d5ddc31",
			Roles: []Role{RoleUser, RoleAgent, RoleSystem, RoleSystem, RoleSystem, RoleUser, RoleSystem}, Calls: []string{"Write"}, Results: 1, Errors: 1,
			Usage: claudeAppUsage(t, claudeStopped)}},
		{"app-claude-command-denied", "app:claude", claudeCommand, false, summary{Format: FormatClaudeApp, SessionID: "a3510da3-0d62-4e54-b504-ecb8f6163893",
			Roles: []Role{RoleUser, RoleAgent, RoleSystem, RoleAgent, RoleAgent}, Calls: []string{"Bash", "mcp__agentproof__finish_task"}, Results: 2, Errors: 1,
			Messages: []string{"PAPERCLIP_E2E_CLAUDE_COMMAND_DENIED_c802294e00f96948"}, Usage: claudeAppUsage(t, claudeCommand)}},
		{"app-claude-without-end", "app:claude", dropLines(claudeAllow, `"method":"result"`), false, summary{Format: FormatClaudeApp, SessionID: "c28db139-bf53-42d3-9127-21d28fdec7af",
			Roles: []Role{RoleUser, RoleAgent, RoleSystem, RoleAgent, RoleAgent}, Calls: []string{"Write", "mcp__agentproof__finish_task"}, Results: 2,
			Messages: []string{"PAPERCLIP_E2E_CLAUDE_PERMISSION_OK_d15134eeb0d81ab8"}, Gaps: []string{"the log has no result message: the turn "}}},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := driver.MustParse(c.driver)
			f, ok := Select(d, []string{"events.jsonl", "acp-turn.jsonl", "pi-turn.jsonl", "app-turn.jsonl", "stdout.log"})
			if !ok || f.Name != c.want.Format {
				t.Fatalf("Select(%s) = %q, %v; want %s", c.driver, f.Name, ok, c.want.Format)
			}
			tr := f.Convert(Input{RunID: "run-" + c.name, Driver: d, Agent: Agent{Name: c.driver}, Stream: c.stream, Cut: c.cut})
			if diff := cmp.Diff(c.want, summarize(tr)); diff != "" {
				t.Errorf("trajectory (-want +got):\n%s", diff)
			}
			checkATIF(t, c.name, tr)
		})
	}
}

// claudeAppUsage reads, independently of the converter, the result message's totals
// of a Claude Code session log (input with cache reads and writes, cached, output,
// dollars).
func claudeAppUsage(t *testing.T, stream []byte) *Usage {
	t.Helper()
	for _, l := range bytes.Split(stream, []byte("\n")) {
		var e struct {
			Method  string `json:"method"`
			Message struct {
				Usage struct {
					Input       int64 `json:"input_tokens"`
					CacheRead   int64 `json:"cache_read_input_tokens"`
					CacheCreate int64 `json:"cache_creation_input_tokens"`
					Output      int64 `json:"output_tokens"`
				} `json:"usage"`
				Cost *float64 `json:"total_cost_usd"`
			} `json:"message"`
		}
		if json.Unmarshal(l, &e) != nil || e.Method != "result" {
			continue
		}
		u := e.Message.Usage
		return &Usage{Input: u.Input + u.CacheRead + u.CacheCreate, Cached: u.CacheRead, Output: u.Output, CostUSD: e.Message.Cost}
	}
	t.Fatal("no result message in the stream")
	return nil
}

// codexAppUsage sums, independently of the converter, the last model call's usage of
// every thread/tokenUsage/updated notification of a Codex app-server log.
func codexAppUsage(t *testing.T, stream []byte) *Usage {
	t.Helper()
	var u Usage
	for _, l := range bytes.Split(stream, []byte("\n")) {
		var e struct {
			Dir     string `json:"dir"`
			Message struct {
				Method string `json:"method"`
				Params struct {
					TokenUsage struct {
						Last struct {
							InputTokens, CachedInputTokens, OutputTokens int64
						} `json:"last"`
					} `json:"tokenUsage"`
				} `json:"params"`
			} `json:"message"`
		}
		if json.Unmarshal(l, &e) != nil || e.Dir != "agent" || e.Message.Method != "thread/tokenUsage/updated" {
			continue
		}
		last := e.Message.Params.TokenUsage.Last
		u.Input, u.Cached, u.Output = u.Input+last.InputTokens, u.Cached+last.CachedInputTokens, u.Output+last.OutputTokens
	}
	if u.Input == 0 {
		t.Fatal("test setup: the log has no token usage")
	}
	return &u
}

// steerCodexApp adds to a Codex app-server log a steering message as the driver and
// Codex write it: the client's turn/steer after the approval request, and Codex's
// userMessage item delivering it after the approval was answered.
func steerCodexApp(t *testing.T, stream []byte) []byte {
	t.Helper()
	const steer = `{"schema":"agentproof.codex-app-log/v1","seq":900,"time":"2026-12-06T04:06:26.90Z","turn":1,"dir":"client","method":"turn/steer",` +
		`"message":{"id":"9","method":"turn/steer","params":{"expectedTurnId":"t","input":[{"text":"STEER-now","type":"text"}],"threadId":"x"}}}`
	const delivered = `{"schema":"agentproof.codex-app-log/v1","seq":901,"time":"2026-12-06T04:06:27.00Z","turn":1,"dir":"agent","method":"item/completed","update":"userMessage",` +
		`"message":{"method":"item/completed","params":{"item":{"type":"userMessage","id":"u2","content":[{"type":"text","text":"STEER-now"}]},"threadId":"x","turnId":"t"}}}`
	var out [][]byte
	for _, l := range bytes.Split(stream, []byte("\n")) {
		out = append(out, l)
		switch {
		case bytes.Contains(l, []byte(`"method":"item/fileChange/requestApproval"`)):
			out = append(out, []byte(steer))
		case bytes.Contains(l, []byte(`"method":"serverRequest/resolved"`)):
			out = append(out, []byte(delivered))
		}
	}
	if len(out) != len(bytes.Split(stream, []byte("\n")))+2 {
		t.Fatal("test setup: the log has no approval request or no resolution")
	}
	return bytes.Join(out, []byte("\n"))
}

// piUsage sums, independently of the converter, the usage of the assistant messages
// of a Pi log (message_end lines): prompt tokens are input plus cache reads and writes.
func piUsage(t *testing.T, stream []byte) *Usage {
	t.Helper()
	var u Usage
	n := 0
	for _, l := range bytes.Split(stream, []byte("\n")) {
		var e struct {
			Dir     string `json:"dir"`
			Message struct {
				Type    string `json:"type"`
				Message struct {
					Role  string `json:"role"`
					Usage *struct {
						Input, Output, CacheRead, CacheWrite int64
					} `json:"usage"`
				} `json:"message"`
			} `json:"message"`
		}
		if json.Unmarshal(l, &e) != nil || e.Dir != "agent" || e.Message.Type != "message_end" || e.Message.Message.Role != "assistant" || e.Message.Message.Usage == nil {
			continue
		}
		m := e.Message.Message.Usage
		u.Input += m.Input + m.CacheRead + m.CacheWrite
		u.Cached += m.CacheRead
		u.Output += m.Output
		n++
	}
	if n == 0 {
		t.Fatal("test setup: the Pi log has no assistant usage")
	}
	return &u
}

// checkATIF writes tr as ATIF, validates it and compares it with
// testdata/golden/<name>.json (-update rewrites it).
func checkATIF(t *testing.T, name string, tr Trajectory) {
	t.Helper()
	b, err := ATIF(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateATIF(t, b); err != nil {
		t.Fatalf("ATIF does not validate: %v\n%s", err, b)
	}
	golden.Assert(t, string(b), filepath.Join("golden", name+".json"))
}

type recordedRun struct {
	RunID  string      `json:"runId"`
	Driver driver.Name `json:"driver"`
}

// TestBoardRecordOfRecordedRuns builds the trajectories of the built-in, hostile and
// fixture agents' runs from the control plane's recorded state: the task or the
// human's comment first, then the semantic commands in state order, the control
// plane's other answers, and the kept stdout; deterministic steps (llm_call_count 0).
func TestBoardRecordOfRecordedRuns(t *testing.T) {
	t.Parallel()
	cases := []struct {
		dir  string
		want []summary // one per run
	}{
		{"board-reference-warm-three-turn", []summary{
			{Roles: []Role{RoleUser, RoleAgent, RoleSystem, RoleAgent}, Calls: []string{"request_review"}, Results: 1},
			{Roles: []Role{RoleSystem, RoleUser, RoleAgent, RoleSystem, RoleAgent}, Calls: []string{"request_review"}, Results: 1},
			{Roles: []Role{RoleSystem, RoleUser, RoleAgent, RoleSystem, RoleAgent}, Calls: []string{"finish_task"}, Results: 1},
		}},
		{"board-nop-message-marker", []summary{{Roles: []Role{RoleUser, RoleSystem}}}},
		{"board-hostile-read-server-message-marker", []summary{{Roles: []Role{RoleUser, RoleAgent, RoleAgent, RoleSystem, RoleAgent}, Calls: []string{"report_progress", "finish_task"}, Results: 2}}},
		{"board-fixture-noisy-process-exit", []summary{{Roles: []Role{RoleUser, RoleSystem, RoleAgent}}}},
		{"board-wrong-plan-revise-accept", []summary{
			{Roles: []Role{RoleUser, RoleAgent, RoleAgent, RoleSystem, RoleAgent}, Calls: []string{"write_document", "request_human_input"}, Results: 2},
			{Roles: []Role{RoleSystem, RoleUser, RoleAgent, RoleAgent, RoleSystem, RoleAgent}, Calls: []string{"write_document", "request_human_input"}, Results: 2},
			{Roles: []Role{RoleSystem, RoleUser, RoleAgent, RoleSystem, RoleAgent}, Calls: []string{"finish_task"}, Results: 1},
		}},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			t.Parallel()
			var st controlplane.State
			if err := json.Unmarshal(readStream(t, filepath.Join(c.dir, "api-state.json")), &st); err != nil {
				t.Fatal(err)
			}
			var runs []recordedRun
			if err := json.Unmarshal(readStream(t, filepath.Join(c.dir, "runs.json")), &runs); err != nil {
				t.Fatal(err)
			}
			if len(runs) != len(c.want) {
				t.Fatalf("%d runs recorded, want %d", len(runs), len(c.want))
			}
			for i, r := range runs {
				f, ok := Select(r.Driver, []string{"stdout.log"})
				if !ok || f.Name != FormatBoard {
					t.Fatalf("Select(%s) = %q, %v", r.Driver, f.Name, ok)
				}
				stdout, _ := os.ReadFile(filepath.Join("testdata", "streams", c.dir, r.RunID+".stdout.log"))
				tr := f.Convert(Input{RunID: r.RunID, Driver: r.Driver, Agent: Agent{Name: "agentproof " + r.Driver.String(), Version: "test"}, State: &st, Stdout: stdout})
				got := summarize(tr)
				want := c.want[i]
				want.Format, want.SessionID, want.Messages = FormatBoard, "session-"+r.RunID, got.Messages
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("run %s (-want +got):\n%s", r.RunID, diff)
				}
				for _, s := range tr.Steps {
					if s.Role == RoleAgent && (s.LLMCalls == nil || *s.LLMCalls != 0) {
						t.Errorf("run %s: agent step %+v is not marked deterministic", r.RunID, s)
					}
				}
				checkATIF(t, c.dir+"-"+r.RunID, tr)
			}
		})
	}
}

// TestBoardRecordGaps: a missing state, a run the state does not hold, a run not
// finished and a CLI run read from the record are partial, and say why.
func TestBoardRecordGaps(t *testing.T) {
	t.Parallel()
	var st controlplane.State
	if err := json.Unmarshal(readStream(t, "board-reference-warm-three-turn/api-state.json"), &st); err != nil {
		t.Fatal(err)
	}
	running := st
	running.Runs = nil
	for _, r := range st.Runs {
		c := *r
		c.FinishedAt = nil
		running.Runs = append(running.Runs, &c)
	}
	const run = "hb-company-0001-fixture-wake-0001"
	cases := []struct {
		name   string
		in     Input
		gap    string
		stdout bool
	}{
		{"no state", Input{RunID: run, Driver: driver.MustParse("reference")}, "the control plane's state could not be read", false},
		{"unknown run", Input{RunID: "hb-nope", Driver: driver.MustParse("reference"), State: &st, Stdout: []byte("hello")}, "holds no run hb-nope", true},
		{"not finished", Input{RunID: run, Driver: driver.MustParse("reference"), State: &running}, "had not finished", false},
		{"cli without its stream", Input{RunID: run, Driver: driver.MustParse("exec:codex"), State: &st}, "the run's own stream was not read", false},
		{"app server without its log", Input{RunID: run, Driver: driver.MustParse("app:codex"), State: &st}, "the run's own stream was not read", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := fromBoard(c.in)
			if !tr.Partial() || !strings.Contains(strings.Join(tr.Gaps, "|"), c.gap) {
				t.Fatalf("gaps = %q, want one containing %q", tr.Gaps, c.gap)
			}
			if c.stdout && (len(tr.Steps) != 1 || tr.Steps[0].Message.S != "hello") {
				t.Errorf("steps = %+v, want only the stdout", tr.Steps)
			}
			if c.in.Driver == driver.MustParse("exec:codex") {
				for _, s := range tr.Steps {
					if s.LLMCalls != nil {
						t.Errorf("a CLI's step claims an LLM call count: %+v", s)
					}
				}
			}
			b, err := ATIF(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := validateATIF(t, b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestModelLogOfRecordedRuns reads the scripted model's request logs of the three
// CLIs: the conversation of the run's last request, the tool call with the arguments
// the agent sent back and the result it sent, the reported usage per turn, and the
// last reply always a gap.
func TestModelLogOfRecordedRuns(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		user      int
		calls     []string
		usageIn   int64
		lastReply string
	}{
		{"model-requests-codex", 4, []string{"finish_task"}, 28051, "answer"},
		{"model-requests-opencode", 2, []string{"agentproof_finish_task"}, 0, "answer"},
		{"model-requests-claude", 2, []string{"mcp__agentproof__finish_task"}, 0, "answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ts := ModelLog(readStream(t, c.name+".jsonl"), false)
			if len(ts) != 1 {
				t.Fatalf("%d trajectories, want 1", len(ts))
			}
			tr := ts[0]
			s := summarize(tr)
			users := 0
			for _, r := range s.Roles {
				if r == RoleUser {
					users++
				}
			}
			if users < 1 || !slices.Equal(s.Calls, c.calls) || s.Results != 1 {
				t.Errorf("summary = %+v, want ≥1 user step, calls %v and their result", s, c.calls)
			}
			if tr.Ordinal != 1 || tr.Agent.Model != "scripted-model" {
				t.Errorf("ordinal %d model %q", tr.Ordinal, tr.Agent.Model)
			}
			if len(tr.Gaps) != 1 || !strings.Contains(tr.Gaps[0], "("+c.lastReply+") is not in the request log") {
				t.Errorf("gaps = %q", tr.Gaps)
			}
			if tr.Usage == nil || tr.Usage.Input == 0 {
				t.Errorf("usage = %+v, want the reported usage", tr.Usage)
			}
			checkATIF(t, c.name, tr)
		})
	}
	if ts := ModelLog([]byte("{\"seq\":1,\"run\":2,\"step\":0}\nnope\n"), true); len(ts) != 1 || ts[0].Ordinal != 2 || len(ts[0].Gaps) != 3 {
		t.Errorf("a log of one auxiliary request = %+v, want run 2 with three gaps (not JSON, cut, no scripted request)", ts)
	}
}

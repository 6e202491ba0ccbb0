package agent_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/worker"
)

// TestCLILaunchGolden pins the command line and environment of every CLI driver, with
// the scripted model and live (`agentproof run --live`, never run here): the native
// binary as program, the run token only in the environment (forwarded to the MCP server
// by name), per-run directories, the offline knobs.
func TestCLILaunchGolden(t *testing.T) {
	t.Parallel()
	live := map[string]map[string]any{
		"codex":    {"baseUrl": "https://api.openai.com/v1", "model": "gpt-5.2-codex", "envVar": "OPENAI_API_KEY"},
		"opencode": {"baseUrl": "https://api.openai.com/v1", "model": "gpt-5.2", "envVar": "OPENAI_API_KEY", "npm": "@ai-sdk/openai"},
		"claude":   {"baseUrl": "https://api.anthropic.com/v1", "model": "claude-sonnet-4-5", "envVar": "OPENAI_API_KEY"},
	}
	for _, cli := range []string{"codex", "opencode", "claude"} {
		for _, mode := range []string{"scripted", "live"} {
			t.Run(cli+"-"+mode, func(t *testing.T) {
				t.Parallel()
				cfg := map[string]any{"binary": "/opt/agents/" + cli + "/bin/" + cli, "timeoutMs": 60000}
				if mode == "scripted" {
					cfg["modelBaseUrl"] = "http://127.0.0.1:4555"
				} else {
					cfg["live"] = live[cli]
				}
				d := mustNew(t, "exec:"+cli, cfg)
				env := runEnv(t)
				env.Executable = "/usr/local/bin/agentproof"
				desc := "Post exactly the text M_1 as your final message."
				rc := controlplane.RunContext{RunID: "run-1", ActiveTask: controlplane.Task{ID: "task-9", Identifier: "APF-1", Title: "Marker", Description: &desc},
					Wake: controlplane.Wake{Reason: "assignment"}}
				spec, err := d.Launch(rc, env)
				if err != nil {
					t.Fatal(err)
				}
				if !spec.NullStdin {
					t.Error("the CLI's stdin is not /dev/null (a CLI waiting on an open stdin hangs)")
				}
				if spec.Path != "/opt/agents/"+cli+"/bin/"+cli || spec.Args[0] != spec.Path || spec.Dir != env.Workspace {
					t.Errorf("spec runs %s %q in %s, want the native binary in the workspace", spec.Path, spec.Args[0], spec.Dir)
				}
				for _, a := range spec.Args {
					if strings.Contains(a, env.RunToken) || strings.Contains(a, secretValue) {
						t.Errorf("argv carries the run token or a secret: %q", a)
					}
				}
				runDir := agent.CLIRunDir(env.StateDir, 1)
				if b, err := os.ReadFile(filepath.Join(runDir, "run-id")); err != nil || string(b) != "run-1" {
					t.Errorf("run directory %s not prepared: %v", runDir, err)
				}
				// A second launch of the same run reuses its directory; another run gets 2.
				if _, err := d.Launch(rc, env); err != nil {
					t.Fatal(err)
				}
				env2 := env
				env2.RunID = "run-2"
				spec2, err := d.Launch(rc, env2)
				if err != nil {
					t.Fatal(err)
				}
				if mode == "scripted" && !strings.Contains(strings.Join(append(spec2.Args, spec2.Env...), "\n"), "http://127.0.0.1:4555/runs/2") {
					t.Errorf("run 2 does not talk to /runs/2:\n%s", strings.Join(append(spec2.Args, spec2.Env...), "\n"))
				}
				var b bytes.Buffer
				b.WriteString("# argv\n")
				for _, a := range spec.Args {
					b.WriteString(a + "\n")
				}
				b.WriteString("# env\n")
				for _, kv := range spec.Env {
					b.WriteString(kv + "\n")
				}
				for _, f := range []string{filepath.Join(runDir, "claude", "agentproof-mcp.json")} {
					if body, err := os.ReadFile(f); err == nil {
						b.WriteString("# file " + filepath.Base(f) + "\n")
						b.Write(body)
					}
				}
				got := strings.NewReplacer(env.StateDir, "$STATE", env.Workspace, "$WORKSPACE", env.RunToken, "$RUN_TOKEN", secretValue, "$OPENAI_API_KEY").Replace(b.String())
				golden.Assert(t, got, filepath.Join("cli", cli+"-"+mode+".golden"))
			})
		}
	}
}

func TestCLILaunchNeedsBinaryAndModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"modelBaseUrl": "http://127.0.0.1:1"}, "no native binary"},
		{map[string]any{"binary": "/bin/true"}, "no model endpoint"},
		{map[string]any{"binary": "/bin/true", "live": map[string]any{"baseUrl": "https://x", "model": "m", "envVar": "NOT_BOUND"}}, "live credential NOT_BOUND"},
	} {
		d := mustNew(t, "exec:codex", tc.cfg)
		_, err := d.Launch(runContext(), runEnv(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Launch with %v: error %v, want one naming %q", tc.cfg, err, tc.want)
		}
	}
}

// TestCLIReport checks the run status, the failure summary (exit code, the CLI's error
// naming the model-script step, the stderr tail) and the usage read from each CLI's
// event stream: cache-write tokens (Codex cache_write_input_tokens, taken out of its
// input_tokens; OpenCode cache.write; Claude cache_creation_input_tokens) and Claude's
// total_cost_usd as providerReportedUsd (OpenCode's cost, its own estimate, is not read).
func TestCLIReport(t *testing.T) {
	t.Parallel()
	codexOK := `{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"i0","type":"error","message":"Model metadata for ` + "`scripted-model`" + ` not found"}}
{"type":"item.completed","item":{"id":"i1","type":"mcp_tool_call","server":"agentproof","tool":"finish_task","status":"completed"}}
{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"M_1"}}
{"type":"turn.completed","usage":{"input_tokens":150,"cached_input_tokens":20,"cache_write_input_tokens":30,"output_tokens":7,"reasoning_output_tokens":0}}
`
	codexFail := `{"type":"turn.started"}
{"type":"error","message":"unexpected status 400 Bad Request: agentproof scripted model: step 1 (call finish_task, line 3): the request offers no tool for \"finish_task\""}
{"type":"turn.failed","error":{"message":"step 1 (call finish_task, line 3)"}}
`
	opencodeOK := `{"type":"step_start","part":{}}
{"type":"tool_use","part":{"tool":"agentproof_finish_task","state":{"status":"completed"}}}
{"type":"step_finish","part":{"reason":"tool-calls","tokens":{"input":50,"output":5,"reasoning":1,"cache":{"read":10,"write":0}}}}
{"type":"text","part":{"text":"M_1"}}
{"type":"step_finish","part":{"reason":"stop","tokens":{"input":60,"output":3,"reasoning":0,"cache":{"read":0,"write":25}},"cost":0.5}}
`
	zero, one := 0, 1
	tests := []struct {
		cli, stdout, stderr string
		exit                *int
		status              controlplane.RunStatus
		usage               string
		summary             []string
	}{
		{"codex", codexOK, "", &zero, "succeeded", `{"cacheWriteInputTokens":30,"cachedInputTokens":20,"inputTokens":100,"outputTokens":7,"source":"codex event stream","usageEvents":1}`, []string{"exited with code 0"}},
		{"codex", codexFail, "warning\nfatal: gave up\n", &one, "failed", "", []string{"exited with code 1", "codex reported:", "step 1 (call finish_task", "stderr tail: warning ⏎ fatal: gave up"}},
		{"opencode", opencodeOK, "", &zero, "succeeded", `{"cacheWriteInputTokens":25,"cachedInputTokens":10,"inputTokens":110,"outputTokens":9,"source":"opencode event stream","usageEvents":2}`, []string{"exited with code 0"}},
		{"claude", `{"type":"result","subtype":"success","is_error":false,"result":"M_1","total_cost_usd":0.0421,"usage":{"input_tokens":9,"output_tokens":2,"cache_read_input_tokens":1,"cache_creation_input_tokens":1200}}` + "\n", "", &zero, "succeeded",
			`{"cacheWriteInputTokens":1200,"cachedInputTokens":1,"inputTokens":9,"outputTokens":2,"providerReportedUsd":0.0421,"source":"claude event stream","usageEvents":1}`, nil},
		{"claude", `{"type":"result","subtype":"success","is_error":false,"result":"M_1","usage":{"input_tokens":9,"output_tokens":2}}` + "\n", "", &zero, "succeeded",
			`{"cacheWriteInputTokens":0,"cachedInputTokens":0,"inputTokens":9,"outputTokens":2,"source":"claude event stream","usageEvents":1}`, nil},
	}
	for i, tc := range tests {
		d := mustNew(t, "exec:"+tc.cli, nil)
		o := worker.Outcome{Started: true, Exited: true, ExitCode: tc.exit, Output: captured(t, tc.stdout, tc.stderr)}
		r := d.Report(o)
		if r.RunStatus != tc.status {
			t.Errorf("%d %s: run status %s, want %s", i, tc.cli, r.RunStatus, tc.status)
		}
		if string(r.Usage) != tc.usage {
			t.Errorf("%d %s: usage %s, want %s", i, tc.cli, r.Usage, tc.usage)
		}
		for _, s := range tc.summary {
			if !strings.Contains(r.Summary, s) {
				t.Errorf("%d %s: summary %q does not contain %q", i, tc.cli, r.Summary, s)
			}
		}
		if len(r.Transcript) != 2 || r.Transcript[0].Name != "events.jsonl" || string(r.Transcript[0].Body) != tc.stdout {
			t.Errorf("%d %s: transcript %+v, want events.jsonl with the stream and stderr.log", i, tc.cli, r.Transcript)
		}
	}
}

// captured runs a process that writes stdout and stderr, to get a real worker capture.
func captured(t *testing.T, stdout, stderr string) worker.Captured {
	t.Helper()
	dir := t.TempDir()
	out, errf := filepath.Join(dir, "out"), filepath.Join(dir, "err")
	if err := os.WriteFile(out, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(errf, []byte(stderr), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := worker.Supervise(t.Context(), worker.Spec{Path: "/bin/sh", Args: []string{"sh", "-c", `cat "$1"; cat "$2" >&2`, "sh", out, errf},
		Env: []string{"PATH=/usr/bin:/bin"}, Dir: dir, Timeout: 10e9, MaxOutputBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return o.Output
}

// TestParseEventsSplitsAndOversized: the stream is read line by line, an over-long
// line is counted (never silently dropped) and the rest still parsed.
func TestParseEventsSplitsAndOversized(t *testing.T) {
	t.Parallel()
	big := `{"type":"item.completed","item":{"type":"command_execution","aggregated_output":"` + strings.Repeat("x", agent.MaxEventLineBytes) + `"}}`
	stream := big + "\nnot json\n" + `{"type":"turn.completed","usage":{"input_tokens":3,"output_tokens":1}}` + "\n"
	ev := agent.ParseEvents("codex", []byte(stream))
	if ev.Oversized != 1 || ev.NotJSON != 1 || ev.UsageEvents != 1 || ev.InputTokens != 3 {
		t.Errorf("events = %+v, want 1 oversized, 1 not JSON, usage 3/1", ev)
	}
	var u map[string]any
	if err := json.Unmarshal(ev.Usage(), &u); err != nil || u["inputTokens"] != float64(3) {
		t.Errorf("usage = %s", ev.Usage())
	}
	if agent.ParseEvents("opencode", nil).Usage() != nil {
		t.Error("an empty stream reports usage; want none (unavailable, never zero)")
	}
}

// FuzzParseEvents: the CLI event parser never panics on arbitrary streams and never
// reports negative usage.
func FuzzParseEvents(f *testing.F) {
	f.Add("codex", []byte(`{"type":"turn.completed","usage":{"input_tokens":1}}`))
	f.Add("opencode", []byte(`{"type":"step_finish","part":{"tokens":{"input":-5,"cache":[]}}}`))
	f.Add("claude", []byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"mcp__agentproof__x"}]}}`+"\n"+`{"type":"result","is_error":true}`))
	f.Fuzz(func(t *testing.T, cli string, stream []byte) {
		ev := agent.ParseEvents(cli, stream)
		if ev.InputTokens < 0 || ev.OutputTokens < 0 || ev.CachedTokens < 0 {
			t.Fatalf("negative usage %+v", ev)
		}
	})
}

// TestCLIModelID: driverConfig model is the id the CLI asks the scripted model for (the
// generated breadth profiles, docs/breadth.md); an id with spaces or quotes is refused.
func TestCLIModelID(t *testing.T) {
	t.Parallel()
	for _, cli := range []string{"codex", "opencode", "claude"} {
		d := mustNew(t, "exec:"+cli, map[string]any{"binary": "/opt/" + cli, "modelBaseUrl": "http://127.0.0.1:4555", "model": "nvidia/nemotron-3-ultra-550b-a55b:free"})
		spec, err := d.Launch(runContext(), runEnv(t))
		if err != nil {
			t.Fatal(err)
		}
		all := strings.ReplaceAll(strings.Join(append(spec.Args, spec.Env...), "\n"), agent.ScriptedAPIKey, "")
		if !strings.Contains(all, "nvidia/nemotron-3-ultra-550b-a55b:free") || strings.Contains(all, agent.ScriptedModelID) {
			t.Errorf("%s does not ask for the configured model id:\n%s", cli, all)
		}
	}
	for _, bad := range []string{"has space", `quo"te`, strings.Repeat("m", 201)} {
		_, err := build("exec:opencode", map[string]any{"model": bad})
		if err == nil || !strings.Contains(err.Error(), "model") {
			t.Errorf("model %q: error %v, want one naming model", bad, err)
		}
	}
}

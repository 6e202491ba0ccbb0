package agent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/worker"
)

// A late agentproof MCP server (a loaded machine: the server answers its first message
// seconds after the CLI started it) against the real OpenCode and Gemini CLI, as
// testClaudeAppSlowMCP does for Claude Code: the MCP command is a wrapper that sleeps
// mcpLateBy, notes the moment it goes on, and then execs the stub server of the test
// binary. A CLI that started its first model request without waiting would offer the
// model its tools without finish_task, and the scripted model's finish_task step
// would have nothing to call.

// mcpLateBy is how late the server is: more than Claude Code's own default wait (5 s),
// well within OpenCode's connect timeout (the MCP server's "timeout", 30 s when it is
// not set) and Gemini CLI's (ten minutes when the server sets none).
const mcpLateBy = 7 * time.Second

// lateMCPExecutable writes the wrapper and returns its path and the file whose
// modification time is the moment the server started.
func lateMCPExecutable(t *testing.T) (wrapper, started string) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper, started = filepath.Join(dir, "slow-agentproof"), filepath.Join(dir, "mcp-started")
	body := "#!/bin/sh\n" + sleep + " " + strings.TrimSuffix(mcpLateBy.String(), "s") + "\n: > '" + started + "'\nexec '" + self(t) + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper, started
}

// lateMCPScript calls finish_task in the model's first step, then answers.
const lateMCPScript = `steps:
  - call: finish_task
    args: {summary: "late {{nonce}}"}
  - answer: "DONE_{{nonce}}"
`

// checkToolsAfterLateMCP checks the scripted model's log: every request that offered
// tools offered finish_task, and the first of them came after the server started.
func checkToolsAfterLateMCP(t *testing.T, log []scriptedmodel.LogEntry, started string, launched time.Time) {
	t.Helper()
	fi, err := os.Stat(started)
	if err != nil {
		t.Fatalf("the late MCP server never started: %v", err)
	}
	var first time.Time
	for _, e := range log {
		if len(e.Tools) == 0 {
			continue
		}
		if !strings.Contains(strings.Join(e.Tools, " "), "finish_task") {
			t.Errorf("model request %d (%s) offered %v: no finish_task, the agentproof tools were missing", e.Seq, e.Time, e.Tools)
		}
		if at, err := time.Parse(time.RFC3339Nano, e.Time); err == nil && first.IsZero() {
			first = at
		}
	}
	switch {
	case first.IsZero():
		t.Fatal("no model request offered tools")
	case first.Before(fi.ModTime()):
		t.Errorf("the first model request with tools came at %v, before the MCP server started at %v", first, fi.ModTime())
	}
	t.Logf("MCP server started %v after launch; first model request with tools %v after launch",
		fi.ModTime().Sub(launched).Round(time.Millisecond), first.Sub(launched).Round(time.Millisecond))
}

// TestRealSlowMCPServer: OpenCode (`opencode run`, exec:opencode, and `opencode acp`,
// acp:opencode) and Gemini CLI (`gemini --acp`, acp:gemini) wait for the late agentproof
// MCP server before their first model request: the first request already offers
// finish_task, the call reaches the server as the run, the run or turn ends normally.
func TestRealSlowMCPServer(t *testing.T) {
	t.Parallel()
	t.Run("exec:opencode", testExecOpenCodeSlowMCP)
	for _, ra := range realACPAgents {
		if ra.driver != "acp:opencode" && ra.driver != "acp:gemini" {
			continue
		}
		t.Run(ra.driver, func(t *testing.T) {
			t.Parallel()
			testACPSlowMCP(t, ra)
		})
	}
}

func testExecOpenCodeSlowMCP(t *testing.T) {
	t.Parallel()
	const nonce = "osl1"
	binary, _ := realCLIBinary(t, "opencode")
	env := runEnv(t)
	env.Secrets = nil
	var started string
	env.Executable, started = lateMCPExecutable(t)
	rs, url := scriptedModel(t, "opencode", lateMCPScript, map[string]string{"nonce": nonce})
	// minutes of wall time for one run at a high load average (acp:opencode's note)
	d := mustNew(t, "exec:opencode", map[string]any{"binary": binary, "timeoutMs": 600000, "modelBaseUrl": url})
	spec, err := d.Launch(runContext(), env)
	if err != nil {
		t.Fatal(err)
	}
	launched := time.Now()
	o, err := worker.Supervise(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Report(o); r.RunStatus != "succeeded" {
		t.Fatalf("status %s: %s\nstdout: %s\nstderr: %s", r.RunStatus, r.Summary, clipOut(o.Output.Stdout()), clipOut(o.Output.Stderr()))
	}
	if calls := readMCPCalls(env.StateDir); len(calls) != 1 || calls[0].Tool != "finish_task" || calls[0].RunID != env.RunID || calls[0].Args["summary"] != "late "+nonce {
		t.Errorf("MCP calls = %+v, want finish_task as %s", calls, env.RunID)
	}
	if ev := agent.ParseEvents("opencode", o.Output.Stdout()); ev.FinalText != "DONE_"+nonce {
		t.Errorf("final text %q", ev.FinalText)
	}
	checkToolsAfterLateMCP(t, rs.Requests(), started, launched)
}

// testACPSlowMCP: the server comes from session/new, which the agent answers only once
// the server has answered (the session's start waits for it).
func testACPSlowMCP(t *testing.T, ra realACPAgent) {
	const nonce = "asl1"
	w := newRealWorld(t, ra, nonce, lateMCPScript)
	drv, err := newACP(ra.driver, w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	env := w.run("run-1")
	var started string
	env.Executable, started = lateMCPExecutable(t)
	launched := time.Now()
	s, err := drv.Start(context.Background(), agent.SessionEnv{Run: env, Permissions: session.Approve})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	answered := time.Now()
	if fi, err := os.Stat(started); err != nil || answered.Before(fi.ModTime()) {
		t.Errorf("session/new answered %v after launch, before the MCP server started (%v)", answered.Sub(launched), err)
	}
	t.Logf("session/new answered %v after launch", answered.Sub(launched).Round(time.Millisecond))
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.modelFailures(), exitOf(s))
	}
	if res.StopReason != "end_turn" || !strings.Contains(res.Message, "DONE_"+nonce) {
		t.Errorf("stop %q message %q", res.StopReason, res.Message)
	}
	if calls := readMCPCalls(w.stateDir); len(calls) != 1 || calls[0].Tool != "finish_task" || calls[0].RunID != "run-1" || calls[0].Args["summary"] != "late "+nonce {
		t.Errorf("MCP calls = %+v, want finish_task through the session/new server as run-1", calls)
	}
	checkToolsAfterLateMCP(t, w.model.Requests(), started, launched)
}

package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/script"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/agent/session"
)

// The pinned Claude Code as a stream-json session (app:claude, docs/clis.md), offline
// against the scripted model: its permission prompt through the agentproof MCP
// server's permission_prompt tool (a write allowed, a write denied, a command denied,
// Stop while the prompt is pending) and three warm turns in one process. Claude Code is
// an optional CLI: the tests skip when it is not installed, except in CI, which
// installs it (.ci/agents.sh) and fails without it.

// claudeBinary locates the pinned claude or skips/fails.
func claudeBinary(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("-short: Claude Code is a real agent CLI (seconds of CPU per session); the full test command runs it")
	}
	c, _ := clis.Lookup("claude")
	dir := os.Getenv("AGENTPROOF_AGENTS_DIR")
	if dir == "" {
		dir, _ = clis.DefaultDir()
	}
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	var ni *clis.NotInstalledError
	switch {
	case errors.As(err, &ni) && os.Getenv("CI") == "":
		tb.Skipf("claude is not installed: run `go run ./cmd/agentproof agents install claude` (or set AGENTPROOF_AGENTS_DIR); CI fails instead of skipping")
	case err != nil:
		tb.Fatalf("locating claude: %v", err)
	}
	return in.Binary
}

// claudeAppWorld is a world of the real Claude Code: the workspace, the scripted model
// serving the scripts made for the workspace, the driver's configuration.
type claudeAppWorld struct {
	*acpWorld
	model *scriptedmodel.RunSet
	cfg   map[string]any
}

func newClaudeAppWorld(t *testing.T, scripts func(workspace string) ([]*scriptedmodel.Script, error)) *claudeAppWorld {
	t.Helper()
	cfg := map[string]any{"binary": claudeBinary(t), "turnTimeoutMs": 180000, "cancelGraceMs": 15000}
	w := newACPWorld(t, "", nil)
	sc, err := scripts(w.workspace)
	if err != nil {
		t.Fatal(err)
	}
	rs, running := serveScripts(t, sc)
	cfg["modelBaseUrl"] = running.URL
	return &claudeAppWorld{acpWorld: w, model: rs, cfg: cfg}
}

func (w *claudeAppWorld) session(t *testing.T, d session.PermissionDecider) *session.Session {
	t.Helper()
	drv, err := agent.NewClaudeApp(piDriverConfig(t, w.cfg))
	if err != nil {
		t.Fatal(err)
	}
	s, err := drv.Start(context.Background(), agent.SessionEnv{Run: w.run("run-1"), Permissions: d})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// refusals are the scripted model's refusals (a request that did not fit).
func (w *claudeAppWorld) refusals() []string {
	var out []string
	for _, e := range w.model.Requests() {
		if e.Status != 200 {
			out = append(out, fmt.Sprintf("%d %s", e.Status, e.Error))
		}
	}
	return out
}

func TestRealClaudeApp(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(*testing.T){
		"allow-write": testClaudeAppAllow, "deny-write": testClaudeAppDeny, "deny-command": testClaudeAppDenyCommand,
		"stop-while-pending": testClaudeAppStop, "warm-three-turns": testClaudeAppWarm,
		"slow-mcp-server": testClaudeAppSlowMCP,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t)
		})
	}
}

func testClaudeAppAllow(t *testing.T) {
	const nonce = "kal1"
	w := newClaudeAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForACP(writeScript(nonce), ws, false)
	})
	s := w.session(t, session.Approve)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: acpToken, Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.refusals(), exitOf(s))
	}
	if got, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); got != "proof-"+nonce {
		t.Errorf("proof.txt = %q (exists %v), want the write's content", got, ok)
	}
	if len(res.Permissions) != 1 || res.Permissions[0].Request.Kind != "edit" || res.Permissions[0].Decision.OptionID != "allow" ||
		len(res.Permissions[0].Request.Locations) != 1 || !strings.HasSuffix(res.Permissions[0].Request.Locations[0], "/proof.txt") {
		t.Errorf("permissions %+v, want the write allowed", res.Permissions)
	}
	if res.StopReason != agent.ClaudeStopSuccess || len(res.ProtocolViolations) > 0 {
		t.Errorf("stop %q violations %v", res.StopReason, res.ProtocolViolations)
	}
	calls := readMCPCalls(w.stateDir)
	if len(calls) != 1 || calls[0].Tool != "finish_task" || calls[0].RunID != "run-1" || !calls[0].TokenSet {
		t.Errorf("MCP calls %+v, want finish_task acting for run-1 through the binding file", calls)
	}
	if len(res.Usage) == 0 {
		t.Error("no usage recorded")
	}
}

// testClaudeAppSlowMCP: the agentproof MCP server, whose permission_prompt tool is
// the session's permission prompt, answers only 7 s after Claude Code starts it (a
// loaded machine; Claude Code's own default is to wait 5 s, and then to start without
// it): Claude Code still asks before the write, and the allowed write happens.
func testClaudeAppSlowMCP(t *testing.T) {
	const nonce = "ksl1"
	w := newClaudeAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForACP(writeScript(nonce), ws, false)
	})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	slow := filepath.Join(t.TempDir(), "slow-agentproof")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\n"+sleep+" 7\nexec '"+self+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	drv, err := agent.NewClaudeApp(piDriverConfig(t, w.cfg))
	if err != nil {
		t.Fatal(err)
	}
	env := w.run("run-1")
	env.Executable = slow
	s, err := drv.Start(context.Background(), agent.SessionEnv{Run: env, Permissions: session.Approve})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: acpToken, Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.refusals(), exitOf(s))
	}
	if got, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); got != "proof-"+nonce {
		t.Errorf("proof.txt = %q (exists %v), want the write's content", got, ok)
	}
	if len(res.Permissions) != 1 || res.Permissions[0].Decision.OptionID != "allow" {
		t.Errorf("permissions %+v, want the write asked for and allowed", res.Permissions)
	}
}

func testClaudeAppDeny(t *testing.T) {
	const nonce = "kdn1"
	w := newClaudeAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForACP(writeScript(nonce), ws, false)
	})
	s := w.session(t, session.Decline)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.refusals(), exitOf(s))
	}
	if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
		t.Error("proof.txt written although the write was denied")
	}
	if len(res.Permissions) != 1 || res.Permissions[0].Request.Kind != "edit" || res.Permissions[0].Decision.OptionID != "deny" {
		t.Errorf("permissions %+v, want the write denied", res.Permissions)
	}
	if res.StopReason != agent.ClaudeStopSuccess {
		t.Errorf("stop %q, want the turn to go on after the denial and end", res.StopReason)
	}
}

func testClaudeAppDenyCommand(t *testing.T) {
	const nonce = "kcm1"
	w := newClaudeAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForACP(shellScript(nonce), ws, false)
	})
	s := w.session(t, session.Decline)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.refusals(), exitOf(s))
	}
	if _, ok := readFile(t, filepath.Join(w.workspace, "ran.txt")); ok {
		t.Error("ran.txt exists: the denied command ran")
	}
	if len(res.Permissions) != 1 || res.Permissions[0].Request.Kind != "execute" || res.Permissions[0].Decision.OptionID != "deny" ||
		!strings.Contains(res.Permissions[0].Request.Command, "ran.txt") {
		t.Errorf("permissions %+v, want the command denied", res.Permissions)
	}
}

// shellScript runs a command that leaves ran.txt, then finishes.
func shellScript(nonce string) *script.Script {
	return &script.Script{Turns: []*script.Turn{{Trigger: "assignment", Steps: []*script.Step{
		{Command: "shell", Args: map[string]any{"command": "echo ran-" + nonce + " > ran.txt"}}, finishStep("ran " + nonce),
	}}}}
}

func testClaudeAppStop(t *testing.T) {
	const nonce = "kst1"
	w := newClaudeAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForACP(writeScript(nonce), ws, false)
	})
	hold := session.NewHoldDecider(1)
	s := w.session(t, hold)
	go func() {
		select {
		case <-hold.Pending:
			_ = s.Cancel("Stop")
		case <-time.After(3 * time.Minute):
		}
	}()
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.refusals(), exitOf(s))
	}
	if res.StopReason != agent.ClaudeStopInterrupted || !res.CancelHonoured || len(res.ProtocolViolations) > 0 {
		t.Errorf("stop %q honoured %v violations %v, want interrupted", res.StopReason, res.CancelHonoured, res.ProtocolViolations)
	}
	if len(res.Permissions) != 1 || res.Permissions[0].By != session.AnsweredByCancel {
		t.Errorf("permissions %+v, want the pending one cancelled by the Stop", res.Permissions)
	}
	time.Sleep(500 * time.Millisecond)
	if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
		t.Error("proof.txt written after Stop while its permission was pending")
	}
}

// testClaudeAppWarm plays three turns, each writing a file of its own (an allowed
// write), in one session: one conversation, one process.
func testClaudeAppWarm(t *testing.T) {
	const nonce = "kwm1"
	ref := &script.Script{}
	for i := 1; i <= 3; i++ {
		ref.Turns = append(ref.Turns, &script.Turn{Trigger: "follow_up", Steps: []*script.Step{writeStep(fmt.Sprintf("warm-%d.txt", i), fmt.Sprintf("T%d-%s", i, nonce))}})
	}
	w := newClaudeAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) { return scriptedmodel.ForACP(ref, ws, true) })
	s := w.session(t, session.Approve)
	var ids []session.ProcessIdentity
	for i := 1; i <= 3; i++ {
		res, err := s.Prompt(context.Background(), session.Turn{RunID: fmt.Sprintf("run-%d", i), Text: realPrompt})
		if err != nil {
			t.Fatalf("turn %d: %v (model: %v)%s", i, err, w.refusals(), exitOf(s))
		}
		if got, _ := readFile(t, filepath.Join(w.workspace, fmt.Sprintf("warm-%d.txt", i))); got != fmt.Sprintf("T%d-%s", i, nonce) || res.StopReason != agent.ClaudeStopSuccess || res.Turn != i {
			t.Errorf("turn %d: warm-%d.txt %q, stop %q", i, i, got, res.StopReason)
		}
		if len(res.Permissions) != 1 || res.Permissions[0].Decision.OptionID != "allow" {
			t.Errorf("turn %d: permissions %+v, want the write allowed", i, res.Permissions)
		}
		ids = append(ids, res.Process)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] || ids[0].PID == 0 {
		t.Errorf("process identities %v, want one process for the three turns", ids)
	}
}

// exitOf closes session s and describes how its agent process ended, with the tail of
// its stderr: what a failed turn's message needs to say why the agent went away.
func exitOf(s *session.Session) string {
	e := s.Close()
	out := "; the agent " + e.Summary()
	if n := len(e.Stderr); n > 0 {
		out += "; stderr: " + string(e.Stderr[max(0, n-800):])
	}
	return out
}

package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/agent/session"
)

// The real ACP agents, offline against the scripted model (docs/acp.md "Agents"). They
// need the pinned packages in the agent cache ($AGENTPROOF_AGENTS_DIR, else the default
// cache): in CI a missing package fails the test, elsewhere it is skipped with the
// install command; the optional Claude adapter is skipped when it is not installed.

// realACPAgent is one real ACP agent under test: its driver, the pinned package, and
// what it does when a write is declined: Codex aborts the turn (stop reason cancelled),
// OpenCode ends it at once (end_turn, no message); Claude Code and Gemini CLI tell the
// model, whose scripted answer then says the write was denied.
type realACPAgent struct {
	driver, cli  string
	denyStop     string
	denyMessages bool // the scripted final answer reaches the client after a denial
	// slow: a session costs minutes of wall time on a loaded machine, so start and turn
	// get 10 min instead of the 3-minute turn and the driver's 2-minute start the others
	// get. The cause is CPU, not a wait: one OpenCode session of approve-write costs
	// about 9.5 s of CPU (Bun loading its 185 MB executable, a fresh SQLite database
	// migrated, its MCP client), which two cores at a load average of 50 hand out over
	// 210-220 s (measured 2026-12-06; 13-15 s at a load average of 17). Until OpenCode
	// stopped installing its plugin package at every start (agent.OpenCodeConfigDir), a
	// download from the npm registry came on top.
	slow bool
}

var realACPAgents = []realACPAgent{
	{driver: "acp:opencode", cli: "opencode", denyStop: "end_turn", slow: true},
	{driver: "acp:codex", cli: "codex-acp", denyStop: "cancelled"},
	{driver: "acp:claude", cli: "claude-acp", denyStop: "end_turn", denyMessages: true},
	{driver: "acp:gemini", cli: "gemini", denyStop: "end_turn", denyMessages: true},
}

// realACPConfig locates ra's package and returns its driverConfig (binary, node) or
// skips/fails the test.
func realACPConfig(tb testing.TB, ra realACPAgent) map[string]any {
	tb.Helper()
	binary, node := realCLIBinary(tb, ra.cli)
	cfg := map[string]any{"binary": binary, "turnTimeoutMs": 180000}
	if ra.slow {
		cfg["turnTimeoutMs"], cfg["startTimeoutMs"] = 600000, 600000
	}
	if node != "" {
		cfg["node"] = node
	}
	return cfg
}

// realCLIBinary locates the pinned package name and returns its binary and, for a
// JavaScript entry script, the Node.js binary; it skips under -short, and when the
// package is not installed (unless it is required and the test runs in CI: it fails).
func realCLIBinary(tb testing.TB, name string) (binary, node string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("-short: %s is a real agent CLI (seconds to minutes of CPU per session); the full test command runs it", name)
	}
	c, ok := clis.Lookup(name)
	if !ok {
		tb.Fatalf("no pinned package %s", name)
	}
	dir := os.Getenv("AGENTPROOF_AGENTS_DIR")
	if dir == "" {
		dir, _ = clis.DefaultDir()
	}
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	var ni *clis.NotInstalledError
	switch {
	case errors.As(err, &ni) && c.Optional:
		tb.Skipf("%s is optional and not installed in %s (agentproof agents install --dir %s %s)", c.Name, dir, dir, c.Name)
	case errors.As(err, &ni) && os.Getenv("CI") == "":
		tb.Skipf("%s is not installed: run `go run ./cmd/agentproof agents install` (or set AGENTPROOF_AGENTS_DIR); CI fails instead of skipping", c.Name)
	case err != nil:
		tb.Fatalf("locating %s: %v", c.Name, err)
	}
	if in.Runtime == clis.RuntimeNode {
		if node, err = clis.Node(context.Background(), []string{"PATH=/usr/local/bin:/usr/bin:/bin"}); err != nil {
			tb.Fatal(err)
		}
	}
	return in.Binary, node
}

// realWorld is one real agent's world: an acpWorld plus the scripted model serving
// one script per session.
type realWorld struct {
	*acpWorld
	model   *scriptedmodel.RunSet
	running *scriptedmodel.Running
	cfg     map[string]any
}

// newRealWorld starts the scripted model with scripts (YAML, rendered with the
// workspace path as {{ws}} and the nonce) and returns the world.
func newRealWorld(tb testing.TB, ra realACPAgent, nonce string, scripts ...string) *realWorld {
	tb.Helper()
	return newRealWorldWith(tb, ra, func(ws string) []*scriptedmodel.Script {
		var parsed []*scriptedmodel.Script
		for i, src := range scripts {
			sc, err := scriptedmodel.ParseScript(fmt.Sprintf("session %d", i+1), []byte(src), map[string]string{"nonce": nonce, "ws": ws})
			if err != nil {
				tb.Fatal(err)
			}
			parsed = append(parsed, sc)
		}
		return parsed
	})
}

// newRealWorldWith is newRealWorld with the scripts made for the workspace by scripts.
func newRealWorldWith(tb testing.TB, ra realACPAgent, scripts func(workspace string) []*scriptedmodel.Script) *realWorld {
	tb.Helper()
	cfg := realACPConfig(tb, ra)
	root := tb.TempDir()
	w := &acpWorld{root: root, workspace: filepath.Join(root, "workspace"), stateDir: filepath.Join(root, "state")}
	for _, d := range []string{w.workspace, w.stateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	rs, running := serveScripts(tb, scripts(w.workspace))
	cfg["modelBaseUrl"] = running.URL
	return &realWorld{acpWorld: w, model: rs, running: running, cfg: cfg}
}

func (w *realWorld) session(tb testing.TB, ra realACPAgent, d session.PermissionDecider) *session.Session {
	tb.Helper()
	drv, err := newACP(ra.driver, w.cfg)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := drv.Start(context.Background(), agent.SessionEnv{Run: w.run("run-1"), Permissions: d})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// modelFailures lists the scripted model's refusals (a request that did not fit).
func (w *realWorld) modelFailures() []string {
	var out []string
	for _, e := range w.model.Requests() {
		if e.Status != 200 {
			out = append(out, fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Error))
		}
	}
	return out
}

const (
	// approveScript: write with the native tool, call finish_task through the agentproof
	// MCP server (the stub in the test binary), answer.
	approveScript = `steps:
  - call: write_file
    args: {path: "{{ws}}/proof.txt", content: "proof-{{nonce}}"}
  - call: finish_task
    args: {summary: "wrote {{nonce}}"}
  - answer: "DONE_{{nonce}}"
`
	denyScript = `steps:
  - call: write_file
    args: {path: "{{ws}}/proof.txt", content: "proof-{{nonce}}"}
  - answer: "The write was denied, so proof.txt was not written ({{nonce}})."
`
	realPrompt = "Do what the task asks."
)

// writePermission returns the turn's permission request for the write of file (by its
// location, or the title/raw input naming it: Codex asks for the shell command).
func writePermission(res session.TurnResult, file string) (session.PermissionRecord, bool) {
	for _, p := range res.Permissions {
		if slices.ContainsFunc(p.Request.Locations, func(l string) bool { return strings.HasSuffix(l, file) }) ||
			strings.Contains(p.Request.Title, file) || strings.Contains(string(p.Request.RawInput), file) {
			return p, true
		}
	}
	return session.PermissionRecord{}, false
}

func TestRealACPAgents(t *testing.T) {
	t.Parallel()
	for _, ra := range realACPAgents {
		t.Run(strings.TrimPrefix(ra.driver, "acp:"), func(t *testing.T) {
			t.Parallel()
			for name, f := range map[string]func(*testing.T, realACPAgent){
				"approve-write": testRealApprove, "deny-write": testRealDeny,
				"stop-while-pending": testRealStop, "warm-three-turns": testRealWarm,
			} {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					f(t, ra)
				})
			}
		})
	}
}

func testRealApprove(t *testing.T, ra realACPAgent) {
	const nonce = "rap1"
	w := newRealWorld(t, ra, nonce, approveScript)
	s := w.session(t, ra, session.Approve)
	start := time.Now()
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)", err, w.modelFailures())
	}
	t.Logf("%s: turn %v, session start→end %v", ra.driver, time.Since(start), res.DurationMS)
	if got, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); !ok || got != "proof-"+nonce {
		t.Errorf("proof.txt = %q (exists %v), want the exact bytes", got, ok)
	}
	p, ok := writePermission(res, "proof.txt")
	if !ok || p.By != session.AnsweredByDecider || p.Decision.Cancelled {
		t.Errorf("no approved permission request for the write: %+v", res.Permissions)
	}
	if res.StopReason != "end_turn" || !strings.Contains(res.Message, "DONE_"+nonce) {
		t.Errorf("stop %q message %q", res.StopReason, res.Message)
	}
	calls := readMCPCalls(w.stateDir)
	if len(calls) != 1 || calls[0].Tool != "finish_task" || calls[0].Args["summary"] != "wrote "+nonce || calls[0].RunID != "run-1" || !calls[0].TokenSet {
		t.Errorf("MCP calls = %+v, want finish_task through the session/new server with the run's identity", calls)
	}
	if f := w.modelFailures(); len(f) > 0 {
		t.Errorf("scripted model refused: %v", f)
	}
}

func testRealDeny(t *testing.T, ra realACPAgent) {
	const nonce = "rdn1"
	w := newRealWorld(t, ra, nonce, denyScript)
	s := w.session(t, ra, session.Decline)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)", err, w.modelFailures())
	}
	if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
		t.Error("proof.txt exists although the write was declined")
	}
	p, ok := writePermission(res, "proof.txt")
	if !ok || p.Decision.Cancelled || p.Decision.OptionID == "" {
		t.Errorf("no declined permission request for the write: %+v", res.Permissions)
	}
	if res.StopReason != ra.denyStop {
		t.Errorf("stop reason %q, want %q", res.StopReason, ra.denyStop)
	}
	if ra.denyMessages && !strings.Contains(res.Message, "denied") {
		t.Errorf("message %q does not say the write was denied", res.Message)
	}
}

func testRealStop(t *testing.T, ra realACPAgent) {
	const nonce = "rst1"
	w := newRealWorld(t, ra, nonce, denyScript)
	hold := session.NewHoldDecider(1)
	s := w.session(t, ra, hold)
	wait := 3 * time.Minute
	if ra.slow {
		wait = 10 * time.Minute
	}
	go func() {
		select {
		case <-hold.Pending:
			_ = s.Cancel("Stop")
		case <-time.After(wait):
		}
	}()
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)", err, w.modelFailures())
	}
	if res.StopReason != "cancelled" || !res.CancelHonoured || len(res.ProtocolViolations) > 0 {
		t.Errorf("stop %q honoured %v violations %v, want cancelled", res.StopReason, res.CancelHonoured, res.ProtocolViolations)
	}
	p, ok := writePermission(res, "proof.txt")
	if !ok || p.By != session.AnsweredByCancel {
		t.Errorf("permissions %+v, want the write's request answered cancelled by the Stop", res.Permissions)
	}
	// The file must never appear, also not after the turn: wait a moment, then look.
	time.Sleep(500 * time.Millisecond)
	if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
		t.Error("proof.txt exists after Stop while its permission was pending")
	}
}

// testRealWarm plays the three-turn reference script (write, append with the shell,
// rewrite and finish) as one warm session whose model script scriptedmodel.ForACP
// derived from it, as the executor will.
func testRealWarm(t *testing.T, ra realACPAgent) {
	const nonce = "rwm1"
	w := newRealWorldWith(t, ra, func(ws string) []*scriptedmodel.Script {
		sc, err := scriptedmodel.ForACP(threeTurnScript(nonce), ws, true)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	})
	s := w.session(t, ra, session.Approve)
	want := []string{"one-" + nonce, "one-" + nonce + "+two-" + nonce, "three-" + nonce}
	messages := []string{scriptedmodel.DefaultFinalAnswer, scriptedmodel.DefaultFinalAnswer, "three turns " + nonce}
	var ids []session.ProcessIdentity
	for i := range 3 {
		res, err := s.Prompt(context.Background(), session.Turn{RunID: fmt.Sprintf("run-%d", i+1), Text: realPrompt})
		if err != nil {
			t.Fatalf("turn %d: %v (model: %v)", i+1, err, w.modelFailures())
		}
		if got, _ := readFile(t, filepath.Join(w.workspace, "log.txt")); got != want[i] {
			t.Errorf("after turn %d log.txt = %q, want %q", i+1, got, want[i])
		}
		if !strings.Contains(res.Message, messages[i]) || res.StopReason != "end_turn" {
			t.Errorf("turn %d: stop %q message %q", i+1, res.StopReason, res.Message)
		}
		ids = append(ids, res.Process)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("process identities %v, want one agent process for the three turns", ids)
	}
	if calls := readMCPCalls(w.stateDir); len(calls) != 1 || calls[0].Tool != "finish_task" {
		t.Errorf("MCP calls = %+v, want the third turn's finish_task", calls)
	}
}

// BenchmarkACPWriteSession measures one whole write-with-permission session per real
// ACP agent (start, initialize, session/new, one prompt with an approved native write,
// teardown): ms/op is the wall time; agent-cpu-ms/op the CPU time of the agent process
// tree (ProcessExit.TreeCPUMS, or the reaped total when larger), harness-cpu-ms/op that of this process (driver, scripted model, test), and
// harness-cpu-share their ratio.
func BenchmarkACPWriteSession(b *testing.B) {
	for _, ra := range append([]realACPAgent{{driver: "acp:reference"}}, realACPAgents...) {
		b.Run(strings.TrimPrefix(ra.driver, "acp:"), func(b *testing.B) {
			var agentCPU, selfCPU time.Duration
			for i := 0; b.Loop(); i++ {
				nonce := fmt.Sprintf("bn%d", i)
				before := selfRusage()
				var s *session.Session
				var w *acpWorld
				if ra.cli == "" {
					w = newACPWorld(b, nonce, writeScript(nonce))
					d, _ := newACP(ra.driver, nil)
					var err error
					if s, err = d.Start(context.Background(), agent.SessionEnv{Run: w.run("run-1"), Permissions: session.Approve}); err != nil {
						b.Fatal(err)
					}
				} else {
					rw := newRealWorld(b, ra, nonce, approveScript)
					w = rw.acpWorld
					d, _ := newACP(ra.driver, rw.cfg)
					var err error
					if s, err = d.Start(context.Background(), agent.SessionEnv{Run: w.run("run-1"), Permissions: session.Approve}); err != nil {
						b.Fatal(err)
					}
				}
				_, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
				exit := s.Close()
				selfCPU += selfRusage() - before
				agentCPU += time.Duration(max(exit.TreeCPUMS, exit.UserCPUMS+exit.SystemCPUMS)) * time.Millisecond
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := readFile(b, filepath.Join(w.workspace, "proof.txt")); !ok {
					b.Fatal("no proof.txt")
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(agentCPU.Milliseconds())/n, "agent-cpu-ms/op")
			b.ReportMetric(float64(selfCPU.Milliseconds())/n, "harness-cpu-ms/op")
			if total := agentCPU + selfCPU; total > 0 {
				b.ReportMetric(float64(selfCPU)/float64(total), "harness-cpu-share")
			}
		})
	}
}

// selfRusage is this process's CPU time so far (user + system).
func selfRusage() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package agent_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
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

// The pinned Codex through its app-server (app:codex, docs/clis.md), offline against
// the scripted model: the native boundaries (an approved and a declined file change, a
// declined command, Stop while an approval is pending, three warm turns in one
// process) and the pinned CLI's own protocol schema. They need the pinned codex in the
// agent cache: in CI a missing package fails, elsewhere it is skipped.

var updateCodexSchema = flag.Bool("update-codex-schema", false, "rewrite testdata/codex-app-server from the pinned Codex")

// codexBinary locates the pinned codex or skips/fails.
func codexBinary(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("-short: Codex is a real agent CLI (seconds of CPU per session); the full test command runs it")
	}
	c, _ := clis.Lookup("codex")
	dir := os.Getenv("AGENTPROOF_AGENTS_DIR")
	if dir == "" {
		dir, _ = clis.DefaultDir()
	}
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	var ni *clis.NotInstalledError
	switch {
	case errors.As(err, &ni) && os.Getenv("CI") == "":
		tb.Skipf("codex is not installed: run `go run ./cmd/agentproof agents install codex` (or set AGENTPROOF_AGENTS_DIR); CI fails instead of skipping")
	case err != nil:
		tb.Fatalf("locating codex: %v", err)
	}
	return in.Binary
}

// TestCodexAppSchemaDrift generates the pinned Codex's app-server JSON Schema bundle
// (`codex app-server generate-json-schema`) and compares it with testdata, which the
// driver's wire is checked against (TestCodexAppWireMatchesSchema): a Codex release
// that changes its protocol fails here until the driver is reviewed and testdata
// regenerated (-update-codex-schema).
func TestCodexAppSchemaDrift(t *testing.T) {
	t.Parallel()
	bin := codexBinary(t)
	root := t.TempDir()
	out := filepath.Join(root, "schema")
	for _, d := range []string{"home", "codex-home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "app-server", "generate-json-schema", "--out", out)
	cmd.Env = []string{"HOME=" + filepath.Join(root, "home"), "CODEX_HOME=" + filepath.Join(root, "codex-home"), "TMPDIR=" + filepath.Join(root, "tmp"), "PATH=/usr/bin:/bin"}
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate-json-schema: %v\n%s", err, b)
	}
	const bundle = "codex_app_server_protocol.schemas.json"
	got, err := os.ReadFile(filepath.Join(out, bundle))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join("testdata", "codex-app-server", bundle)
	if *updateCodexSchema {
		if err := os.WriteFile(want, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b) {
		t.Errorf("the pinned Codex's app-server schema (%d bytes) differs from %s (%d bytes): review the driver against it, then go test -run TestCodexAppSchemaDrift -update-codex-schema ./agent/", len(got), want, len(b))
	}
}

// codexAppWorld is a world of the real app-server: the workspace, the scripted model
// serving the scripts made for the workspace, the driver's configuration.
type codexAppWorld struct {
	*acpWorld
	model *scriptedmodel.RunSet
	cfg   map[string]any
}

func newCodexAppWorld(t *testing.T, scripts func(workspace string) ([]*scriptedmodel.Script, error)) *codexAppWorld {
	t.Helper()
	cfg := map[string]any{"binary": codexBinary(t), "turnTimeoutMs": 180000, "cancelGraceMs": 15000}
	w := newACPWorld(t, "", nil)
	sc, err := scripts(w.workspace)
	if err != nil {
		t.Fatal(err)
	}
	rs, running := serveScripts(t, sc)
	cfg["modelBaseUrl"] = running.URL
	return &codexAppWorld{acpWorld: w, model: rs, cfg: cfg}
}

func (w *codexAppWorld) session(t *testing.T, d session.PermissionDecider) *session.Session {
	t.Helper()
	drv, err := agent.NewCodexApp(piDriverConfig(t, w.cfg))
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
func (w *codexAppWorld) refusals() []string {
	var out []string
	for _, e := range w.model.Requests() {
		if e.Status != 200 {
			out = append(out, fmt.Sprintf("%d %s", e.Status, e.Error))
		}
	}
	return out
}

// appendScript appends ran-<nonce> to ran.txt with the shell, then finishes.
func appendScript(nonce string) *script.Script {
	line := "ran-" + nonce + "\n"
	return &script.Script{Turns: []*script.Turn{{Trigger: "assignment", Steps: []*script.Step{
		{Edit: &script.Edit{Path: "ran.txt", Append: &line}}, finishStep("ran " + nonce),
	}}}}
}

func TestRealCodexApp(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(*testing.T){
		"approve-patch": testCodexAppApprove, "decline-patch": testCodexAppDecline, "decline-command": testCodexAppDeclineCommand,
		"stop-while-pending": testCodexAppStop, "warm-three-turns": testCodexAppWarm, "steer-while-pending": testCodexAppSteer,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t)
		})
	}
}

func testCodexAppApprove(t *testing.T) {
	const nonce = "cap1"
	w := newCodexAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForCodexApp(writeScript(nonce), ws, false)
	})
	s := w.session(t, session.Approve)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: acpToken, Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.refusals(), exitOf(s))
	}
	if got, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); got != "proof-"+nonce+"\n" {
		t.Errorf("proof.txt = %q (exists %v), want the patch's line", got, ok)
	}
	if len(res.Permissions) == 0 || res.Permissions[0].Request.Kind != "edit" || res.Permissions[0].Decision.OptionID != "accept" ||
		len(res.Permissions[0].Request.Locations) != 1 || !strings.HasSuffix(res.Permissions[0].Request.Locations[0], "/proof.txt") {
		t.Errorf("permissions %+v, want the file change accepted", res.Permissions)
	}
	// Codex asks before calling the stub's finish_task too (the stub annotates none of
	// its tools; agentproof's own server marks its tools non-destructive, and Codex
	// did not ask for them in the catalog's cells): its approval comes second.
	if len(res.Permissions) != 2 || res.Permissions[1].Request.Kind != "other" || !strings.Contains(res.Permissions[1].Request.Title, "finish_task") {
		t.Errorf("permissions %+v, want finish_task's approval after the write's", res.Permissions)
	}
	if res.StopReason != "completed" || res.Message != "Wrote proof.txt "+nonce {
		t.Errorf("stop %q message %q", res.StopReason, res.Message)
	}
	calls := readMCPCalls(w.stateDir)
	if len(calls) != 1 || calls[0].Tool != "finish_task" || calls[0].RunID != "run-1" || !calls[0].TokenSet {
		t.Errorf("MCP calls %+v, want finish_task acting for run-1 through the binding file", calls)
	}
	if len(res.Usage) == 0 {
		t.Error("no usage recorded")
	}
}

func testCodexAppDecline(t *testing.T) {
	const nonce = "cdn1"
	w := newCodexAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForCodexApp(writeScript(nonce), ws, false)
	})
	s := w.session(t, session.Decline)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.refusals(), exitOf(s))
	}
	if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
		t.Error("proof.txt written although the file change was declined")
	}
	if len(res.Permissions) == 0 || res.Permissions[0].Request.Kind != "edit" || res.Permissions[0].Decision.OptionID != "decline" {
		t.Errorf("permissions %+v, want the file change declined", res.Permissions)
	}
}

func testCodexAppDeclineCommand(t *testing.T) {
	const nonce = "ccm1"
	w := newCodexAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForCodexApp(appendScript(nonce), ws, false)
	})
	s := w.session(t, session.Decline)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.refusals(), exitOf(s))
	}
	if _, ok := readFile(t, filepath.Join(w.workspace, "ran.txt")); ok {
		t.Error("ran.txt exists: the declined command ran")
	}
	// Codex 0.171 offers no plain decline for a command: the human's no is its cancel,
	// which also interrupts the turn.
	if len(res.Permissions) == 0 || res.Permissions[0].Request.Kind != "execute" || res.Permissions[0].Decision.OptionID != "cancel" ||
		!strings.Contains(res.Permissions[0].Request.Command, "ran.txt") || res.StopReason != "interrupted" {
		t.Errorf("permissions %+v stop %q, want the command declined with cancel and the turn interrupted", res.Permissions, res.StopReason)
	}
}

func testCodexAppStop(t *testing.T) {
	const nonce = "cst1"
	w := newCodexAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForCodexApp(writeScript(nonce), ws, false)
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
	if res.StopReason != "interrupted" || !res.CancelHonoured || len(res.ProtocolViolations) > 0 {
		t.Errorf("stop %q honoured %v violations %v, want interrupted", res.StopReason, res.CancelHonoured, res.ProtocolViolations)
	}
	if len(res.Permissions) != 1 || res.Permissions[0].By != session.AnsweredByCancel {
		t.Errorf("permissions %+v, want the pending one cancelled by the Stop", res.Permissions)
	}
	time.Sleep(500 * time.Millisecond)
	if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
		t.Error("proof.txt written after Stop while its approval was pending")
	}
}

// testCodexAppSteer steers the turn while its file change awaits approval, then
// approves it: Codex accepts the steer (turn/steer), adds it to the conversation
// (delivered) and the model's next request carries it.
func testCodexAppSteer(t *testing.T) {
	const nonce = "csr1"
	w := newCodexAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) {
		return scriptedmodel.ForCodexApp(writeScript(nonce), ws, false)
	})
	pending, release := make(chan struct{}, 1), make(chan struct{})
	s := w.session(t, session.DeciderFunc(func(ctx context.Context, req session.PermissionRequest) (session.PermissionDecision, error) {
		pending <- struct{}{}
		<-release
		return session.PermissionDecision{OptionID: "accept"}, nil
	}))
	steer := "STEER-" + nonce
	go func() {
		select {
		case <-pending:
			if err := s.Steer(context.Background(), steer); err != nil {
				t.Errorf("Steer: %v", err)
			}
			close(release)
		case <-time.After(3 * time.Minute):
		}
	}()
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: realPrompt})
	if err != nil {
		t.Fatalf("%v (model: %v)%s", err, w.refusals(), exitOf(s))
	}
	if len(res.Steers) != 1 || !res.Steers[0].Accepted || !res.Steers[0].Delivered || res.StopReason != "completed" {
		t.Errorf("steers %+v stop %q, want one steer accepted and delivered", res.Steers, res.StopReason)
	}
	carried := false
	for _, e := range w.model.Requests() {
		carried = carried || bytes.Contains(e.Body, []byte(steer))
	}
	if !carried {
		t.Error("no model request carries the steering message")
	}
}

// testCodexAppWarm plays three turns, each appending a line with the shell (an
// approved command), in one session: one thread, one process.
func testCodexAppWarm(t *testing.T) {
	const nonce = "cwm1"
	ref := &script.Script{}
	for i := 1; i <= 3; i++ {
		line := fmt.Sprintf("T%d-%s\n", i, nonce)
		ref.Turns = append(ref.Turns, &script.Turn{Trigger: "follow_up", Steps: []*script.Step{{Edit: &script.Edit{Path: "warm.txt", Append: &line}}}})
	}
	w := newCodexAppWorld(t, func(ws string) ([]*scriptedmodel.Script, error) { return scriptedmodel.ForCodexApp(ref, ws, true) })
	s := w.session(t, session.Approve)
	var ids []session.ProcessIdentity
	want := ""
	for i := 1; i <= 3; i++ {
		res, err := s.Prompt(context.Background(), session.Turn{RunID: fmt.Sprintf("run-%d", i), Text: realPrompt})
		if err != nil {
			t.Fatalf("turn %d: %v (model: %v)%s", i, err, w.refusals(), exitOf(s))
		}
		want += fmt.Sprintf("T%d-%s\n", i, nonce)
		if got, _ := readFile(t, filepath.Join(w.workspace, "warm.txt")); got != want || res.StopReason != "completed" || res.Turn != i {
			t.Errorf("turn %d: warm.txt %q, stop %q", i, got, res.StopReason)
		}
		ids = append(ids, res.Process)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] || ids[0].PID == 0 {
		t.Errorf("process identities %v, want one process for the three turns", ids)
	}
}

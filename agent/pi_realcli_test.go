package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/agent/session"
)

// Pi over RPC, offline against the scripted model (docs/pi.md). It needs the pinned
// package in the agent cache ($AGENTPROOF_AGENTS_DIR, else the default cache): in CI a
// missing package fails the test, elsewhere it is skipped with the install command.

// piWorld is one Pi session's world: a workspace, a state directory, the scripted model
// (one script per session) and the driver configuration.
type piWorld struct {
	root, workspace, stateDir string
	model                     *scriptedmodel.RunSet
	cfg                       map[string]any
	log                       *lockedBuffer
}

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const piToken = "pi-run-token-0123456789abcdef"

// piConfig locates Pi and returns its driverConfig (binary, node) or skips/fails.
func piConfig(tb testing.TB) map[string]any {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: Pi is a real agent CLI (seconds to a minute of CPU per session); the full test command runs it")
	}
	c, ok := clis.Lookup("pi")
	if !ok {
		tb.Fatal("no pinned package pi")
	}
	dir := os.Getenv("AGENTPROOF_AGENTS_DIR")
	if dir == "" {
		dir, _ = clis.DefaultDir()
	}
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	var ni *clis.NotInstalledError
	switch {
	case errors.As(err, &ni) && os.Getenv("CI") == "":
		tb.Skipf("pi is not installed: run `go run ./cmd/agentproof agents install pi` (or set AGENTPROOF_AGENTS_DIR); CI fails instead of skipping")
	case err != nil:
		tb.Fatalf("locating pi: %v", err)
	}
	node, err := clis.Node(context.Background(), []string{"PATH=/usr/local/bin:/usr/bin:/bin"})
	if err != nil {
		tb.Fatal(err)
	}
	return map[string]any{"binary": in.Binary, "node": node, "turnTimeoutMs": 120000}
}

// newPiWorld starts the scripted model with scripts (YAML rendered with {{ws}} = the
// workspace and {{nonce}}).
func newPiWorld(tb testing.TB, nonce string, scripts ...string) *piWorld {
	tb.Helper()
	cfg := piConfig(tb)
	root := tb.TempDir()
	w := &piWorld{root: root, workspace: filepath.Join(root, "workspace"), stateDir: filepath.Join(root, "state"), cfg: cfg, log: &lockedBuffer{}}
	for _, d := range []string{w.workspace, w.stateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	var parsed []*scriptedmodel.Script
	for i, src := range scripts {
		sc, err := scriptedmodel.ParseScript(fmt.Sprintf("session %d", i+1), []byte(src), map[string]string{"nonce": nonce, "ws": w.workspace})
		if err != nil {
			tb.Fatal(err)
		}
		parsed = append(parsed, sc)
	}
	rs, running := serveScripts(tb, parsed)
	cfg["modelBaseUrl"] = running.URL
	w.model = rs
	return w
}

func (w *piWorld) run(runID string) agent.RunEnv {
	self, _ := os.Executable()
	return agent.RunEnv{Executable: self, Workspace: w.workspace, APIURL: "http://127.0.0.1:9/api/companies/c1",
		RunID: runID, RunToken: piToken, StateDir: w.stateDir}
}

// piTools are the stub MCP server's tools as the Pi extension registers them.
func piTools() []agent.PiTool {
	var out []agent.PiTool
	for _, n := range stubMCPTools {
		out = append(out, agent.PiTool{Name: n, Description: "stub " + n, InputSchema: map[string]any{"type": "object"}})
	}
	return out
}

func (w *piWorld) start(tb testing.TB, perm session.PermissionDecider, q session.QuestionDecider) *session.Session {
	tb.Helper()
	d, err := agent.NewPi(piDriverConfig(tb, w.cfg))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := d.Start(context.Background(), agent.SessionEnv{Run: w.run("run-1"), Permissions: perm, Questions: q, Tools: piTools(), Log: w.log})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// failures lists the scripted model's refusals.
func (w *piWorld) failures() []string {
	var out []string
	for _, e := range w.model.Requests() {
		if e.Status != 200 {
			out = append(out, fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Error))
		}
	}
	return out
}

// TestPiWarmTurnsAndSemanticTools: three prompts to one Pi process (same pid and start
// time each turn), a shell write in turn 1, a semantic tool through the extension's MCP
// bridge in turn 2 acting as turn 2's run, usage per turn, and no run token in the log.
func TestPiWarmTurnsAndSemanticTools(t *testing.T) {
	t.Parallel()
	w := newPiWorld(t, "w1", `steps:
  - call: shell
    args: {command: "printf T1 > {{ws}}/warm.txt"}
  - answer: "TURN1_{{nonce}}"
  - call: finish_task
    args: {summary: "turn two {{nonce}}"}
  - answer: "TURN2_{{nonce}}"
  - answer: "TURN3_{{nonce}}"
`)
	s := w.start(t, session.Approve, session.CancelQuestions)
	var ids []session.ProcessIdentity
	for i, run := range []string{"run-1", "run-2", "run-3"} {
		res, err := s.Prompt(context.Background(), session.Turn{RunID: run, RunToken: piToken, Text: "turn " + run})
		if err != nil {
			t.Fatalf("turn %d: %v (model: %v)", i+1, err, w.failures())
		}
		if want := fmt.Sprintf("TURN%d_w1", i+1); res.Message != want || res.StopReason != "stop" || res.Turn != i+1 || res.RunID != run {
			t.Errorf("turn %d: message %q stop %q turn %d run %s, want %q", i+1, res.Message, res.StopReason, res.Turn, res.RunID, want)
		}
		if len(res.Usage) == 0 || !strings.Contains(string(res.Usage), `"source":"pi rpc"`) {
			t.Errorf("turn %d: usage %s", i+1, res.Usage)
		}
		if len(res.UserMessages) != 1 || res.UserMessages[0] != "turn "+run {
			t.Errorf("turn %d: user messages %q", i+1, res.UserMessages)
		}
		ids = append(ids, res.Process)
	}
	if ids[0].PID == 0 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("process identities %v: want one process (same pid and start time) for every turn", ids)
	}
	if b, err := os.ReadFile(filepath.Join(w.workspace, "warm.txt")); err != nil || string(b) != "T1" {
		t.Errorf("warm.txt = %q, %v", b, err)
	}
	calls := readMCPCalls(w.stateDir)
	if len(calls) != 1 || calls[0].Tool != "finish_task" || calls[0].RunID != "run-2" || !calls[0].TokenSet || calls[0].Args["summary"] != "turn two w1" {
		t.Errorf("MCP calls = %+v, want turn 2's finish_task as run-2", calls)
	}
	exit := s.Close()
	if exit.ExitCode == nil && exit.Signal == "" {
		t.Errorf("exit not observed: %s", exit.Summary())
	}
	log := w.log.String()
	if strings.Contains(log, piToken) {
		t.Error("the session log holds the run token")
	}
	for _, want := range []string{`"schema":"agentproof.pi-rpc-log/v1"`, `"method":"agent_end"`, `"method":"tool_execution_start"`, `"event":"process_exit"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the session log lacks %s", want)
		}
	}
}

// steerScript holds the first call mid-stream; the answer comes from the steering
// message Pi delivers with the tool result.
const piSteerScript = `steps:
  - call: shell
    args: {command: "true"}
    hold_ms: 60000
  - answer_match: "STEERED_[A-Z0-9]+"
  - answer: "FOLLOWED_UP"
`

// promptAsync runs one prompt in the background.
func promptAsync(s *session.Session, text string) <-chan piOutcome {
	ch := make(chan piOutcome, 1)
	go func() {
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: piToken, Text: text})
		ch <- piOutcome{res, err}
	}()
	return ch
}

type piOutcome struct {
	res session.TurnResult
	err error
}

// waitHolding waits until the scripted model holds run n's step mid-call, and fails the
// test after 60 s.
func waitHolding(t *testing.T, rs *scriptedmodel.RunSet, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !rs.Holding(n) {
		if time.Now().After(deadline) {
			t.Fatalf("the scripted model did not hold run %d's call within 60 s", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// deliverWhileActive retries f until the turn has started (Steer and FollowUp refuse
// before it) and fails the test after 60 s.
func deliverWhileActive(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "no Pi turn is running") || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPiSteerSameTurn: while the model is held mid-tool-call, a steering message is
// delivered; the turn's final message is the steered marker, in the same turn (one
// agent_end, the steer a user message of that turn), and a follow-up queued meanwhile
// is answered in that turn too. Without the steer (calibration) the scripted model
// refuses and the turn fails.
func TestPiSteerSameTurn(t *testing.T) {
	t.Parallel()
	w := newPiWorld(t, "s1", piSteerScript, piSteerScript)
	s := w.start(t, session.Approve, session.CancelQuestions)
	out := promptAsync(s, "start working")
	// Steer mid-call: once the model holds the tool call (a steer accepted before Pi's
	// first model request would ride on that request instead).
	waitHolding(t, w.model, 1)
	deliverWhileActive(t, func() error { return s.Steer(context.Background(), "Change of plan: reply STEERED_7Q2 only.") })
	if err := s.FollowUp(context.Background(), "And one more thing."); err != nil {
		t.Fatal(err)
	}
	w.model.Release(1)
	o := <-out
	if o.err != nil {
		t.Fatalf("steered turn: %v (model: %v)", o.err, w.failures())
	}
	r := o.res
	if r.Message != "FOLLOWED_UP" || r.Events["agent_end"] != 1 || len(r.Steers) != 1 || !r.Steers[0].Accepted || !r.Steers[0].Delivered ||
		len(r.FollowUps) != 1 || !r.FollowUps[0].Delivered {
		t.Errorf("steered turn: message %q, agent_end %d, steers %+v, follow-ups %+v", r.Message, r.Events["agent_end"], r.Steers, r.FollowUps)
	}
	if len(r.UserMessages) != 3 || r.UserMessages[1] != "Change of plan: reply STEERED_7Q2 only." {
		t.Errorf("user messages of the turn: %q", r.UserMessages)
	}
	reqs := w.model.Requests()
	if len(reqs) < 3 || !strings.Contains(reqs[0].Reply, "held mid-call until released") {
		t.Errorf("model log: %+v", reqs)
	}
	found := false
	for _, q := range reqs {
		if q.Reply == "answer" && q.Step == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("no answer_match reply (step 2) in the model log")
	}

	// Calibration: the same script with no steer. Session 2 of the agent.
	s2 := w.start(t, session.Approve, session.CancelQuestions)
	out2 := promptAsync(s2, "start working")
	time.Sleep(200 * time.Millisecond)
	w.model.Release(2)
	o2 := <-out2
	var te *session.TurnError
	if !errors.As(o2.err, &te) || te.Failure != session.TurnAgentError || !strings.Contains(o2.res.ErrorMessage, "no steering message arrived") {
		t.Fatalf("unsteered turn: %v, error message %q; want agent_error from the script's refusal", o2.err, o2.res.ErrorMessage)
	}
}

// writeScript writes a file with Pi's write tool (gated), then answers.
const piWriteScript = `steps:
  - call: write_file
    args: {path: "{{ws}}/proof.txt", content: "proof-{{nonce}}"}
  - answer: "DONE_{{nonce}}"
`

// TestPiPermissionGate: the extension asks before Pi's write tool runs; approved, the
// file has the exact bytes; declined, it never appears and the tool call failed; Stop
// while the request is pending ends the turn aborted with the request answered by the
// cancel and no file.
func TestPiPermissionGate(t *testing.T) {
	t.Parallel()
	w := newPiWorld(t, "p1", piWriteScript, piWriteScript, piWriteScript)
	proof := filepath.Join(w.workspace, "proof.txt")

	s := w.start(t, session.Approve, session.CancelQuestions)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: piToken, Text: "write it"})
	if err != nil {
		t.Fatalf("approve: %v (%v)", err, w.failures())
	}
	if b, err := os.ReadFile(proof); err != nil || string(b) != "proof-p1" {
		t.Fatalf("approved write: %q, %v", b, err)
	}
	if len(res.Permissions) != 1 || res.Permissions[0].By != session.AnsweredByDecider || res.Permissions[0].Request.ToolCallID == "" ||
		len(res.Permissions[0].Request.Locations) != 1 || res.Permissions[0].Request.Locations[0] != proof || res.Message != "DONE_p1" {
		t.Errorf("approve: permissions %+v message %q", res.Permissions, res.Message)
	}
	s.Close()
	if err := os.Remove(proof); err != nil {
		t.Fatal(err)
	}

	s2 := w.start(t, session.Decline, session.CancelQuestions)
	res, err = s2.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: piToken, Text: "write it"})
	if err != nil {
		t.Fatalf("decline: %v (%v)", err, w.failures())
	}
	if _, err := os.Stat(proof); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("declined write: the file exists (%v)", err)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Status != "failed" || res.ToolCalls[0].Kind != "write" || len(res.Permissions) != 1 ||
		res.Permissions[0].Decision.OptionID != "reject" {
		t.Errorf("decline: tool calls %+v permissions %+v", res.ToolCalls, res.Permissions)
	}
	s2.Close()

	hold := session.NewHoldDecider(1)
	s3 := w.start(t, hold, session.CancelQuestions)
	out := promptAsync(s3, "write it")
	select {
	case <-hold.Pending:
	case <-time.After(60 * time.Second):
		t.Fatal("no permission request")
	}
	if err := s3.Cancel("Stop"); err != nil {
		t.Fatal(err)
	}
	o := <-out
	if o.err != nil {
		t.Fatalf("stop: %v", o.err)
	}
	if !o.res.CancelRequested || !o.res.CancelHonoured || o.res.StopReason != "aborted" || len(o.res.Permissions) != 1 ||
		o.res.Permissions[0].By != session.AnsweredByCancel || !o.res.Permissions[0].Decision.Cancelled {
		t.Errorf("stop while pending: %+v", o.res)
	}
	if _, err := os.Stat(proof); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stopped write: the file exists (%v)", err)
	}
	if err := s3.Cancel("again"); err == nil {
		t.Error("Cancel with no turn running succeeded")
	}
}

// questionScript asks with each dialog, then answers with the editor's text.
const piQuestionScript = `steps:
  - call: ask_user
    args: {kind: select, title: "Pick a colour", options: [Cobalt, Amber]}
  - call: ask_user
    args: {kind: confirm, title: "Proceed?", message: "The change is final."}
  - call: ask_user
    args: {kind: input, title: "Ticket id", placeholder: "T-…"}
  - call: ask_user
    args: {kind: editor, title: "Release note", prefill: "draft"}
    expect: "ANSWER_INPUT_"
  - answer_match: "ANSWER_EDITOR_[A-Z0-9]+"
`

// TestPiNativeQuestions: Pi's select, confirm, input and editor dialogs reach the
// question decider with what they carry, and the answers reach the model in the same
// turn; a negative confirmation reaches the model as confirmed false (Pi cannot tell it
// from a dismissal); Stop while a question is pending ends the turn aborted.
func TestPiNativeQuestions(t *testing.T) {
	t.Parallel()
	w := newPiWorld(t, "q1", piQuestionScript, piQuestionScript)
	var mu sync.Mutex
	var asked []session.QuestionRequest
	answers := map[string]session.QuestionAnswer{
		session.QuestionSelect:  {Value: "Cobalt"},
		session.QuestionConfirm: {Confirmed: false},
		session.QuestionInput:   {Value: "ANSWER_INPUT_9X"},
		session.QuestionEditor:  {Value: "ANSWER_EDITOR_Z7"},
	}
	q := session.QuestionFunc(func(_ context.Context, r session.QuestionRequest) (session.QuestionAnswer, error) {
		mu.Lock()
		asked = append(asked, r)
		mu.Unlock()
		return answers[r.Method], nil
	})
	s := w.start(t, session.Approve, q)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: piToken, Text: "ask me"})
	if err != nil {
		t.Fatalf("questions: %v (%v)", err, w.failures())
	}
	if res.Message != "ANSWER_EDITOR_Z7" {
		t.Errorf("final message %q", res.Message)
	}
	mu.Lock()
	got := append([]session.QuestionRequest(nil), asked...)
	mu.Unlock()
	if len(got) != 4 || got[0].Method != "select" || strings.Join(got[0].Options, ",") != "Cobalt,Amber" || got[1].Method != "confirm" ||
		got[1].Message != "The change is final." || got[2].Placeholder != "T-…" || got[3].Prefill != "draft" || got[0].RunID != "run-1" {
		t.Errorf("asked %+v", got)
	}
	if len(res.Questions) != 4 || res.Questions[1].Answer.Confirmed || res.Questions[1].By != session.AnsweredByDecider {
		t.Errorf("question records %+v", res.Questions)
	}
	// The model saw the negative confirmation as confirmed:false.
	var sawConfirm bool
	for _, e := range w.model.Requests() {
		if e.Step == 3 && strings.Contains(string(e.Body), `\"confirmed\":false`) {
			sawConfirm = true
		}
	}
	if !sawConfirm {
		t.Error("the model never saw the negative confirmation")
	}

	hold := session.NewHoldQuestions(1)
	s2 := w.start(t, session.Approve, hold)
	out := promptAsync(s2, "ask me")
	select {
	case r := <-hold.Pending:
		if r.Method != "select" {
			t.Errorf("first pending question %+v", r)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no question")
	}
	if err := s2.Cancel("Stop"); err != nil {
		t.Fatal(err)
	}
	o := <-out
	if o.err != nil || !o.res.CancelHonoured || len(o.res.Questions) != 1 || o.res.Questions[0].By != session.AnsweredByCancel {
		t.Fatalf("stop while a question is pending: %v %+v", o.err, o.res)
	}
	b, _ := json.Marshal(o.res)
	if !strings.Contains(string(b), `"stopReason":"aborted"`) {
		t.Errorf("result %s", b)
	}
}

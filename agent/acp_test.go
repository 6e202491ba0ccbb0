package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/acpagent"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/catalog"
)

const acpToken = "run-token-acp-0123456789abcdef"

// acpWorld is one agent's state directory and workspace for ACP sessions.
type acpWorld struct {
	root, workspace, stateDir string
	config                    []byte
}

func newACPWorld(t testing.TB, nonce string, ref *catalog.ReferenceScript) *acpWorld {
	t.Helper()
	root := t.TempDir()
	w := &acpWorld{root: root, workspace: filepath.Join(root, "workspace"), stateDir: filepath.Join(root, "state")}
	for _, d := range []string{w.workspace, w.stateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if ref != nil {
		b, err := json.Marshal(agent.BuiltinConfig{Schema: agent.BuiltinConfigSchema, Nonce: nonce, Reference: ref})
		if err != nil {
			t.Fatal(err)
		}
		w.config = b
	}
	return w
}

func (w *acpWorld) run(runID string) agent.RunEnv {
	self, _ := os.Executable()
	return agent.RunEnv{Executable: self, Workspace: w.workspace, APIURL: "http://127.0.0.1:9/api/companies/c1",
		RunID: runID, RunToken: acpToken, StateDir: w.stateDir, AdapterConfig: w.config}
}

// start opens a session of driver in w with decider; the log goes to a buffer the
// test can read after Close.
func (w *acpWorld) start(t *testing.T, driver string, cfg map[string]any, decider session.PermissionDecider, secrets map[string]string) (*session.Session, *bytes.Buffer) {
	t.Helper()
	d, err := newACP(driver, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	env := w.run("run-1")
	env.Secrets = secrets
	s, err := d.Start(context.Background(), agent.SessionEnv{Run: env, Permissions: decider, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &log
}

func writeStep(path, content string) *catalog.ReferenceStep {
	return &catalog.ReferenceStep{Edit: &catalog.WorkspaceEdit{Path: path, Write: &content}}
}

func finishStep(summary string) *catalog.ReferenceStep {
	return &catalog.ReferenceStep{Command: "finish_task", Args: map[string]any{"summary": summary}, Present: true}
}

// writeScript is the reference script of the permission cases: write proof.txt with
// the native tool, then finish presenting the summary.
func writeScript(nonce string) *catalog.ReferenceScript {
	return &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
		writeStep("proof.txt", "proof-"+nonce), finishStep("Wrote proof.txt " + nonce),
	}}}}
}

func readFile(t testing.TB, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func logEntries(t *testing.T, b []byte) []session.LogEntry {
	t.Helper()
	var out []session.LogEntry
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var e session.LogEntry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("log line is not an ACPLogEntry: %v: %s", err, line)
		}
		out = append(out, e)
	}
	return out
}

func TestACPReferenceApprovedWrite(t *testing.T) {
	t.Parallel()
	const nonce = "ap1x"
	w := newACPWorld(t, nonce, writeScript(nonce))
	s, log := w.start(t, "acp:reference", nil, session.Approve, nil)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "write the proof"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" || res.Message != "Wrote proof.txt "+nonce {
		t.Errorf("stop %q message %q, want end_turn and the presented summary", res.StopReason, res.Message)
	}
	if got, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); !ok || got != "proof-"+nonce {
		t.Errorf("proof.txt = %q (exists %v), want the exact bytes proof-%s", got, ok, nonce)
	}
	if len(res.Permissions) != 1 {
		t.Fatalf("permissions = %+v, want one", res.Permissions)
	}
	p := res.Permissions[0]
	if p.By != session.AnsweredByDecider || p.Decision.OptionID != acpagent.OptionAllow || p.Request.Kind != "edit" ||
		!slices.Equal(p.Request.Locations, []string{filepath.Join(w.workspace, "proof.txt")}) || p.Request.RunID != "run-1" {
		t.Errorf("permission record = %+v", p)
	}
	kinds := map[string]string{}
	for _, tc := range res.ToolCalls {
		kinds[tc.Kind] = tc.Status
	}
	if kinds["edit"] != "completed" || kinds["other"] != "completed" || len(res.Plan) != 2 {
		t.Errorf("tool calls %+v plan %+v, want a completed edit, a completed MCP call and a 2-entry plan", res.ToolCalls, res.Plan)
	}
	calls := readMCPCalls(w.stateDir)
	if len(calls) != 1 || calls[0].Tool != "finish_task" || calls[0].Args["summary"] != "Wrote proof.txt "+nonce || calls[0].RunID != "run-1" || !calls[0].TokenSet {
		t.Errorf("MCP calls = %+v, want finish_task through the session/new server with the run's identity", calls)
	}
	if res.Process.PID <= 0 || res.Process.StartTime == 0 || res.Turn != 1 || res.SessionID == "" {
		t.Errorf("turn identity = %+v", res)
	}
	exit := s.Close()
	if exit.ExitCode == nil || *exit.ExitCode != 0 {
		t.Errorf("agent exit = %s\nstderr:\n%s", exit.Summary(), exit.Stderr)
	}
	if bytes.Contains(log.Bytes(), []byte(acpToken)) {
		t.Error("the session log contains the run token")
	}
	updates := map[string]int{}
	for _, e := range logEntries(t, log.Bytes()) {
		if e.Method == "session/update" {
			updates[e.Update]++
		}
	}
	for _, k := range []string{"plan", "tool_call", "tool_call_update", "agent_message_chunk"} {
		if updates[k] == 0 || updates[k] != res.Events[k] {
			t.Errorf("update %s: %d in the log, %d in the turn; want the same, > 0", k, updates[k], res.Events[k])
		}
	}
	if len(res.Log) == 0 || !bytes.Contains(res.Log, []byte(`"update":"tool_call"`)) {
		t.Errorf("turn log = %s", res.Log)
	}
}

func TestACPReferenceDeniedWrite(t *testing.T) {
	t.Parallel()
	const nonce = "dn1x"
	w := newACPWorld(t, nonce, writeScript(nonce))
	s, _ := w.start(t, "acp:reference", nil, session.Decline, nil)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "write the proof"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
		t.Error("proof.txt exists although the write was declined")
	}
	if res.StopReason != "end_turn" || !strings.Contains(res.Message, "denied") {
		t.Errorf("stop %q message %q, want end_turn and a message saying the write was denied", res.StopReason, res.Message)
	}
	if len(res.Permissions) != 1 || res.Permissions[0].Decision.OptionID != acpagent.OptionReject {
		t.Errorf("permissions = %+v, want one answered reject", res.Permissions)
	}
}

func TestACPStopWhilePermissionPending(t *testing.T) {
	t.Parallel()
	const nonce = "st1x"
	w := newACPWorld(t, nonce, writeScript(nonce))
	hold := session.NewHoldDecider(1)
	s, log := w.start(t, "acp:reference", nil, hold, nil)
	go func() {
		<-hold.Pending
		if err := s.Cancel("the human pressed Stop"); err != nil {
			t.Errorf("cancel: %v", err)
		}
	}()
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "write the proof"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "cancelled" || !res.CancelRequested || !res.CancelHonoured || len(res.ProtocolViolations) > 0 {
		t.Errorf("turn = stop %q requested %v honoured %v violations %v, want cancelled", res.StopReason, res.CancelRequested, res.CancelHonoured, res.ProtocolViolations)
	}
	if len(res.Permissions) != 1 || res.Permissions[0].By != session.AnsweredByCancel || !res.Permissions[0].Decision.Cancelled {
		t.Errorf("permissions = %+v, want the pending one answered cancelled by the cancel", res.Permissions)
	}
	if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
		t.Error("proof.txt exists after Stop while its permission was pending")
	}
	if calls := readMCPCalls(w.stateDir); len(calls) != 0 {
		t.Errorf("MCP calls after Stop = %+v, want none", calls)
	}
	if err := s.Cancel("again"); err == nil {
		t.Error("Cancel with no turn running succeeded")
	}
	s.Close()
	// The wire order: session/cancel goes out before the cancelled answer.
	var order []string
	for _, e := range logEntries(t, log.Bytes()) {
		if e.Method == "session/cancel" {
			order = append(order, "cancel")
		}
		if e.Dir == session.DirClient && e.Method == "" && bytes.Contains(e.Message, []byte(`"outcome":"cancelled"`)) {
			order = append(order, "answer")
		}
	}
	if !slices.Equal(order, []string{"cancel", "answer"}) {
		t.Errorf("wire order = %v, want session/cancel then the cancelled answer", order)
	}
}

// threeTurnScript writes log.txt in turn 1, appends in turn 2, rewrites in turn 3.
func threeTurnScript(nonce string) *catalog.ReferenceScript {
	two := "+two-" + nonce
	return &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{
		{Trigger: "assignment", Steps: []*catalog.ReferenceStep{writeStep("log.txt", "one-"+nonce)}},
		{Trigger: "follow_up", Steps: []*catalog.ReferenceStep{{Edit: &catalog.WorkspaceEdit{Path: "log.txt", Append: &two}}}},
		{Trigger: "follow_up", Steps: []*catalog.ReferenceStep{writeStep("log.txt", "three-"+nonce), finishStep("three turns " + nonce)}},
	}}
}

func TestACPWarmThreeTurnsOneProcess(t *testing.T) {
	t.Parallel()
	const nonce = "wm3x"
	w := newACPWorld(t, nonce, threeTurnScript(nonce))
	s, _ := w.start(t, "acp:reference", nil, session.Approve, nil)
	want := []string{"one-" + nonce, "one-" + nonce + "+two-" + nonce, "three-" + nonce}
	var ids []session.ProcessIdentity
	for i := range 3 {
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-" + string(rune('1'+i)), Text: "next"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Turn != i+1 || res.StopReason != "end_turn" {
			t.Errorf("turn %d: %+v", i+1, res)
		}
		if got, _ := readFile(t, filepath.Join(w.workspace, "log.txt")); got != want[i] {
			t.Errorf("after turn %d log.txt = %q, want %q", i+1, got, want[i])
		}
		ids = append(ids, res.Process)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] || ids[0].PID == 0 {
		t.Errorf("process identities %v, want one process for the three turns", ids)
	}
	if st, err := session.ProcStartTime(ids[0].PID); err != nil || st != ids[0].StartTime {
		t.Errorf("/proc start time %d (%v), recorded %d", st, err, ids[0].StartTime)
	}
}

// TestACPPerTurnSessionsDifferInProcess is the contrast of the warm test: one session
// (process) per turn plays the script's turns in order (the agent's turn count
// persists), each in its own process, so a same-process oracle would fail.
func TestACPPerTurnSessionsDifferInProcess(t *testing.T) {
	t.Parallel()
	const nonce = "pt3x"
	w := newACPWorld(t, nonce, threeTurnScript(nonce))
	d, err := newACP("acp:reference", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []session.ProcessIdentity
	for i := range 3 {
		s, err := d.Start(context.Background(), agent.SessionEnv{Run: w.run("run-x"), Permissions: session.Approve})
		if err != nil {
			t.Fatal(err)
		}
		if s.Index != i+1 {
			t.Errorf("session index %d, want %d", s.Index, i+1)
		}
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-x", Text: "next"})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Process)
	}
	if got, _ := readFile(t, filepath.Join(w.workspace, "log.txt")); got != "three-"+nonce {
		t.Errorf("log.txt = %q after three per-turn sessions", got)
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Errorf("per-turn process identities %v repeat", ids)
	}
}

func TestACPNopDoesNothing(t *testing.T) {
	t.Parallel()
	w := newACPWorld(t, "", nil)
	s, _ := w.start(t, "acp:nop", nil, session.Approve, nil)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "write the proof"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Message != acpagent.NopMessage || len(res.Permissions)+len(res.ToolCalls)+len(res.Files) != 0 {
		t.Errorf("nop turn = %+v", res)
	}
	if entries, _ := os.ReadDir(w.workspace); len(entries) != 0 {
		t.Errorf("nop changed the workspace: %v", entries)
	}
}

func TestACPWrongIgnoresItsAnswers(t *testing.T) {
	t.Parallel()
	const nonce = "wr1x"
	t.Run("declined", func(t *testing.T) {
		t.Parallel()
		w := newACPWorld(t, nonce, writeScript(nonce))
		s, _ := w.start(t, "acp:wrong", nil, session.Decline, nil)
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "write"})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := readFile(t, filepath.Join(w.workspace, "proof.txt"))
		if !ok || strings.Contains(got, nonce) {
			t.Errorf("wrong agent: proof.txt = %q (exists %v), want written with a wrong nonce although declined", got, ok)
		}
		if res.Permissions[0].Decision.OptionID != acpagent.OptionReject {
			t.Errorf("permission = %+v", res.Permissions[0])
		}
	})
	t.Run("stopped", func(t *testing.T) {
		t.Parallel()
		w := newACPWorld(t, nonce, writeScript(nonce))
		hold := session.NewHoldDecider(1)
		s, _ := w.start(t, "acp:wrong", nil, hold, nil)
		go func() { <-hold.Pending; _ = s.Cancel("stop") }()
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "write"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); !ok {
			t.Error("the wrong agent did not write after Stop")
		}
		if res.StopReason != "cancelled" || res.EventsAfterCancel == 0 || !slices.ContainsFunc(res.ToolCalls, func(c session.ToolCallRecord) bool { return c.AfterCancel && c.Status == "completed" }) {
			t.Errorf("turn = stop %q, %d updates after cancel, tool calls %+v; want cancelled with a tool call completed after the cancel", res.StopReason, res.EventsAfterCancel, res.ToolCalls)
		}
	})
}

func TestACPMCPToolErrorFailsTheTurn(t *testing.T) {
	t.Parallel()
	ref := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
		{Command: "block_task", Args: map[string]any{"reason": "x", "fail": true}},
	}}}}
	w := newACPWorld(t, "er1x", ref)
	s, _ := w.start(t, "acp:reference", nil, session.Approve, nil)
	_, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	var te *session.TurnError
	if !errors.As(err, &te) || te.Failure != session.TurnAgentError || !strings.Contains(err.Error(), "board_input_invalid") {
		t.Errorf("err = %v, want an agent error naming the tool's refusal", err)
	}
}

// hostileSession starts the hostile ACP agent in mode (acp:opencode's command line
// with the test binary as its binary).
func hostileSession(t *testing.T, mode string, cfg map[string]any, decider session.PermissionDecider) (*session.Session, *acpWorld, *bytes.Buffer) {
	t.Helper()
	self, _ := os.Executable()
	c := map[string]any{"binary": self, "modelBaseUrl": "http://127.0.0.1:9"}
	for k, v := range cfg {
		c[k] = v
	}
	w := newACPWorld(t, "", nil)
	s, log := w.start(t, "acp:opencode", c, decider, map[string]string{"HOSTILE_MODE": mode})
	return s, w, log
}

func TestACPTurnTimeoutCancelsThenGivesUp(t *testing.T) {
	t.Parallel()
	s, _, _ := hostileSession(t, "hang", map[string]any{"turnTimeoutMs": 300, "cancelGraceMs": 300}, session.Approve)
	start := time.Now()
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	var te *session.TurnError
	if !errors.As(err, &te) || te.Failure != session.TurnTimedOut {
		t.Fatalf("err = %v, want a timed-out turn", err)
	}
	if !res.CancelRequested || time.Since(start) > time.Minute {
		t.Errorf("turn = %+v after %v, want session/cancel sent at the deadline", res, time.Since(start))
	}
	if _, err := s.Prompt(context.Background(), session.Turn{Text: "again"}); !errors.As(err, &te) || te.Failure != session.TurnMisuse {
		t.Errorf("a prompt on the stuck session: %v, want misuse", err)
	}
	if exit := s.Close(); exit.Error != "" {
		t.Errorf("exit = %s, want the process retired", exit.Summary())
	}
}

func TestACPAgentGone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode string
		cfg  map[string]any
		exit func(session.ProcessExit) bool
	}{
		{"exit", nil, func(e session.ProcessExit) bool { return e.ExitCode != nil && *e.ExitCode == 3 }},
		{"flood", map[string]any{"maxOutputBytes": 1 << 20}, func(e session.ProcessExit) bool { return e.OutputExceeded && e.Signal == "SIGKILL" }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			s, _, _ := hostileSession(t, tc.mode, tc.cfg, session.Approve)
			_, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
			var te *session.TurnError
			if !errors.As(err, &te) || te.Failure != session.TurnAgentGone {
				t.Errorf("err = %v, want agent_gone", err)
			}
			if exit := s.Close(); !tc.exit(exit) {
				t.Errorf("exit = %+v (%s)", exit, exit.Summary())
			}
		})
	}
}

func TestACPClientFileSystemIsConfined(t *testing.T) {
	t.Parallel()
	s, w, _ := hostileSession(t, "fs", nil, session.Approve)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	const want = "read-outside=false write-dotdot=false write-symlink=false write-relative=false write-inside=true read-inside=true missing-code=true read=line2"
	if res.Message != want {
		t.Errorf("agent saw %q\nwant      %q", res.Message, want)
	}
	for _, p := range []string{filepath.Join(w.root, "escape.txt"), filepath.Join(w.root, "outside", "via-link.txt")} {
		if _, ok := readFile(t, p); ok {
			t.Errorf("%s was written outside the workspace", p)
		}
	}
	if got, _ := readFile(t, filepath.Join(w.workspace, "sub", "ok.txt")); got != "line1\nline2\nline3\n" {
		t.Errorf("sub/ok.txt = %q", got)
	}
	var refused, done int
	for _, f := range res.Files {
		if f.Error != "" {
			refused++
		} else {
			done++
		}
	}
	if len(res.Files) != 7 || done != 2 || refused != 5 {
		t.Errorf("file records = %+v, want 7 (2 served, 5 refused)", res.Files)
	}
}

func TestACPProtocolViolationsAreRecorded(t *testing.T) {
	t.Parallel()
	t.Run("badproto", func(t *testing.T) {
		t.Parallel()
		s, _, log := hostileSession(t, "badproto", nil, session.Approve)
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.ProtocolViolations) != 2 || res.Message != "done" {
			t.Errorf("violations %q message %q, want another session's update and an unknown tool call", res.ProtocolViolations, res.Message)
		}
		s.Close()
		found := false
		for _, e := range logEntries(t, log.Bytes()) {
			found = found || (e.Dir == session.DirAgent && e.Text == "this line is not JSON-RPC")
		}
		if !found {
			t.Error("the non-JSON line is not in the session log")
		}
	})
	t.Run("ignore-cancel", func(t *testing.T) {
		t.Parallel()
		hold := session.NewHoldDecider(1)
		s, _, _ := hostileSession(t, "ignore-cancel", nil, hold)
		go func() { <-hold.Pending; _ = s.Cancel("stop") }()
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if res.CancelHonoured || len(res.ProtocolViolations) != 1 || !strings.Contains(res.ProtocolViolations[0], "end_turn") {
			t.Errorf("turn = honoured %v violations %q, want the end_turn after cancel flagged", res.CancelHonoured, res.ProtocolViolations)
		}
	})
}

func TestACPLogRedactsSecrets(t *testing.T) {
	t.Parallel()
	s, _, log := hostileSession(t, "echo-token", nil, session.Approve)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Message, acpToken) {
		t.Fatalf("the hostile agent did not echo the token: %q", res.Message)
	}
	exit := s.Close()
	if !bytes.Contains(exit.Stderr, []byte("stderr token [REDACTED]")) {
		t.Errorf("stderr = %q, want the echoed token redacted", exit.Stderr)
	}
	if bytes.Contains(log.Bytes(), []byte(acpToken)) || bytes.Contains(res.Log, []byte(acpToken)) {
		t.Error("the run token reached the session log or the turn evidence")
	}
	if !bytes.Contains(log.Bytes(), []byte("my token is [REDACTED]")) {
		t.Error("the echoed message is not in the log, redacted")
	}
}

func TestACPDecider(t *testing.T) {
	t.Parallel()
	req := session.PermissionRequest{Seq: 1, Options: []session.PermissionOption{{ID: "a", Kind: session.PermissionAllowAlways}, {ID: "r", Kind: session.PermissionRejectOnce}}}
	for _, tc := range []struct {
		d       session.PermissionDecider
		want    string
		wantErr bool
	}{
		{session.Approve, "a", false},
		{session.Decline, "r", false},
		{session.DecideByKind(session.PermissionAllowOnce), "", true},
	} {
		got, err := tc.d.Decide(context.Background(), req)
		if got.OptionID != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("decision %+v err %v, want %q (error %v)", got, err, tc.want, tc.wantErr)
		}
	}
}

// TestACPDeciderFaultsAreHarnessErrors: a decider that fails or picks an option not
// offered is agentproof's fault; the agent is told "cancelled".
func TestACPDeciderFaultsAreHarnessErrors(t *testing.T) {
	t.Parallel()
	for name, d := range map[string]session.PermissionDecider{
		"error": session.DeciderFunc(func(context.Context, session.PermissionRequest) (session.PermissionDecision, error) {
			return session.PermissionDecision{}, errors.New("board down")
		}),
		"not offered": session.DeciderFunc(func(context.Context, session.PermissionRequest) (session.PermissionDecision, error) {
			return session.PermissionDecision{OptionID: "yolo"}, nil
		}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const nonce = "hf1x"
			w := newACPWorld(t, nonce, writeScript(nonce))
			s, _ := w.start(t, "acp:reference", nil, d, nil)
			res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.HarnessErrors) != 1 || res.Permissions[0].By != session.AnsweredByError || res.StopReason != "cancelled" {
				t.Errorf("turn = %+v", res)
			}
			if _, ok := readFile(t, filepath.Join(w.workspace, "proof.txt")); ok {
				t.Error("proof.txt written although the permission was answered cancelled")
			}
		})
	}
}

func TestNewACPConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		driver string
		cfg    map[string]any
		want   string
	}{
		{"acp:nosuch", nil, `unknown driver "acp:nosuch"`},
		{"exec:codex", nil, "unknown ACP driver"},
		{"acp:reference", map[string]any{"binary": "/x"}, "driverConfig binary does not apply to driver acp:reference"},
		{"acp:nop", map[string]any{"resultGraceMs": 5}, "driverConfig resultGraceMs does not apply to driver acp:nop"},
		{"acp:codex", map[string]any{"cancelGraceMs": 0}, "cancelGraceMs 0 must be a positive"},
		{"acp:codex", map[string]any{"binary": "rel"}, "binary rel must be an absolute path"},
		{"acp:codex", map[string]any{"modelBaseUrl": "https://api.example.com"}, "must be a loopback http URL"},
		{"acp:opencode", map[string]any{"turnTimeoutMs": -1}, "turnTimeoutMs -1 must be a positive"},
		{"acp:opencode", map[string]any{"clientFs": "yes"}, "clientFs: a JSON string cannot be a bool"},
		{"acp:opencode", map[string]any{"clientFS": true}, `unknown key "clientFS"`},
		{"acp:opencode", map[string]any{"script": "bogus"}, "script bogus is not"},
	} {
		_, err := newACP(tc.driver, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewACP(%s, %v) = %v, want an error containing %q", tc.driver, tc.cfg, err, tc.want)
		}
	}
	d, err := newACP("acp:claude", map[string]any{"binary": "/opt/claude-agent-acp/dist/index.js", "modelBaseUrl": "http://127.0.0.1:5"})
	if err != nil {
		t.Fatal(err)
	}
	w := newACPWorld(t, "", nil)
	_, err = d.Start(context.Background(), agent.SessionEnv{Run: w.run("r"), Permissions: session.Approve})
	var se *session.StartError
	if !errors.As(err, &se) || se.Stage != "launch" || !strings.Contains(err.Error(), "driverConfig node") {
		t.Errorf("a JavaScript entry point without node: %v", err)
	}
}

func TestACPStartFailures(t *testing.T) {
	t.Parallel()
	w := newACPWorld(t, "", nil)
	d, _ := newACP("acp:reference", nil)
	_, err := d.Start(context.Background(), agent.SessionEnv{Run: w.run("r"), Permissions: session.Approve})
	var se *session.StartError
	if !errors.As(err, &se) || se.Stage != "launch" || !strings.Contains(err.Error(), "built-in agent configuration") {
		t.Errorf("reference without a configuration: %v", err)
	}
	// A program that is no ACP agent: it exits at once.
	d, _ = newACP("acp:gemini", map[string]any{"node": "/bin/true", "binary": "/nonexistent/gemini.js", "modelBaseUrl": "http://127.0.0.1:9", "startTimeoutMs": 20000})
	_, err = d.Start(context.Background(), agent.SessionEnv{Run: w.run("r"), Permissions: session.Approve})
	if !errors.As(err, &se) || se.Stage != "initialize" || se.Exit == nil || se.Exit.ExitCode == nil {
		t.Errorf("a non-ACP program: %v", err)
	}
}

// TestACPCloseKillsDescendants: a descendant that left the agent's process group
// (setsid) is found in the tree snapshot and killed at Close.
func TestACPCloseKillsDescendants(t *testing.T) {
	t.Parallel()
	s, w, _ := hostileSession(t, "orphan", nil, session.Approve)
	res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(res.Message)
	if err != nil {
		t.Fatalf("message %q is not a pid", res.Message)
	}
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		if _, ok := readFile(t, filepath.Join(w.workspace, "ticks")); ok {
			break
		}
	}
	exit := s.Close()
	if exit.Descendants < 1 {
		t.Errorf("exit = %s, want the setsid descendant killed", exit.Summary())
	}
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return // gone, or dead and waiting for its new parent to reap it
		}
	}
	t.Errorf("descendant %d still runs after Close", pid)
}

// TestACPCloseSweepsMarkedEscapers: a descendant born after the tree snapshot in its
// own session carries the session's marker and is found and killed by the sweep.
func TestACPCloseSweepsMarkedEscapers(t *testing.T) {
	t.Parallel()
	s, _, _ := hostileSession(t, "orphan-at-exit", nil, session.Approve)
	if _, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", Text: "go"}); err != nil {
		t.Fatal(err)
	}
	exit := s.Close()
	if len(exit.Escaped) != 1 || !exit.Escaped[0].Killed {
		t.Errorf("exit = %+v (%s), want one escaped descendant killed", exit.Escaped, exit.Summary())
	}
}

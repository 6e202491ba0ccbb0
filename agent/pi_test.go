package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
)

// fakePiPrefix starts the entry-script path that makes the test binary a fake Pi.
const fakePiPrefix = "/fake-pi/"

// fakePi is a Pi in RPC mode that misbehaves in one way (mode):
//
//	exit     accepts the prompt, starts the turn, then exits 3
//	noend    accepts the prompt and never ends the turn, ignoring abort
//	garbage  writes a line that is not JSON and an event for an unknown tool call, then
//	         ends the turn normally with the text "ok"
//	refuse   refuses every prompt (success false)
//	token    ends the turn with an assistant message echoing the run token it was given
//
// get_state and the /agentproof-run command are answered in every mode.
func fakePi(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	emit := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	token := ""
	assistant := func(text string) {
		emit(map[string]any{"type": "message_end", "message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
			"stopReason": "stop", "usage": map[string]any{"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0}}})
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var cmd struct {
			ID, Type, Message string
		}
		if json.Unmarshal(sc.Bytes(), &cmd) != nil {
			continue
		}
		ok := map[string]any{"id": cmd.ID, "type": "response", "command": cmd.Type, "success": true}
		switch {
		case cmd.Type == "get_state":
			ok["data"] = map[string]any{"sessionId": "fake-1", "model": map[string]any{"id": "scripted-model"}}
			emit(ok)
		case cmd.Type == "prompt" && strings.HasPrefix(cmd.Message, "/agentproof-run "):
			var id struct {
				RunToken string `json:"runToken"`
			}
			_ = json.Unmarshal([]byte(strings.TrimPrefix(cmd.Message, "/agentproof-run ")), &id)
			token = id.RunToken
			emit(ok)
		case cmd.Type == "prompt" && mode == "refuse":
			emit(map[string]any{"id": cmd.ID, "type": "response", "command": "prompt", "success": false, "error": "refused by the fake"})
		case cmd.Type == "prompt":
			emit(ok)
			emit(map[string]any{"type": "agent_start"})
			switch mode {
			case "exit":
				os.Exit(3)
			case "noend":
				// never ends the turn
			case "garbage":
				fmt.Fprintln(out, "this line is not JSON")
				out.Flush()
				emit(map[string]any{"type": "tool_execution_end", "toolCallId": "ghost", "toolName": "bash"})
				assistant("ok")
				emit(map[string]any{"type": "agent_end"})
			case "token":
				assistant("my token is " + token)
				emit(map[string]any{"type": "agent_end"})
			}
		case cmd.Type == "abort":
			if mode != "noend" {
				emit(ok)
			}
		}
	}
	return 0
}

// fakePiSession starts a session of the fake Pi in mode.
func fakePiSession(t *testing.T, mode string, extra map[string]any) (*session.Session, *lockedBuffer) {
	t.Helper()
	root := t.TempDir()
	w := &piWorld{root: root, workspace: filepath.Join(root, "workspace"), stateDir: filepath.Join(root, "state"), log: &lockedBuffer{}}
	for _, d := range []string{w.workspace, w.stateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	self, _ := os.Executable()
	cfg := map[string]any{"binary": fakePiPrefix + mode, "node": self, "modelBaseUrl": "http://127.0.0.1:9", "turnTimeoutMs": 1500, "cancelGraceMs": 500}
	for k, v := range extra {
		cfg[k] = v
	}
	d, err := agent.NewPi(piDriverConfig(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Start(context.Background(), agent.SessionEnv{Run: w.run("run-1"), Permissions: session.Approve, Questions: session.CancelQuestions, Log: w.log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, w.log
}

// TestPiFakeFailures: the turn failures are classified from what Pi did: it exited
// (agent_gone, the session is broken), never ended the turn even after the abort
// (timed_out), refused the prompt (agent_error); protocol oddities are recorded and the
// turn still ends; the run token Pi echoes is redacted from the log.
func TestPiFakeFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode string
		want session.TurnFailure
	}{
		{"exit", session.TurnAgentGone},
		{"noend", session.TurnTimedOut},
		{"refuse", session.TurnAgentError},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			s, _ := fakePiSession(t, tc.mode, nil)
			res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: piToken, Text: "go"})
			var te *session.TurnError
			if !errors.As(err, &te) || te.Failure != tc.want || !strings.HasPrefix(res.Failure, string(tc.want)) {
				t.Fatalf("Prompt = %+v, %v; want %s", res, err, tc.want)
			}
			if tc.want != session.TurnAgentError {
				_, err := s.Prompt(context.Background(), session.Turn{RunID: "run-2", Text: "again"})
				if !errors.As(err, &te) || te.Failure != session.TurnMisuse {
					t.Errorf("a prompt after %s: %v, want misuse (the session is broken)", tc.want, err)
				}
			}
		})
	}
	t.Run("garbage", func(t *testing.T) {
		t.Parallel()
		s, log := fakePiSession(t, "garbage", nil)
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: piToken, Text: "go"})
		if err != nil || res.Message != "ok" || res.Events["(not JSON)"] != 1 || len(res.ProtocolViolations) != 1 ||
			!strings.Contains(res.ProtocolViolations[0], "unknown tool call ghost") {
			t.Fatalf("Prompt = %+v, %v", res, err)
		}
		// Pi's whole lines are logged as JSON messages of their size without the
		// newline (never "truncated"); the line that is not JSON as text.
		s.Close()
		var agentLines, text int
		for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
			var e session.LogEntry
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("log line %q: %v", l, err)
			}
			if e.Dir != session.DirAgent {
				continue
			}
			agentLines++
			if e.Truncated {
				t.Errorf("a whole line was logged as truncated: %s", l)
			}
			if e.Message == nil {
				text++
				if e.Text != "this line is not JSON" || e.Bytes != len(e.Text) {
					t.Errorf("text line %s", l)
				}
			} else if e.Bytes != len(e.Message) {
				t.Errorf("line of %d bytes logged with size %d: %s", len(e.Message), e.Bytes, l)
			}
		}
		if agentLines < 5 || text != 1 {
			t.Errorf("%d agent lines, %d as text; want at least 5, one text", agentLines, text)
		}
	})
	t.Run("token", func(t *testing.T) {
		t.Parallel()
		s, log := fakePiSession(t, "token", nil)
		res, err := s.Prompt(context.Background(), session.Turn{RunID: "run-1", RunToken: "second-run-token-abcdef0123", Text: "go"})
		if err != nil || res.Message != "my token is second-run-token-abcdef0123" {
			t.Fatalf("Prompt = %+v, %v", res, err)
		}
		s.Close()
		if l := log.String(); strings.Contains(l, "second-run-token-abcdef0123") || strings.Contains(l, piToken) || !strings.Contains(l, "[REDACTED]") {
			t.Errorf("the log holds a run token or redacted nothing:\n%s", l)
		}
		if ev := string(res.Log); strings.Contains(ev, "second-run-token") {
			t.Error("the turn's evidence holds the run token")
		}
		// The turn's log names Pi's session id (its get_state answer) in the turn_start
		// note, where the trajectory converter reads it.
		if ev := string(res.Log); !strings.Contains(ev, `"event":"turn_start","data":{"pid":`) || !strings.Contains(ev, `"sessionId":"fake-1"`) {
			t.Errorf("the turn's log has no turn_start note naming session fake-1:\n%s", ev)
		}
	})
}

// TestNewPiConfig: driverConfig problems are reported together; the session needs its
// deciders and an entry script.
func TestNewPiConfig(t *testing.T) {
	t.Parallel()
	_, err := agent.NewPi(piDriverConfig(t, map[string]any{"binary": "rel/cli.js", "modelBaseUrl": "https://example.invalid", "gateTools": []any{"write", "rm"},
		"turnTimeoutMs": -1, "model": "has space", "script": "other", "strategy": "wrong_nonce"}))
	for _, want := range []string{"binary rel/cli.js must be an absolute path", "modelBaseUrl https://example.invalid must be a loopback",
		"gateTools: rm is not a Pi tool", "turnTimeoutMs -1 must be a positive", "model has space must be a model id", "script other is not",
		"driverConfig strategy does not apply to driver rpc:pi"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	d, err := agent.NewPi(piDriverConfig(t, map[string]any{"gateTools": []any{}}))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	w := &piWorld{workspace: root, stateDir: root}
	if _, err := d.Start(context.Background(), agent.SessionEnv{Run: w.run("r")}); err == nil || !strings.Contains(err.Error(), "no question decider") {
		t.Errorf("Start without deciders: %v", err)
	}
	if _, err := d.Start(context.Background(), agent.SessionEnv{Run: w.run("r"), Questions: session.CancelQuestions}); err == nil || !strings.Contains(err.Error(), "no Pi entry script") {
		t.Errorf("Start without an entry script: %v", err)
	}
	gated, _ := agent.NewPi(api.DriverConfig{})
	if _, err := gated.Start(context.Background(), agent.SessionEnv{Run: w.run("r"), Questions: session.CancelQuestions}); err == nil || !strings.Contains(err.Error(), "no permission decider") {
		t.Errorf("Start with the gate and no permission decider: %v", err)
	}
	if _, err := agent.New(driver.Name{Kind: driver.KindRPC, Arg: "pi"}, api.DriverConfig{}); err == nil || !strings.Contains(err.Error(), "agent.NewPi") {
		t.Errorf("agent.New(rpc:pi) = %v, want a refusal naming NewPi", err)
	}
}

// TestPiLaunchFiles: the session's files — models.json (the scripted model of this
// session, no key), the extension and its configuration (gate, question tool, MCP
// bridge with the tools given) — and an argv and environment without the run token.
func TestPiLaunchFiles(t *testing.T) {
	t.Parallel()
	s, _ := fakePiSession(t, "garbage", map[string]any{"model": "nvidia/nemotron-3-ultra-550b-a55b:free"})
	dir := ""
	// The session directory is below the world's state directory; find it from the
	// process's own view (its HOME).
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", mustIdentity(t, s).PID))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(b), "\x00")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			dir = filepath.Dir(v)
		}
		if strings.Contains(kv, piToken) {
			t.Errorf("Pi's environment carries the run token: %s", kv)
		}
	}
	models, err := os.ReadFile(filepath.Join(dir, "home", ".pi", "agent", "models.json"))
	if err != nil || !strings.Contains(string(models), `"baseUrl": "http://127.0.0.1:9/runs/1/v1"`) || !strings.Contains(string(models), `"id": "nvidia/nemotron-3-ultra-550b-a55b:free"`) {
		t.Errorf("models.json: %s %v", models, err)
	}
	var cfg agent.PiExtensionConfig
	raw, _ := os.ReadFile(filepath.Join(dir, "agentproof-pi.json"))
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.Schema != agent.PiExtensionSchema || strings.Join(cfg.Permission.Tools, ",") != "write,edit" ||
		len(cfg.Permission.Nonce) != 24 || cfg.Questions.Tool != agent.PiQuestionTool || cfg.MCP.Prefix != agent.PiToolPrefix || cfg.MCP.Args[0] != "mcp" {
		t.Errorf("extension config %+v: %v", cfg, err)
	}
	if ext, _ := os.ReadFile(filepath.Join(dir, "agentproof-pi.js")); string(ext) != string(agent.PiExtension()) {
		t.Error("the session's extension differs from the embedded one")
	}
	for _, f := range []string{"agentproof-pi.json", "agentproof-pi.js", "home/.pi/agent/models.json", "run-id"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v", f, fi.Mode(), err)
		}
	}
	args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", mustIdentity(t, s).PID))
	if want := "--mode\x00rpc\x00--provider\x00agentproof\x00--model\x00nvidia/nemotron-3-ultra-550b-a55b:free\x00--no-session\x00--offline"; !strings.Contains(string(args), want) {
		t.Errorf("argv %q lacks %q", args, want)
	}
}

func mustIdentity(t *testing.T, s *session.Session) session.ProcessIdentity {
	t.Helper()
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(10 * time.Millisecond) {
		if id, err := s.Identity(); err == nil {
			return id
		}
	}
	t.Fatal("no process identity")
	return session.ProcessIdentity{}
}

// FuzzClassifyPiLine: any bytes classify without panicking; a JSON object's type is its
// method.
func FuzzClassifyPiLine(f *testing.F) {
	for _, s := range []string{`{"type":"agent_end"}`, `{"type":"message_update","assistantMessageEvent":{"type":"text_delta"}}`,
		`{"id":"x","type":"extension_ui_request","method":"confirm"}`, `not json`, `{"type":7}`, `[]`, "{\"type\":\"a\u2028b\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		w := agent.ClassifyPiLine(line)
		var v struct {
			Type *string `json:"type"`
		}
		if w.Object && json.Unmarshal(line, &v) == nil && v.Type != nil && *v.Type != w.Method {
			t.Errorf("type %q classified as %q", *v.Type, w.Method)
		}
	})
}

// piDriverConfig is the typed driverConfig of a JSON object (as a catalog profile's
// driverConfig decodes).
func piDriverConfig(tb testing.TB, m map[string]any) api.DriverConfig {
	tb.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	var c api.DriverConfig
	if err := json.Unmarshal(b, &c); err != nil {
		tb.Fatal(err)
	}
	return c
}

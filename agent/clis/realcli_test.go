package clis_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/worker"
)

// EnvAgentsDir names the cache directory where .ci/agents.sh installed the pinned CLIs
// (`agentproof agents install --dir "$AGENTPROOF_AGENTS_DIR"`).
const EnvAgentsDir = "AGENTPROOF_AGENTS_DIR"

// agentsDir returns the installed CLI cache: $AGENTPROOF_AGENTS_DIR, else the default
// cache (DefaultDir) when every pinned, non-optional CLI is installed there. The
// real-CLI tests need the CLIs (hundreds of MB from npm), which .ci/agents.sh installs:
// in CI (CI set) missing CLIs fail the test; on a developer machine without them the
// test is skipped with the command that installs them.
func agentsDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the real agent CLIs take seconds to minutes of CPU each; the full test command runs them")
	}
	if dir := os.Getenv(EnvAgentsDir); dir != "" {
		return dir
	}
	if dir, err := clis.DefaultDir(); err == nil && pinnedInstalled(dir) {
		return dir
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not set: run .ci/agents.sh first (it installs the pinned agent CLIs and exports it)", EnvAgentsDir)
	}
	t.Skipf("real agent CLIs not installed: run `go run ./cmd/agentproof agents install` (or set %s to a cache that holds them); CI fails instead of skipping", EnvAgentsDir)
	return ""
}

// pinnedInstalled reports whether every pinned, non-optional CLI is installed in dir.
func pinnedInstalled(dir string) bool {
	for _, c := range clis.Pinned {
		if c.Optional {
			continue
		}
		if _, err := clis.Locate(dir, c, clis.HostPlatform()); err != nil {
			return false
		}
	}
	return true
}

func locate(t *testing.T, name string) string {
	t.Helper()
	dir := agentsDir(t)
	c, _ := clis.Lookup(name)
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	if err != nil {
		t.Fatalf("locating %s: %v", name, err)
	}
	return in.Binary
}

// modelRun is one real CLI run against a scripted model.
type modelRun struct {
	workspace string
	stdout    []byte
	stderr    []byte
	exitCode  int
}

// startModel serves script (rendered with nonce) on 127.0.0.1 and logs to a file.
func startModel(t *testing.T, script, nonce string) (*scriptedmodel.Server, *scriptedmodel.Running, string) {
	t.Helper()
	return startModelOpts(t, script, nonce, false)
}

// startModelOpts is startModel with chunked framing on or off.
func startModelOpts(t *testing.T, script, nonce string, chunked bool) (*scriptedmodel.Server, *scriptedmodel.Running, string) {
	t.Helper()
	return startModelWith(t, script, nonce, scriptedmodel.Options{Chunked: chunked, ChunkSeed: 1})
}

// startModelWith is startModel with options (Script and Log are filled in).
func startModelWith(t *testing.T, script, nonce string, opts scriptedmodel.Options) (*scriptedmodel.Server, *scriptedmodel.Running, string) {
	t.Helper()
	sc, err := scriptedmodel.ParseScript("test script", []byte(script), map[string]string{"nonce": nonce})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "model-requests.jsonl")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	opts.Script, opts.Log = sc, f
	srv, err := scriptedmodel.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	running, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = running.Close(ctx)
	})
	return srv, running, logPath
}

// isolatedEnv is the explicit environment of a CLI run: its own HOME and XDG
// directories below root, a minimal PATH (the shell tool runs echo), no proxy
// variables, plus extra.
func isolatedEnv(root string, extra ...string) []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + filepath.Join(root, "home"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "xdg", "config"),
		"XDG_DATA_HOME=" + filepath.Join(root, "xdg", "data"),
		"XDG_CACHE_HOME=" + filepath.Join(root, "xdg", "cache"),
		"XDG_STATE_HOME=" + filepath.Join(root, "xdg", "state"),
		"TMPDIR=" + filepath.Join(root, "tmp"),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
	}
	return append(env, extra...)
}

// runCLI runs bin with args in a fresh workspace, stdin /dev/null, the environment env,
// its own process group (killed whole on timeout) and a 3-minute bound.
func runCLI(t *testing.T, root, bin string, args, env []string) modelRun {
	t.Helper()
	ws := filepath.Join(root, "workspace")
	for _, d := range []string{ws, filepath.Join(root, "home"), filepath.Join(root, "tmp"), filepath.Join(root, "xdg")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = ws
	cmd.Env = env
	cmd.Stdin = nil // /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish in time\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), stdout.Bytes(), stderr.Bytes())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", bin, err)
	}
	// Kill any leftover background process of the CLI (its group).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return modelRun{workspace: ws, stdout: stdout.Bytes(), stderr: stderr.Bytes(), exitCode: code}
}

// jsonLines decodes a JSONL event stream; lines that are not JSON objects are errors.
func jsonLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("event stream line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// readLog stops the scripted model (Close waits for requests in flight to be logged)
// and reads its request log.
func readLog(t *testing.T, running *scriptedmodel.Running, path string) []scriptedmodel.LogEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := running.Close(ctx); err != nil {
		t.Fatalf("stopping the scripted model: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []scriptedmodel.LogEntry
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e scriptedmodel.LogEntry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("model request log line is not JSON: %v", err)
		}
		out = append(out, e)
	}
	return out
}

// scripts used by every CLI: (a) the shell tool writes proof.txt, (b) a final answer
// carrying the marker. The wrong script calls a tool no CLI offers without MCP.
const (
	okScript = `
schema: agentproof.model-script/v1
steps:
  - call: shell
    args: {command: "echo proof-{{nonce}} > proof.txt"}
  - answer: "DONE_{{nonce}}"
`
	wrongScript = `
steps:
  - call: finish_task
    args: {summary: "done {{nonce}}"}
  - answer: "DONE_{{nonce}}"
`
	prompt = "Write the proof file, then say DONE."
)

// checkProof asserts the shell step's file in the workspace.
func checkProof(t *testing.T, r modelRun, nonce string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.workspace, "proof.txt"))
	if err != nil {
		t.Fatalf("the shell step's file is missing: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, clip(r.stderr))
	}
	if got := strings.TrimSpace(string(b)); got != "proof-"+nonce {
		t.Errorf("proof.txt = %q, want %q", got, "proof-"+nonce)
	}
}

// checkModelLog asserts that every logged request reached the scripted model on
// 127.0.0.1 and was answered, with no authorization value in the log.
func checkModelLog(t *testing.T, entries []scriptedmodel.LogEntry, secret string, logPath string) {
	t.Helper()
	for _, e := range entries {
		if e.Status != 200 {
			t.Errorf("request %d %s %s: status %d (%s)", e.Seq, e.Method, e.Path, e.Status, e.Error)
		}
	}
	b, _ := os.ReadFile(logPath)
	if bytes.Contains(b, []byte(secret)) {
		t.Errorf("the model request log contains the API key")
	}
}

func clip(b []byte) string {
	if len(b) > 4000 {
		return "…" + string(b[len(b)-4000:])
	}
	return string(b)
}

const apiKey = "sk-agentproof-test-0123456789abcdef"

// codexArgs configures Codex entirely through flags: a custom
// Responses provider on the scripted model (no WebSockets, no retries), telemetry,
// feedback, update checks and plugins off, no sandbox, no approvals, JSONL events.
func codexArgs(url, prompt string) []string {
	return codexArgsExtra(url, prompt, "")
}

// codexArgsExtra is codexArgs with extra provider keys (",key=value…").
func codexArgsExtra(url, prompt, extra string) []string {
	return []string{
		"exec", "--json", "--skip-git-repo-check", "--ephemeral",
		"--dangerously-bypass-approvals-and-sandbox",
		"-c", "model_provider=scripted",
		"-c", fmt.Sprintf(`model_providers.scripted={name="Scripted",base_url=%q,env_key="SCRIPTED_API_KEY",wire_api="responses",request_max_retries=0,stream_max_retries=0%s}`, url, extra),
		"-m", "scripted-model",
		"-c", "analytics.enabled=false", "-c", "feedback.enabled=false",
		"-c", "check_for_update_on_startup=false", "-c", `otel.exporter="none"`,
		"--disable", "plugins",
		prompt,
	}
}

func codexEnv(root string) []string {
	return isolatedEnv(root, "CODEX_HOME="+filepath.Join(root, "codex-home"), "SCRIPTED_API_KEY="+apiKey)
}

// TestCodexOffline runs Codex against the scripted model, with plain framing and with
// every frame written in 1–7-byte pieces (records that the pinned Codex reassembles
// split frames).
func TestCodexOffline(t *testing.T) {
	t.Parallel()
	for _, chunked := range []bool{false, true} {
		name := "plain"
		if chunked {
			name = "chunked"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testCodexOffline(t, chunked)
		})
	}
}

func testCodexOffline(t *testing.T, chunked bool) {
	bin := locate(t, "codex")
	nonce := "cx7f3a"
	if chunked {
		nonce = "cx7f3b"
	}
	srv, running, logPath := startModelOpts(t, okScript, nonce, chunked)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "codex-home"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, root, bin, codexArgs(running.URL, prompt), codexEnv(root))
	if r.exitCode != 0 {
		t.Fatalf("codex exited %d\nstdout:\n%s\nstderr:\n%s", r.exitCode, r.stdout, clip(r.stderr))
	}
	checkProof(t, r, nonce)
	events := jsonLines(t, r.stdout)
	var messages, commands []map[string]any
	completedTurns := 0
	for _, ev := range events {
		switch ev["type"] {
		case "item.completed":
			item, _ := ev["item"].(map[string]any)
			switch item["type"] {
			case "agent_message":
				messages = append(messages, item)
			case "command_execution":
				commands = append(commands, item)
			}
		case "turn.completed":
			completedTurns++
		case "turn.failed", "error":
			t.Errorf("codex reported %v", ev)
		}
	}
	if len(messages) != 1 || messages[0]["text"] != "DONE_"+nonce {
		t.Errorf("agent messages = %v, want one with text DONE_%s", messages, nonce)
	}
	if len(commands) != 1 || commands[0]["exit_code"] != float64(0) || !strings.Contains(fmt.Sprint(commands[0]["command"]), "proof-"+nonce) {
		t.Errorf("command executions = %v, want one that ran the script's command with exit code 0", commands)
	}
	if completedTurns != 1 {
		t.Errorf("turn.completed events = %d, want 1", completedTurns)
	}
	// Every model response the event stream reports (one command, one message) is one
	// request the scripted model answered; nothing else reached it.
	entries := readLog(t, running, logPath)
	if got := srv.Requests(); len(got) != len(entries) {
		t.Errorf("log file has %d requests, server saw %d", len(entries), len(got))
	}
	if len(entries) != len(commands)+len(messages) {
		t.Errorf("scripted model saw %d requests, the event stream reports %d model turns", len(entries), len(commands)+len(messages))
	}
	for i, e := range entries {
		if e.Method != "POST" || e.Path != "/v1/responses" || e.Step != i+1 {
			t.Errorf("request %d = %s %s step %d, want POST /v1/responses step %d", i+1, e.Method, e.Path, e.Step, i+1)
		}
		if got := e.Headers["authorization"]; len(got) != 1 || got[0] != "[REDACTED]" {
			t.Errorf("request %d authorization header logged as %q, want it redacted", i+1, got)
		}
	}
	checkModelLog(t, entries, apiKey, logPath)
}

func TestCodexWrongScriptFailsNamingTheStep(t *testing.T) {
	t.Parallel()
	bin := locate(t, "codex")
	_, running, logPath := startModel(t, wrongScript, "cxwrong")
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "codex-home"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, root, bin, codexArgs(running.URL, prompt), codexEnv(root))
	if r.exitCode == 0 {
		t.Fatalf("codex exited 0 with a script it cannot follow\nstdout:\n%s", r.stdout)
	}
	const want = "step 1 (call finish_task"
	if !bytes.Contains(r.stdout, []byte(want)) && !bytes.Contains(r.stderr, []byte(want)) {
		t.Errorf("codex output does not name %q\nstdout:\n%s\nstderr:\n%s", want, r.stdout, clip(r.stderr))
	}
	entries := readLog(t, running, logPath)
	if len(entries) != 1 || entries[0].Status != 400 || entries[0].Step != 1 {
		t.Errorf("model log = %+v, want exactly one request refused with 400 at step 1", entries)
	}
}

// opencodeConfig is OPENCODE_CONFIG_CONTENT: one provider on the scripted model through
// the AI SDK package npm (which selects the wire format), sharing and autoupdate off,
// bash and edits allowed, web fetches denied.
func opencodeConfig(npm, url string) string {
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"model":   "scripted/scripted-model", "small_model": "scripted/scripted-model",
		"autoupdate": false, "share": "disabled",
		"permission": map[string]any{"bash": "allow", "edit": "allow", "webfetch": "deny"},
		"provider": map[string]any{"scripted": map[string]any{
			"npm": npm, "name": "Scripted",
			"options": map[string]any{"baseURL": url, "apiKey": apiKey},
			"models": map[string]any{"scripted-model": map[string]any{
				"name": "Scripted", "tool_call": true, "limit": map[string]any{"context": 128000, "output": 4096},
			}},
		}},
	}
	b, _ := json.Marshal(cfg)
	return string(b)
}

// writeOpenCodeConfigDir creates under root's $XDG_CONFIG_HOME/opencode what
// agent.OpenCodeConfigDir lists, as the OpenCode drivers do: OpenCode then installs no
// package from the npm registry at its start.
func writeOpenCodeConfigDir(t *testing.T, root string) {
	t.Helper()
	dirs, files := agent.OpenCodeConfigDir(filepath.Join(root, "xdg", "config", "opencode"))
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func opencodeEnv(root, npm, url string) []string {
	return isolatedEnv(root,
		"OPENCODE_CONFIG_CONTENT="+opencodeConfig(npm, url),
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
	)
}

func TestOpenCodeOffline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		npm, path string
	}{
		{"@ai-sdk/openai-compatible", "/v1/chat/completions"},
		{"@ai-sdk/openai", "/v1/responses"},
		{"@ai-sdk/anthropic", "/v1/messages"},
	} {
		// Sequential: each OpenCode run is CPU-heavy (Bun start, sqlite, snapshots).
		t.Run(strings.TrimPrefix(tc.npm, "@ai-sdk/"), func(t *testing.T) {
			bin := locate(t, "opencode")
			nonce := "oc" + strings.ReplaceAll(strings.TrimPrefix(tc.npm, "@ai-sdk/"), "-", "")
			srv, running, logPath := startModel(t, okScript, nonce)
			root := t.TempDir()
			writeOpenCodeConfigDir(t, root)
			r := runCLI(t, root, bin, []string{"run", "--format", "json", "-m", "scripted/scripted-model", prompt}, opencodeEnv(root, tc.npm, running.URL))
			if r.exitCode != 0 {
				t.Fatalf("opencode exited %d\nstdout:\n%s\nstderr:\n%s", r.exitCode, r.stdout, clip(r.stderr))
			}
			checkProof(t, r, nonce)
			var texts []string
			var tools []map[string]any
			steps := 0
			for _, ev := range jsonLines(t, r.stdout) {
				part, _ := ev["part"].(map[string]any)
				switch ev["type"] {
				case "text":
					texts = append(texts, fmt.Sprint(part["text"]))
				case "tool_use":
					tools = append(tools, part)
				case "step_finish":
					steps++
				case "error":
					t.Errorf("opencode reported %v", ev)
				}
			}
			if len(texts) != 1 || texts[0] != "DONE_"+nonce {
				t.Errorf("text events = %q, want one DONE_%s", texts, nonce)
			}
			if len(tools) != 1 || tools[0]["tool"] != "bash" {
				t.Errorf("tool_use events = %v, want one bash call", tools)
			}
			entries := readLog(t, running, logPath)
			if got := srv.Requests(); len(got) != len(entries) {
				t.Errorf("log file has %d requests, server saw %d", len(entries), len(got))
			}
			// Agent turns (step_finish events) each made one request with tools; other
			// requests are auxiliary (the title generator), answered without a step.
			agentTurns := 0
			for _, e := range entries {
				if e.Path != tc.path {
					t.Errorf("request %d went to %s %s, want %s", e.Seq, e.Method, e.Path, tc.path)
				}
				if e.Step > 0 {
					agentTurns++
				}
			}
			if agentTurns != steps || steps != 2 {
				t.Errorf("scripted model played %d steps, the event stream reports %d step_finish events, want 2 each", agentTurns, steps)
			}
			checkModelLog(t, entries, apiKey, logPath)
		})
	}
}

func TestOpenCodeWrongScriptFailsNamingTheStep(t *testing.T) {
	t.Parallel()
	bin := locate(t, "opencode")
	_, running, logPath := startModel(t, wrongScript, "ocwrong")
	root := t.TempDir()
	writeOpenCodeConfigDir(t, root)
	r := runCLI(t, root, bin, []string{"run", "--format", "json", "-m", "scripted/scripted-model", prompt}, opencodeEnv(root, "@ai-sdk/openai-compatible", running.URL))
	if r.exitCode == 0 {
		t.Fatalf("opencode exited 0 with a script it cannot follow\nstdout:\n%s", r.stdout)
	}
	const want = "step 1 (call finish_task"
	if !bytes.Contains(r.stdout, []byte(want)) && !bytes.Contains(r.stderr, []byte(want)) {
		t.Errorf("opencode output does not name %q\nstdout:\n%s\nstderr:\n%s", want, r.stdout, clip(r.stderr))
	}
	refused := 0
	for _, e := range readLog(t, running, logPath) {
		if e.Status == 400 && e.Step == 1 {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("model refused %d requests at step 1, want exactly 1", refused)
	}
}

// TestClaudeOffline runs Claude Code (optional, manual-only: .ci/agents.sh does not
// install it; `agentproof agents install claude` does) against the scripted model's
// Anthropic Messages stream. Without an install in AGENTPROOF_AGENTS_DIR it is skipped.
func TestClaudeOffline(t *testing.T) {
	t.Parallel()
	dir := agentsDir(t)
	c, _ := clis.Lookup("claude")
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	var ni *clis.NotInstalledError
	if errors.As(err, &ni) {
		t.Skipf("Claude Code is optional and not installed in %s (agentproof agents install --dir %s claude)", dir, dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	const nonce = "cl5e1"
	srv, running, logPath := startModel(t, okScript, nonce)
	root := t.TempDir()
	env := isolatedEnv(root,
		"ANTHROPIC_BASE_URL=http://"+running.Addr, "ANTHROPIC_API_KEY="+apiKey,
		"CLAUDE_CONFIG_DIR="+filepath.Join(root, "claude"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_MAX_RETRIES=0",
	)
	args := []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--bare",
		"--model", "scripted-model", "--permission-mode", "acceptEdits", "--allowedTools", "Bash"}
	r := runCLI(t, root, in.Binary, args, env)
	if r.exitCode != 0 {
		t.Fatalf("claude exited %d\nstdout:\n%s\nstderr:\n%s", r.exitCode, r.stdout, clip(r.stderr))
	}
	checkProof(t, r, nonce)
	var result map[string]any
	for _, ev := range jsonLines(t, r.stdout) {
		if ev["type"] == "result" {
			result = ev
		}
	}
	if result == nil || result["is_error"] != false || result["result"] != "DONE_"+nonce {
		t.Errorf("result event = %v, want success with DONE_%s", result, nonce)
	}
	entries := readLog(t, running, logPath)
	if got := srv.Requests(); len(got) != len(entries) {
		t.Errorf("log file has %d requests, server saw %d", len(entries), len(got))
	}
	posts := 0
	for _, e := range entries {
		if e.Method == "POST" {
			posts++
			if e.Path != "/v1/messages" || !e.Stream {
				t.Errorf("request %d = %s %s stream=%v, want a streamed POST /v1/messages", e.Seq, e.Method, e.Path, e.Stream)
			}
			if got := e.Headers["x-api-key"]; len(got) != 1 || got[0] != "[REDACTED]" {
				t.Errorf("request %d x-api-key logged as %q", e.Seq, got)
			}
		}
	}
	// Two turns, each streamed once: no fallback to non-streamed retries (which Claude
	// Code makes when it distrusts a stream's framing).
	if posts != 2 {
		t.Errorf("scripted model saw %d POSTs, want 2", posts)
	}
	checkModelLog(t, entries, apiKey, logPath)
}

// TestCodexIdleTimeoutIgnoresKeepAlives records what the pinned Codex does with comment
// keep-alives: the scripted model holds the first frame for 4 s
// behind a `: keepalive` comment every 500 ms, the provider's stream_idle_timeout_ms is
// 2000, and Codex 0.171 still reports an idle timeout (its parser drops comments before
// its idle timer sees them) and exits non-zero. A driver must therefore keep scripted
// delays below the idle limit; if a new Codex version passes here, update docs/clis.md.
func TestCodexIdleTimeoutIgnoresKeepAlives(t *testing.T) {
	t.Parallel()
	bin := locate(t, "codex")
	_, running, logPath := startModelWith(t, okScript, "cxidle", scriptedmodel.Options{Hold: 4 * time.Second, KeepAlive: 500 * time.Millisecond})
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "codex-home"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, root, bin, codexArgsExtra(running.URL, prompt, ",stream_idle_timeout_ms=2000"), codexEnv(root))
	if r.exitCode == 0 {
		t.Fatalf("codex passed although the stream was idle (comments only) past its idle timeout\nstdout:\n%s", r.stdout)
	}
	if !bytes.Contains(r.stdout, []byte("idle timeout")) {
		t.Errorf("codex output does not report an idle timeout\nstdout:\n%s\nstderr:\n%s", r.stdout, clip(r.stderr))
	}
	if n := len(readLog(t, running, logPath)); n != 1 {
		t.Errorf("scripted model saw %d requests, want 1 (stream_max_retries=0)", n)
	}
}

// TestCodexSandboxHidesDev records why acp:codex never keeps its state under /dev
// (driver.Name.HidesDev; the attempt's stateDirFor): Codex runs a workspace-write
// command through its codex-linux-sandbox helper, which it links below CODEX_HOME and
// bubblewrap executes after mounting a fresh /dev. With CODEX_HOME in /dev/shm (the
// default state directory) the sandboxed command cannot start; in a directory on disk
// it runs. Should a Codex release lift this, the test fails and the exception can go.
func TestCodexSandboxHidesDev(t *testing.T) {
	t.Parallel()
	if d, err := driver.Parse("acp:codex"); err != nil || !d.HidesDev() {
		t.Fatalf("acp:codex: HidesDev false (%v)", err)
	}
	bin := locate(t, "codex")
	shm := worker.MemoryDir(0)
	if shm == "" {
		t.Skip("/dev/shm is not a writable tmpfs here: the default state directory is then on disk, where nothing hides it")
	}
	mem, err := os.MkdirTemp(shm, "agentproof-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(mem) })
	for _, c := range []struct {
		root string
		ok   bool
	}{{t.TempDir(), true}, {mem, false}} {
		home := filepath.Join(c.root, "codex-home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, c.root, bin, []string{"sandbox", "-c", `sandbox_mode="workspace-write"`, "--", "/bin/sh", "-c", "echo sandboxed > proof.txt"},
			isolatedEnv(c.root, "CODEX_HOME="+home))
		b, _ := os.ReadFile(filepath.Join(r.workspace, "proof.txt"))
		switch {
		case c.ok && (r.exitCode != 0 || string(b) != "sandboxed\n"):
			t.Errorf("CODEX_HOME %s: exit %d, proof %q; want the command run in the sandbox\nstderr:\n%s", home, r.exitCode, b, clip(r.stderr))
		case !c.ok && (r.exitCode == 0 || len(b) != 0 || !strings.Contains(string(r.stderr), "codex-linux-sandbox")):
			t.Errorf("CODEX_HOME %s: exit %d, proof %q; want the sandbox helper missing inside bubblewrap\nstderr:\n%s", home, r.exitCode, b, clip(r.stderr))
		}
	}
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/mcp"
)

// codexMCPScript makes the scripted model call two semantic tools through Codex's MCP
// client, one with every kind of bounded argument (enum, array, integer-free strings),
// then answer.
const codexMCPScript = `
schema: agentproof.model-script/v1
steps:
  - call: create_task
    args: {title: "child {{nonce}}", priority: high, status: backlog, blockedByTaskIds: []}
  - call: finish_task
    args: {summary: "MARKER-{{nonce}}"}
  - answer: "DONE_{{nonce}}"
`

// realCLIRun is one real agent CLI run with `agentproof mcp` registered, against the
// scripted model playing codexMCPScript and a real control plane.
type realCLIRun struct {
	w        *mcpWorld
	nonce    string
	stateDir string
	stdout   string
	entries  []scriptedmodel.LogEntry
}

// locateCLI returns the installed pinned CLI's binary from the cache the scripts use
// (scriptAgentsDir: $AGENTPROOF_AGENTS_DIR, else the default cache when it holds the
// pinned CLIs). CI sets the variable and fails without the CLIs; a developer machine
// without them skips, as agent/clis does.
func locateCLI(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s is a real agent CLI (seconds to minutes of CPU per run); the full test command runs it", name)
	}
	dir := scriptAgentsDir()
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("the pinned agent CLIs are not installed: run .ci/agents.sh first")
		}
		t.Skip("real agent CLIs not installed: run `go run ./cmd/agentproof agents install` (or set AGENTPROOF_AGENTS_DIR)")
	}
	c, _ := clis.Lookup(name)
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	if err != nil {
		t.Fatalf("locating %s: %v", name, err)
	}
	return in.Binary
}

// runRealCLI starts the control plane and the scripted model, builds the CLI's argv and
// environment with cmdline (given the model URL, the agentproof binary, the state
// directory and the run's root directory) and runs it in its own process group with a
// 3-minute bound; a non-zero exit fails the test.
func runRealCLI(t *testing.T, bin, nonce string, cmdline func(modelURL, self, stateDir, root string, w *mcpWorld) ([]string, []string)) realCLIRun {
	t.Helper()
	self, err := exec.LookPath("agentproof")
	if err != nil {
		t.Fatal(err)
	}
	w := newMCPWorld(t, "delegation:tasks:create")
	sc, err := scriptedmodel.ParseScript("mcp", []byte(codexMCPScript), map[string]string{"nonce": nonce})
	if err != nil {
		t.Fatal(err)
	}
	modelLog := &syncWriter{w: &bytes.Buffer{}}
	model, err := scriptedmodel.New(scriptedmodel.Options{Script: sc, Log: modelLog})
	if err != nil {
		t.Fatal(err)
	}
	running, err := model.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = running.Close(ctx)
	})
	root := t.TempDir()
	stateDir := filepath.Join(root, "state")
	ws := filepath.Join(root, "workspace")
	for _, d := range []string{ws, stateDir, filepath.Join(root, "codex-home"), filepath.Join(root, "home"), filepath.Join(root, "tmp"), filepath.Join(root, "xdg")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	args, env := cmdline(running.URL, self, stateDir, root, w)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = ws, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if runErr != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s\nmodel log:\n%s", filepath.Base(bin), runErr, stdout.String(), tail(stderr.String()), tail(modelLog.String()))
	}
	entries := model.Requests()
	if len(entries) == 0 {
		t.Fatal("the scripted model saw no request")
	}
	for _, e := range entries {
		if e.Status != 200 {
			t.Errorf("model request %d: status %d %s", e.Seq, e.Status, e.Error)
		}
	}
	return realCLIRun{w: w, nonce: nonce, stateDir: stateDir, stdout: stdout.String(), entries: entries}
}

// checkEffects: the scripted calls reached the control plane (a backlog child task of
// priority high, task-1 done) and the presented comment is recorded.
func (r realCLIRun) checkEffects(t *testing.T) {
	t.Helper()
	st, err := r.w.co.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var child string
	var task1 controlplane.TaskStatus
	for _, tk := range st.Tasks {
		switch {
		case tk.ID == "task-1":
			task1 = tk.Status
		case tk.Title == "child "+r.nonce:
			child = string(tk.Status) + "/" + tk.Priority
		}
	}
	if child != "backlog/high" || task1 != "done" {
		t.Errorf("after the CLI: child task %q, task-1 %q; want backlog/high and done\nstdout:\n%s", child, task1, r.stdout)
	}
	p, err := agent.ReadPresentation(r.stateDir, "run-1")
	if err != nil || p == nil || p.Text != "MARKER-"+r.nonce {
		t.Errorf("presentation %+v, %v", p, err)
	}
}

// offeredTools returns the agentproof tools (unprefixed) among the tools of the first
// agent request (one with tools) the scripted model saw.
func (r realCLIRun) offeredTools(prefixes ...string) []string {
	var offered []string
	for _, e := range r.entries {
		if len(e.Tools) == 0 {
			continue
		}
		for _, name := range e.Tools {
			for _, prefix := range prefixes {
				if after, ok := strings.CutPrefix(name, prefix); ok {
					offered = append(offered, after)
				}
			}
		}
		break
	}
	return offered
}

// TestMCPWithRealCodex: the real Codex registers `agentproof mcp`
// through -c mcp_servers.agentproof.* with env_vars, passes every tool's schema to the
// model (properties, required, types and enums kept) and carries the scripted calls to
// the control plane without a failed tool call.
func TestMCPWithRealCodex(t *testing.T) {
	t.Parallel()
	bin := locateCLI(t, "codex")
	r := runRealCLI(t, bin, "mcpcx1", func(url, self, stateDir, root string, w *mcpWorld) ([]string, []string) {
		args := []string{
			"exec", "--json", "--skip-git-repo-check", "--ephemeral", "--dangerously-bypass-approvals-and-sandbox",
			"-c", "model_provider=scripted",
			"-c", fmt.Sprintf(`model_providers.scripted={name="Scripted",base_url=%q,env_key="SCRIPTED_API_KEY",wire_api="responses",request_max_retries=0,stream_max_retries=0}`, url),
			"-m", "scripted-model",
			"-c", "analytics.enabled=false", "-c", "feedback.enabled=false", "-c", "check_for_update_on_startup=false",
			"-c", `otel.exporter="none"`, "--disable", "plugins",
			"-c", fmt.Sprintf("mcp_servers.agentproof.command=%q", self),
			"-c", `mcp_servers.agentproof.args=["mcp"]`,
			"-c", fmt.Sprintf("mcp_servers.agentproof.env_vars=[%q,%q,%q,%q]", agent.EnvAPIURL, agent.EnvRunToken, agent.EnvRunID, agent.EnvStateDir),
			// Without required, Codex 0.171 may send its first model request before a slow
			// MCP server has started, without its tools (as the exec:codex driver does).
			"-c", "mcp_servers.agentproof.required=true",
			"-c", "mcp_servers.agentproof.startup_timeout_sec=60",
			"Create the child task, then finish.",
		}
		env := []string{
			"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Join(root, "home"), "TMPDIR=" + filepath.Join(root, "tmp"),
			"CODEX_HOME=" + filepath.Join(root, "codex-home"), "SCRIPTED_API_KEY=sk-test", "LANG=C.UTF-8", "NO_COLOR=1",
			agent.EnvAPIURL + "=" + w.apiURL, agent.EnvRunToken + "=" + w.token, agent.EnvRunID + "=run-1", agent.EnvStateDir + "=" + stateDir,
		}
		return args, env
	})
	// Codex 0.171 offers MCP tools in a namespace tool "mcp__agentproof" (the scripted
	// model logs "mcp__agentproof/<tool>"); older versions flatten them.
	if offered := r.offeredTools("mcp__agentproof/", "mcp__agentproof__"); len(offered) != len(mcp.Tools()) {
		t.Errorf("codex offered %d agentproof tools %v, want all %d", len(offered), offered, len(mcp.Tools()))
	}
	checkSchemas(t, "codex", r.entries[0].Body)
	r.checkEffects(t)
	failed := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		if item, _ := ev["item"].(map[string]any); ev["type"] == "item.completed" && item["type"] == "mcp_tool_call" && item["status"] != "completed" {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("codex reports %d failed MCP tool calls:\n%s", failed, r.stdout)
	}
}

// TestMCPWithRealOpenCode: the real OpenCode registers
// `agentproof mcp` as a local MCP server in OPENCODE_CONFIG_CONTENT (environment given
// inline), offers every tool to the model (as agentproof_<tool>) and carries the
// scripted calls to the control plane.
func TestMCPWithRealOpenCode(t *testing.T) {
	t.Parallel()
	bin := locateCLI(t, "opencode")
	r := runRealCLI(t, bin, "mcpoc1", func(url, self, stateDir, root string, w *mcpWorld) ([]string, []string) {
		writeOpenCodeConfigDir(t, root)
		cfg, _ := json.Marshal(map[string]any{
			"model": "scripted/scripted-model", "small_model": "scripted/scripted-model",
			"autoupdate": false, "share": "disabled",
			"permission": map[string]any{"bash": "allow", "edit": "allow", "webfetch": "deny"},
			"provider": map[string]any{"scripted": map[string]any{
				"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
				"options": map[string]any{"baseURL": url, "apiKey": "sk-test"},
				"models":  map[string]any{"scripted-model": map[string]any{"name": "Scripted", "tool_call": true, "limit": map[string]any{"context": 128000, "output": 4096}}},
			}},
			"mcp": map[string]any{"agentproof": map[string]any{
				"type": "local", "enabled": true, "command": []string{self, "mcp"},
				"environment": map[string]string{agent.EnvAPIURL: w.apiURL, agent.EnvRunToken: w.token, agent.EnvRunID: "run-1", agent.EnvStateDir: stateDir},
			}},
		})
		env := []string{
			"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Join(root, "home"), "TMPDIR=" + filepath.Join(root, "tmp"),
			"XDG_CONFIG_HOME=" + filepath.Join(root, "xdg", "config"), "XDG_DATA_HOME=" + filepath.Join(root, "xdg", "data"),
			"XDG_CACHE_HOME=" + filepath.Join(root, "xdg", "cache"), "XDG_STATE_HOME=" + filepath.Join(root, "xdg", "state"),
			"LANG=C.UTF-8", "NO_COLOR=1", "OPENCODE_CONFIG_CONTENT=" + string(cfg),
			"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
			"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
			"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
		}
		return []string{"run", "--format", "json", "-m", "scripted/scripted-model", "Create the child task, then finish."}, env
	})
	if offered := r.offeredTools("agentproof_"); len(offered) != len(mcp.Tools()) {
		t.Errorf("opencode offered %d agentproof tools %v, want all %d (all: %v)", len(offered), offered, len(mcp.Tools()), r.entries[len(r.entries)-1].Tools)
	}
	for _, e := range r.entries {
		if len(e.Tools) > 0 {
			checkSchemas(t, "opencode", e.Body)
			break
		}
	}
	r.checkEffects(t)
}

// agentproofSchemas returns the parameter schemas of the agentproof tools in a model
// request body, by unprefixed tool name: Responses tools (Codex, flat "mcp__agentproof__x"
// or inside the namespace tool "mcp__agentproof") and Chat Completions tools (OpenCode,
// {"type":"function","function":{"name":"agentproof_x","parameters":…}}).
func agentproofSchemas(t *testing.T, body json.RawMessage) map[string]map[string]any {
	t.Helper()
	type fn struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	}
	var req struct {
		Tools []struct {
			fn
			Tools    []fn `json:"tools"`
			Function *fn  `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("model request body: %v", err)
	}
	got := map[string]map[string]any{}
	for _, tl := range req.Tools {
		if tl.Name == "mcp__agentproof" {
			for _, sub := range tl.Tools {
				got[sub.Name] = sub.Parameters
			}
		}
		if name, ok := strings.CutPrefix(tl.Name, "mcp__agentproof__"); ok {
			got[name] = tl.Parameters
		}
		if tl.Function != nil {
			if name, ok := strings.CutPrefix(tl.Function.Name, "agentproof_"); ok {
				got[name] = tl.Function.Parameters
			}
		}
	}
	return got
}

// checkSchemas: in the model request the CLI built, every agentproof tool keeps
// our properties, required list, property types and enums. (Codex 0.171 drops the
// numeric and length bounds, which is why the descriptions state them in words.)
func checkSchemas(t *testing.T, cli string, body json.RawMessage) {
	t.Helper()
	got := agentproofSchemas(t, body)
	for _, want := range mcp.Tools() {
		params := got[want.Name]
		if params == nil {
			t.Errorf("%s did not pass %s's schema to the model", cli, want.Name)
			continue
		}
		props, _ := params["properties"].(map[string]any)
		wantProps := want.InputSchema["properties"].(map[string]any)
		if len(props) != len(wantProps) {
			t.Errorf("%s %s: properties %v, want %d", cli, want.Name, props, len(wantProps))
		}
		for name, ws := range wantProps {
			p, _ := props[name].(map[string]any)
			w := ws.(map[string]any)
			if p == nil || p["type"] != w["type"] {
				t.Errorf("%s %s.%s: passed %v, want type %v", cli, want.Name, name, p, w["type"])
				continue
			}
			if e, ok := w["enum"].([]string); ok && fmt.Sprint(p["enum"]) != fmt.Sprint(e) {
				t.Errorf("%s %s.%s: passed enum %v, want %v", cli, want.Name, name, p["enum"], e)
			}
		}
		var req []string
		if list, ok := params["required"].([]any); ok {
			for _, r := range list {
				req = append(req, fmt.Sprint(r))
			}
		}
		if !slices.Equal(req, want.Required) {
			t.Errorf("%s %s: required %v, want %v", cli, want.Name, params["required"], want.Required)
		}
	}
}

// syncWriter serializes writes (the scripted model logs from its handlers).
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
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

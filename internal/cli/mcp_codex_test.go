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
	"github.com/agentproof/agentproof/controlplane/mcp"
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

// TestMCPWithRealCodex (field failure F10, optional: it needs the pinned Codex that
// `agentproof agents install --dir DIR` put in $AGENTPROOF_AGENTS_DIR; CI sets it, a
// developer machine without it skips): the real Codex registers `agentproof mcp`
// through -c mcp_servers.agentproof.* with env_vars, offers every tool to the model
// under its mcp__agentproof__ prefix, and carries the scripted calls to the control
// plane: the child task exists, the task is done, the presented comment is recorded.
func TestMCPWithRealCodex(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("AGENTPROOF_AGENTS_DIR")
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("AGENTPROOF_AGENTS_DIR is not set: run .ci/agents.sh first")
		}
		t.Skip("real agent CLIs not installed: set AGENTPROOF_AGENTS_DIR after `go run ./cmd/agentproof agents install --dir DIR`")
	}
	c, _ := clis.Lookup("codex")
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	if err != nil {
		t.Fatalf("locating codex: %v", err)
	}
	self, err := exec.LookPath("agentproof")
	if err != nil {
		t.Fatal(err)
	}
	w := newMCPWorld(t, "delegation:tasks:create")
	nonce := "mcpcx1"
	sc, err := scriptedmodel.ParseScript("codex mcp", []byte(codexMCPScript), map[string]string{"nonce": nonce})
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
	for _, d := range []string{ws, stateDir, filepath.Join(root, "codex-home"), filepath.Join(root, "home"), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{
		"exec", "--json", "--skip-git-repo-check", "--ephemeral", "--dangerously-bypass-approvals-and-sandbox",
		"-c", "model_provider=scripted",
		"-c", fmt.Sprintf(`model_providers.scripted={name="Scripted",base_url=%q,env_key="SCRIPTED_API_KEY",wire_api="responses",request_max_retries=0,stream_max_retries=0}`, running.URL),
		"-m", "scripted-model",
		"-c", "analytics.enabled=false", "-c", "feedback.enabled=false", "-c", "check_for_update_on_startup=false",
		"-c", `otel.exporter="none"`, "--disable", "plugins",
		"-c", fmt.Sprintf("mcp_servers.agentproof.command=%q", self),
		"-c", `mcp_servers.agentproof.args=["mcp"]`,
		"-c", fmt.Sprintf("mcp_servers.agentproof.env_vars=[%q,%q,%q,%q]", agent.EnvAPIURL, agent.EnvRunToken, agent.EnvRunID, agent.EnvStateDir),
		"Create the child task, then finish.",
	}
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Join(root, "home"), "TMPDIR=" + filepath.Join(root, "tmp"),
		"CODEX_HOME=" + filepath.Join(root, "codex-home"), "SCRIPTED_API_KEY=sk-test", "LANG=C.UTF-8", "NO_COLOR=1",
		agent.EnvAPIURL + "=" + w.apiURL, agent.EnvRunToken + "=" + w.token, agent.EnvRunID + "=run-1", agent.EnvStateDir + "=" + stateDir,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.Binary, args...)
	cmd.Dir, cmd.Env = ws, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if runErr != nil {
		t.Fatalf("codex: %v\nstdout:\n%s\nstderr:\n%s\nmodel log:\n%s", runErr, stdout.String(), tail(stderr.String()), tail(modelLog.String()))
	}
	entries := model.Requests()
	if len(entries) == 0 {
		t.Fatal("the scripted model saw no request")
	}
	var offered []string
	for _, name := range entries[0].Tools {
		// Codex 0.171 offers MCP tools in a namespace tool "mcp__agentproof" (the
		// scripted model logs "mcp__agentproof/<tool>"); older versions flatten them to
		// "mcp__agentproof__<tool>".
		for _, prefix := range []string{"mcp__agentproof/", "mcp__agentproof__"} {
			if after, ok := strings.CutPrefix(name, prefix); ok {
				offered = append(offered, after)
			}
		}
	}
	if len(offered) != len(mcp.Tools()) {
		t.Errorf("codex offered %d agentproof tools %v (all: %v), want all %d", len(offered), offered, entries[0].Tools, len(mcp.Tools()))
	}
	checkCodexSchemas(t, entries[0].Body)
	for _, e := range entries {
		if e.Status != 200 {
			t.Errorf("model request %d: status %d %s", e.Seq, e.Status, e.Error)
		}
	}
	st, err := w.co.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var child, task1 string
	for _, tk := range st.Tasks {
		switch {
		case tk.ID == "task-1":
			task1 = tk.Status
		case tk.Title == "child "+nonce:
			child = tk.Status + "/" + tk.Priority
		}
	}
	if child != "backlog/high" || task1 != "done" {
		t.Errorf("after codex: child task %q, task-1 %q; want backlog/high and done\nstdout:\n%s", child, task1, stdout.String())
	}
	p, err := mcp.ReadPresentation(stateDir, "run-1")
	if err != nil || p == nil || p.Text != "MARKER-"+nonce {
		t.Errorf("presentation %+v, %v", p, err)
	}
	var events []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n")) {
		var ev map[string]any
		if json.Unmarshal(line, &ev) == nil {
			events = append(events, ev)
		}
	}
	failed := 0
	for _, ev := range events {
		if item, _ := ev["item"].(map[string]any); ev["type"] == "item.completed" && item["type"] == "mcp_tool_call" && item["status"] != "completed" {
			failed++
			t.Errorf("codex reports a failed MCP tool call: %v", item)
		}
	}
	if len(events) == 0 || failed > 0 {
		t.Errorf("codex events:\n%s", stdout.String())
	}
	if os.Getenv("AGENTPROOF_MCP_DUMP") != "" {
		os.WriteFile(os.Getenv("AGENTPROOF_MCP_DUMP"), []byte(modelLog.String()), 0o600)
	}
}

// checkCodexSchemas (F10): in the model request Codex built, every agentproof tool keeps
// our properties, required list, property types and enums (Codex 0.171 drops the
// numeric and length bounds, which is why the descriptions state them in words).
func checkCodexSchemas(t *testing.T, body json.RawMessage) {
	t.Helper()
	var req struct {
		Tools []struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
			Tools      []struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"tools"`
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
	}
	for _, want := range mcp.Tools() {
		params := got[want.Name]
		if params == nil {
			t.Errorf("codex did not pass %s's schema to the model", want.Name)
			continue
		}
		props, _ := params["properties"].(map[string]any)
		wantProps := want.InputSchema["properties"].(map[string]any)
		if len(props) != len(wantProps) {
			t.Errorf("%s: codex passed properties %v, want %d", want.Name, props, len(wantProps))
		}
		for name, ws := range wantProps {
			p, _ := props[name].(map[string]any)
			w := ws.(map[string]any)
			if p == nil || p["type"] != w["type"] {
				t.Errorf("%s.%s: codex passed %v, want type %v", want.Name, name, p, w["type"])
				continue
			}
			if e, ok := w["enum"].([]string); ok && fmt.Sprint(p["enum"]) != fmt.Sprint(e) {
				t.Errorf("%s.%s: codex passed enum %v, want %v", want.Name, name, p["enum"], e)
			}
		}
		var req []string
		if list, ok := params["required"].([]any); ok {
			for _, r := range list {
				req = append(req, fmt.Sprint(r))
			}
		}
		if !slices.Equal(req, want.Required) {
			t.Errorf("%s: codex passed required %v, want %v", want.Name, params["required"], want.Required)
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

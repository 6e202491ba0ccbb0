package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/mcp"
	"github.com/agentproof/agentproof/server"
)

// mcpWorld is a real control-plane server on 127.0.0.1 with a fixture company whose
// run-1 (actor-1 on task-1) is open with the given capability claims.
type mcpWorld struct {
	co     *client.Company
	apiURL string
	token  string
}

func newMCPWorld(t *testing.T, capabilities ...string) *mcpWorld {
	t.Helper()
	ctx := context.Background()
	r, err := server.Start(ctx, server.Options{Home: t.TempDir()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Shutdown(ctx)
	})
	co, err := client.New(r.URL, r.BoardToken(), nil).CreateFixtureCompany(ctx, controlplane.Seed{})
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := co.OpenFixtureRun(ctx, controlplane.OpenInput{BackendKind: "mock", Capabilities: capabilities, Identity: controlplane.Identity{
		RunID: "run-1", SessionID: "s-1", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"}}); err != nil {
		t.Fatal(err)
	}
	return &mcpWorld{co: co, apiURL: r.URL + "/api/companies/" + co.ID(), token: r.MintAgentToken(co.ID(), "actor-1", "run-1")}
}

// mcpChild returns the command `agentproof mcp` (the test binary under that name, see
// TestMain) with exactly env as its environment.
func mcpChild(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("agentproof")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "mcp")
	cmd.Env = env
	return cmd
}

func callText(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestMCPChildProcess: `agentproof mcp` as a real child process, driven by the MCP SDK's
// client over its stdin/stdout, lists every tool and changes the real control plane's
// state; a denial is a tool error with the control plane's code; the presented comment
// is recorded under the state directory; closing stdin ends the process with exit 0 and
// nothing but MCP on stdout (the SDK client would have failed on anything else).
func TestMCPChildProcess(t *testing.T) {
	t.Parallel()
	w := newMCPWorld(t)
	stateDir := t.TempDir()
	var stderr bytes.Buffer
	cmd := mcpChild(t, agent.EnvAPIURL+"="+w.apiURL, agent.EnvRunToken+"="+w.token, agent.EnvRunID+"=run-1", agent.EnvStateDir+"="+stateDir)
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != len(mcp.Tools()) {
		t.Fatalf("%d tools listed, want %d", len(tools.Tools), len(mcp.Tools()))
	}
	if text, isErr := callText(t, cs, "report_progress", map[string]any{"body": "starting"}); isErr {
		t.Fatalf("report_progress: %s", text)
	}
	if text, isErr := callText(t, cs, "write_document", map[string]any{"key": "plan", "title": "Plan", "body": "1. do it"}); isErr {
		t.Fatalf("write_document: %s", text)
	}
	text, isErr := callText(t, cs, "finish_task", map[string]any{"summary": "MARKER-42"})
	if isErr {
		t.Fatalf("finish_task: %s", text)
	}
	var fin mcp.CommandResult
	if err := json.Unmarshal([]byte(text), &fin); err != nil || !fin.Presented || fin.CommentID == "" {
		t.Fatalf("finish_task result %q (%v)", text, err)
	}
	text, isErr = callText(t, cs, "block_task", map[string]any{"reason": "too late"})
	if !isErr || !strings.HasPrefix(text, "task_transition_illegal: ") || strings.Contains(text, w.token) {
		t.Fatalf("block_task on a done task = %q (isError %v), want task_transition_illegal", text, isErr)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("closing the session: %v (stderr %s)", err, stderr.String())
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("agentproof mcp exit: %v (stderr %s)", cmd.ProcessState, stderr.String())
	}
	if strings.Contains(stderr.String(), w.token) || !strings.Contains(stderr.String(), "tool=finish_task") {
		t.Fatalf("stderr log leaks the token or misses the calls:\n%s", stderr.String())
	}

	st, err := w.co.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, c := range st.Comments {
		bodies = append(bodies, c.Body)
	}
	if strings.Join(bodies, "|") != "starting|MARKER-42" || len(st.Documents) != 1 || st.Tasks[0].Status != "done" {
		t.Fatalf("state after the calls: comments %q, %d documents, task %s", bodies, len(st.Documents), st.Tasks[0].Status)
	}
	p, err := agent.ReadPresentation(stateDir, "run-1")
	if err != nil || p == nil || p.CommentID != fin.CommentID || p.Text != "MARKER-42" {
		t.Fatalf("presentation %+v, %v", p, err)
	}
}

// TestMCPRunIDFromToken: without AGENTPROOF_RUN_ID the server acts for the run its token
// names.
func TestMCPRunIDFromToken(t *testing.T) {
	t.Parallel()
	w := newMCPWorld(t)
	cmd := mcpChild(t, agent.EnvAPIURL+"="+w.apiURL, agent.EnvRunToken+"="+w.token)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	text, isErr := callText(t, cs, "get_task_context", nil)
	var rc controlplane.RunContext
	if isErr || json.Unmarshal([]byte(text), &rc) != nil || rc.RunID != "run-1" || rc.ActiveTask.ID != "task-1" {
		t.Fatalf("get_task_context = %q (isError %v)", text, isErr)
	}
}

// TestMCPMissingEnvironment: a missing required variable is exit 2 with a message naming
// it, and nothing on stdout.
func TestMCPMissingEnvironment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  []string
		want []string
	}{
		{"nothing", nil, []string{agent.EnvAPIURL + " is not set", agent.EnvRunToken + " is not set"}},
		{"no token", []string{agent.EnvAPIURL + "=http://127.0.0.1:9/api/companies/c"}, []string{agent.EnvRunToken + " is not set"}},
		{"no url", []string{agent.EnvRunToken + "=apr1.x.y", agent.EnvRunID + "=run-1"}, []string{agent.EnvAPIURL + " is not set"}},
		{"no run", []string{agent.EnvAPIURL + "=http://127.0.0.1:9/api/companies/c", agent.EnvRunToken + "=opaque"}, []string{agent.EnvRunID + " is not set"}},
		{"bad url", []string{agent.EnvAPIURL + "=http://127.0.0.1:9/", agent.EnvRunToken + "=t", agent.EnvRunID + "=run-1"}, []string{agent.EnvAPIURL}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd := mcpChild(t, c.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2 (stderr %s)", err, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q does not say %q", stderr.String(), w)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

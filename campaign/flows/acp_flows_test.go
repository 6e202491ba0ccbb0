package flows_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/internal/cli"
	"github.com/agentproof/agentproof/server"
)

// The test binary doubles as agentproof for the ACP agents the heartbeat runner
// launches: `<test binary> agent acp-<reference|nop|wrong>` and `<test binary> mcp`
// (the MCP server of session/new) run the real command line.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "agent" || os.Args[1] == "mcp") {
		os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// acpWorld is one company on an in-process server with its heartbeat runner (package
// server's Serve), an agent with driver acp:<name> and a task assigned to it.
type acpWorld struct {
	co        *client.Company
	task      string
	workspace string
}

func newACPWorld(t *testing.T, rc *catalog.RenderedCase, driver string) *acpWorld {
	t.Helper()
	ctx := context.Background()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sv, err := server.Serve(ctx, server.Options{Home: t.TempDir()}, "127.0.0.1:0", server.RunnerOptions{Executable: exe, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	co, err := client.New(sv.URL, sv.BoardToken(), nil).CreateCompany(ctx, "acp flows", "ACP")
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w := &acpWorld{co: co, workspace: t.TempDir()}
	builtin, err := json.Marshal(agent.BuiltinConfig{Schema: agent.BuiltinConfigSchema, Nonce: rc.Nonce, Reference: rc.Reference})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]any{"driver": driver, "builtin": json.RawMessage(builtin), "cwd": w.workspace,
		"driverConfig": map[string]any{"turnTimeoutMs": 60000, "cancelGraceMs": 10000}})
	if err != nil {
		t.Fatal(err)
	}
	ag, err := co.CreateAgent(ctx, api.CreateAgentRequest{Name: "acp agent", Role: "engineer", AdapterConfig: cfg, CapabilityGrants: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := co.CreateIssue(ctx, api.CreateIssueRequest{Title: rc.Title, Description: &rc.Prompt, AssigneeActorID: &ag.ID})
	if err != nil {
		t.Fatal(err)
	}
	w.task = task.ID
	return w
}

// TestACPFlows plays the native-boundary flows against the real server and heartbeat
// runner with agentproof's own ACP agents as real child processes: the reference agent
// meets each flow's contract and leaves the state the case's oracle expects (the file,
// the permission's status, the run's and task's status, a late answer refused with
// 409); the nop agent, which never asks permission, breaks every flow's contract; the
// wrong agent, which ignores its answers and the Stop, writes the file anyway.
func TestACPFlows(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default(catalog.WithFlows(flows.Implemented()...))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		caseID, driver string
		problem        string // a substring of a problem, "" for none
		perm           api.PermissionStatus
		run            controlplane.RunStatus
		task           controlplane.TaskStatus
		file           string // the workspace file's content, "" for absent
	}{
		{caseID: "permission-approve-write", driver: "acp:reference", perm: api.PermissionApproved, run: controlplane.RunSucceeded, task: controlplane.TaskDone, file: "proof-"},
		{caseID: "permission-deny-write", driver: "acp:reference", perm: api.PermissionDeclined, run: controlplane.RunSucceeded, task: controlplane.TaskDone},
		{caseID: "pending-permission-stop", driver: "acp:reference", perm: api.PermissionCancelled, run: controlplane.RunCancelled, task: controlplane.TaskInProgress},
		{caseID: "permission-approve-write", driver: "acp:nop", problem: "did not ask permission", run: controlplane.RunSucceeded},
		{caseID: "pending-permission-stop", driver: "acp:nop", problem: "did not ask permission", run: controlplane.RunSucceeded},
		{caseID: "pending-permission-stop", driver: "acp:wrong", perm: api.PermissionCancelled, run: controlplane.RunCancelled, file: "proof-"},
		{caseID: "permission-deny-write", driver: "acp:wrong", perm: api.PermissionDeclined, file: "proof-"},
	}
	for _, tt := range tests {
		t.Run(tt.caseID+"/"+tt.driver, func(t *testing.T) {
			t.Parallel()
			cell := c.Cell("native-boundaries.acp-reference.local." + tt.caseID)
			if cell == nil {
				t.Fatalf("no cell for case %s", tt.caseID)
			}
			rc, err := cell.Render("0123456789abcdef")
			if err != nil {
				t.Fatal(err)
			}
			w := newACPWorld(t, rc, tt.driver)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := &flows.Session{Board: w.co, TaskID: w.task, Case: cell.Case, Rendered: rc, Workspace: w.workspace, Poll: 10 * time.Millisecond, Log: t.Logf}
			out := flows.Run(ctx, s)
			if out.Err != nil {
				t.Fatalf("flow error: %v", out.Err)
			}
			problems := strings.Join(out.Problems, "; ")
			if (tt.problem == "") != (problems == "") || !strings.Contains(problems, tt.problem) {
				t.Errorf("problems %q, want %q", problems, tt.problem)
			}
			st, err := w.co.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range st.Runs {
				if tt.run != "" && r.Status != tt.run {
					t.Errorf("run %s is %s, want %s", r.ID, r.Status, tt.run)
				}
			}
			for _, task := range st.Tasks {
				if task.ID == w.task && tt.task != "" && task.Status != tt.task {
					t.Errorf("task is %s, want %s", task.Status, tt.task)
				}
			}
			perms, err := w.co.Permissions(ctx, w.task)
			if err != nil {
				t.Fatal(err)
			}
			if tt.perm == "" && len(perms) != 0 || tt.perm != "" && (len(perms) != 1 || perms[0].Status != tt.perm) {
				t.Errorf("permissions %+v, want one %s", perms, tt.perm)
			}
			if len(perms) > 0 {
				// Whatever closed it, a closed permission refuses every further answer.
				_, err := w.co.DecidePermission(ctx, perms[0].ID, api.PermissionDecline)
				var ce *controlplane.Error
				if !errors.As(err, &ce) || ce.Code != controlplane.CodeInteractionAlreadyResolved {
					t.Errorf("a repeated answer: %v, want %s", err, controlplane.CodeInteractionAlreadyResolved)
				}
			}
			b, err := os.ReadFile(w.workspace + "/" + rc.WorkspaceFile)
			switch {
			case tt.file == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("the workspace file exists (%q, %v), want absent", b, err)
			case tt.file != "" && (err != nil || !strings.HasPrefix(string(b), tt.file)):
				t.Errorf("the workspace file is %q (%v), want %q…", b, err, tt.file)
			}
			recs, err := w.co.HeartbeatRuns(ctx)
			if err != nil || len(recs) != 1 || recs[0].ACP == nil || recs[0].Launch == nil || recs[0].Launch.AdapterType != "acp_"+strings.TrimPrefix(tt.driver, "acp:") {
				t.Fatalf("heartbeat records %+v, %v: want one ACP run with launch facts", recs, err)
			}
			if a := recs[0].ACP; a.PID != recs[0].Launch.PID || a.ProcessStartTicks == 0 {
				t.Errorf("ACP turn identity %d/%d, launch pid %d", a.PID, a.ProcessStartTicks, recs[0].Launch.PID)
			}
		})
	}
}

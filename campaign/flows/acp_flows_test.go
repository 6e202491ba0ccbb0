package flows_test

import (
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
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/internal/cli"
	"github.com/agentproof/agentproof/internal/raceexit"
	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/server/heartbeat"
)

// The test binary doubles as agentproof for the ACP agents the heartbeat runner
// launches: `<test binary> agent acp-<reference|nop|wrong>` and `<test binary> mcp`
// (the MCP server of session/new) run the real command line, and under a sandbox
// lease `<test binary> sandbox-init` is the real init.
func TestMain(m *testing.M) {
	// As a child process, this binary exits without the race detector's sleep.
	raceexit.Main()
	if len(os.Args) > 1 && (os.Args[1] == "agent" || os.Args[1] == "mcp" || os.Args[1] == sandbox.InitCommand) {
		os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	agent.RegisterDrivers()
	os.Exit(m.Run())
}

// acpWorld is one company on an in-process server with its heartbeat runner (package
// server's Serve), an agent with driver acp:<name> and a task assigned to it.
type acpWorld struct {
	co        *client.Company
	task      string
	workspace string
	home      string // the instance home
	lease     *environment.Lease
}

func newACPWorld(t *testing.T, rc *catalog.RenderedCase, driver string) *acpWorld {
	t.Helper()
	return newACPWorldWith(t, rc, driver, api.LifecyclePerTurn, nil)
}

// newACPWorldWith is newACPWorld with the agent's lifecycle mode; stop, when not nil,
// is set to a function that shuts the server down (idempotent with the cleanup).
func newACPWorldWith(t *testing.T, rc *catalog.RenderedCase, driver string, lifecycle api.LifecycleMode, stop *func() error) *acpWorld {
	return newACPWorldIn(t, rc, driver, lifecycle, stop, false)
}

// newACPWorldIn is newACPWorldWith whose agent, when sandboxed, runs in a sandbox
// environment: a real bubblewrap lease (the control plane on its allowlist, its bridge
// started) named by a control-plane environment of kind sandbox, destroyed after the
// server's shutdown (its cleanup must be confirmed).
func newACPWorldIn(t *testing.T, rc *catalog.RenderedCase, driver string, lifecycle api.LifecycleMode, stop *func() error, sandboxed bool) *acpWorld {
	t.Helper()
	ctx := context.Background()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var (
		prov      *sandbox.Provider
		lease     *environment.Lease
		bridge    *sandbox.Bridge
		leaseRoot string
	)
	if sandboxed {
		prov = sandbox.New(sandbox.Options{Executable: exe})
		leaseRoot = t.TempDir() // before the cleanup below: removed after it
		// Registered first, so it runs after the server's shutdown (cleanups are LIFO).
		t.Cleanup(func() {
			if bridge != nil {
				bridge.Close()
			}
			if lease != nil {
				if rep := prov.Cleanup(context.Background(), lease); !rep.Confirmed {
					t.Errorf("lease cleanup not confirmed: %s", rep.Reason())
				}
			}
		})
	}
	sv, co, home := serveCompany(t, server.RunnerOptions{Executable: exe}, stop)
	w := &acpWorld{co: co, workspace: t.TempDir(), home: home}
	builtin, err := json.Marshal(agent.BuiltinConfig{Schema: agent.BuiltinConfigSchema, Nonce: rc.Nonce, Reference: rc.Reference})
	if err != nil {
		t.Fatal(err)
	}
	adapter := map[string]any{"driver": driver, "builtin": json.RawMessage(builtin), "cwd": w.workspace, "lifecycleMode": lifecycle,
		"driverConfig": map[string]any{"turnTimeoutMs": 60000, "cancelGraceMs": 10000}}
	if sandboxed {
		cp := sv.Addr
		lease, err = prov.Setup(ctx, environment.LeaseSpec{EnvironmentID: "sandbox", Root: leaseRoot,
			Shape:     environment.Shape{CPUCores: 1, MemoryBytes: 1 << 30, PIDs: 256, DiskBytes: 256 << 20},
			Endpoints: []environment.Endpoint{{Name: "cp", Kind: environment.EndpointControlPlane, Listen: cp, Dial: cp}}})
		if err != nil {
			t.Fatal(err)
		}
		if bridge, err = sandbox.StartBridge(lease); err != nil {
			t.Fatal(err)
		}
		envCfg, _ := json.Marshal(map[string]string{"lease": lease.LeaseFile()})
		env, err := co.CreateEnvironment(ctx, api.CreateEnvironmentRequest{Name: "sandbox", Kind: string(environment.ProviderSandbox), Config: envCfg})
		if err != nil {
			t.Fatal(err)
		}
		w.workspace, w.lease = lease.Workspace, lease
		adapter["cwd"], adapter["environmentId"] = lease.Workspace, env.ID
	}
	cfg, err := json.Marshal(adapter)
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

// serveCompany starts the real server with its heartbeat runner (ro, polling every
// 20 ms) on a fresh home and creates and starts a company on it; stop,
// when not nil, is set to a function that shuts the server down (idempotent with the
// test's cleanup, which does it too).
func serveCompany(t *testing.T, ro server.RunnerOptions, stop *func() error) (*server.Serving, *client.Company, string) {
	t.Helper()
	ctx := context.Background()
	home := t.TempDir()
	ro.PollInterval = 20 * time.Millisecond
	sv, err := server.Serve(ctx, server.Options{Home: home}, "127.0.0.1:0", ro)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var shutErr error
	shutdown := func() error {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			shutErr = sv.Shutdown(ctx)
		})
		return shutErr
	}
	if stop != nil {
		*stop = shutdown
	}
	t.Cleanup(func() {
		if err := shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	co, err := client.New(sv.URL, sv.BoardToken(), nil).CreateCompany(ctx, "flows", "FLO")
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return sv, co, home
}

// TestACPFlows plays the native-boundary flows against the real server and heartbeat
// runner with agentproof's own ACP agents as real child processes: the reference agent
// meets each flow's contract and leaves the state the case's oracle expects (the file,
// the permission's status, the run's and task's status, a late answer refused with
// 409); the nop agent, which never asks permission, breaks every flow's contract; the
// wrong agent, which ignores its answers and the Stop, writes the file anyway.
func TestACPFlows(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default(catalog.WithFlows(flows.Contracts()...))
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
		covered        bool   // absent at the end, but written meanwhile (the watcher saw it)
	}{
		{caseID: "permission-approve-write", driver: "acp:reference", perm: api.PermissionApproved, run: controlplane.RunSucceeded, task: controlplane.TaskDone, file: "proof-"},
		{caseID: "permission-deny-write", driver: "acp:reference", perm: api.PermissionDeclined, run: controlplane.RunSucceeded, task: controlplane.TaskDone},
		{caseID: "pending-permission-stop", driver: "acp:reference", perm: api.PermissionCancelled, run: controlplane.RunCancelled, task: controlplane.TaskInProgress},
		{caseID: "permission-approve-write", driver: "acp:nop", problem: "did not ask permission", run: controlplane.RunSucceeded},
		{caseID: "pending-permission-stop", driver: "acp:nop", problem: "did not ask permission", run: controlplane.RunSucceeded},
		{caseID: "permission-deny-write", driver: "acp:nop", problem: "did not ask permission to write", run: controlplane.RunSucceeded},
		{caseID: "pending-permission-stop", driver: "acp:wrong", perm: api.PermissionCancelled, run: controlplane.RunCancelled, file: "proof-"},
		{caseID: "permission-deny-write", driver: "acp:wrong", perm: api.PermissionDeclined, file: "proof-"},
		// The covering agent leaves the state of the reference: only the watch shows the write.
		{caseID: "permission-deny-write", driver: "acp:wrong-undo", perm: api.PermissionDeclined, run: controlplane.RunSucceeded, task: controlplane.TaskDone, covered: true},
		{caseID: "pending-permission-stop", driver: "acp:wrong-undo", perm: api.PermissionCancelled, run: controlplane.RunCancelled, task: controlplane.TaskInProgress, covered: true},
		// The approvals that do not cover the write leave the reference's state (only
		// permission_order, graded by the campaign, sees the order).
		{caseID: "permission-approve-write", driver: "acp:write-first", perm: api.PermissionApproved, run: controlplane.RunSucceeded, task: controlplane.TaskDone, file: "proof-"},
		{caseID: "permission-approve-write", driver: "acp:ask-other", perm: api.PermissionApproved, run: controlplane.RunSucceeded, task: controlplane.TaskDone, file: "proof-"},
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
			var logged []string
			logf := func(format string, args ...any) {
				logged = append(logged, fmt.Sprintf(format, args...))
				t.Logf(format, args...)
			}
			s := &flows.Session{Board: w.co, TaskID: w.task, Case: cell.Case, Rendered: rc, Workspace: w.workspace, Poll: 10 * time.Millisecond, Log: logf}
			out := flows.Run(ctx, s)
			if out.Err != nil {
				t.Fatalf("flow error: %v", out.Err)
			}
			if tt.caseID == "pending-permission-stop" && tt.perm != "" {
				// After Stop the human's late answer is a decline only, refused and
				// changing nothing; the pending request's receipt is in the log.
				all := strings.Join(logged, "\n")
				for _, want := range []string{"pending permission receipt: id ", "state before the Stop pending", "declining the closed permission", "was refused (interaction_already_resolved) and changed nothing"} {
					if !strings.Contains(all, want) {
						t.Errorf("the flow log lacks %q:\n%s", want, all)
					}
				}
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
			// The workspace watcher saw the run from before its prompt to the process's
			// exit: a write of the file is an event on it, and no write is none.
			ww := recs[0].WorkspaceWatch
			if ww == nil || !ww.Complete {
				t.Fatalf("workspace watch %+v, want a complete one", ww)
			}
			touched := false
			for _, e := range ww.Events {
				touched = touched || e.Path == rc.WorkspaceFile
			}
			if want := tt.file != "" || tt.covered; touched != want {
				t.Errorf("workspace events %+v: the file touched %v, want %v", ww.Events, touched, want)
			}
		})
	}
}

// TestACPWarmFlow plays flow warm_three_turn with the ACP reference agent as a real
// child process under both lifecycles, against the real server and runner: warm, one
// agent process and one ACP session serve the three runs (the same pid and start time
// in every run's ACP turn, the session reused from the second run on, its turns
// numbered 1…3), every run's MCP calls act for that run (each run presents its own
// marker), and the server's shutdown retires the process (a warm record with the three
// runs and a confirmed exit); per_turn, every run has a process and a session of its
// own. Either way the file holds the three lines and every append was approved.
func TestACPWarmFlow(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default(catalog.WithFlows(flows.Contracts()...))
	if err != nil {
		t.Fatal(err)
	}
	cell := c.Cell("native-boundaries-warm.acp-reference-warm.local.acp-warm-three-turn")
	if cell == nil {
		t.Fatal("no warm ACP cell")
	}
	for _, lifecycle := range []api.LifecycleMode{api.LifecycleWarm, api.LifecyclePerTurn} {
		t.Run(string(lifecycle), func(t *testing.T) {
			t.Parallel()
			rc, err := cell.Render("fedcba9876543210")
			if err != nil {
				t.Fatal(err)
			}
			var stop func() error
			w := newACPWorldWith(t, rc, "acp:reference", lifecycle, &stop)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			s := &flows.Session{Board: w.co, TaskID: w.task, Case: cell.Case, Rendered: rc, Workspace: w.workspace, Poll: 10 * time.Millisecond, Log: t.Logf}
			out := flows.Run(ctx, s)
			if out.Err != nil || len(out.Problems) > 0 {
				t.Fatalf("flow: %v, problems %v", out.Err, out.Problems)
			}
			b, err := os.ReadFile(w.workspace + "/" + rc.WorkspaceFile)
			if want := "T1-" + rc.Nonce + "\nT2-" + rc.Nonce + "\nT3-" + rc.Nonce + "\n"; err != nil || string(b) != want {
				t.Errorf("workspace file %q (%v), want %q", b, err, want)
			}
			perms, err := w.co.Permissions(ctx, w.task)
			if err != nil || len(perms) != 3 {
				t.Fatalf("permissions %+v, %v: want three", perms, err)
			}
			for _, p := range perms {
				if p.Status != api.PermissionApproved {
					t.Errorf("permission %s is %s", p.ID, p.Status)
				}
			}
			recs, err := w.co.HeartbeatRuns(ctx)
			if err != nil || len(recs) != 3 {
				t.Fatalf("heartbeat records %+v, %v: want three", recs, err)
			}
			st, err := w.co.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range recs {
				a := r.ACP
				if a == nil || a.PID == 0 || a.ProcessStartTicks == 0 || r.Status != controlplane.RunSucceeded || a.Lifecycle != lifecycle {
					t.Fatalf("run %d: %+v (acp %+v)", i+1, r, a)
				}
				first := recs[0].ACP
				same := a.PID == first.PID && a.ProcessStartTicks == first.ProcessStartTicks && a.SessionIndex == first.SessionIndex
				switch lifecycle {
				case api.LifecycleWarm:
					if !same || a.Turn != i+1 || a.Reused != (i > 0) || a.Exit != "" {
						t.Errorf("warm run %d: pid %d/%d session %d turn %d reused %v exit %q; first pid %d/%d session %d", i+1, a.PID, a.ProcessStartTicks,
							a.SessionIndex, a.Turn, a.Reused, a.Exit, first.PID, first.ProcessStartTicks, first.SessionIndex)
					}
				default:
					if (i > 0 && same) || a.Turn != 1 || a.Reused || a.Exit == "" {
						t.Errorf("per_turn run %d: pid %d session %d turn %d reused %v exit %q", i+1, a.PID, a.SessionIndex, a.Turn, a.Reused, a.Exit)
					}
				}
				var run *controlplane.Run
				for _, x := range st.Runs {
					if x.ID == r.RunID {
						run = x
					}
				}
				if msg := st.RunMessage(run); run == nil || !strings.Contains(msg, rc.TurnMarkers[i]) {
					t.Errorf("run %d presented %q, want %s", i+1, msg, rc.TurnMarkers[i])
				}
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			warm, _ := filepath.Glob(filepath.Join(w.home, "heartbeat", heartbeat.WarmDir, "*.json"))
			if lifecycle != api.LifecycleWarm {
				if len(warm) != 0 {
					t.Errorf("per_turn left warm records %v", warm)
				}
				return
			}
			if len(warm) != 1 {
				t.Fatalf("warm records %v, want one", warm)
			}
			var wr heartbeat.WarmRecord
			raw, err := os.ReadFile(warm[0])
			if err != nil || json.Unmarshal(raw, &wr) != nil {
				t.Fatalf("warm record %s: %v", raw, err)
			}
			if len(wr.Runs) != 3 || wr.PID != recs[0].ACP.PID || wr.Exit.ExitCode == nil && wr.Exit.Signal == "" || len(wr.Exit.Escaped) != 0 {
				t.Errorf("warm record %+v", wr)
			}
			if strings.Contains(string(raw), "apr1.") {
				t.Errorf("the warm record holds a run token: %s", raw)
			}
		})
	}
}

// TestACPFlowsSandbox plays the native-boundary flows with the ACP agent process
// launched inside a real sandbox lease (docs/acp.md "Under a sandbox"): the reference
// agent meets each flow's contract from inside the sandbox (its MCP server reaches
// the control plane through the lease's bridge), the wrong agent's write is seen by
// the host's workspace watcher, every run's termination carries the sandbox
// provider's facts (its lease) and the agent's own exit, and under the warm
// lifecycle one sandboxed process serves three runs and is retired at shutdown
// before the lease's cleanup, which must be confirmed. Skipped (failed under CI) when
// this machine cannot run the sandbox.
func TestACPFlowsSandbox(t *testing.T) {
	t.Parallel()
	if rep := sandbox.New(sandbox.Options{}).Probe(context.Background()); !rep.Available {
		if os.Getenv("CI") != "" {
			t.Fatalf("the sandbox provider is unavailable: %+v", rep.Checks)
		}
		t.Skipf("the sandbox provider is unavailable here: %+v", rep.Checks)
	}
	c, err := catalog.Default(catalog.WithFlows(flows.Contracts()...))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cellID, driver string
		lifecycle      api.LifecycleMode
		runs           int
		problem        string
		touched        bool
	}{
		{cellID: "native-boundaries.acp-reference.sandbox.permission-approve-write", driver: "acp:reference", runs: 1, touched: true},
		{cellID: "native-boundaries.acp-reference.sandbox.permission-deny-write", driver: "acp:reference", runs: 1},
		{cellID: "native-boundaries.acp-reference.sandbox.pending-permission-stop", driver: "acp:reference", runs: 1},
		{cellID: "native-boundaries.acp-reference.sandbox.permission-deny-write", driver: "acp:wrong", runs: 1, touched: true},
		{cellID: "native-boundaries-warm.acp-reference-warm.sandbox.acp-warm-three-turn", driver: "acp:reference", lifecycle: api.LifecycleWarm, runs: 3, touched: true},
	}
	for _, tt := range tests {
		t.Run(tt.cellID[strings.LastIndexByte(tt.cellID, '.')+1:]+"/"+tt.driver, func(t *testing.T) {
			t.Parallel()
			cell := c.Cell(tt.cellID)
			if cell == nil {
				t.Fatalf("no cell %s", tt.cellID)
			}
			rc, err := cell.Render("0123456789abcdef")
			if err != nil {
				t.Fatal(err)
			}
			lifecycle := tt.lifecycle
			if lifecycle == "" {
				lifecycle = api.LifecyclePerTurn
			}
			var stop func() error
			w := newACPWorldIn(t, rc, tt.driver, lifecycle, &stop, true)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			s := &flows.Session{Board: w.co, TaskID: w.task, Case: cell.Case, Rendered: rc, Workspace: w.workspace, Poll: 10 * time.Millisecond, Log: t.Logf}
			out := flows.Run(ctx, s)
			if out.Err != nil || strings.Join(out.Problems, "; ") != tt.problem {
				t.Fatalf("flow: %v, problems %q, want %q", out.Err, out.Problems, tt.problem)
			}
			recs, err := w.co.HeartbeatRuns(ctx)
			if err != nil || len(recs) != tt.runs {
				t.Fatalf("heartbeat records %+v, %v: want %d", recs, err, tt.runs)
			}
			touched := false
			for i, r := range recs {
				if r.ACP == nil || r.WorkspaceWatch == nil || !r.WorkspaceWatch.Complete {
					t.Fatalf("run %d: acp %+v watch %+v", i+1, r.ACP, r.WorkspaceWatch)
				}
				for _, e := range r.WorkspaceWatch.Events {
					touched = touched || e.Path == rc.WorkspaceFile
				}
				if tt.lifecycle == api.LifecycleWarm {
					if r.ACP.PID != recs[0].ACP.PID || r.ACP.ProcessStartTicks != recs[0].ACP.ProcessStartTicks || r.ACP.Turn != i+1 {
						t.Errorf("warm run %d: pid %d/%d turn %d, first %d/%d", i+1, r.ACP.PID, r.ACP.ProcessStartTicks, r.ACP.Turn, recs[0].ACP.PID, recs[0].ACP.ProcessStartTicks)
					}
					continue
				}
				// The provider's account: the agent ran in this lease, its own exit.
				env := r.Termination.Environment
				if env["provider"] != string(environment.ProviderSandbox) || env["lease"] != w.lease.ID || env["agentPid"] == "" || r.Termination.ExitCode == nil {
					t.Errorf("run %d termination %+v: want the sandbox's facts and the agent's exit", i+1, r.Termination)
				}
			}
			if touched != tt.touched {
				t.Errorf("the workspace file touched %v, want %v", touched, tt.touched)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if tt.lifecycle != api.LifecycleWarm {
				return
			}
			warm, _ := filepath.Glob(filepath.Join(w.home, "heartbeat", heartbeat.WarmDir, "*.json"))
			if len(warm) != 1 {
				t.Fatalf("warm records %v, want one", warm)
			}
			var wr heartbeat.WarmRecord
			raw, err := os.ReadFile(warm[0])
			if err != nil || json.Unmarshal(raw, &wr) != nil {
				t.Fatalf("warm record %s: %v", raw, err)
			}
			if len(wr.Runs) != 3 || wr.Environment == nil || wr.Environment.Facts["lease"] != w.lease.ID || wr.Exit.ExitCode == nil && wr.Exit.Signal == "" {
				t.Errorf("warm record %s: want three runs in lease %s with the agent's exit", raw, w.lease.ID)
			}
		})
	}
}

package flows_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/mcp"
	"github.com/agentproof/agentproof/server"
)

// piCLI locates the pinned Pi (its entry script) and the Node.js that runs it. The Pi
// flows need the real CLI: -short skips them, and so does a machine where Pi is not
// installed — except in CI, where a missing Pi fails (as every real-CLI test does).
func piCLI(t *testing.T) (binary, node string) {
	t.Helper()
	if testing.Short() {
		t.Skip("the Pi flows run the pinned Pi CLI (-short)")
	}
	c, ok := clis.Lookup("pi")
	if !ok {
		t.Fatal("no pinned package pi")
	}
	dir := os.Getenv("AGENTPROOF_AGENTS_DIR")
	if dir == "" {
		dir, _ = clis.DefaultDir()
	}
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	var ni *clis.NotInstalledError
	switch {
	case errors.As(err, &ni) && os.Getenv("CI") == "":
		t.Skipf("pi is not installed: run `go run ./cmd/agentproof agents install pi` (or set AGENTPROOF_AGENTS_DIR); CI fails instead of skipping")
	case err != nil:
		t.Fatalf("locating pi: %v", err)
	}
	node, err = clis.Node(context.Background(), []string{"PATH=/usr/local/bin:/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	return in.Binary, node
}

// piTools are the semantic tools as agentproof's Pi extension registers them (the
// command line's serve hands the same to its runner).
func piTools() []agent.PiTool {
	var out []agent.PiTool
	for _, t := range mcp.Tools() {
		out = append(out, agent.PiTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return out
}

// piWorld is one company on an in-process server with its heartbeat runner, the
// scripted model Pi talks to, and a task assigned to a Pi agent (driver rpc:pi, per
// turn) in its own workspace.
type piWorld struct {
	co        *client.Company
	task      string
	workspace string
	model     *scriptedmodel.RunSet
}

// newPiWorld starts the scripted model with the scripts of the cell's profile — the
// flow's own (flows.ModelScripts) for the oracle profile, text-only answers for the
// nop profile (driverConfig script: nop) — and the server, and assigns the rendered
// case's task to a Pi agent configured as the attempt configures it (the profile's
// driverConfig with the pinned binary, Node.js and the model's URL).
func newPiWorld(t *testing.T, cell *catalog.Cell, rc *catalog.RenderedCase) *piWorld {
	t.Helper()
	binary, node := piCLI(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &piWorld{workspace: t.TempDir()}
	dc := map[string]any{}
	for k, v := range cell.Profile.DriverConfig {
		dc[k] = v
	}
	var scripts []*scriptedmodel.Script
	if dc["script"] == "nop" {
		scripts = scriptedmodel.NopScripts(cell.Case.ExpectedRunCount)
	} else if scripts, err = flows.ModelScripts(flows.ModelInput{Case: cell.Case, Rendered: rc, Profile: cell.Profile, Workspace: w.workspace}); err != nil {
		t.Fatal(err)
	}
	if w.model, err = scriptedmodel.NewRunSet(scripts, scriptedmodel.Options{}); err != nil {
		t.Fatal(err)
	}
	running, err := w.model.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = running.Close(context.Background()) })
	_, co, _ := serveCompany(t, server.RunnerOptions{Executable: exe, PiTools: piTools()}, nil) // the server stops before the model
	w.co = co
	delete(dc, "script")
	dc["binary"], dc["node"], dc["modelBaseUrl"] = binary, node, running.URL
	cfg, err := json.Marshal(map[string]any{"driver": cell.Profile.Driver.String(), "cwd": w.workspace, "lifecycleMode": api.LifecyclePerTurn, "driverConfig": dc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ag, err := co.CreateAgent(ctx, api.CreateAgentRequest{Name: "pi agent", Role: "engineer", AdapterConfig: cfg, CapabilityGrants: []string{}})
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

// piEnd is what a Pi flow's cell left: the task's one run, its status and message, the
// task's status, the run's Pi turn, the task's interactions and the workspace file
// (nil when absent).
type piEnd struct {
	run          *controlplane.Run
	message      string
	task         controlplane.TaskStatus
	pi           *api.SessionTurn
	interactions []*controlplane.Interaction
	file         []byte
}

// TestPiFlows plays the Pi flows against the real server and heartbeat runner with the
// pinned Pi CLI as a real child process talking to the scripted model the flow
// derives (docs/pi.md): with the oracle model Pi meets each flow's contract and leaves
// what the case's oracle grades (the question answered, negated or cancelled by the
// Stop, the steer or follow-up delivered into the running turn, the marker as the
// run's final reply); with the model that only talks (profile pi-nop) Pi asks nothing
// and holds nothing, and every flow's contract is broken (a problem, the candidate's),
// never a fault of the harness.
func TestPiFlows(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default(catalog.WithFlows(flows.Contracts()...))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		caseID  string
		nop     bool
		problem string // a substring of a problem, "" for none
		check   func(t *testing.T, rc *catalog.RenderedCase, e piEnd)
	}{
		{caseID: "pi-native-question", check: func(t *testing.T, _ *catalog.RenderedCase, e piEnd) {
			wantRun(t, e, controlplane.RunSucceeded, controlplane.TaskDone)
			wantQuestion(t, e, api.QuestionTurn{Method: "input", By: "decider", Outcome: "answered"})
			if !strings.HasPrefix(string(e.file), "v-") {
				t.Errorf("the workspace file holds %q, want the flow's undisclosed answer", e.file)
			}
		}},
		{caseID: "pi-question-stop", check: func(t *testing.T, _ *catalog.RenderedCase, e piEnd) {
			wantRun(t, e, controlplane.RunCancelled, controlplane.TaskInReview)
			wantQuestion(t, e, api.QuestionTurn{Method: "input", By: "cancel", Outcome: "cancelled"})
			if e.pi.StopReason != "aborted" || !e.pi.CancelHonoured || e.file != nil {
				t.Errorf("stop reason %q, cancel honoured %v, file %q: want aborted, honoured, no file", e.pi.StopReason, e.pi.CancelHonoured, e.file)
			}
			if len(e.interactions) != 1 || e.interactions[0].Status != controlplane.InteractionExpired {
				t.Errorf("interactions %+v, want the question expired", e.interactions)
			}
		}},
		{caseID: "pi-confirm-negative", check: func(t *testing.T, _ *catalog.RenderedCase, e piEnd) {
			wantRun(t, e, controlplane.RunSucceeded, controlplane.TaskDone)
			wantQuestion(t, e, api.QuestionTurn{Method: "confirm", By: "decider", Outcome: "negative_or_cancelled"})
			if string(e.file) != "false" {
				t.Errorf("the workspace file holds %q, want false (the answer Pi gave the agent)", e.file)
			}
		}},
		{caseID: "pi-steering", check: func(t *testing.T, rc *catalog.RenderedCase, e piEnd) {
			wantRun(t, e, controlplane.RunSucceeded, controlplane.TaskDone)
			if len(e.pi.Steers) != 1 || !e.pi.Steers[0].Delivered || len(e.pi.FollowUps) != 0 || e.message != rc.Marker {
				t.Errorf("steers %+v, follow-ups %+v, message %q: want one steer delivered and %s", e.pi.Steers, e.pi.FollowUps, e.message, rc.Marker)
			}
		}},
		{caseID: "pi-follow-up", check: func(t *testing.T, rc *catalog.RenderedCase, e piEnd) {
			wantRun(t, e, controlplane.RunSucceeded, controlplane.TaskDone)
			if len(e.pi.FollowUps) != 1 || !e.pi.FollowUps[0].Delivered || len(e.pi.Steers) != 0 || e.message != rc.Marker {
				t.Errorf("follow-ups %+v, steers %+v, message %q: want one follow-up delivered and %s", e.pi.FollowUps, e.pi.Steers, e.message, rc.Marker)
			}
		}},
		{caseID: "pi-native-question", nop: true, problem: "asked no native question"},
		{caseID: "pi-question-stop", nop: true, problem: "asked no native question"},
		{caseID: "pi-confirm-negative", nop: true, problem: "asked no native question"},
		{caseID: "pi-steering", nop: true, problem: "run 1 ended before the steering comment reached its turn"},
		{caseID: "pi-follow-up", nop: true, problem: "run 1 ended before the follow-up comment reached its turn"},
	}
	for _, tt := range tests {
		profile := "pi"
		if tt.nop {
			profile = "pi-nop"
		}
		t.Run(tt.caseID+"/"+profile, func(t *testing.T) {
			t.Parallel()
			cell := c.Cell("pi-native." + profile + ".local." + tt.caseID)
			if cell == nil {
				t.Fatalf("no cell for case %s and profile %s", tt.caseID, profile)
			}
			rc, err := cell.Render("0123456789abcdef")
			if err != nil {
				t.Fatal(err)
			}
			w := newPiWorld(t, cell, rc)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			s := &flows.Session{Board: w.co, TaskID: w.task, Case: cell.Case, Rendered: rc, Workspace: w.workspace, Poll: 20 * time.Millisecond, Log: t.Logf,
				ReleaseModel: w.model.Release, ModelHolding: w.model.Holding}
			out := flows.Run(ctx, s)
			if out.Err != nil {
				t.Fatalf("flow error: %v", out.Err)
			}
			problems := strings.Join(out.Problems, "; ")
			if (tt.problem == "") != (problems == "") || !strings.Contains(problems, tt.problem) {
				t.Fatalf("problems %q, want %q", problems, tt.problem)
			}
			if tt.check != nil {
				tt.check(t, rc, w.end(ctx, t, rc))
			}
		})
	}
}

// end reads what the cell left on the board and in the workspace.
func (w *piWorld) end(ctx context.Context, t *testing.T, rc *catalog.RenderedCase) piEnd {
	t.Helper()
	st, err := w.co.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := w.co.HeartbeatRuns(ctx)
	if err != nil || len(recs) != 1 || recs[0].Pi == nil || len(st.Runs) != 1 {
		t.Fatalf("heartbeat records %+v (%v), %d runs: want one Pi run", recs, err, len(st.Runs))
	}
	e := piEnd{run: st.Runs[0], message: st.RunMessage(st.Runs[0]), pi: recs[0].Pi}
	for _, task := range st.Tasks {
		if task.ID == w.task {
			e.task = task.Status
		}
	}
	for _, in := range st.Interactions {
		if in.TaskID == w.task {
			e.interactions = append(e.interactions, in)
		}
	}
	if rc.WorkspaceFile != "" {
		if b, err := os.ReadFile(filepath.Join(w.workspace, rc.WorkspaceFile)); err == nil {
			e.file = b
		}
	}
	return e
}

func wantRun(t *testing.T, e piEnd, run controlplane.RunStatus, task controlplane.TaskStatus) {
	t.Helper()
	if e.run.Status != run || e.task != task {
		t.Errorf("run %s is %s and the task %s, want %s and %s (Pi turn: %+v)", e.run.ID, e.run.Status, e.task, run, task, *e.pi)
	}
}

func wantQuestion(t *testing.T, e piEnd, want api.QuestionTurn) {
	t.Helper()
	if len(e.pi.Questions) != 1 || e.pi.Questions[0] != want {
		t.Errorf("questions %+v, want one %+v", e.pi.Questions, want)
	}
}

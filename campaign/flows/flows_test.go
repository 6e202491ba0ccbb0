package flows

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentproof/agentproof/agent/reference"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/verdict"
)

// The flows play the human against the real control-plane server package, in process
// (httptest, no child process). The agent side is played in process too, by the
// built-in reference agent's own code (package agent/reference) through the board
// token, which may act on any run: "reference" carries out the case's reference
// script, "nop" ends every run without work, "idle" never takes a wake.

// planApprovalCase is a case of flow plan_approval_completion (no default case uses
// the flow): the agent publishes a plan and asks for its approval, then finishes.
const planApprovalCase = `
cases:
  - id: plan-approval
    label: Plan, approval, completion
    groups: [core]
    workMode: planning
    flow: plan_approval_completion
    expectedRunCount: 2
    attemptTimeoutMs: {local: 60000}
    expectedTerminalState: {issue: done, run: succeeded}
    title: "Plan approval {{nonce}}"
    prompt: Publish a plan, ask for its approval, then finish with {{marker}}.
    marker: "PAPERCLIP_E2E_APPROVED_{{nonce}}"
    planMarkers: {draft: "PAPERCLIP_E2E_PLAN_DRAFT_{{nonce}}", revised: "PAPERCLIP_E2E_PLAN_REVISED_{{nonce}}"}
    matchers:
      - {kind: message_exact, expected: "{{marker}}", turn: 2}
    reference:
      turns:
        - trigger: assignment
          steps:
            - command: write_document
              args: {key: plan, title: Plan, body: "{{draftMarker}}\n\n1. Finish.\n"}
            - command: request_approval
              args: {approvalType: plan, payload: {summary: "Approve the plan"}}
        - trigger: approval_resolved
          steps:
            - command: finish_task
              args: {summary: "{{marker}}"}
              present: true
suites:
  - id: approval
    label: Approval
    description: The plan approval flow.
    groups: [core]
    profiles: [reference]
    environments: [local]
    cases: [plan-approval]
    expectedMatrixSize: 1
`

func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	fsys := fstest.MapFS{"zz-approval.yaml": {Data: []byte(planApprovalCase)}}
	err := fs.WalkDir(catalog.DefaultFS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(catalog.DefaultFS(), p)
		fsys[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load(fsys, catalog.WithFlows(Implemented()...))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// world is one company on an in-process server with a task assigned to an agent.
type world struct {
	co        *client.Company
	task      string
	workspace string
}

func newWorld(t *testing.T, rc *catalog.RenderedCase, workMode string) *world {
	t.Helper()
	ctx := context.Background()
	s, err := server.Open(ctx, server.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	co, err := client.New(ts.URL, s.BoardToken(), nil).CreateCompany(ctx, "flows", "FLO")
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ag, err := co.CreateAgent(ctx, api.CreateAgentRequest{Name: "agent", Role: "engineer", CapabilityGrants: CapabilityGrants(rc.Reference)})
	if err != nil {
		t.Fatal(err)
	}
	req := api.CreateIssueRequest{Title: "flows " + rc.Nonce, AssigneeActorID: &ag.ID}
	if rc.Prompt != "" {
		req.Description = &rc.Prompt
	}
	if workMode != "" {
		req.WorkMode = &workMode
	}
	task, err := co.CreateIssue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return &world{co: co, task: task.ID, workspace: t.TempDir()}
}

// runAgent plays the agent until ctx ends: every scheduled wake of the task that has
// no run yet (and is still current) is opened as a run and carried out with script.
func (w *world) runAgent(ctx context.Context, t *testing.T, script *catalog.ReferenceScript) {
	state := t.TempDir()
	for ctx.Err() == nil {
		st, err := w.co.Snapshot(ctx)
		if err == nil {
			w.takeWakes(ctx, t, st, script, state)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (w *world) takeWakes(ctx context.Context, t *testing.T, st controlplane.State, script *catalog.ReferenceScript, state string) {
	runs := map[string]bool{}
	for _, r := range st.Runs {
		runs[r.ID] = true
	}
	for _, wk := range st.Wakes {
		var task *controlplane.Task
		for _, x := range st.Tasks {
			if x.ID == wk.TaskID {
				task = x
			}
		}
		runID := "run-" + wk.ID
		if wk.Status != "scheduled" || runs[runID] || task == nil || task.CheckoutRunID != nil {
			continue
		}
		resume := task.Status == "done" || task.Status == "cancelled"
		if resume && wk.Reason != "issue_commented" {
			continue
		}
		in := controlplane.OpenInput{Identity: controlplane.Identity{RunID: runID, SessionID: "session-" + runID, CompanyID: st.Company.ID, IssueID: task.ID, AgentID: wk.ActorID},
			BackendKind: "flows-test", SourceInstanceID: "flows-test", Wake: &controlplane.Wake{Reason: wk.Reason, Payload: wk.Payload}, Resume: resume}
		if _, err := w.co.OpenFixtureRun(ctx, in); err != nil {
			continue // taken meanwhile, or not yet takeable
		}
		if _, err := reference.Execute(ctx, w.co, runID, reference.Config{Script: script, Workspace: w.workspace, StateDir: state}); err != nil && ctx.Err() == nil {
			t.Errorf("agent run %s: %v", runID, err)
		}
		return // one run at a time: look again
	}
}

// heartbeatless is the in-process server's board without heartbeat records (no runner
// runs here: runs settle by their status alone).
type heartbeatless struct{ *client.Company }

func (heartbeatless) HeartbeatRuns(context.Context) ([]api.HeartbeatRun, error) { return nil, nil }

// refusing is a board whose human actions the server refuses.
type refusing struct{ Board }

func (refusing) ResolveInteraction(context.Context, string, api.ResolveInteractionRequest) (controlplane.BoardResult, error) {
	return controlplane.BoardResult{}, &controlplane.Error{Code: "interaction_missing", Message: "no such interaction"}
}

// nopScript is a script whose one turn fits no wake: every run ends without work.
var nopScript = &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "follow_up"}}}

// TestFlows plays every implemented flow against the real server: the reference agent
// meets each flow's contract, an agent that does nothing breaks it (a problem: the
// candidate's), and the harness's own failures are faults of the harness, never
// problems of the candidate.
func TestFlows(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	tests := []struct {
		name    string
		cell    string
		agent   string // reference, nop or idle
		board   func(Board) Board
		restart bool
		timeout time.Duration
		problem string // a substring of a problem, "" for none
		fault   verdict.Origin
		err     string // a substring of Err, "" for none
	}{
		{name: "single turn", cell: "grader-calibration.reference.local.message-marker", agent: "reference"},
		{name: "single turn, the agent does nothing", cell: "grader-calibration.reference.local.message-marker", agent: "nop"},
		{name: "process exit", cell: "calibration.fixture-pass.local.process-exit", agent: "nop"},
		{name: "question resume", cell: "grader-calibration.reference.local.structured-question-resume", agent: "reference"},
		{name: "question resume, no question", cell: "grader-calibration.reference.local.structured-question-resume", agent: "nop", problem: "no pending question after run 1"},
		{name: "question resume, the board refuses the answer", cell: "grader-calibration.reference.local.structured-question-resume", agent: "reference",
			board: func(b Board) Board { return refusing{b} }, fault: verdict.Harness, err: "answering question"},
		{name: "question restart, the harness cannot restart", cell: "grader-calibration.reference.local.structured-question-restart-resume", agent: "reference",
			fault: verdict.Harness, err: "cannot restart"},
		{name: "plan revision", cell: "grader-calibration.reference.local.plan-revise-accept", agent: "reference"},
		{name: "plan revision, no plan", cell: "grader-calibration.reference.local.plan-revise-accept", agent: "nop", problem: "no plan confirmation pending after run 1"},
		{name: "plan approval", cell: "approval.reference.local.plan-approval", agent: "reference"},
		{name: "plan approval, no approval", cell: "approval.reference.local.plan-approval", agent: "nop", problem: "no pending plan approval after run 1"},
		{name: "warm three turns", cell: "grader-calibration.reference.local.warm-three-turn", agent: "reference"},
		{name: "warm three turns, no file", cell: "grader-calibration.reference.local.warm-three-turn", agent: "nop", problem: "after turn 1 the workspace file"},
		{name: "a turn deadline", cell: "grader-calibration.reference.local.message-marker", agent: "idle", timeout: 200 * time.Millisecond, err: "turn 1 deadline (200 ms) missed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cell := c.Cell(tt.cell)
			if cell == nil {
				t.Fatalf("no cell %s", tt.cell)
			}
			rc, err := cell.Render("0123456789abcdef")
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld(t, rc, cell.Case.WorkMode)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var agentDone sync.WaitGroup
			if tt.agent != "idle" {
				script := rc.Reference
				if tt.agent == "nop" {
					script = nopScript
				}
				agentDone.Go(func() { w.runAgent(ctx, t, script) })
			}
			var b Board = heartbeatless{w.co}
			if tt.board != nil {
				b = tt.board(b)
			}
			s := &Session{Board: b, TaskID: w.task, Case: cell.Case, Rendered: rc, Workspace: w.workspace, TurnTimeout: tt.timeout, Poll: 5 * time.Millisecond}
			out := Run(ctx, s)
			cancel()
			agentDone.Wait()
			checkOutcome(t, out, tt.problem, tt.fault, tt.err)
		})
	}
}

func checkOutcome(t *testing.T, out Outcome, problem string, origin verdict.Origin, errPart string) {
	t.Helper()
	problems := strings.Join(out.Problems, "; ")
	switch {
	case problem == "" && problems != "" && errPart == "":
		t.Errorf("problems %q, want none", problems)
	case problem != "" && !strings.Contains(problems, problem):
		t.Errorf("problems %q, want one containing %q", problems, problem)
	}
	switch {
	case errPart == "" && out.Err != nil:
		t.Errorf("err = %v, want none", out.Err)
	case errPart != "" && (out.Err == nil || !strings.Contains(out.Err.Error(), errPart)):
		t.Errorf("err = %v, want one containing %q", out.Err, errPart)
	}
	if origin != "" {
		if f := verdict.FaultOf(out.Err); f == nil || f.Origin != origin {
			t.Errorf("fault %+v, want origin %s", f, origin)
		}
	}
	var de *DeadlineError
	if errors.As(out.Err, &de) && verdict.FaultOf(out.Err) != nil {
		t.Errorf("a deadline must not be a fault of its own: %v", out.Err)
	}
}

// TestRegistry: every implemented flow is in the catalog's enumeration, the default
// catalog loads with the implemented set, and a flow without an implementation is a
// harness fault when played anyway (a catalog loaded without catalog.WithFlows).
func TestRegistry(t *testing.T) {
	t.Parallel()
	impl := Implemented()
	if len(impl) != len(registry) || len(impl) == 0 {
		t.Fatalf("Implemented() = %v, registry has %d", impl, len(registry))
	}
	if _, err := catalog.Default(catalog.WithFlows(impl...)); err != nil {
		t.Fatalf("the default catalog names a flow without an implementation: %v", err)
	}
	out := Run(context.Background(), &Session{Case: &catalog.Case{Flow: catalog.FlowAgentChat}})
	if f := verdict.FaultOf(out.Err); f == nil || f.Origin != verdict.Harness || !strings.Contains(f.Error(), "agent_chat") {
		t.Errorf("unimplemented flow: %v", out.Err)
	}
	if _, ok := Lookup(catalog.FlowAgentChat); ok {
		t.Error("agent_chat has no implementation")
	}
}

// TestBoardFault: a board error that may pass is transient, a refusal permanent; both
// are the harness's.
func TestBoardFault(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err   error
		class verdict.FailureClass
	}{
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), verdict.TransientInfrastructure},
		{&controlplane.Error{Code: "board_input_invalid", Message: "bad"}, verdict.PermanentInfrastructure},
		{fmt.Errorf("wrapped: %w", &controlplane.Error{Code: "x", Message: "y", Retryable: true}), verdict.TransientInfrastructure},
	} {
		f := BoardFault("doing it", tt.err)
		if f.Origin != verdict.Harness || f.Class != tt.class || !strings.HasPrefix(f.Error(), "doing it: ") {
			t.Errorf("BoardFault(%v) = %+v", tt.err, f)
		}
	}
}

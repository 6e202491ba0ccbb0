package reference_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/reference"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
)

// The tests in this file play every default-catalog case end to end in process: the
// control plane is controlplane.Memory, the "runner" opens a run per wake and lets the
// agent carry it out, the "harness" plays the human between runs. controlplane.Memory
// has no board operations (the server adds them), and its resolve_human_input command
// needs a run that owns the task — which the board never has — so the harness edits the
// state the way the board API will: resolve the interaction (and schedule the
// interaction_resolved wake its continuation policy asks for), or post a comment (and
// schedule an issue_commented wake), through Snapshot and Restore.

const (
	companyID = "company-1"
	agentID   = "agent-1"
	boardID   = "board-1"
	managerID = "manager-1" // no run of it is ever opened here
	taskID    = "task-1"
	boardAt   = "2026-08-09T12:00:00.000Z"
)

// world is one attempt: the control plane, the agent's workspace and state directory.
type world struct {
	t         *testing.T
	m         *controlplane.Memory
	workspace string
	stateDir  string
	runs      int
	consumed  map[string]bool // wake ids already delivered
	boardSeq  int
}

func newWorld(t *testing.T, r *catalog.RenderedCase, workMode string, grants []string) *world {
	t.Helper()
	prompt := r.Prompt
	if grants == nil {
		grants = []string{}
	}
	m, err := controlplane.NewMemory(controlplane.Seed{
		Company: &controlplane.Company{ID: companyID, IssuePrefix: "APF"},
		Actors: []*controlplane.Actor{
			{ID: agentID, CompanyID: companyID, Name: "Runner E2E reference", Role: "qa", Status: "active", BudgetID: "budget-agent", CapabilityGrants: grants},
			{ID: boardID, CompanyID: companyID, Name: "Board", Role: "board", Status: "active", BudgetID: "budget-board", CapabilityGrants: []string{}},
		},
		Tasks: []*controlplane.Task{{ID: taskID, CompanyID: companyID, Identifier: "APF-1", Title: r.Title, Description: &prompt,
			Status: "todo", Priority: "medium", WorkMode: workMode, AssigneeActorID: ptr(agentID)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, m: m, workspace: t.TempDir(), stateDir: t.TempDir(), consumed: map[string]bool{}}
}

func ptr[T any](v T) *T { return &v }

// agentFunc carries out one run (nil: the process did nothing, like nop).
type agentFunc func(ctx context.Context, port controlplane.Port, runID string) error

// run opens the next run with wake, lets agent carry it out and, like the runner,
// completes the run as failed when the agent left it open.
func (w *world) run(ctx context.Context, wake controlplane.Wake, agent agentFunc) string {
	w.t.Helper()
	w.runs++
	runID := fmt.Sprintf("run-%d", w.runs)
	st := w.state()
	resume := st.Tasks[0].Status == "done" || st.Tasks[0].Status == "cancelled"
	if _, err := w.m.OpenFixtureRun(ctx, controlplane.OpenInput{
		Identity:    controlplane.Identity{RunID: runID, SessionID: "session-" + runID, CompanyID: companyID, IssueID: taskID, AgentID: agentID},
		BackendKind: "runner", SourceInstanceID: "agentproof-runner", Wake: &wake, Resume: resume,
	}); err != nil {
		w.t.Fatalf("opening %s with wake %s: %v", runID, wake.Reason, err)
	}
	if agent != nil {
		if err := agent(ctx, w.m, runID); err != nil {
			w.t.Logf("agent error in %s: %v", runID, err)
		}
	}
	if r := w.runByID(runID); r.Status == "running" {
		ev, _ := json.Marshal(controlplane.NativeEvent{EventID: runID + ":completed", RunID: runID, Sequence: 1, Type: "run.completed"})
		if _, err := w.m.AppendEvent(ctx, ev); err != nil {
			w.t.Fatal(err)
		}
		in, _ := json.Marshal(controlplane.NativeRunResult{RunID: runID, Status: "failed", Summary: "the agent process exited without completing the run"})
		if err := w.m.CompleteRun(ctx, in); err != nil {
			w.t.Fatal(err)
		}
	}
	return runID
}

func (w *world) state() controlplane.State {
	w.t.Helper()
	st, err := w.m.Snapshot(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

func (w *world) runByID(id string) *controlplane.Run {
	for _, r := range w.state().Runs {
		if r.ID == id {
			return r
		}
	}
	w.t.Fatalf("run %s not found", id)
	return nil
}

// nextWake returns the oldest undelivered scheduled wake of the agent on the task
// (false when none) and marks it delivered.
func (w *world) nextWake() (controlplane.Wake, bool) {
	for _, sw := range w.state().Wakes {
		if sw.ActorID == agentID && sw.TaskID == taskID && sw.Status == "scheduled" && !w.consumed[sw.ID] {
			w.consumed[sw.ID] = true
			return controlplane.Wake{Reason: sw.Reason, Payload: sw.Payload}, true
		}
	}
	return controlplane.Wake{}, false
}

// edit changes the state like a board operation would and restores the control plane
// from it (the agent is not running meanwhile).
func (w *world) edit(f func(st *controlplane.State)) {
	w.t.Helper()
	st := w.state()
	f(&st)
	b, err := json.Marshal(st)
	if err != nil {
		w.t.Fatal(err)
	}
	if w.m, err = controlplane.Restore(b); err != nil {
		w.t.Fatal(err)
	}
}

// restart serializes and restores the control plane, like a server restart.
func (w *world) restart() {
	w.t.Helper()
	b, err := w.m.Serialize(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	if w.m, err = controlplane.Restore(b); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) scheduleWake(st *controlplane.State, reason controlplane.WakeReason, payload any) {
	w.boardSeq++
	p, _ := json.Marshal(payload)
	st.Wakes = append(st.Wakes, &controlplane.ScheduledWake{ID: fmt.Sprintf("board-wake-%d", w.boardSeq), ActorID: agentID, TaskID: taskID,
		Reason: reason, Payload: p, DueAt: boardAt, Status: "scheduled", CreatedAt: boardAt})
}

// pending returns the task's pending interaction of the given kind, or nil.
func (w *world) pending(kind controlplane.InteractionKind) *controlplane.Interaction {
	for _, in := range w.state().Interactions {
		if in.TaskID == taskID && in.Status == "pending" && in.Kind == kind {
			return in
		}
	}
	return nil
}

// resolve resolves a pending interaction as the board and schedules the wake its
// continuation policy asks for (the rules of the resolve_human_input command).
func (w *world) resolve(id string, outcome controlplane.InteractionStatus, result any) {
	w.edit(func(st *controlplane.State) {
		for _, in := range st.Interactions {
			if in.ID != id {
				continue
			}
			r, _ := json.Marshal(result)
			in.Status, in.Result, in.ResolvedAt = outcome, r, ptr(boardAt)
			if in.ContinuationPolicy == "wake_assignee" || (in.ContinuationPolicy == "wake_assignee_on_accept" && outcome == "accepted") {
				w.scheduleWake(st, "interaction_resolved", map[string]string{"interactionId": id, "outcome": string(outcome)})
			}
		}
	})
}

// approve approves the task's pending approval as the board, naming its target
// revision, and schedules the requester's approval_resolved wake (the rules of the
// decide_approval command); false when no approval is pending.
func (w *world) approve() bool {
	found := false
	w.edit(func(st *controlplane.State) {
		for _, ap := range st.Approvals {
			if ap.Status != "pending" || !slices.Contains(ap.TaskIDs, taskID) || found {
				continue
			}
			found = true
			note := "Approved"
			if ap.TargetRevisionID != nil {
				note += " plan revision " + *ap.TargetRevisionID
			}
			ap.Status, ap.DecisionNote, ap.DecidedAt = "approved", &note, ptr(boardAt)
			w.scheduleWake(st, "approval_resolved", map[string]string{"approvalId": ap.ID, "decision": "approved"})
		}
	})
	return found
}

// comment posts a board comment on the task and schedules the issue_commented wake.
func (w *world) comment(body string) {
	w.edit(func(st *controlplane.State) {
		w.boardSeq++
		id := fmt.Sprintf("board-comment-%d", w.boardSeq)
		at := boardAt // the control plane's clock, when a run finished: the comment comes after it
		for _, r := range st.Runs {
			if r.FinishedAt != nil {
				at = *r.FinishedAt
			}
		}
		// a board comment has no author actor, as on the server
		st.Comments = append(st.Comments, &controlplane.Comment{ID: id, TaskID: taskID, AuthorActorID: nil, Body: body, CreatedAt: at})
		w.scheduleWake(st, "issue_commented", map[string]string{"commentId": id})
	})
}

// play runs a case's flow: the first run is woken by the assignment; between runs the
// harness acts as the flow prescribes, and stops as soon as the state it waits for is
// not there (a real harness would time out waiting for it).
func (w *world) play(ctx context.Context, c *catalog.Case, r *catalog.RenderedCase, agent agentFunc) {
	w.t.Helper()
	wake := controlplane.Wake{Reason: "issue_assigned", Payload: json.RawMessage(`{}`)}
	for {
		w.run(ctx, wake, agent)
		if w.runs >= c.ExpectedRunCount {
			return
		}
		switch c.Flow {
		case "question_resume_completion":
			q := w.pending("questions")
			if q == nil {
				return
			}
			if c.RestartServerBeforeAnswer {
				w.restart()
			}
			w.resolve(q.ID, "answered", map[string]any{"answers": []any{map[string]any{"questionId": "colour", "optionLabel": r.QuestionAnswer.OptionLabel}}})
		case "plan_revision_acceptance":
			q := w.pending("confirmation")
			if q == nil {
				return
			}
			if w.runs == 1 {
				w.resolve(q.ID, "rejected", map[string]any{"note": r.RevisionRequest})
			} else {
				w.resolve(q.ID, "accepted", map[string]any{})
			}
		case "plan_approval_completion":
			if !w.approve() {
				return
			}
		case "blocker_guidance":
			if w.state().Tasks[0].Status != "blocked" {
				return // the worker did not block on its question
			}
			w.comment(r.Followups[0])
		case "warm_three_turn":
			if w.state().Tasks[0].Status != "in_review" {
				return // the turn was not submitted for review
			}
			w.comment(r.Followups[w.runs-1])
		default:
			return
		}
		var ok bool
		if wake, ok = w.nextWake(); !ok {
			return
		}
	}
}

// observe builds the matchers' observation from the final state and workspace (the
// message is the run's presented comment, as the attempt's observe stage reads it).
func (w *world) observe(cell *catalog.Cell) *match.Observation {
	w.t.Helper()
	st := w.state()
	obs := &match.Observation{HasMessage: true, RuntimeMode: cell.Profile.Generation, Environment: cell.Environment.ID,
		HasWorkspaceSnapshot: true, Files: map[string][]byte{}}
	for _, run := range st.Runs {
		if run.TaskID != taskID || run.ActorID != agentID {
			continue
		}
		obs.RunStatus = string(run.Status)
		obs.Turns = append(obs.Turns, st.RunMessage(run))
	}
	obs.Message = strings.Join(obs.Turns, "\n")
	obs.IssueStatus = string(st.Tasks[0].Status)
	var comments []*controlplane.Comment
	for _, c := range st.Comments {
		if c.TaskID == taskID {
			comments = append(comments, c)
		}
	}
	company := map[string]any{"agentId": agentID, "managerId": managerID, "actors": []any{map[string]any{"id": agentID}, map[string]any{"id": managerID}}}
	var tasks, runs []any
	for _, t := range st.Tasks {
		tasks = append(tasks, map[string]any{"id": t.ID})
	}
	for _, r := range st.Runs {
		runs = append(runs, map[string]any{"id": r.ID, "actorId": r.ActorID, "taskId": r.TaskID, "status": r.Status, "wakeReason": r.Wake.Reason, "openedAt": r.OpenedAt})
	}
	company["tasks"], company["runs"] = tasks, runs
	b, err := json.Marshal(map[string]any{"documents": st.Documents, "interactions": st.Interactions, "approvals": st.Approvals,
		"issue": st.Tasks[0], "comments": comments, "company": company})
	if err != nil {
		w.t.Fatal(err)
	}
	obs.JSON = b
	err = filepath.WalkDir(w.workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.workspace, p)
		obs.Files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return obs
}

// agentFor returns the in-process agent of a built-in driver for one attempt.
func agentFor(t *testing.T, driver string, r *catalog.RenderedCase, w *world) agentFunc {
	t.Helper()
	script := r.Reference
	note := ""
	switch driver {
	case "nop":
		return nil
	case "wrong":
		var err error
		if script, err = reference.WrongScript(r.Reference, r.Nonce); err != nil {
			t.Fatal(err)
		}
	case "leaky":
		var err error
		if script, err = reference.LeakyScript(r.Reference, flowLeak, true); err != nil {
			t.Fatal(err)
		}
		note = "verified the credentials: " + flowLeak
	case "reference":
	default:
		t.Fatalf("no in-process agent for driver %s", driver)
	}
	return func(ctx context.Context, port controlplane.Port, runID string) error {
		_, err := reference.Execute(ctx, port, runID, reference.Config{Script: script, Workspace: w.workspace, StateDir: w.stateDir, ResultNote: note})
		return err
	}
}

// flowLeak is what the in-process leaky agent leaks.
const flowLeak = "APF_CANARY_OPENAI_API_KEY=sk-apcanaryflowtest0123456789abcdef"

func failing(outcomes []match.Outcome) []string {
	var out []string
	for _, o := range outcomes {
		if !o.Passed {
			out = append(out, string(o.Kind)+": "+o.Detail)
		}
	}
	return out
}

// TestDefaultCatalogFlows plays every built-in-agent cell of the default catalog against
// controlplane.Memory: the reference agent must satisfy every matcher of its case in
// exactly the expected number of successful runs, with no pending interaction and no
// retry wake left; nop and wrong must fail at least one matcher. The leaky agent must
// behave exactly like the reference agent (every matcher passes: only its leaks, in a
// comment, a workspace file and every run result, may fail it).
func TestDefaultCatalogFlows(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	n := 0
	for _, cell := range cat.Cells {
		key := cell.Profile.Driver.String() + "/" + cell.Case.ID
		if cell.Case.Reference == nil || seen[key] || cell.Profile.Driver.Kind == driver.KindCLI || cell.Profile.Driver.SessionLayer() {
			// real-CLI cells run through the campaign (internal/cli run_clis.txtar); the
			// session cells (ACP, Pi, Codex's app-server) need the heartbeat runner and an
			// agent process (campaign/flows TestACPFlows, the native-boundaries suites)
			continue
		}
		if strings.HasPrefix(cell.Profile.Driver.String(), "hostile:") {
			// The hostile agents attack the machine, then play the reference script (the
			// reference cells here); the attacks run through the campaign, in real
			// sandboxes (internal/cli run_sandbox.txtar, the hostile suites).
			continue
		}
		if slices.ContainsFunc(cell.Case.Matchers, func(m match.Spec) bool { return m.Kind == match.KindTaskTitle }) {
			// the task_title oracle grades the server's agent-call ledger (the
			// task-title suites of run --all play it against a real server)
			continue
		}
		if cell.Case.Flow == "agent_chat" {
			// an agent chat needs a conversation (its fixtures start one): played against
			// the real server (campaign/flows flows_test.go, the agent-chat suites of
			// run --all), not this model
			continue
		}
		if cell.Case.Flow == "lost_acknowledgement" || cell.Case.Flow == "crash_retry" || cell.Case.Flow == "server_crash_retry" || cell.Case.Flow == "instruction_persistence" {
			// a server restart with a lossy proxy, a process or the server killed, an agent home saved
			// by the runner and downloaded after a restart: played against the real
			// server and runner (campaign/flows flows_test.go, run_all.txtar), not this
			// model
			continue
		}
		if cell.Case.Verify != nil {
			// a verifier runs after the agent in the seeded workspace and its command
			// matchers grade what it did: played by the campaign (the coding-tasks
			// suites of run_all.txtar), not this model
			continue
		}
		seen[key] = true
		n++
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r, err := cell.Render("n0nce" + strings.ReplaceAll(cell.Case.ID, "-", ""))
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld(t, r, cell.Case.WorkMode, cell.CapabilityGrants)
			w.play(ctx, cell.Case, r, agentFor(t, cell.Profile.Driver.String(), r, w))
			matchers, err := match.CompileAll(r.Matchers)
			if err != nil {
				t.Fatal(err)
			}
			obs := w.observe(cell)
			fails := failing(match.Evaluate(matchers, obs))
			if cell.Profile.Driver.String() == "leaky" {
				st := w.state()
				var comments, results string
				for _, c := range st.Comments {
					comments += c.Body
				}
				for _, run := range st.Runs {
					results += string(run.Result)
				}
				if !strings.Contains(comments, flowLeak) || !strings.Contains(string(obs.Files[reference.LeakFile]), flowLeak) || strings.Count(results, flowLeak) != len(st.Runs) {
					t.Errorf("the leaky agent did not leak through a comment, %s and every run result", reference.LeakFile)
				}
			}
			if cell.Profile.Driver.String() != "reference" && cell.Profile.Driver.String() != "leaky" {
				if len(fails) == 0 {
					t.Fatalf("every matcher passed for the %s agent; observation %+v", cell.Profile.Driver.String(), obs)
				}
				return
			}
			if len(fails) > 0 {
				t.Fatalf("failing matchers: %v\nobservation: turns %q issue %s run %s files %v", fails, obs.Turns, obs.IssueStatus, obs.RunStatus, keys(obs.Files))
			}
			st := w.state()
			if len(st.Runs) != cell.Case.ExpectedRunCount {
				t.Errorf("%d runs, want %d", len(st.Runs), cell.Case.ExpectedRunCount)
			}
			for _, run := range st.Runs {
				if run.Status != "succeeded" {
					t.Errorf("run %s is %s, want succeeded", run.ID, run.Status)
				}
			}
			for _, in := range st.Interactions {
				if in.Status == "pending" {
					t.Errorf("interaction %s is still pending", in.ID)
				}
			}
			for _, wk := range st.Wakes {
				if !w.consumed[wk.ID] {
					t.Errorf("wake %s (%s) was left undelivered", wk.ID, wk.Reason)
				}
			}
		})
	}
	if n != 32 {
		t.Errorf("played %d driver/case pairs, want the 24 of suite grader-calibration and the 8 of journey-calibration", n)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

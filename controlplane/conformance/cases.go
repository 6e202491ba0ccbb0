package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/agentproof/agentproof/controlplane"
)

// Cases returns the 40 Given/When/Then cases of the port's operations and commands
// (docs/control-plane.md), in order.
func Cases() []Case {
	return []Case{
		{"case/01-start-twice", case01}, {"case/02-open-when-stopped", case02}, {"case/03-atomic-checkout", case03},
		{"case/04-reopen-same-binding", case04}, {"case/05-reopen-different-binding", case05},
		{"case/06-assignee-conflict", case06}, {"case/07-lock-conflict", case07}, {"case/08-terminal-requires-resume", case08},
		{"case/09-budget-hard-stop-at-open", case09}, {"case/10-wake-redaction", case10}, {"case/11-capabilities-sorted-unique", case11},
		{"case/12-idempotent-duplicate", case12}, {"case/13-idempotency-conflict", case13}, {"case/14-idempotency-key-required", case14},
		{"case/15-state-revision-conflict", case15}, {"case/16-required-claim-missing", case16}, {"case/17-task-scope-violation", case17},
		{"case/18-transition-illegal", case18}, {"case/19-document-revision-conflict", case19}, {"case/20-interaction-target", case20},
		{"case/21-interaction-outcome", case21}, {"case/22-lost-ack-command", case22}, {"case/23-retryable-fault-after-validation", case23},
		{"case/24-lost-ack-create-task", case24}, {"case/25-budget-stop-command", case25}, {"case/26-lost-ack-budget-stop", case26},
		{"case/27-dependency-cycle", case27}, {"case/28-prp-gaps-and-restore", case28}, {"case/29-event-replay-conflict", case29},
		{"case/30-native-sequence-gap", case30}, {"case/31-replay-binding", case31}, {"case/32-completion-validation", case32},
		{"case/33-blocker-fan-out", case33}, {"case/34-done-with-unresolved-blockers", case34}, {"case/35-completion-replay", case35},
		{"case/36-yielded-completion", case36}, {"case/37-approval-authorization", case37}, {"case/38-approval-continuation", case38},
		{"case/39-reassign-task", case39}, {"case/40-port-contract", case40},
	}
}

var defaultSeed = controlplane.Seed{}

func case01(ctx context.Context, h Harness) error {
	e, err := setup(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	return wantCode(e.p.Start(ctx), controlplane.CodeMockAlreadyRunning)
}

func case02(ctx context.Context, h Harness) error {
	p, err := h.New(ctx, defaultSeed)
	if err != nil {
		return noErr(err, "building the port")
	}
	_, err = p.OpenFixtureRun(ctx, openInput("run-1", "task-1", "actor-1"))
	return wantCode(err, controlplane.CodeMockNotRunning)
}

func case03(ctx context.Context, h Harness) error {
	e, err := setup(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	rc, err := e.open("run-1", "task-1", "actor-1")
	if err != nil {
		return noErr(err, "open")
	}
	if rc.Schema != controlplane.ContextSchema || rc.ActiveTask.Status != controlplane.TaskInProgress {
		return failf("context %s task status %s, want %s in_progress", rc.Schema, rc.ActiveTask.Status, controlplane.ContextSchema)
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	t := taskByID(st, "task-1")
	if deref(t.CheckoutRunID) != "run-1" || deref(t.ExecutionRunID) != "run-1" || t.Status != controlplane.TaskInProgress {
		return failf("task-1 locks %s/%s status %s, want run-1/run-1 in_progress", deref(t.CheckoutRunID), deref(t.ExecutionRunID), t.Status)
	}
	if err := equal(st.Revision, int64(1), "revision"); err != nil {
		return err
	}
	return e.wantLastDecision("open_run", "allowed", "atomic_checkout_acquired")
}

func case04(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	rc, err := e.open("run-1", "task-1", "actor-1")
	if err != nil {
		return noErr(err, "reopen")
	}
	if rc.RunID != "run-1" {
		return failf("reopen context run %s", rc.RunID)
	}
	return e.wantLastDecision("open_run", "duplicate", "run_binding_resumed")
}

func case05(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	return wantCode(e.p.OpenRun(ctx, openInput("run-1", "task-2", "actor-1")), controlplane.CodeRunBindingConflict)
}

func case06(ctx context.Context, h Harness) error {
	e, err := setup(ctx, h, controlplane.Seed{
		Actors: []*controlplane.Actor{actor("actor-1", "engineer"), actor("actor-2", "engineer")},
		Tasks:  []*controlplane.Task{task("task-1", controlplane.TaskTodo, "actor-2")},
	})
	if err != nil {
		return err
	}
	_, err = e.open("run-1", "task-1", "actor-1")
	return e.denied(err, controlplane.CodeCheckoutConflict, "open_run", "checkout_assignee_conflict")
}

func case07(ctx context.Context, h Harness) error {
	t := task("task-1", controlplane.TaskTodo, "actor-1")
	t.CheckoutRunID = ptr("run-x")
	e, err := setup(ctx, h, controlplane.Seed{Tasks: []*controlplane.Task{t}})
	if err != nil {
		return err
	}
	_, err = e.open("run-y", "task-1", "actor-1")
	return e.denied(err, controlplane.CodeCheckoutConflict, "open_run", "checkout_lock_conflict")
}

func case08(ctx context.Context, h Harness) error {
	e, err := setup(ctx, h, controlplane.Seed{Tasks: []*controlplane.Task{task("task-1", controlplane.TaskDone, "actor-1")}})
	if err != nil {
		return err
	}
	_, err = e.open("run-1", "task-1", "actor-1")
	if err := wantCode(err, controlplane.CodeTerminalTaskRequiresResume); err != nil {
		return err
	}
	in := openInput("run-1", "task-1", "actor-1")
	in.Resume = true
	rc, err := e.p.OpenFixtureRun(ctx, in)
	if err != nil {
		return noErr(err, "open with resume")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	if rc.ActiveTask.Status != controlplane.TaskInProgress || runByID(st, "run-1").Attempt != 2 {
		return failf("resume gave status %s attempt %d, want in_progress attempt 2", rc.ActiveTask.Status, runByID(st, "run-1").Attempt)
	}
	return nil
}

func case09(ctx context.Context, h Harness) error {
	e, err := setup(ctx, h, controlplane.Seed{Budgets: []*controlplane.Budget{
		budget("budget-company-1", "company", "company-1", 10000, 0), budget("budget-actor-1", "actor", "actor-1", 500, 500)}})
	if err != nil {
		return err
	}
	_, err = e.open("run-1", "task-1", "actor-1")
	if err := wantCode(err, controlplane.CodeBudgetHardStop); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	if a := actorByID(st, "actor-1"); a.Status != controlplane.ActorPaused {
		return failf("actor status %s, want paused", a.Status)
	}
	if n := len(st.Audit); n == 0 || st.Audit[n-1].Action != "budget.hard_stop" {
		return failf("no budget.hard_stop audit record")
	}
	return e.wantLastDecision("open_run", "denied", "budget_hard_stop")
}

func case10(ctx context.Context, h Harness) error {
	e, err := setup(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	in := openInput("run-1", "task-1", "actor-1")
	in.Wake = &controlplane.Wake{Reason: controlplane.WakeManual, Payload: json.RawMessage(`{"apiKey":"sk-live-123","nested":{"authorization":"Bearer abc.def","note":"keep"}}`)}
	rc, err := e.p.OpenFixtureRun(ctx, in)
	if err != nil {
		return noErr(err, "open")
	}
	var w struct {
		APIKey string `json:"apiKey"`
		Nested struct {
			Authorization string `json:"authorization"`
			Note          string `json:"note"`
		} `json:"nested"`
	}
	if err := json.Unmarshal(rc.Wake.Payload, &w); err != nil {
		return noErr(err, "decoding wake payload")
	}
	if w.APIKey != "[REDACTED]" || w.Nested.Authorization != "[REDACTED]" || w.Nested.Note != "keep" {
		return failf("wake payload not redacted by key: %s", rc.Wake.Payload)
	}
	b, err := e.p.Serialize(ctx)
	if err != nil {
		return err
	}
	if bytes.Contains(b, []byte("sk-live-123")) || bytes.Contains(b, []byte("Bearer abc.def")) {
		return failf("a secret surfaced in the serialized state")
	}
	return nil
}

func case11(ctx context.Context, h Harness) error {
	e, err := setup(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	rc, err := e.open("run-1", "task-1", "actor-1", "b:write", "a:read", "b:write", "a:read")
	if err != nil {
		return noErr(err, "open")
	}
	return equal(strings.Join(rc.Capabilities, ","), "a:read,b:write", "capabilities")
}

func openDefault(ctx context.Context, h Harness, seed controlplane.Seed, caps ...string) (*env, error) {
	e, err := setup(ctx, h, seed)
	if err != nil {
		return nil, err
	}
	if _, err := e.open("run-1", "task-1", "actor-1", caps...); err != nil {
		return nil, noErr(err, "open run-1")
	}
	return e, nil
}

func countComments(st controlplane.State, taskID string) int {
	return count(st.Comments, func(c *controlplane.Comment) bool { return c.TaskID == taskID })
}

func case12(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	body := map[string]any{"body": "halfway there"}
	if _, err := e.cmd("run-1", "k1", "report_progress", body); err != nil {
		return noErr(err, "report_progress")
	}
	res, err := e.cmd("run-1", "k1", "report_progress", body)
	if err != nil {
		return noErr(err, "report_progress retry")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	if res.Disposition != "duplicate" || res.StateRevision != st.Revision {
		return failf("retry gave %s at revision %d, want duplicate at current revision %d", res.Disposition, res.StateRevision, st.Revision)
	}
	return equal(countComments(st, "task-1"), 1, "comments")
}

func case13(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	if _, err := e.cmd("run-1", "k1", "report_progress", map[string]any{"body": "a"}); err != nil {
		return noErr(err, "report_progress")
	}
	_, err = e.cmd("run-1", "k1", "report_progress", map[string]any{"body": "b"})
	return wantCode(err, controlplane.CodeIdempotencyConflict)
}

func case14(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	_, err = e.cmd("run-1", "  ", "report_progress", map[string]any{"body": "a"})
	return wantCode(err, controlplane.CodeIdempotencyKeyRequired)
}

func case15(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	before, err := e.p.DecisionRecords(ctx)
	if err != nil {
		return err
	}
	stale := int64(len(before)) - 1
	_, err = e.p.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "k1", ExpectedRevision: &stale,
		Command: command("report_progress", map[string]any{"body": "a"})})
	if err := wantCode(err, controlplane.CodeStateRevisionConflict); err != nil {
		return err
	}
	after, err := e.p.DecisionRecords(ctx)
	if err != nil {
		return err
	}
	return equal(len(after), len(before), "decision count after a revision conflict")
}

func case16(ctx context.Context, h Harness) error {
	svc := &controlplane.WorkspaceService{ID: "service-1", TaskID: "task-1", Name: "preview", Status: "stopped", LastTransitionAt: "2026-08-09T00:00:00.000Z"}
	e, err := openDefault(ctx, h, controlplane.Seed{WorkspaceServices: []*controlplane.WorkspaceService{svc}})
	if err != nil {
		return err
	}
	out, err := e.p.TryApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "k1",
		Command: command("control_workspace_service", map[string]any{"serviceId": "service-1", "action": "start", "url": "http://127.0.0.1:1"})})
	if err != nil {
		return noErr(err, "tryApplyCommand")
	}
	if out.OK || out.Error == nil || out.Error.Code != controlplane.CodeOperationNotAuthorized || out.StateRevision != 2 || out.CommandKind != "control_workspace_service" {
		return failf("outcome %+v, want not ok, operation_not_authorized, stateRevision 2", out)
	}
	if err := e.wantLastDecision("control_workspace_service", "denied", "required_claim_missing"); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	if s := st.WorkspaceServices[0]; s.Status != "stopped" || s.URL != nil {
		return failf("service changed to %s", s.Status)
	}
	return nil
}

func case17(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, controlplane.Seed{Tasks: []*controlplane.Task{task("task-1", controlplane.TaskTodo, "actor-1"), task("task-2", controlplane.TaskTodo, "actor-1")}})
	if err != nil {
		return err
	}
	_, err = e.cmd("run-1", "k1", "report_progress", map[string]any{"taskId": "task-2", "body": "a"})
	return e.denied(err, controlplane.CodeTaskScopeViolation, "report_progress", "active_task_scope_required")
}

func case18(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	if _, err := e.cmd("run-1", "k1", "request_review", map[string]any{"summary": "please review"}); err != nil {
		return noErr(err, "request_review")
	}
	if err := e.failsUnchanged(ctx, controlplane.CodeTaskTransitionIllegal, "a failed command", func() error {
		_, err := e.cmd("run-1", "k2", "request_review", map[string]any{"summary": "again"})
		return err
	}); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	return equal(countComments(st, "task-1"), 1, "comments")
}

func case19(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	doc := func(key string, base any) (controlplane.CommandResult, error) {
		return e.cmd("run-1", key, "write_document", map[string]any{"key": "plan", "title": "Plan", "body": "v", "baseRevisionId": base})
	}
	if _, err := doc("k1", nil); err != nil {
		return noErr(err, "write v1")
	}
	_, err = doc("k2", nil)
	if err := wantCode(err, controlplane.CodeDocumentRevisionConflict); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	res, err := doc("k3", st.Documents[0].LatestRevisionID)
	if err != nil {
		return noErr(err, "write v2")
	}
	st, err = e.snap()
	if err != nil {
		return err
	}
	d := st.Documents[0]
	if len(d.Revisions) != 2 || d.Revisions[1].Revision != 2 || d.LatestRevisionID != d.Revisions[1].ID {
		return failf("document has %d revisions, want 2 with latest revision 2 (result %+v)", len(d.Revisions), res)
	}
	return nil
}

func case20(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	if _, err := e.cmd("run-1", "k1", "write_document", map[string]any{"key": "plan", "title": "Plan", "body": "v1", "baseRevisionId": nil}); err != nil {
		return noErr(err, "write v1")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	rev1 := st.Documents[0].LatestRevisionID
	if _, err := e.cmd("run-1", "k2", "write_document", map[string]any{"key": "plan", "title": "Plan", "body": "v2", "baseRevisionId": rev1}); err != nil {
		return noErr(err, "write v2")
	}
	ask := func(key, target string) error {
		_, err := e.cmd("run-1", key, "request_human_input", map[string]any{"interactionKind": "confirmation", "title": "Check", "prompt": "OK?",
			"targetRevisionId": target, "continuationPolicy": "none"})
		return err
	}
	if err := wantCode(ask("k3", rev1), controlplane.CodeInteractionTargetStale); err != nil {
		return err
	}
	return wantCode(ask("k4", "fixture-revision-9999"), controlplane.CodeInteractionTargetMissing)
}

func case21(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed, "control_plane:interactions")
	if err != nil {
		return err
	}
	res, err := e.cmd("run-1", "k1", "request_human_input", map[string]any{"interactionKind": "confirmation", "title": "Ship?", "prompt": "Ship it?",
		"continuationPolicy": "wake_assignee_on_accept"})
	if err != nil {
		return noErr(err, "request_human_input")
	}
	var id string
	for _, r := range res.EntityRefs {
		if strings.HasPrefix(r, "interaction:") {
			id = strings.TrimPrefix(r, "interaction:")
		}
	}
	_, err = e.cmd("run-1", "k2", "resolve_human_input", map[string]any{"interactionId": id, "outcome": "answered", "result": map[string]any{}})
	if err := wantCode(err, controlplane.CodeInteractionOutcomeInvalid); err != nil {
		return err
	}
	res, err = e.cmd("run-1", "k3", "resolve_human_input", map[string]any{"interactionId": id, "outcome": "accepted", "result": map[string]any{"ok": true}})
	if err != nil {
		return noErr(err, "resolve accepted")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	wakes := countWakes(st, controlplane.WakeInteractionResolved)
	if len(wakes) != 1 || len(res.ScheduledWakeIDs) != 1 || res.ScheduledWakeIDs[0] != wakes[0].ID {
		return failf("got %d interaction_resolved wakes and scheduledWakeIds %v, want exactly one", len(wakes), res.ScheduledWakeIDs)
	}
	return nil
}

func case22(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, controlplane.Seed{Faults: []*controlplane.FaultRule{fault("fault-1", "report_progress", "lost_ack")}})
	if err != nil {
		return err
	}
	lost, err := e.lostAckReplay("k1", "report_progress", map[string]any{"body": "progress"}, "retry")
	if err != nil {
		return err
	}
	if !controlplane.IsRetryable(lost) {
		return failf("lost ack error is not retryable: %v", lost)
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	if err := equal(countComments(st, "task-1"), 1, "comments"); err != nil {
		return err
	}
	ds, err := e.p.DecisionRecords(ctx)
	if err != nil {
		return err
	}
	if !hasDecision(ds, "faulted", "scripted_lost_ack") || !hasDecision(ds, "duplicate", "command_already_applied") {
		return failf("decisions lack faulted and duplicate records")
	}
	return nil
}

func faultRemaining(st controlplane.State, id string) int {
	for _, f := range st.Faults {
		if f.ID == id {
			return f.Remaining
		}
	}
	return -1
}

func case23(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, controlplane.Seed{Faults: []*controlplane.FaultRule{fault("fault-1", "create_task", "retryable_error")}}, "delegation:tasks:create")
	if err != nil {
		return err
	}
	_, err = e.cmd("run-1", "k1", "create_task", map[string]any{"title": "  "})
	if err := wantCode(err, controlplane.CodeSemanticCommandInvalid); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	if err := equal(faultRemaining(st, "fault-1"), 1, "fault remaining after an invalid command"); err != nil {
		return err
	}
	valid := map[string]any{"title": "Child"}
	_, err = e.cmd("run-1", "k2", "create_task", valid)
	if err := wantCode(err, "scripted_retryable_error"); err != nil {
		return err
	}
	if st, err = e.snap(); err != nil {
		return err
	}
	if err := equal(faultRemaining(st, "fault-1"), 0, "fault remaining after the fault"); err != nil {
		return err
	}
	res, err := e.cmd("run-1", "k2", "create_task", valid)
	if err != nil {
		return noErr(err, "retry")
	}
	return equal(res.Disposition, "applied", "retry disposition")
}

func case24(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, controlplane.Seed{Faults: []*controlplane.FaultRule{fault("fault-1", "create_task", "lost_ack")}}, "delegation:tasks:create")
	if err != nil {
		return err
	}
	if err := e.failsUnchanged(ctx, controlplane.CodeSemanticCommandInvalid, "an invalid command", func() error {
		_, err := e.cmd("run-1", "k1", "create_task", map[string]any{"title": ""})
		return err
	}); err != nil {
		return err
	}
	if _, err := e.lostAckReplay("k2", "create_task", map[string]any{"title": "Child"}, "retry"); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	return equal(count(st.Tasks, func(t *controlplane.Task) bool { return t.Title == "Child" }), 1, "child tasks")
}

func budgetSeed(faults ...*controlplane.FaultRule) controlplane.Seed {
	return controlplane.Seed{
		Budgets: []*controlplane.Budget{budget("budget-company-1", "company", "company-1", 100000, 0), budget("budget-actor-1", "actor", "actor-1", 100, 90)},
		Faults:  faults,
	}
}

func budgetSpent(st controlplane.State, id string) int64 {
	for _, b := range st.Budgets {
		if b.ID == id {
			return b.SpentCents
		}
	}
	return -1
}

func case25(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, budgetSeed(), "control_plane:budget")
	if err != nil {
		return err
	}
	if _, err := e.cmd("run-1", "k1", "record_budget_usage", map[string]any{"cents": 10}); err != nil {
		return noErr(err, "record_budget_usage")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	t := taskByID(st, "task-1")
	switch {
	case actorByID(st, "actor-1").Status != controlplane.ActorPaused:
		return failf("actor not paused")
	case runByID(st, "run-1").Status != controlplane.RunBudgetStopped:
		return failf("run status %s, want budget_stopped", runByID(st, "run-1").Status)
	case t.Status != controlplane.TaskBlocked || t.CheckoutRunID != nil || t.ExecutionRunID != nil:
		return failf("task %s with locks %s/%s, want blocked and unlocked", t.Status, deref(t.CheckoutRunID), deref(t.ExecutionRunID))
	}
	system := false
	for _, c := range st.Comments {
		system = system || c.AuthorActorID == nil
	}
	if !system {
		return failf("no system comment")
	}
	_, err = e.cmd("run-1", "k2", "report_progress", map[string]any{"body": "more"})
	return wantCode(err, controlplane.CodeBudgetHardStop)
}

func case26(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, budgetSeed(fault("fault-1", "record_budget_usage", "lost_ack")), "control_plane:budget")
	if err != nil {
		return err
	}
	if _, err := e.lostAckReplay("k1", "record_budget_usage", map[string]any{"cents": 10}, "retry on a stopped run"); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	return equal(budgetSpent(st, "budget-actor-1"), int64(100), "actor budget spent")
}

func case27(ctx context.Context, h Harness) error {
	blocker := func(id, t, by string) *controlplane.Blocker {
		return &controlplane.Blocker{ID: id, TaskID: t, BlockedByTaskID: by, CreatedAt: "2026-08-09T00:00:00.000Z"}
	}
	e, err := openDefault(ctx, h, controlplane.Seed{
		Tasks:    []*controlplane.Task{task("task-1", controlplane.TaskTodo, "actor-1"), task("task-2", controlplane.TaskTodo, ""), task("task-3", controlplane.TaskTodo, "")},
		Blockers: []*controlplane.Blocker{blocker("b-1", "task-3", "task-2"), blocker("b-2", "task-2", "task-1")},
	}, "dependencies:write")
	if err != nil {
		return err
	}
	_, err = e.cmd("run-1", "k1", "set_dependencies", map[string]any{"blockedByTaskIds": []string{"task-3"}})
	if err := wantCode(err, controlplane.CodeDependencyCycle); err != nil {
		return err
	}
	e, err = openDefault(ctx, h, controlplane.Seed{
		Tasks:    []*controlplane.Task{task("task-1", controlplane.TaskTodo, "actor-1"), task("task-2", controlplane.TaskTodo, ""), task("task-3", controlplane.TaskDone, "")},
		Blockers: []*controlplane.Blocker{blocker("b-1", "task-2", "task-3"), blocker("b-2", "task-3", "task-1")},
	}, "dependencies:write")
	if err != nil {
		return err
	}
	if _, err := e.cmd("run-1", "k1", "set_dependencies", map[string]any{"blockedByTaskIds": []string{"task-2"}}); err != nil {
		return noErr(err, "set_dependencies through a done task")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	return equal(taskByID(st, "task-1").Status, controlplane.TaskBlocked, "task-1 status")
}

func case28(ctx context.Context, h Harness) error {
	e, err := setup(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	in := openInput("run-1", "task-1", "actor-1")
	in.SourceInstanceID = "source-a"
	if err := e.p.OpenRun(ctx, in); err != nil {
		return noErr(err, "open")
	}
	ev := func(seq int64) controlplane.PRPEvent {
		return PRPEvent("run-1", "source-a", seq, "item.completed", json.RawMessage(`{"n":1}`))
	}
	rc, err := e.appendEvent(ev(2))
	if err != nil {
		return noErr(err, "append 2")
	}
	if err := equal(rc.HighestContiguousSourceSeq, int64(0), "highest contiguous after seq 2"); err != nil {
		return err
	}
	if rc, err = e.appendEvent(ev(1)); err != nil {
		return noErr(err, "append 1")
	}
	if err := equal(rc.HighestContiguousSourceSeq, int64(2), "highest contiguous after seq 1"); err != nil {
		return err
	}
	q := controlplane.ReplayQuery{RunID: "run-1", SourceInstanceID: "source-a", AfterSourceSeq: 0, Limit: 10}
	r1, err := e.p.ReplayEvents(ctx, q)
	if err != nil {
		return noErr(err, "replay")
	}
	if len(r1.Events) != 2 || !bytes.Contains(r1.Events[0], []byte(`"sourceSeq":1`)) {
		return failf("replay gave %d events, want seqs 1,2", len(r1.Events))
	}
	c1, err := e.p.Context(ctx, "run-1")
	if err != nil {
		return err
	}
	p2, err := h.Restart(ctx, e.p)
	if err != nil {
		return noErr(err, "restart")
	}
	r2, err := p2.ReplayEvents(ctx, q)
	if err != nil {
		return noErr(err, "replay after restart")
	}
	c2, err := p2.Context(ctx, "run-1")
	if err != nil {
		return noErr(err, "context after restart")
	}
	if !bytes.Equal(mustJSON(r1), mustJSON(r2)) || !bytes.Equal(mustJSON(c1), mustJSON(c2)) {
		return failf("replay or context differ after restart")
	}
	return nil
}

func openSource(ctx context.Context, h Harness, seed controlplane.Seed, source string) (*env, error) {
	e, err := setup(ctx, h, seed)
	if err != nil {
		return nil, err
	}
	in := openInput("run-1", "task-1", "actor-1")
	in.SourceInstanceID = source
	if err := e.p.OpenRun(ctx, in); err != nil {
		return nil, noErr(err, "open")
	}
	return e, nil
}

func case29(ctx context.Context, h Harness) error {
	e, err := openSource(ctx, h, defaultSeed, "source-a")
	if err != nil {
		return err
	}
	ev := PRPEvent("run-1", "source-a", 1, "item.completed", json.RawMessage(`{"text":"one"}`))
	if _, err := e.appendEvent(ev); err != nil {
		return noErr(err, "append")
	}
	changed := ev
	changed.Payload = json.RawMessage(`{"text":"changed"}`)
	_, err = e.appendEvent(changed)
	if err := wantCode(err, controlplane.CodeNativeEventReplayConflict); err != nil {
		return err
	}
	rc, err := e.appendEvent(ev)
	if err != nil {
		return noErr(err, "identical re-send")
	}
	if err := equal(rc.Disposition, "duplicate", "identical re-send"); err != nil {
		return err
	}
	other := ev
	other.SourceEventID = "source-a:other"
	_, err = e.appendEvent(other)
	return wantCode(err, controlplane.CodeNativeEventReplayConflict)
}

func case30(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed)
	if err != nil {
		return err
	}
	if _, err := e.appendEvent(controlplane.NativeEvent{EventID: "n-1", RunID: "run-1", Sequence: 1, Type: "run.started"}); err != nil {
		return noErr(err, "native 1")
	}
	_, err = e.appendEvent(controlplane.NativeEvent{EventID: "n-3", RunID: "run-1", Sequence: 3, Type: "run.completed"})
	return wantCode(err, controlplane.CodeNativeEventSequenceGap)
}

func case31(ctx context.Context, h Harness) error {
	e, err := openSource(ctx, h, defaultSeed, "source-a")
	if err != nil {
		return err
	}
	_, err = e.p.ReplayEvents(ctx, controlplane.ReplayQuery{RunID: "run-1", SourceInstanceID: "source-b", Limit: 10})
	if err := wantCode(err, controlplane.CodeReplayBindingMismatch); err != nil {
		return err
	}
	_, err = e.p.ReplayEvents(ctx, controlplane.ReplayQuery{RunID: "run-unknown", SourceInstanceID: "source-a", Limit: 10})
	return wantCode(err, controlplane.CodeRunMissing)
}

func completion(disposition controlplane.WorkDisposition, summary string, runState controlplane.RunStatus) json.RawMessage {
	return mustJSON(controlplane.CompleteInput{Result: Result(disposition, summary), Terminal: Terminal(runState, disposition)})
}

func (e *env) terminalEvent(source string, seq int64, disposition controlplane.WorkDisposition) error {
	_, err := e.appendEvent(PRPEvent("run-1", source, seq, "run.terminal", Terminal(controlplane.RunSucceeded, disposition)))
	return noErr(err, "append run.terminal")
}

// failsUnchanged runs op, which must fail with code, and checks that the serialized
// state is byte for byte what it was before; what names op in the failure.
func (e *env) failsUnchanged(ctx context.Context, code controlplane.Code, what string, op func() error) error {
	before, err := e.p.Serialize(ctx)
	if err != nil {
		return err
	}
	if err := wantCode(op(), code); err != nil {
		return err
	}
	after, err := e.p.Serialize(ctx)
	if err != nil {
		return err
	}
	if !bytes.Equal(before, after) {
		return failf("%s changed the serialized state", what)
	}
	return nil
}

// openTerminal opens run-1 on task-1 of seed from source-a and commits its run.terminal
// event (sequence 1, a succeeded run with disposition).
func openTerminal(ctx context.Context, h Harness, seed controlplane.Seed, disposition controlplane.WorkDisposition) (*env, error) {
	e, err := openSource(ctx, h, seed, "source-a")
	if err != nil {
		return nil, err
	}
	return e, e.terminalEvent("source-a", 1, disposition)
}

// complete completes the active run with a succeeded terminal, disposition and summary.
func (e *env) complete(ctx context.Context, disposition controlplane.WorkDisposition, summary string) error {
	return e.p.CompleteRun(ctx, completion(disposition, summary, controlplane.RunSucceeded))
}

// completed completes the run as complete does and returns the state after it; a
// refused completion fails the case.
func (e *env) completed(ctx context.Context, disposition controlplane.WorkDisposition, summary string) (controlplane.State, error) {
	if err := e.complete(ctx, disposition, summary); err != nil {
		return controlplane.State{}, noErr(err, "completeRun")
	}
	return e.snap()
}

func case32(ctx context.Context, h Harness) error {
	e, err := openSource(ctx, h, controlplane.Seed{Faults: []*controlplane.FaultRule{{ID: "fault-1", Operation: "complete_run", Effect: "retryable_error", Remaining: 1, Code: "scripted_retryable_error"}}}, "source-a")
	if err != nil {
		return err
	}
	if err := wantCode(e.complete(ctx, controlplane.WorkDone, "finished"), controlplane.CodeTerminalEventMissing); err != nil {
		return err
	}
	if err := e.terminalEvent("source-a", 1, controlplane.WorkDone); err != nil {
		return err
	}
	bad := mustJSON(controlplane.CompleteInput{Result: json.RawMessage(`{"reportedWorkDisposition":"done","summary":""}`), Terminal: Terminal(controlplane.RunSucceeded, controlplane.WorkDone)})
	if err := wantCode(e.p.CompleteRun(ctx, bad), controlplane.CodeNativeResultInvalid); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	return equal(faultRemaining(st, "fault-1"), 1, "complete_run fault remaining")
}

func case33(ctx context.Context, h Harness) error {
	t2 := task("task-2", controlplane.TaskBlocked, "actor-1")
	e, err := openSource(ctx, h, controlplane.Seed{
		Tasks:    []*controlplane.Task{task("task-1", controlplane.TaskTodo, "actor-1"), t2},
		Blockers: []*controlplane.Blocker{{ID: "b-1", TaskID: "task-2", BlockedByTaskID: "task-1", CreatedAt: "2026-08-09T00:00:00.000Z"}},
	}, "source-a")
	if err != nil {
		return err
	}
	if _, err := e.cmd("run-1", "k1", "finish_task", map[string]any{"summary": "done"}); err != nil {
		return noErr(err, "finish_task")
	}
	if err := e.terminalEvent("source-a", 1, controlplane.WorkDone); err != nil {
		return err
	}
	st, err := e.completed(ctx, controlplane.WorkDone, "finished")
	if err != nil {
		return err
	}
	t1 := taskByID(st, "task-1")
	switch {
	case t1.Status != controlplane.TaskDone || t1.CheckoutRunID != nil || t1.ExecutionRunID != nil:
		return failf("task-1 %s locks %s/%s, want done and unlocked", t1.Status, deref(t1.CheckoutRunID), deref(t1.ExecutionRunID))
	case taskByID(st, "task-2").Status != controlplane.TaskTodo:
		return failf("task-2 %s, want todo", taskByID(st, "task-2").Status)
	case len(st.Blockers) != 0:
		return failf("%d blockers left, want 0", len(st.Blockers))
	case len(countWakes(st, controlplane.WakeBlockersResolved)) != 1:
		return failf("%d blockers_resolved wakes, want 1", len(countWakes(st, controlplane.WakeBlockersResolved)))
	case runByID(st, "run-1").Status != controlplane.RunSucceeded:
		return failf("run %s, want succeeded", runByID(st, "run-1").Status)
	}
	return nil
}

func case34(ctx context.Context, h Harness) error {
	e, err := openTerminal(ctx, h, controlplane.Seed{
		Tasks:    []*controlplane.Task{task("task-1", controlplane.TaskTodo, "actor-1"), task("task-2", controlplane.TaskTodo, "")},
		Blockers: []*controlplane.Blocker{{ID: "b-1", TaskID: "task-1", BlockedByTaskID: "task-2", CreatedAt: "2026-08-09T00:00:00.000Z"}},
	}, controlplane.WorkDone)
	if err != nil {
		return err
	}
	return wantCode(e.complete(ctx, controlplane.WorkDone, "finished"), controlplane.CodeTerminalReconciliationFailed)
}

func case35(ctx context.Context, h Harness) error {
	e, err := openTerminal(ctx, h, defaultSeed, controlplane.WorkDone)
	if err != nil {
		return err
	}
	if err := e.complete(ctx, controlplane.WorkDone, "finished"); err != nil {
		return noErr(err, "completeRun")
	}
	if err := e.complete(ctx, controlplane.WorkDone, "finished"); err != nil {
		return noErr(err, "identical completeRun")
	}
	if err := e.wantLastDecision("complete_run", "duplicate", "terminal_result_already_committed"); err != nil {
		return err
	}
	return wantCode(e.complete(ctx, controlplane.WorkDone, "mutated summary"), controlplane.CodeNativeResultReplayConflict)
}

func case36(ctx context.Context, h Harness) error {
	e, err := openTerminal(ctx, h, defaultSeed, controlplane.WorkYielded)
	if err != nil {
		return err
	}
	st, err := e.completed(ctx, controlplane.WorkYielded, "more later")
	if err != nil {
		return err
	}
	if s := taskByID(st, "task-1").Status; s != controlplane.TaskTodo {
		return failf("task %s, want todo", s)
	}
	ws := countWakes(st, controlplane.WakeScheduledRetry)
	if len(ws) != 1 {
		return failf("%d scheduled_retry wakes, want 1", len(ws))
	}
	if due, created := ws[0].DueAt, ws[0].CreatedAt; due <= created || due[:17] != created[:17] && due[17:19] == created[17:19] {
		return failf("wake due %s is not one tick after %s", due, created)
	}
	last := st.Audit[len(st.Audit)-1]
	var details struct {
		WakeIDs []string `json:"wakeIds"`
	}
	if err := json.Unmarshal(last.Details, &details); err != nil {
		return noErr(err, "decoding run.completed details")
	}
	if last.Action != "run.completed" || len(details.WakeIDs) != 0 {
		return failf("run.completed audit lists wakes %v, want none", details.WakeIDs)
	}
	return nil
}

func approvalSeed(role string, requester string, taskIDs ...string) controlplane.Seed {
	return controlplane.Seed{
		Actors: []*controlplane.Actor{actor("actor-1", role), actor("actor-2", "engineer")},
		Tasks:  []*controlplane.Task{task("task-1", controlplane.TaskTodo, "actor-1"), task("task-2", controlplane.TaskTodo, "actor-2")},
		Approvals: []*controlplane.Approval{{ID: "approval-1", CompanyID: "company-1", TaskIDs: taskIDs, Type: "deploy", Status: controlplane.ApprovalPending,
			RequestedByActorID: ptr(requester), Payload: json.RawMessage(`{}`), CreatedAt: "2026-08-09T00:00:00.000Z"}},
	}
}

func decide(e *env, key string) error {
	_, err := e.cmd("run-1", key, "decide_approval", map[string]any{"approvalId": "approval-1", "decision": "approved", "note": "looks good"})
	return err
}

func case37(ctx context.Context, h Harness) error {
	const claim = "governance:approvals:decide"
	e, err := openDefault(ctx, h, approvalSeed("approver", "actor-1", "task-1"), claim)
	if err != nil {
		return err
	}
	if err := wantCode(decide(e, "k1"), controlplane.CodeSelfApprovalForbidden); err != nil {
		return err
	}
	if e, err = openDefault(ctx, h, approvalSeed("engineer", "actor-2", "task-1"), claim); err != nil {
		return err
	}
	if err := wantCode(decide(e, "k1"), controlplane.CodeOperationNotAuthorized); err != nil {
		return err
	}
	if e, err = openDefault(ctx, h, approvalSeed("Approver ", "actor-2", "task-2"), claim); err != nil {
		return err
	}
	return wantCode(decide(e, "k1"), controlplane.CodeApprovalScopeViolation)
}

func case38(ctx context.Context, h Harness) error {
	const claim = "governance:approvals:decide"
	// Requester's linked task unowned and todo → wake on it.
	e, err := openDefault(ctx, h, approvalSeed("approver", "actor-2", "task-1", "task-2"), claim)
	if err != nil {
		return err
	}
	if err := decide(e, "k1"); err != nil {
		return noErr(err, "decide (eligible task)")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	ws := countWakes(st, controlplane.WakeApprovalResolved)
	if len(ws) != 1 || ws[0].TaskID != "task-2" || ws[0].ActorID != "actor-2" {
		return failf("want one approval_resolved wake for actor-2 on task-2, got %d", len(ws))
	}
	// No eligible task → recovery task and wake.
	if e, err = openDefault(ctx, h, approvalSeed("approver", "actor-2", "task-1"), claim); err != nil {
		return err
	}
	if err := decide(e, "k1"); err != nil {
		return noErr(err, "decide (recovery)")
	}
	if st, err = e.snap(); err != nil {
		return err
	}
	var recovery *controlplane.Task
	for _, t := range st.Tasks {
		if t.Identifier == "MCK-APPROVAL-approval-1" {
			recovery = t
		}
	}
	if recovery == nil || recovery.Status != controlplane.TaskTodo || deref(recovery.AssigneeActorID) != "actor-2" {
		return failf("no todo recovery task MCK-APPROVAL-approval-1 assigned to actor-2")
	}
	if ws := countWakes(st, controlplane.WakeApprovalResolved); len(ws) != 1 || ws[0].TaskID != recovery.ID {
		return failf("want one approval_resolved wake on the recovery task")
	}
	// Paused or budgetless requester → no wake, no task.
	paused := approvalSeed("approver", "actor-2", "task-1")
	paused.Actors[1].Status = controlplane.ActorPaused
	budgetless := approvalSeed("approver", "actor-2", "task-1")
	budgetless.Budgets = []*controlplane.Budget{budget("budget-actor-1", "actor", "actor-1", 1000, 0)}
	for name, seed := range map[string]controlplane.Seed{"paused": paused, "budgetless": budgetless} {
		if e, err = openDefault(ctx, h, seed, claim); err != nil {
			return err
		}
		if err := decide(e, "k1"); err != nil {
			return noErr(err, "decide ("+name+" requester)")
		}
		if st, err = e.snap(); err != nil {
			return err
		}
		if len(st.Wakes) != 0 || len(st.Tasks) != 2 || st.Approvals[0].Status != controlplane.ApprovalApproved {
			return failf("%s requester: %d wakes, %d tasks, approval %s; want 0, 2, approved", name, len(st.Wakes), len(st.Tasks), st.Approvals[0].Status)
		}
	}
	return nil
}

func case39(ctx context.Context, h Harness) error {
	e, err := setup(ctx, h, controlplane.Seed{
		Actors: []*controlplane.Actor{actor("actor-1", "engineer"), actor("actor-2", "engineer")},
		Tasks:  []*controlplane.Task{task("task-1", controlplane.TaskTodo, "actor-1"), task("task-2", controlplane.TaskTodo, "actor-2")},
	})
	if err != nil {
		return err
	}
	if _, err := e.open("run-2", "task-2", "actor-2"); err != nil {
		return noErr(err, "open run-2")
	}
	if _, err := e.open("run-1", "task-1", "actor-1", "delegation:tasks:assign"); err != nil {
		return noErr(err, "open run-1")
	}
	reassign := func(key string, version int) (controlplane.CommandResult, error) {
		return e.cmd("run-1", key, "reassign_task", map[string]any{"targetTaskId": "task-2", "assigneeActorId": "actor-1",
			"expectedAssigneeActorId": "actor-2", "expectedStatusVersion": version, "reason": "rebalance"})
	}
	_, err = reassign("k1", 7)
	if err := wantCode(err, controlplane.CodeReassignmentConflict); err != nil {
		return err
	}
	res, err := reassign("k2", 0)
	if err != nil {
		return noErr(err, "reassign")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	t2 := taskByID(st, "task-2")
	switch {
	case runByID(st, "run-2").Status != controlplane.RunCancelled:
		return failf("run-2 %s, want cancelled", runByID(st, "run-2").Status)
	case t2.Status != controlplane.TaskTodo || t2.StatusVersion != 1 || deref(t2.AssigneeActorID) != "actor-1":
		return failf("task-2 %s version %d assignee %s, want todo 1 actor-1", t2.Status, t2.StatusVersion, deref(t2.AssigneeActorID))
	}
	ws := countWakes(st, controlplane.WakeManual)
	if len(ws) != 1 || len(res.ScheduledWakeIDs) != 1 {
		return failf("want one manual wake, got %d", len(ws))
	}
	return nil
}

func case40(ctx context.Context, h Harness) error {
	rep, step, err := RunPortContract(ctx, h)
	if err != nil {
		return failf("port contract step %d: %v", step, err)
	}
	ok := rep.OpenBindingRejected && rep.EventIDMutationRejected && rep.EventSequenceMutationRej && rep.ReplayBindingRejected && rep.ResultMutationRejected
	if !ok || rep.EventCount != 3 || rep.DuplicateDisposition != "duplicate" {
		return failf("port report %+v", rep)
	}
	return nil
}

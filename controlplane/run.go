package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
)

func strp(s string) *string { return &s }

// OpenRun opens a run and discards its context.
func (m *Memory) OpenRun(ctx context.Context, in OpenInput) error {
	_, err := m.OpenFixtureRun(ctx, in)
	return err
}

// OpenFixtureRun opens (atomically checks out) a run and returns its context. Errors: mock_not_running, run_binding_conflict, actor_missing, task_missing,
// company_scope_violation, actor_not_active, budget_hard_stop, checkout_conflict,
// terminal_task_requires_resume, task_transition_illegal, fixture_state_invalid, or a
// scripted open_run fault.
func (m *Memory) OpenFixtureRun(ctx context.Context, in OpenInput) (RunContext, error) {
	if err := m.lock(ctx); err != nil {
		return RunContext{}, err
	}
	defer m.unlock()
	if err := m.openLocked(in); err != nil {
		return RunContext{}, err
	}
	return m.contextLocked(in.Identity.RunID)
}

// runBinding is what a run id is bound to, compared when the id is opened again: the
// company, actor, task, session, backend kind and source instance.
type runBinding struct{ company, actor, task, session, backend, source string }

// openLocked opens run in with the store lock held. Reopening a run id with the same
// binding resumes it (a duplicate); otherwise the actor and task are checked
// (openParties), the checkout is checked (checkCheckout), and around the scripted
// open_run fault the task is checked out in progress and the new run stored as the
// active run.
func (m *Memory) openLocked(in OpenInput) error {
	if err := m.assertRunning(); err != nil {
		return err
	}
	id := in.Identity
	source := in.SourceInstanceID
	if source == "" {
		source = DefaultSourceInstanceID
	}
	runID := strp(id.RunID)
	if r := m.idx.runs[id.RunID]; r != nil {
		want := runBinding{id.CompanyID, id.AgentID, id.IssueID, id.SessionID, in.BackendKind, source}
		have := runBinding{r.CompanyID, r.ActorID, r.TaskID, r.SessionID, r.BackendKind, r.SourceInstanceID}
		if want != have {
			return newErr(CodeRunBindingConflict, "fixture run id is already bound to different context")
		}
		setv(m, &m.st.ActiveRunID, strp(r.ID))
		m.recordDecision(runID, "open_run", "duplicate", "run_binding_resumed", []string{"run:" + r.ID})
		return nil
	}
	actor, task, err := m.openParties(runID, id)
	if err != nil {
		return err
	}
	refs, retried, err := m.checkCheckout(runID, in, task, actor)
	if err != nil {
		return err
	}
	fault := m.consumeFault("open_run", "")
	if err := m.faultBefore(fault, runID, "open_run"); err != nil {
		return err
	}
	openedAt := m.now()
	edit(m, task, func(t *Task) {
		t.AssigneeActorID = strp(actor.ID)
		t.CheckoutRunID = strp(id.RunID)
		t.ExecutionRunID = strp(id.RunID)
		t.Status = TaskInProgress
		if t.StartedAt == nil {
			t.StartedAt = strp(openedAt)
		}
	})
	run := m.newOpenedRun(in, source, actor, task, openedAt)
	if retried != nil {
		run.RetryOf = strp(retried.ID)
		edit(m, retried, func(r *Run) { r.RetriedByRunID = strp(run.ID) })
	}
	appendv(m, &m.st.Runs, run)
	mapSet(m, m.idx.runs, run.ID, run)
	mapSet(m, m.idx.runIdx, run.ID, newRunIndex())
	setv(m, &m.st.ActiveRunID, strp(run.ID))
	m.recordMutation(runID, strp(actor.ID), "run.opened", "run", run.ID,
		map[string]any{"taskId": task.ID, "wakeReason": run.Wake.Reason, "capabilities": run.Capabilities},
		"open_run", "allowed", "atomic_checkout_acquired", refs)
	return m.faultAfter(fault, runID, "open_run")
}

// openParties finds the actor and task a new run's identity names and checks that
// they may open it: both in the identity's company (the fixture's), the actor active,
// and none of its effective budgets at its hard stop (which pauses the actor and
// records the stop). Errors: actor_missing, task_missing, company_scope_violation,
// actor_not_active, budget_hard_stop.
func (m *Memory) openParties(runID *string, id Identity) (*Actor, *Task, error) {
	actor, err := m.actor(id.AgentID)
	if err != nil {
		return nil, nil, err
	}
	task, err := m.task(id.IssueID)
	if err != nil {
		return nil, nil, err
	}
	if id.CompanyID != actor.CompanyID || id.CompanyID != task.CompanyID || id.CompanyID != m.st.Company.ID {
		return nil, nil, newErr(CodeCompanyScopeViolation, "fixture run identity company %s does not match the actor, task and fixture company", id.CompanyID)
	}
	if actor.Status != ActorActive {
		return nil, nil, m.deny(runID, "open_run", "actor_not_active", []string{"actor:" + actor.ID},
			newErr(CodeActorNotActive, "fixture actor %s is %s", actor.ID, actor.Status))
	}
	budgets, err := m.effectiveBudgets(actor)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range budgets {
		if exceeded(b) {
			edit(m, actor, func(a *Actor) { a.Status = ActorPaused })
			m.recordMutation(runID, strp(actor.ID), "budget.hard_stop", "budget", b.ID,
				map[string]int64{"spentCents": b.SpentCents, "limitCents": b.LimitCents},
				"open_run", "denied", "budget_hard_stop", []string{"budget:" + b.ID, "actor:" + actor.ID})
			return nil, nil, newErr(CodeBudgetHardStop, "fixture budget %s reached its hard stop", b.ID)
		}
	}
	return actor, task, nil
}

// checkCheckout checks that actor may check task out for the run being opened: the
// task is unassigned or the actor's, not checked out by another run, a retried run
// (in.RetryOf) may be retried, and the task's status may move to in progress (a
// terminal task only with in.Resume). It returns the decision refs (the run, the task,
// and the retried run) and the retried run, or nil. Errors: checkout_conflict, the
// retry target's errors, terminal_task_requires_resume, task_transition_illegal.
func (m *Memory) checkCheckout(runID *string, in OpenInput, task *Task, actor *Actor) ([]string, *Run, error) {
	refs := []string{"run:" + in.Identity.RunID, "task:" + task.ID}
	if task.AssigneeActorID != nil && *task.AssigneeActorID != actor.ID {
		return nil, nil, m.deny(runID, "open_run", "checkout_assignee_conflict", refs,
			newErr(CodeCheckoutConflict, "fixture task %s is assigned to %s", task.ID, *task.AssigneeActorID))
	}
	if task.CheckoutRunID != nil && *task.CheckoutRunID != in.Identity.RunID {
		return nil, nil, m.deny(runID, "open_run", "checkout_lock_conflict", refs,
			newErr(CodeCheckoutConflict, "fixture task %s is checked out by %s", task.ID, *task.CheckoutRunID))
	}
	var retried *Run
	if in.RetryOf != "" {
		var err error
		if retried, err = m.retryTarget(runID, in.RetryOf, task, actor); err != nil {
			return nil, nil, err
		}
		refs = append(refs, "run:"+retried.ID)
	}
	terminal := task.Status.Terminal()
	if terminal && !in.Resume {
		return nil, nil, m.deny(runID, "open_run", "terminal_task_requires_resume", refs,
			newErr(CodeTerminalTaskRequiresResume, "fixture task %s is %s; reopen it with resume", task.ID, task.Status))
	}
	switch task.Status {
	case TaskBacklog, TaskTodo, TaskBlocked, TaskInReview:
	default:
		if !terminal {
			return nil, nil, m.deny(runID, "open_run", "checkout_status_illegal", refs,
				newErr(CodeTaskTransitionIllegal, "fixture task cannot transition from %s to in_progress", task.Status))
		}
	}
	return refs, retried, nil
}

// newOpenedRun builds the running run in opens for actor on task at openedAt: its wake
// (manual with an empty payload unless in names one), its capabilities (in's, or the
// actor's grants, sorted and unique), attempt 2 when resumed and 1 otherwise, no
// events, and a null result and session checkpoint.
func (m *Memory) newOpenedRun(in OpenInput, source string, actor *Actor, task *Task, openedAt string) *Run {
	id := in.Identity
	wake := Wake{Reason: WakeManual, Payload: json.RawMessage("{}")}
	if in.Wake != nil {
		wake.Reason = in.Wake.Reason
		wake.Payload = sanitizeRaw(in.Wake.Payload)
	}
	caps := in.Capabilities
	if caps == nil {
		caps = actor.CapabilityGrants
	}
	attempt := 1
	if in.Resume {
		attempt = 2
	}
	return &Run{
		ID: id.RunID, CompanyID: id.CompanyID, ActorID: actor.ID, TaskID: task.ID, SessionID: id.SessionID,
		BackendKind: in.BackendKind, SourceInstanceID: source, Status: RunRunning, Attempt: attempt,
		OpenedAt: openedAt, Wake: wake, Capabilities: m.sortedUnique(caps), Events: []json.RawMessage{},
		Result: json.RawMessage("null"), SessionCheckpoint: json.RawMessage("null"),
	}
}

// retryTarget checks that the run being opened may retry run id (OpenInput.RetryOf).
func (m *Memory) retryTarget(runID *string, id string, task *Task, actor *Actor) (*Run, error) {
	prev, err := m.run(id)
	if err != nil {
		return nil, err
	}
	refs := []string{"run:" + *runID, "run:" + prev.ID}
	switch {
	case prev.RetryWakeID == nil:
		return nil, m.deny(runID, "open_run", string(CodeRunNotRetryable), refs,
			newErr(CodeRunNotRetryable, "no retry was asked for run %s", prev.ID))
	case prev.RetriedByRunID != nil:
		return nil, m.deny(runID, "open_run", string(CodeRunAlreadyRetried), refs,
			newErr(CodeRunAlreadyRetried, "run %s is already retried by %s", prev.ID, *prev.RetriedByRunID))
	case prev.TaskID != task.ID || prev.ActorID != actor.ID:
		return nil, m.deny(runID, "open_run", string(CodeRunBindingConflict), refs,
			newErr(CodeRunBindingConflict, "run %s retried by another task or actor", prev.ID))
	}
	return prev, nil
}

// Context returns the run context of runID. Errors: run_missing,
// fixture_state_invalid (ancestry cycle, missing budget).
func (m *Memory) Context(ctx context.Context, runID string) (RunContext, error) {
	if err := m.lock(ctx); err != nil {
		return RunContext{}, err
	}
	defer m.unlock()
	return m.contextLocked(runID)
}

func (m *Memory) contextLocked(runID string) (RunContext, error) {
	r, err := m.run(runID)
	if err != nil {
		return RunContext{}, err
	}
	actor, err := m.actor(r.ActorID)
	if err != nil {
		return RunContext{}, err
	}
	task, err := m.task(r.TaskID)
	if err != nil {
		return RunContext{}, err
	}
	ancestors := []Task{}
	seen := map[string]bool{task.ID: true}
	for p := task.ParentID; p != nil; {
		if seen[*p] {
			return RunContext{}, newErr(CodeFixtureStateInvalid, "fixture task ancestry contains a cycle")
		}
		seen[*p] = true
		pt, err := m.task(*p)
		if err != nil {
			return RunContext{}, err
		}
		ancestors = append(ancestors, cloneTask(pt))
		p = pt.ParentID
	}
	budgets, err := m.effectiveBudgets(actor)
	if err != nil {
		return RunContext{}, err
	}
	var limit, remaining int64
	for i, b := range budgets {
		rem := max(0, b.LimitCents-b.SpentCents)
		if i == 0 || b.LimitCents < limit {
			limit = b.LimitCents
		}
		if i == 0 || rem < remaining {
			remaining = rem
		}
	}
	results := []InteractionResult{}
	for _, in := range m.st.Interactions {
		if in.TaskID == task.ID && !isNull(in.Result) {
			results = append(results, InteractionResult{ID: in.ID, Kind: in.Kind, Status: in.Status, Result: slices.Clone(in.Result)})
		}
	}
	return RunContext{
		Schema:             ContextSchema,
		RunID:              r.ID,
		Company:            ContextCompany{ID: m.st.Company.ID, Name: m.st.Company.Name, IssuePrefix: m.st.Company.IssuePrefix, Status: m.st.Company.Status},
		Actor:              ContextActor{ID: actor.ID, Name: actor.Name, Role: actor.Role, Status: actor.Status, CapabilityGrants: slices.Clone(actor.CapabilityGrants)},
		ActiveTask:         cloneTask(task),
		Ancestors:          ancestors,
		Wake:               Wake{Reason: r.Wake.Reason, Payload: sanitizeRaw(r.Wake.Payload)},
		Capabilities:       slices.Clone(r.Capabilities),
		Budget:             ContextBudget{LimitCents: limit, RemainingCents: remaining, SpentCents: limit - remaining},
		InteractionResults: results,
		RetryOf:            clonePtr(r.RetryOf),
		Conversation:       m.contextConversation(task),
	}, nil
}

// AppendEvent appends a PRP event (an object with sourceEventId) or a native run event.
// Errors: mock_not_running, run_missing, run_not_writable,
// budget_hard_stop, native_event_invalid, native_event_replay_conflict,
// native_event_sequence_gap, or a scripted append_event fault.
func (m *Memory) AppendEvent(ctx context.Context, event json.RawMessage) (Receipt, error) {
	if err := m.lock(ctx); err != nil {
		return Receipt{}, err
	}
	defer m.unlock()
	return m.appendLocked(event)
}

func (m *Memory) appendLocked(event json.RawMessage) (Receipt, error) {
	if err := m.assertRunning(); err != nil {
		return Receipt{}, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(event, &probe); err != nil || probe == nil {
		return Receipt{}, newErr(CodeNativeEventInvalid, "event must be a JSON object")
	}
	var runIDStr string
	_ = json.Unmarshal(probe["runId"], &runIDStr)
	r, err := m.run(runIDStr)
	if err != nil {
		return Receipt{}, err
	}
	if err := assertRunWritable(r); err != nil {
		return Receipt{}, err
	}
	runID := strp(r.ID)
	fault := m.consumeFault("append_event", "")
	if err := m.faultBefore(fault, runID, "append_event"); err != nil {
		return Receipt{}, err
	}
	ri := m.idx.runIdx[r.ID]
	canon, err := canonicalRaw(event)
	if err != nil {
		return Receipt{}, newErr(CodeNativeEventInvalid, "event is not valid JSON: %v", err)
	}
	if _, isPRP := probe["sourceEventId"]; isPRP {
		if msg := validateShape("event", event); msg != "" {
			return Receipt{}, newErr(CodeNativeEventInvalid, "%s", msg)
		}
		var h eventHead
		_ = json.Unmarshal(event, &h)
		for _, idx := range []int{lookup(ri.byEventID, *h.SourceEventID), lookup(ri.bySeq[h.SourceInstanceID], h.SourceSeq)} {
			if idx < 0 {
				continue
			}
			if !bytes.Equal(r.Events[idx], canon) {
				return Receipt{}, newErr(CodeNativeEventReplayConflict, "event %s (sequence %d) was already committed with different content", *h.SourceEventID, h.SourceSeq)
			}
			m.recordDecision(runID, "append_event", "duplicate", "event_already_committed", []string{"event:" + *h.SourceEventID})
			return Receipt{Cursor: h.SourceSeq, HighestContiguousSourceSeq: ri.highestContiguous(h.SourceInstanceID), Disposition: "duplicate"}, nil
		}
		m.commitEvent(r, ri, canon)
		m.recordMutation(runID, strp(r.ActorID), "run.event_appended", "event", *h.SourceEventID,
			map[string]any{"sourceEventId": *h.SourceEventID, "sourceSeq": h.SourceSeq},
			"append_event", "allowed", "event_committed", []string{"event:" + *h.SourceEventID})
		rc := Receipt{Cursor: h.SourceSeq, HighestContiguousSourceSeq: ri.highestContiguous(h.SourceInstanceID), Disposition: "committed"}
		if err := m.faultAfter(fault, runID, "append_event"); err != nil {
			return Receipt{}, err
		}
		return rc, nil
	}
	var h eventHead
	if err := json.Unmarshal(event, &h); err != nil || h.EventID == "" || (h.Type != "run.started" && h.Type != "run.completed") {
		return Receipt{}, newErr(CodeNativeEventInvalid, "native event needs eventId, runId, sequence and type run.started or run.completed")
	}
	if idx := lookup(ri.native, h.Sequence); idx >= 0 {
		if !bytes.Equal(r.Events[idx], canon) {
			return Receipt{}, newErr(CodeNativeEventReplayConflict, "native event sequence %d was already committed with different content", h.Sequence)
		}
		m.recordDecision(runID, "append_event", "duplicate", "event_already_committed", []string{"event:" + h.EventID})
		return Receipt{Cursor: h.Sequence, HighestContiguousSourceSeq: ri.nativeCount, Disposition: "duplicate"}, nil
	}
	if h.Sequence != ri.nativeCount+1 {
		return Receipt{}, newErr(CodeNativeEventSequenceGap, "native event sequence must be %d", ri.nativeCount+1)
	}
	m.commitEvent(r, ri, canon)
	m.recordMutation(runID, strp(r.ActorID), "run.event_appended", "event", h.EventID,
		map[string]any{"eventId": h.EventID, "sequence": h.Sequence},
		"append_event", "allowed", "event_committed", []string{"event:" + h.EventID})
	rc := Receipt{Cursor: h.Sequence, HighestContiguousSourceSeq: h.Sequence, Disposition: "committed"}
	if err := m.faultAfter(fault, runID, "append_event"); err != nil {
		return Receipt{}, err
	}
	return rc, nil
}

func lookup[K comparable](mp map[K]int, k K) int {
	if i, ok := mp[k]; ok {
		return i
	}
	return -1
}

func (m *Memory) commitEvent(r *Run, ri *runIndex, canon []byte) {
	appendv(m, &r.Events, json.RawMessage(canon))
	m.onUndo(ri.add(canon, len(r.Events)-1))
}

// ReplayEvents returns the PRP events of q.SourceInstanceID with sourceSeq >
// q.AfterSourceSeq in ascending order. Errors: run_missing,
// replay_binding_mismatch. It needs no running lifecycle.
func (m *Memory) ReplayEvents(ctx context.Context, q ReplayQuery) (Replay, error) {
	if err := m.lock(ctx); err != nil {
		return Replay{}, err
	}
	defer m.unlock()
	r, err := m.run(q.RunID)
	if err != nil {
		return Replay{}, err
	}
	if q.SourceInstanceID != r.SourceInstanceID {
		return Replay{}, newErr(CodeReplayBindingMismatch, "fixture run %s is bound to source instance %s", r.ID, r.SourceInstanceID)
	}
	ri := m.idx.runIdx[r.ID]
	seqs := ri.bySeq[q.SourceInstanceID]
	keys := make([]int64, 0, len(seqs))
	for s := range seqs {
		if s > q.AfterSourceSeq {
			keys = append(keys, s)
		}
	}
	slices.Sort(keys)
	end := len(keys)
	if q.Limit >= 0 {
		end = min(end, q.Limit)
	} else {
		end = max(0, end+q.Limit)
	}
	events := make([]json.RawMessage, 0, end)
	for _, s := range keys[:end] {
		events = append(events, slices.Clone(r.Events[seqs[s]]))
	}
	return Replay{Events: events, HighestContiguousSourceSeq: ri.highestContiguous(q.SourceInstanceID)}, nil
}

// LoadSessionCheckpoint returns the active run's checkpoint, nil when none.
// Error: run_missing when there is no active run.
func (m *Memory) LoadSessionCheckpoint(ctx context.Context) (json.RawMessage, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.unlock()
	r, err := m.activeRun()
	if err != nil {
		return nil, err
	}
	if isNull(r.SessionCheckpoint) {
		return nil, nil
	}
	return slices.Clone(r.SessionCheckpoint), nil
}

func (m *Memory) activeRun() (*Run, error) {
	if m.st.ActiveRunID == nil {
		return nil, newErr(CodeRunMissing, "no active fixture run")
	}
	return m.run(*m.st.ActiveRunID)
}

// CheckpointSession stores snapshot on the active, writable run. Errors:
// run_missing, run_not_writable, budget_hard_stop, semantic_command_invalid (not JSON).
func (m *Memory) CheckpointSession(ctx context.Context, snapshot json.RawMessage) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.unlock()
	r, err := m.activeRun()
	if err != nil {
		return err
	}
	if err := assertRunWritable(r); err != nil {
		return err
	}
	canon, err := canonicalRaw(snapshot)
	if err != nil {
		return newErr(CodeSemanticCommandInvalid, "session checkpoint is not valid JSON: %v", err)
	}
	edit(m, r, func(r *Run) { r.SessionCheckpoint = canon })
	m.recordMutation(strp(r.ID), strp(r.ActorID), "run.session_checkpointed", "run", r.ID, map[string]any{},
		"apply_command", "allowed", "session_checkpoint_persisted", []string{"run:" + r.ID})
	return nil
}

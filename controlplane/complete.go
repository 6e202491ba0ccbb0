package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
)

// CompleteRun reconciles a run's terminal disposition. input is a
// NativeRunResult (has runId) or a CompleteInput (acts on the active run). Errors:
// mock_not_running, run_missing, native_result_replay_conflict, run_not_writable,
// budget_hard_stop, native_result_invalid, terminal_event_missing,
// terminal_reconciliation_failed, company_scope_violation, or a scripted complete_run
// fault. An identical retry of a committed completion succeeds as a duplicate.
func (m *Memory) CompleteRun(ctx context.Context, input json.RawMessage) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.unlock()
	return m.completeLocked(input)
}

type prpCompletion struct {
	Result   json.RawMessage `json:"result"`
	Terminal json.RawMessage `json:"terminal"`
}

type resultHead struct {
	ReportedWorkDisposition WorkDisposition `json:"reportedWorkDisposition"`
	Continuation            json.RawMessage `json:"continuation"`
}

type terminalHead struct {
	RunTerminalState RunStatus `json:"runTerminalState"`
}

// completion is what a completion input asks of its run once it has been checked:
// the task status it reconciles to, the run's terminal status, and the continuation
// a yielded task's retry wake carries (nil for a native result).
type completion struct {
	native       bool
	taskStatus   TaskStatus
	runStatus    RunStatus
	continuation json.RawMessage
}

// completeLocked reconciles a completion with the store lock held: it finds the run,
// accepts an identical replay as a duplicate, checks the completion against the run's
// committed events, plans the dependents it unblocks, then (around the scripted
// complete_run fault) commits the task, the run and the dependents' wakes.
func (m *Memory) completeLocked(input json.RawMessage) error {
	if err := m.assertRunning(); err != nil {
		return err
	}
	r, native, canon, err := m.completionRun(input)
	if err != nil {
		return err
	}
	runID := strp(r.ID)
	if !isNull(r.Result) {
		if !bytes.Equal(r.Result, canon) {
			return newErr(CodeNativeResultReplayConflict, "fixture run %s already committed a different result", r.ID)
		}
		m.recordDecision(runID, "complete_run", "duplicate", "terminal_result_already_committed", []string{"run:" + r.ID})
		return nil
	}
	if err := assertRunWritable(r); err != nil {
		return err
	}
	task, err := m.task(r.TaskID)
	if err != nil {
		return err
	}
	var c completion
	if native {
		c, err = m.checkNativeCompletion(r, task, input)
	} else {
		c, err = m.checkPRPCompletion(r, task, input)
	}
	if err != nil {
		return err
	}
	// Plan the blocker fan-out before the fault (dependents in backlog are skipped).
	var dependents []*Task
	if c.taskStatus == TaskDone {
		if dependents, err = m.unblockedDependents(task); err != nil {
			return err
		}
	}
	fault := m.consumeFault("complete_run", "")
	if err := m.faultBefore(fault, runID, "complete_run"); err != nil {
		return err
	}
	if !c.native {
		m.reconcileTask(task, r, c)
	}
	finishedAt := m.now()
	edit(m, r, func(r *Run) {
		r.Status = c.runStatus
		r.Result = canon
		r.FinishedAt = strp(finishedAt)
	})
	edit(m, task, func(t *Task) {
		if t.CheckoutRunID != nil && *t.CheckoutRunID == r.ID {
			t.CheckoutRunID = nil
		}
		if t.ExecutionRunID != nil && *t.ExecutionRunID == r.ID {
			t.ExecutionRunID = nil
		}
	})
	wakeIDs := m.releaseDependents(dependents, task.ID)
	refs := []string{"run:" + r.ID, "task:" + task.ID}
	for _, w := range wakeIDs {
		refs = append(refs, "wake:"+w)
	}
	reconciled := task.Status
	m.recordMutation(runID, strp(r.ActorID), "run.completed", "run", r.ID,
		map[string]any{"status": c.runStatus, "reconciledTaskStatus": reconciled, "wakeIds": wakeIDs},
		"complete_run", "reconciled", "terminal_state_reconciled", refs)
	return m.faultAfter(fault, runID, "complete_run")
}

// completionRun finds the run a completion input acts on: the run named by a native
// result's runId, or else the active run. native reports which form input has; canon
// is input in canonical JSON, the bytes a committed result is compared with. Errors:
// native_result_invalid when input is not a JSON object, run_missing, or the active
// run's errors.
func (m *Memory) completionRun(input json.RawMessage) (r *Run, native bool, canon json.RawMessage, err error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(input, &probe); err != nil || probe == nil {
		return nil, false, nil, newErr(CodeNativeResultInvalid, "completion must be a JSON object")
	}
	canon, err = canonicalRaw(input)
	if err != nil {
		return nil, false, nil, newErr(CodeNativeResultInvalid, "completion is not valid JSON: %v", err)
	}
	_, native = probe["runId"]
	if native {
		var id string
		_ = json.Unmarshal(probe["runId"], &id)
		r, err = m.run(id)
	} else {
		r, err = m.activeRun()
	}
	if err != nil {
		return nil, false, nil, err
	}
	return r, native, canon, nil
}

// checkNativeCompletion checks a NativeRunResult against run r: its status must be a
// completion status and r must hold a run.completed event of its own (not one copied
// from a source event). The task keeps its status. Errors: native_result_invalid,
// terminal_event_missing.
func (m *Memory) checkNativeCompletion(r *Run, task *Task, input json.RawMessage) (completion, error) {
	var nr NativeRunResult
	if err := json.Unmarshal(input, &nr); err != nil || !slices.Contains(CompletionStatuses, nr.Status) {
		return completion{}, newErr(CodeNativeResultInvalid, "native run result needs status succeeded, failed or cancelled")
	}
	found := false
	for _, raw := range r.Events {
		var h eventHead
		_ = json.Unmarshal(raw, &h)
		if h.SourceEventID == nil && h.Type == "run.completed" {
			found = true
			break
		}
	}
	if !found {
		return completion{}, newErr(CodeTerminalEventMissing, "fixture run %s has no run.completed event", r.ID)
	}
	return completion{native: true, taskStatus: task.Status, runStatus: nr.Status}, nil
}

// checkPRPCompletion checks a CompleteInput (a result and a terminal, each valid
// against its schema) against run r, which must hold a committed run.terminal event.
// The result's reported work disposition names the task's new status: done (refused
// while the task has unresolved blockers), blocked, in review, or todo for a yielded
// task. Errors: native_result_invalid, terminal_event_missing,
// terminal_reconciliation_failed.
func (m *Memory) checkPRPCompletion(r *Run, task *Task, input json.RawMessage) (completion, error) {
	var pc prpCompletion
	_ = json.Unmarshal(input, &pc)
	if isNull(pc.Result) {
		return completion{}, newErr(CodeNativeResultInvalid, "completion result is required")
	}
	if msg := validateShape("result", pc.Result); msg != "" {
		return completion{}, newErr(CodeNativeResultInvalid, "%s", msg)
	}
	if isNull(pc.Terminal) {
		return completion{}, newErr(CodeNativeResultInvalid, "completion terminal is required")
	}
	if msg := validateShape("terminal", pc.Terminal); msg != "" {
		return completion{}, newErr(CodeNativeResultInvalid, "terminal %s", msg)
	}
	found := false
	for _, idx := range m.idx.runIdx[r.ID].byEventID {
		var h eventHead
		_ = json.Unmarshal(r.Events[idx], &h)
		if h.EventType == "run.terminal" {
			found = true
			break
		}
	}
	if !found {
		return completion{}, newErr(CodeTerminalEventMissing, "fixture run %s has no committed run.terminal event", r.ID)
	}
	var res resultHead
	_ = json.Unmarshal(pc.Result, &res)
	var term terminalHead
	_ = json.Unmarshal(pc.Terminal, &term)
	c := completion{runStatus: term.RunTerminalState, continuation: res.Continuation}
	switch res.ReportedWorkDisposition {
	case WorkDone:
		c.taskStatus = TaskDone
		if m.hasUnresolvedBlockers(task.ID, "") {
			return completion{}, newErr(CodeTerminalReconciliationFailed, "fixture task %s still has unresolved blockers", task.ID)
		}
	case WorkBlocked:
		c.taskStatus = TaskBlocked
	case WorkNeedsReview:
		c.taskStatus = TaskInReview
	case WorkYielded:
		c.taskStatus = TaskTodo
	}
	return c, nil
}

// unblockedDependents lists, in id order, the tasks blocked by task that its
// completion releases: those not in the backlog whose other blockers are all done.
// Errors: a missing task or assignee, or either outside the company.
func (m *Memory) unblockedDependents(task *Task) ([]*Task, error) {
	var ids []string
	for _, b := range m.st.Blockers {
		if b.BlockedByTaskID == task.ID {
			ids = append(ids, b.TaskID)
		}
	}
	var dependents []*Task
	for _, id := range m.sortedUnique(ids) {
		dep, err := m.task(id)
		if err != nil {
			return nil, err
		}
		if err := m.assertCompany("task", dep.ID, dep.CompanyID); err != nil {
			return nil, err
		}
		if dep.Status == TaskBacklog || m.hasUnresolvedBlockers(dep.ID, task.ID) {
			continue
		}
		if dep.AssigneeActorID != nil {
			a, err := m.actor(*dep.AssigneeActorID)
			if err != nil {
				return nil, err
			}
			if err := m.assertCompany("actor", a.ID, a.CompanyID); err != nil {
				return nil, err
			}
		}
		dependents = append(dependents, dep)
	}
	return dependents, nil
}

// reconcileTask moves task to the status completion c reconciles it to: done (stamping
// its first completion time and dropping its own blockers), todo (with a scheduled
// retry wake for its assignee carrying run r's id and the continuation), or blocked or
// in review as they are.
func (m *Memory) reconcileTask(task *Task, r *Run, c completion) {
	switch c.taskStatus {
	case TaskDone:
		var completedAt *string
		if task.CompletedAt == nil {
			completedAt = strp(m.now())
		}
		edit(m, task, func(t *Task) {
			t.Status = TaskDone
			if completedAt != nil {
				t.CompletedAt = completedAt
			}
		})
		m.deleteBlockers(func(b *Blocker) bool { return b.TaskID == task.ID })
	case TaskTodo:
		edit(m, task, func(t *Task) { t.Status = TaskTodo })
		if task.AssigneeActorID != nil {
			cont := c.continuation
			if isNull(cont) {
				cont = json.RawMessage("{}")
			}
			m.scheduleWake(*task.AssigneeActorID, task.ID, WakeScheduledRetry,
				mustJSON(map[string]any{"runId": r.ID, "continuation": cont}), 1)
		}
	default:
		edit(m, task, func(t *Task) { t.Status = c.taskStatus })
	}
}

// releaseDependents drops the blockers of each dependent released by the completed
// task completedID, moves a blocked one back to todo and wakes its assignee. It
// returns the ids of the wakes it scheduled, in order (empty, not nil).
func (m *Memory) releaseDependents(dependents []*Task, completedID string) []string {
	wakeIDs := []string{}
	for _, dep := range dependents {
		m.deleteBlockers(func(b *Blocker) bool { return b.TaskID == dep.ID })
		if dep.Status == TaskBlocked {
			edit(m, dep, func(t *Task) { t.Status = TaskTodo })
		}
		if dep.AssigneeActorID != nil {
			w := m.scheduleWake(*dep.AssigneeActorID, dep.ID, WakeBlockersResolved, mustJSON(map[string]string{"completedTaskId": completedID}), 0)
			wakeIDs = append(wakeIDs, w.ID)
		}
	}
	return wakeIDs
}

// hasUnresolvedBlockers reports whether taskID has a blocker row whose blocking task is
// not done, ignoring rows blocked by except.
func (m *Memory) hasUnresolvedBlockers(taskID, except string) bool {
	for _, b := range m.st.Blockers {
		if b.TaskID != taskID || b.BlockedByTaskID == except {
			continue
		}
		if t := m.idx.tasks[b.BlockedByTaskID]; t == nil || t.Status != TaskDone {
			return true
		}
	}
	return false
}

func (m *Memory) deleteBlockers(drop func(*Blocker) bool) {
	if !slices.ContainsFunc(m.st.Blockers, drop) {
		return
	}
	kept := make([]*Blocker, 0, len(m.st.Blockers))
	for _, b := range m.st.Blockers {
		if !drop(b) {
			kept = append(kept, b)
		}
	}
	setv(m, &m.st.Blockers, kept)
}

// scheduleWake creates a scheduled wake: tick first, then id.
func (m *Memory) scheduleWake(actorID, taskID string, reason WakeReason, payload json.RawMessage, delayTicks int64) *ScheduledWake {
	ms := m.st.Clock.EpochMs + m.st.Clock.Tick*1000
	createdAt := m.now()
	id := m.newID("wake")
	w := &ScheduledWake{ID: id, ActorID: actorID, TaskID: taskID, Reason: reason, Payload: sanitizeRaw(payload),
		DueAt: formatMs(ms + delayTicks*1000), Status: WakeScheduled, CreatedAt: createdAt}
	appendv(m, &m.st.Wakes, w)
	return w
}

package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
)

// CompleteRun reconciles a run's terminal disposition (spec §2.8). input is a
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

func (m *Memory) completeLocked(input json.RawMessage) error {
	if err := m.assertRunning(); err != nil {
		return err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(input, &probe); err != nil || probe == nil {
		return newErr(CodeNativeResultInvalid, "completion must be a JSON object")
	}
	canon, err := canonicalRaw(input)
	if err != nil {
		return newErr(CodeNativeResultInvalid, "completion is not valid JSON: %v", err)
	}
	_, native := probe["runId"]
	var r *Run
	if native {
		var id string
		_ = json.Unmarshal(probe["runId"], &id)
		if r, err = m.run(id); err != nil {
			return err
		}
	} else if r, err = m.activeRun(); err != nil {
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
	ri := m.idx.runIdx[r.ID]
	var newTaskStatus TaskStatus
	var runStatus RunStatus
	var res resultHead
	if native {
		var nr NativeRunResult
		if err := json.Unmarshal(input, &nr); err != nil || !slices.Contains(CompletionStatuses, nr.Status) {
			return newErr(CodeNativeResultInvalid, "native run result needs status succeeded, failed or cancelled")
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
			return newErr(CodeTerminalEventMissing, "fixture run %s has no run.completed event", r.ID)
		}
		newTaskStatus, runStatus = task.Status, nr.Status
	} else {
		var pc prpCompletion
		_ = json.Unmarshal(input, &pc)
		if isNull(pc.Result) {
			return newErr(CodeNativeResultInvalid, "completion result is required")
		}
		if msg := validateShape("result", pc.Result); msg != "" {
			return newErr(CodeNativeResultInvalid, "%s", msg)
		}
		if isNull(pc.Terminal) {
			return newErr(CodeNativeResultInvalid, "completion terminal is required")
		}
		if msg := validateShape("terminal", pc.Terminal); msg != "" {
			return newErr(CodeNativeResultInvalid, "terminal %s", msg)
		}
		found := false
		for _, idx := range ri.byEventID {
			var h eventHead
			_ = json.Unmarshal(r.Events[idx], &h)
			if h.EventType == "run.terminal" {
				found = true
				break
			}
		}
		if !found {
			return newErr(CodeTerminalEventMissing, "fixture run %s has no committed run.terminal event", r.ID)
		}
		_ = json.Unmarshal(pc.Result, &res)
		var term terminalHead
		_ = json.Unmarshal(pc.Terminal, &term)
		runStatus = term.RunTerminalState
		switch res.ReportedWorkDisposition {
		case WorkDone:
			newTaskStatus = TaskDone
			if m.hasUnresolvedBlockers(task.ID, "") {
				return newErr(CodeTerminalReconciliationFailed, "fixture task %s still has unresolved blockers", task.ID)
			}
		case WorkBlocked:
			newTaskStatus = TaskBlocked
		case WorkNeedsReview:
			newTaskStatus = TaskInReview
		case WorkYielded:
			newTaskStatus = TaskTodo
		}
	}
	// Plan the blocker fan-out before the fault (V-new: skip backlog dependents).
	var dependents []*Task
	if newTaskStatus == TaskDone {
		var ids []string
		for _, b := range m.st.Blockers {
			if b.BlockedByTaskID == task.ID {
				ids = append(ids, b.TaskID)
			}
		}
		for _, id := range m.sortedUnique(ids) {
			dep, err := m.task(id)
			if err != nil {
				return err
			}
			if err := m.assertCompany("task", dep.ID, dep.CompanyID); err != nil {
				return err
			}
			if dep.Status == TaskBacklog || m.hasUnresolvedBlockers(dep.ID, task.ID) {
				continue
			}
			if dep.AssigneeActorID != nil {
				a, err := m.actor(*dep.AssigneeActorID)
				if err != nil {
					return err
				}
				if err := m.assertCompany("actor", a.ID, a.CompanyID); err != nil {
					return err
				}
			}
			dependents = append(dependents, dep)
		}
	}
	fault := m.consumeFault("complete_run", "")
	if err := m.faultBefore(fault, runID, "complete_run"); err != nil {
		return err
	}
	if !native {
		switch newTaskStatus {
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
				cont := res.Continuation
				if isNull(cont) {
					cont = json.RawMessage("{}")
				}
				m.scheduleWake(*task.AssigneeActorID, task.ID, WakeScheduledRetry,
					mustJSON(map[string]any{"runId": r.ID, "continuation": cont}), 1)
			}
		default:
			edit(m, task, func(t *Task) { t.Status = newTaskStatus })
		}
	}
	finishedAt := m.now()
	edit(m, r, func(r *Run) {
		r.Status = runStatus
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
	wakeIDs := []string{}
	for _, dep := range dependents {
		m.deleteBlockers(func(b *Blocker) bool { return b.TaskID == dep.ID })
		if dep.Status == TaskBlocked {
			edit(m, dep, func(t *Task) { t.Status = TaskTodo })
		}
		if dep.AssigneeActorID != nil {
			w := m.scheduleWake(*dep.AssigneeActorID, dep.ID, WakeBlockersResolved, mustJSON(map[string]string{"completedTaskId": task.ID}), 0)
			wakeIDs = append(wakeIDs, w.ID)
		}
	}
	refs := []string{"run:" + r.ID, "task:" + task.ID}
	for _, w := range wakeIDs {
		refs = append(refs, "wake:"+w)
	}
	reconciled := task.Status
	m.recordMutation(runID, strp(r.ActorID), "run.completed", "run", r.ID,
		map[string]any{"status": runStatus, "reconciledTaskStatus": reconciled, "wakeIds": wakeIDs},
		"complete_run", "reconciled", "terminal_state_reconciled", refs)
	return m.faultAfter(fault, runID, "complete_run")
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

// scheduleWake creates a scheduled wake: tick first, then id (spec §4).
func (m *Memory) scheduleWake(actorID, taskID string, reason WakeReason, payload json.RawMessage, delayTicks int64) *ScheduledWake {
	ms := m.st.Clock.EpochMs + m.st.Clock.Tick*1000
	createdAt := m.now()
	id := m.newID("wake")
	w := &ScheduledWake{ID: id, ActorID: actorID, TaskID: taskID, Reason: reason, Payload: sanitizeRaw(payload),
		DueAt: formatMs(ms + delayTicks*1000), Status: WakeScheduled, CreatedAt: createdAt}
	appendv(m, &m.st.Wakes, w)
	return w
}

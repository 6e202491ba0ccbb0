package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/controlplane"
)

// The port contract fixture.
const (
	PortRunID     = "00000000-0000-4000-8000-000000000006"
	PortSessionID = "session-phase6-conformance"
	PortCompanyID = "00000000-0000-4000-8000-000000000001"
	PortActorID   = "00000000-0000-4000-8000-000000000002"
	PortTaskID    = "00000000-0000-4000-8000-000000000003"
	PortSource    = "runner-phase6-conformance"
	PortTurnID    = "turn-phase6-conformance"
)

// PortSeed is the seed of the port contract: one company, actor and assigned task.
func PortSeed() controlplane.Seed {
	return controlplane.Seed{
		Company: &controlplane.Company{ID: PortCompanyID, BudgetID: "budget-company-phase6"},
		Actors: []*controlplane.Actor{{ID: PortActorID, CompanyID: PortCompanyID, Name: "Conformance Agent", Role: "engineer",
			Status: controlplane.ActorActive, BudgetID: "budget-actor-phase6", CapabilityGrants: []string{}}},
		Tasks: []*controlplane.Task{{ID: PortTaskID, CompanyID: PortCompanyID, Identifier: "MCK-1", Title: "Phase 6 conformance task",
			Status: controlplane.TaskTodo, Priority: "medium", WorkMode: "standard", AssigneeActorID: ptr(PortActorID)}},
	}
}

func ptr[T any](v T) *T { return &v }

// PortOpen is the open input of the port contract.
func PortOpen() controlplane.OpenInput {
	return controlplane.OpenInput{
		Identity:         controlplane.Identity{RunID: PortRunID, SessionID: PortSessionID, CompanyID: PortCompanyID, IssueID: PortTaskID, AgentID: PortActorID},
		BackendKind:      "mock",
		SourceInstanceID: PortSource,
	}
}

// Result returns a schema-valid run result (paperclip.run_result.v1) with the given
// disposition and summary; blocked and yielded results carry their required members.
func Result(disposition controlplane.WorkDisposition, summary string) json.RawMessage {
	r := map[string]any{
		"reportedWorkDisposition": disposition,
		"summary":                 summary,
		"completionClaim": map[string]any{
			"contractRevision":   1,
			"objectiveSatisfied": disposition == controlplane.WorkDone,
			"criteria":           []any{map[string]any{"criterionId": "criterion-1", "status": "satisfied", "evidenceRefs": []any{"event:2"}}},
			"remainingWork":      []any{},
		},
		"evidence":          []any{map[string]any{"kind": "event", "ref": "event:2"}},
		"verification":      []any{map[string]any{"commandOrCheck": "event:2", "status": "passed"}},
		"attentionRequests": []any{},
		"artifacts":         []any{},
	}
	switch disposition {
	case controlplane.WorkBlocked:
		r["blocker"] = map[string]any{"reasonCode": "waiting", "owner": "board", "unblockAction": "decide", "scope": "task_wide"}
	case controlplane.WorkYielded:
		r["continuation"] = map[string]any{"kind": "retry", "summary": "continue later", "idempotencyKey": "continuation-1"}
	}
	return mustJSON(r)
}

// Terminal returns a schema-valid terminal (paperclip.prp.terminal.v1).
func Terminal(runState controlplane.RunStatus, disposition controlplane.WorkDisposition) json.RawMessage {
	return mustJSON(map[string]any{"turnTerminalState": "completed", "runTerminalState": runState, "reportedWorkDisposition": disposition})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// PRPEvent builds a schema-valid PRP event of source instance source.
func PRPEvent(runID, source string, seq int64, eventType string, payload json.RawMessage) controlplane.PRPEvent {
	priority := 1
	if eventType == "run.terminal" {
		priority = 0
	}
	return controlplane.PRPEvent{
		Schema: "paperclip.prp.event.v1", SourceEventID: fmt.Sprintf("%s:event:%d", source, seq), SourceSeq: seq,
		SourceInstanceID: source, SourceKind: "runner", RunID: runID, TurnID: PortTurnID, EventType: eventType,
		SchemaVersion: 1, Priority: priority, EmittedAt: fmt.Sprintf("2026-08-09T00:00:%02d.000Z", seq), Payload: payload,
	}
}

func portEvent(n int64) controlplane.PRPEvent {
	switch n {
	case 1:
		return PRPEvent(PortRunID, PortSource, 1, "session.started", json.RawMessage(`{"backend":"mock"}`))
	case 2:
		return PRPEvent(PortRunID, PortSource, 2, "run.result.proposed", Result(controlplane.WorkDone, "Phase 6 conformance task completed."))
	default:
		return PRPEvent(PortRunID, PortSource, 3, "run.terminal", Terminal(controlplane.RunSucceeded, controlplane.WorkDone))
	}
}

func portCompletion(summary string) json.RawMessage {
	return mustJSON(controlplane.CompleteInput{
		Result: Result(controlplane.WorkDone, summary), Terminal: Terminal(controlplane.RunSucceeded, controlplane.WorkDone), TurnID: PortTurnID,
		CallerResultID: "result-phase6-conformance", CallerDedupeKey: "dedupe-phase6-conformance",
	})
}

// PortReport is what the port contract reports.
type PortReport struct {
	EventCount                 int64
	HighestContiguousSourceSeq int64
	DuplicateDisposition       string
	TerminalReplayIdempotent   bool
	OpenBindingRejected        bool
	EventIDMutationRejected    bool
	EventSequenceMutationRej   bool
	ReplayBindingRejected      bool
	ResultMutationRejected     bool
}

// portStepNames are the 13 steps of the port contract, in order.
var portStepNames = []string{
	"port/01-start-and-open",
	"port/02-open-binding-rejected",
	"port/03-append-first-event",
	"port/04-source-gap-not-hidden",
	"port/05-source-gap-recovered",
	"port/06-duplicate-event",
	"port/07-event-id-mutation-rejected",
	"port/08-event-sequence-mutation-rejected",
	"port/09-replay-exclusive-cursor",
	"port/10-replay-binding-rejected",
	"port/11-terminal-replay-idempotent",
	"port/12-result-mutation-rejected",
	"port/13-report",
}

// RunPortContract runs the port contract (docs/control-plane.md, "Conformance") against a fresh Port from h and
// returns its report, or the first violated step (1-based) and why.
func RunPortContract(ctx context.Context, h Harness) (PortReport, int, error) {
	p, err := h.New(ctx, PortSeed())
	if err != nil {
		return PortReport{}, 1, noErr(err, "building the port")
	}
	defer func() { _ = p.Stop(context.WithoutCancel(ctx)) }()
	r := &portRun{ctx: ctx, p: p}
	for i, step := range portSteps {
		if err := step(r); err != nil {
			return r.rep, i + 1, err
		}
	}
	return r.rep, 0, nil
}

// portRun is one run of the port contract: the port under test and the report its
// steps fill in as they pass.
type portRun struct {
	ctx context.Context
	p   controlplane.Port
	rep PortReport
}

// portSteps are the steps of the port contract in the order of portStepNames; each
// returns why its step is violated, or nil.
var portSteps = []func(*portRun) error{
	(*portRun).startAndOpen,
	(*portRun).openBindingRejected,
	(*portRun).appendFirstEvent,
	(*portRun).sourceGapNotHidden,
	(*portRun).sourceGapRecovered,
	(*portRun).duplicateEvent,
	(*portRun).eventIDMutationRejected,
	(*portRun).eventSequenceMutationRejected,
	(*portRun).replayExclusiveCursor,
	(*portRun).replayBindingRejected,
	(*portRun).terminalReplayIdempotent,
	(*portRun).resultMutationRejected,
	(*portRun).report,
}

func (r *portRun) appendEv(ev any) (controlplane.Receipt, error) {
	return r.p.AppendEvent(r.ctx, mustJSON(ev))
}

// startAndOpen starts the port and opens the contract's run.
func (r *portRun) startAndOpen() error {
	if err := r.p.Start(r.ctx); err != nil {
		return noErr(err, "start")
	}
	return noErr(r.p.OpenRun(r.ctx, PortOpen()), "openRun")
}

// openBindingRejected reopens the run with a forged issue id: run_binding_conflict.
func (r *portRun) openBindingRejected() error {
	forged := PortOpen()
	forged.Identity.IssueID = "forged-issue"
	err := r.p.OpenRun(r.ctx, forged)
	if err == nil {
		return failf("openRun with a forged issue id was accepted")
	}
	r.rep.OpenBindingRejected = true
	return wantCode(err, controlplane.CodeRunBindingConflict)
}

// appendFirstEvent appends source event 1: committed, contiguous up to 1.
func (r *portRun) appendFirstEvent() error {
	rc, err := r.appendEv(portEvent(1))
	if err != nil {
		return noErr(err, "append e1")
	}
	if rc.Disposition != "committed" || rc.HighestContiguousSourceSeq != 1 {
		return failf("append e1: got %+v, want committed with highestContiguousSourceSeq 1", rc)
	}
	return nil
}

// sourceGapNotHidden appends source event 3: still contiguous only up to 1.
func (r *portRun) sourceGapNotHidden() error {
	rc, err := r.appendEv(portEvent(3))
	if err != nil {
		return noErr(err, "append e3")
	}
	if rc.HighestContiguousSourceSeq != 1 {
		return failf("source gap was hidden: highestContiguousSourceSeq %d after e3, want 1", rc.HighestContiguousSourceSeq)
	}
	return nil
}

// sourceGapRecovered appends source event 2: contiguous up to 3.
func (r *portRun) sourceGapRecovered() error {
	rc, err := r.appendEv(portEvent(2))
	if err != nil {
		return noErr(err, "append e2")
	}
	return equal(rc.HighestContiguousSourceSeq, int64(3), "highestContiguousSourceSeq after e2 (gap recovered)")
}

// duplicateEvent re-appends source event 2: a duplicate.
func (r *portRun) duplicateEvent() error {
	rc, err := r.appendEv(portEvent(2))
	if err != nil {
		return noErr(err, "re-append e2")
	}
	r.rep.DuplicateDisposition = rc.Disposition
	return equal(rc.Disposition, "duplicate", "re-append e2 disposition")
}

// eventIDMutationRejected appends schema-valid payload mutations under the ids of
// events 2 and 1: native_event_replay_conflict each.
func (r *portRun) eventIDMutationRejected() error {
	mutated := portEvent(2)
	mutated.Payload = Result(controlplane.WorkDone, "mutated result payload")
	err := wantCode(func() error { _, err := r.appendEv(mutated); return err }(), controlplane.CodeNativeEventReplayConflict)
	if err != nil {
		return fmt.Errorf("event id mutation: %w", err)
	}
	forged := portEvent(1)
	forged.Payload = json.RawMessage(`{"backend":"forged"}`)
	if err := wantCode(func() error { _, err := r.appendEv(forged); return err }(), controlplane.CodeNativeEventReplayConflict); err != nil {
		return fmt.Errorf("forged e1 payload: %w", err)
	}
	r.rep.EventIDMutationRejected = true
	return nil
}

// eventSequenceMutationRejected appends a new event id at event 2's sequence:
// native_event_replay_conflict.
func (r *portRun) eventSequenceMutationRejected() error {
	mutated := portEvent(2)
	mutated.SourceEventID = PortSource + ":mutated-sequence-two"
	mutated.Payload = Result(controlplane.WorkDone, "mutated result payload")
	if err := wantCode(func() error { _, err := r.appendEv(mutated); return err }(), controlplane.CodeNativeEventReplayConflict); err != nil {
		return fmt.Errorf("event sequence mutation: %w", err)
	}
	r.rep.EventSequenceMutationRej = true
	return nil
}

// replayExclusiveCursor replays after source sequence 1: events 2 and 3 only.
func (r *portRun) replayExclusiveCursor() error {
	rp, err := r.p.ReplayEvents(r.ctx, controlplane.ReplayQuery{RunID: PortRunID, SourceInstanceID: PortSource, AfterSourceSeq: 1, Limit: 10})
	if err != nil {
		return noErr(err, "replay")
	}
	var seqs []string
	for _, e := range rp.Events {
		var h struct {
			SourceSeq int64 `json:"sourceSeq"`
		}
		if err := json.Unmarshal(e, &h); err != nil {
			return noErr(err, "decoding replayed event")
		}
		seqs = append(seqs, fmt.Sprint(h.SourceSeq))
	}
	r.rep.EventCount = rp.HighestContiguousSourceSeq
	r.rep.HighestContiguousSourceSeq = rp.HighestContiguousSourceSeq
	return equal(strings.Join(seqs, ","), "2,3", "replayed sequences after cursor 1")
}

// replayBindingRejected replays a forged run id: run_missing.
func (r *portRun) replayBindingRejected() error {
	_, err := r.p.ReplayEvents(r.ctx, controlplane.ReplayQuery{RunID: "forged-run", SourceInstanceID: PortSource, AfterSourceSeq: 0, Limit: 10})
	if err := wantCode(err, controlplane.CodeRunMissing); err != nil {
		return err
	}
	r.rep.ReplayBindingRejected = true
	return nil
}

// terminalReplayIdempotent completes the run twice with the same completion.
func (r *portRun) terminalReplayIdempotent() error {
	if err := r.p.CompleteRun(r.ctx, portCompletion("Phase 6 conformance task completed.")); err != nil {
		return noErr(err, "first completeRun")
	}
	if err := r.p.CompleteRun(r.ctx, portCompletion("Phase 6 conformance task completed.")); err != nil {
		return noErr(err, "identical completeRun replay")
	}
	r.rep.TerminalReplayIdempotent = true
	return nil
}

// resultMutationRejected completes the run again with another result:
// native_result_replay_conflict.
func (r *portRun) resultMutationRejected() error {
	if err := wantCode(r.p.CompleteRun(r.ctx, portCompletion("mutated result replay")), controlplane.CodeNativeResultReplayConflict); err != nil {
		return err
	}
	r.rep.ResultMutationRejected = true
	return nil
}

// report checks the filled-in report: every rejection seen, three events contiguous,
// the duplicate disposition and an idempotent terminal replay.
func (r *portRun) report() error {
	rep := r.rep
	ok := rep.OpenBindingRejected && rep.EventIDMutationRejected && rep.EventSequenceMutationRej && rep.ReplayBindingRejected && rep.ResultMutationRejected
	if !ok || rep.EventCount != 3 || rep.HighestContiguousSourceSeq != 3 || rep.DuplicateDisposition != "duplicate" || !rep.TerminalReplayIdempotent {
		return failf("port report %+v does not meet the contract", rep)
	}
	return nil
}

func runPortContract(h Harness) []CaseResult {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	out := make([]CaseResult, len(portStepNames))
	var failedAt int
	var ferr error
	func() {
		defer func() {
			if r := recover(); r != nil {
				failedAt, ferr = 1, fmt.Errorf("panic: %v", r)
			}
		}()
		_, failedAt, ferr = RunPortContract(ctx, h)
	}()
	for i, name := range portStepNames {
		out[i].Name = name
		switch {
		case failedAt == 0 || i+1 < failedAt:
			out[i].Passed = true
		case i+1 == failedAt:
			out[i].Detail = ferr.Error()
		default:
			out[i].Detail = fmt.Sprintf("not reached: step %d failed", failedAt)
		}
	}
	return out
}

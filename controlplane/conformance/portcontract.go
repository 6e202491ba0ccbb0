package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/controlplane"
)

// The port contract fixture (spec §7).
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

// PortReport is what the port contract reports (spec §7 step 13).
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

// RunPortContract runs the seed's port contract against a fresh Port from h and
// returns its report, or the first violated step (1-based) and why.
func RunPortContract(ctx context.Context, h Harness) (PortReport, int, error) {
	var rep PortReport
	p, err := h.New(ctx, PortSeed())
	if err != nil {
		return rep, 1, noErr(err, "building the port")
	}
	defer func() { _ = p.Stop(context.WithoutCancel(ctx)) }()
	appendEv := func(ev any) (controlplane.Receipt, error) { return p.AppendEvent(ctx, mustJSON(ev)) }
	steps := []func() error{
		func() error { // 1
			if err := p.Start(ctx); err != nil {
				return noErr(err, "start")
			}
			return noErr(p.OpenRun(ctx, PortOpen()), "openRun")
		},
		func() error { // 2
			forged := PortOpen()
			forged.Identity.IssueID = "forged-issue"
			err := p.OpenRun(ctx, forged)
			if err == nil {
				return failf("openRun with a forged issue id was accepted")
			}
			rep.OpenBindingRejected = true
			return wantCode(err, controlplane.CodeRunBindingConflict)
		},
		func() error { // 3
			rc, err := appendEv(portEvent(1))
			if err != nil {
				return noErr(err, "append e1")
			}
			if rc.Disposition != "committed" || rc.HighestContiguousSourceSeq != 1 {
				return failf("append e1: got %+v, want committed with highestContiguousSourceSeq 1", rc)
			}
			return nil
		},
		func() error { // 4
			rc, err := appendEv(portEvent(3))
			if err != nil {
				return noErr(err, "append e3")
			}
			if rc.HighestContiguousSourceSeq != 1 {
				return failf("source gap was hidden: highestContiguousSourceSeq %d after e3, want 1", rc.HighestContiguousSourceSeq)
			}
			return nil
		},
		func() error { // 5
			rc, err := appendEv(portEvent(2))
			if err != nil {
				return noErr(err, "append e2")
			}
			return equal(rc.HighestContiguousSourceSeq, int64(3), "highestContiguousSourceSeq after e2 (gap recovered)")
		},
		func() error { // 6
			rc, err := appendEv(portEvent(2))
			if err != nil {
				return noErr(err, "re-append e2")
			}
			rep.DuplicateDisposition = rc.Disposition
			return equal(rc.Disposition, "duplicate", "re-append e2 disposition")
		},
		func() error { // 7: schema-valid payload mutations under the same event id
			mutated := portEvent(2)
			mutated.Payload = Result(controlplane.WorkDone, "mutated result payload")
			err := wantCode(func() error { _, err := appendEv(mutated); return err }(), controlplane.CodeNativeEventReplayConflict)
			if err != nil {
				return fmt.Errorf("event id mutation: %w", err)
			}
			forged := portEvent(1)
			forged.Payload = json.RawMessage(`{"backend":"forged"}`)
			if err := wantCode(func() error { _, err := appendEv(forged); return err }(), controlplane.CodeNativeEventReplayConflict); err != nil {
				return fmt.Errorf("forged e1 payload: %w", err)
			}
			rep.EventIDMutationRejected = true
			return nil
		},
		func() error { // 8: same sequence, new event id
			mutated := portEvent(2)
			mutated.SourceEventID = PortSource + ":mutated-sequence-two"
			mutated.Payload = Result(controlplane.WorkDone, "mutated result payload")
			if err := wantCode(func() error { _, err := appendEv(mutated); return err }(), controlplane.CodeNativeEventReplayConflict); err != nil {
				return fmt.Errorf("event sequence mutation: %w", err)
			}
			rep.EventSequenceMutationRej = true
			return nil
		},
		func() error { // 9
			r, err := p.ReplayEvents(ctx, controlplane.ReplayQuery{RunID: PortRunID, SourceInstanceID: PortSource, AfterSourceSeq: 1, Limit: 10})
			if err != nil {
				return noErr(err, "replay")
			}
			var seqs []string
			for _, e := range r.Events {
				var h struct {
					SourceSeq int64 `json:"sourceSeq"`
				}
				if err := json.Unmarshal(e, &h); err != nil {
					return noErr(err, "decoding replayed event")
				}
				seqs = append(seqs, fmt.Sprint(h.SourceSeq))
			}
			rep.EventCount = r.HighestContiguousSourceSeq
			rep.HighestContiguousSourceSeq = r.HighestContiguousSourceSeq
			return equal(strings.Join(seqs, ","), "2,3", "replayed sequences after cursor 1")
		},
		func() error { // 10
			_, err := p.ReplayEvents(ctx, controlplane.ReplayQuery{RunID: "forged-run", SourceInstanceID: PortSource, AfterSourceSeq: 0, Limit: 10})
			if err := wantCode(err, controlplane.CodeRunMissing); err != nil {
				return err
			}
			rep.ReplayBindingRejected = true
			return nil
		},
		func() error { // 11
			if err := p.CompleteRun(ctx, portCompletion("Phase 6 conformance task completed.")); err != nil {
				return noErr(err, "first completeRun")
			}
			if err := p.CompleteRun(ctx, portCompletion("Phase 6 conformance task completed.")); err != nil {
				return noErr(err, "identical completeRun replay")
			}
			rep.TerminalReplayIdempotent = true
			return nil
		},
		func() error { // 12
			if err := wantCode(p.CompleteRun(ctx, portCompletion("mutated result replay")), controlplane.CodeNativeResultReplayConflict); err != nil {
				return err
			}
			rep.ResultMutationRejected = true
			return nil
		},
		func() error { // 13
			ok := rep.OpenBindingRejected && rep.EventIDMutationRejected && rep.EventSequenceMutationRej && rep.ReplayBindingRejected && rep.ResultMutationRejected
			if !ok || rep.EventCount != 3 || rep.HighestContiguousSourceSeq != 3 || rep.DuplicateDisposition != "duplicate" || !rep.TerminalReplayIdempotent {
				return failf("port report %+v does not meet the contract", rep)
			}
			return nil
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return rep, i + 1, err
		}
	}
	return rep, 0, nil
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

package controlplane_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
)

func prpEvent(seq int64, eventType, payload string) json.RawMessage {
	b, _ := json.Marshal(controlplane.PRPEvent{Schema: "paperclip.prp.event.v1", SourceEventID: "src:" + string(rune('a'+seq)), SourceSeq: seq,
		SourceInstanceID: "src", SourceKind: "runner", RunID: "run-1", EventType: eventType, SchemaVersion: 1, Priority: 1,
		EmittedAt: "2026-08-09T00:00:01.000Z", Payload: json.RawMessage(payload)})
	return b
}

const terminalDone = `{"turnTerminalState":"completed","runTerminalState":"succeeded","reportedWorkDisposition":"done"}`

func doneCompletion(summary string) json.RawMessage {
	b, _ := json.Marshal(controlplane.CompleteInput{Terminal: json.RawMessage(terminalDone),
		Result: json.RawMessage(`{"reportedWorkDisposition":"done","summary":"` + summary + `","completionClaim":{"contractRevision":1,"objectiveSatisfied":true,"criteria":[],"remainingWork":[]},"evidence":[],"verification":[],"attentionRequests":[],"artifacts":[]}`)})
	return b
}

func remaining(t *testing.T, m *controlplane.Memory, id string) int {
	t.Helper()
	st, err := m.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range st.Faults {
		if f.ID == id {
			return f.Remaining
		}
	}
	t.Fatalf("no fault %s", id)
	return 0
}

// TestFaultConsumption pins where each operation consumes its scripted fault.
func TestFaultConsumption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seedWith := func(f *controlplane.FaultRule) controlplane.Seed {
		s := richSeed()
		s.Faults = []*controlplane.FaultRule{f}
		return s
	}
	open := controlplane.OpenInput{Identity: controlplane.Identity{RunID: "run-1", SessionID: "s", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"},
		BackendKind: "mock", SourceInstanceID: "src", Capabilities: allClaims}

	t.Run("open_run lost_ack then resumed", func(t *testing.T) {
		t.Parallel()
		m := mustMemory(t, seedWith(&controlplane.FaultRule{ID: "f", Operation: "open_run", Effect: "lost_ack", Remaining: 1, Code: "lost"}))
		bad := open
		bad.Identity.IssueID = "task-2" // assigned to actor-2: rejected before the fault
		if err := m.OpenRun(ctx, bad); controlplane.CodeOf(err) != "checkout_conflict" || remaining(t, m, "f") != 1 {
			t.Fatalf("invalid open: %v, remaining %d", err, remaining(t, m, "f"))
		}
		if err := m.OpenRun(ctx, open); controlplane.CodeOf(err) != "lost" || !controlplane.IsRetryable(err) {
			t.Fatalf("lost ack open: %v", err)
		}
		if _, err := m.OpenFixtureRun(ctx, open); err != nil {
			t.Fatalf("retry: %v", err)
		}
		ds, _ := m.DecisionRecords(ctx)
		if d := ds[len(ds)-1]; d.Outcome != "duplicate" || d.Reason != "run_binding_resumed" {
			t.Fatalf("retry decision %+v", d)
		}
		checkInvariants(t, m)
	})

	t.Run("append_event consumed before validation", func(t *testing.T) {
		t.Parallel()
		m := mustMemory(t, seedWith(&controlplane.FaultRule{ID: "f", Operation: "append_event", Effect: "retryable_error", Remaining: 2, Code: "flaky"}))
		if err := m.OpenRun(ctx, open); err != nil {
			t.Fatal(err)
		}
		if _, err := m.AppendEvent(ctx, json.RawMessage(`{"sourceEventId":"x","runId":"run-1"}`)); controlplane.CodeOf(err) != "flaky" {
			t.Fatalf("invalid event did not hit the fault: %v", err)
		}
		if _, err := m.AppendEvent(ctx, json.RawMessage(`{"sourceEventId":"x","runId":"run-1"}`)); controlplane.CodeOf(err) != "flaky" {
			t.Fatalf("second invalid event did not hit the fault: %v", err)
		}
		if _, err := m.AppendEvent(ctx, json.RawMessage(`{"sourceEventId":"x","runId":"run-1"}`)); controlplane.CodeOf(err) != "native_event_invalid" {
			t.Fatalf("after the fault: %v", err)
		}
		checkInvariants(t, m)
	})

	t.Run("append_event lost_ack swallowed on a duplicate", func(t *testing.T) {
		t.Parallel()
		m := mustMemory(t, seedWith(&controlplane.FaultRule{ID: "f", Operation: "append_event", Effect: "lost_ack", Remaining: 2, Code: "lost"}))
		if err := m.OpenRun(ctx, open); err != nil {
			t.Fatal(err)
		}
		ev := prpEvent(1, "item.completed", `{}`)
		if _, err := m.AppendEvent(ctx, ev); controlplane.CodeOf(err) != "lost" {
			t.Fatalf("lost ack: %v", err)
		}
		rc, err := m.AppendEvent(ctx, ev)
		if err != nil || rc.Disposition != "duplicate" || remaining(t, m, "f") != 0 {
			t.Fatalf("duplicate retry: %+v %v remaining %d", rc, err, remaining(t, m, "f"))
		}
		checkInvariants(t, m)
	})

	t.Run("complete_run lost_ack then duplicate", func(t *testing.T) {
		t.Parallel()
		m := mustMemory(t, seedWith(&controlplane.FaultRule{ID: "f", Operation: "complete_run", Effect: "lost_ack", Remaining: 1, Code: "lost"}))
		if err := m.OpenRun(ctx, open); err != nil {
			t.Fatal(err)
		}
		if _, err := m.AppendEvent(ctx, prpEvent(1, "run.terminal", terminalDone)); err != nil {
			t.Fatal(err)
		}
		if err := m.CompleteRun(ctx, doneCompletion("ok")); controlplane.CodeOf(err) != "lost" {
			t.Fatalf("lost ack completion: %v", err)
		}
		if err := m.CompleteRun(ctx, doneCompletion("ok")); err != nil {
			t.Fatalf("retry: %v", err)
		}
		if err := m.CompleteRun(ctx, doneCompletion("other")); controlplane.CodeOf(err) != "native_result_replay_conflict" {
			t.Fatalf("mutated: %v", err)
		}
		if _, err := m.AppendEvent(ctx, prpEvent(1, "run.terminal", terminalDone)); controlplane.CodeOf(err) != "run_not_writable" {
			t.Fatalf("append after completion: %v", err)
		}
		checkInvariants(t, m)
	})

	t.Run("apply_command fault matches kind only", func(t *testing.T) {
		t.Parallel()
		m := mustMemory(t, seedWith(&controlplane.FaultRule{ID: "f", Operation: "apply_command", CommandKind: "finish_task", Effect: "retryable_error", Remaining: 1, Code: "flaky"}))
		if err := m.OpenRun(ctx, open); err != nil {
			t.Fatal(err)
		}
		if err := apply("k1", "report_progress", map[string]any{"body": "x"})(ctx, m); err != nil {
			t.Fatalf("other kind hit the fault: %v", err)
		}
		if remaining(t, m, "f") != 1 {
			t.Fatal("fault consumed by another kind")
		}
		checkInvariants(t, m)
	})
}

// TestSessionCheckpointAndContext covers checkpoints, the context budget and ancestry.
func TestSessionCheckpointAndContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := richSeed()
	seed.Budgets = []*controlplane.Budget{
		{ID: "b-company", Scope: "company", ScopeID: "company-1", LimitCents: 5000, SpentCents: 4900, HardStop: true},
		{ID: "b-actor", Scope: "actor", ScopeID: "actor-1", LimitCents: 1000, SpentCents: 10, HardStop: true},
	}
	seed.Tasks[0].ParentID = p("task-2")
	seed.Tasks[1].ParentID = p("task-4")
	m := mustMemory(t, seed)
	if _, err := m.LoadSessionCheckpoint(ctx); controlplane.CodeOf(err) != "run_missing" {
		t.Fatalf("no active run: %v", err)
	}
	openRun(t, m, "run-1", "task-1", "actor-1", "src")
	if cp, err := m.LoadSessionCheckpoint(ctx); err != nil || cp != nil {
		t.Fatalf("fresh checkpoint %s %v", cp, err)
	}
	if err := m.CheckpointSession(ctx, json.RawMessage(`{"b":1,"a":2}`)); err != nil {
		t.Fatal(err)
	}
	cp, err := m.LoadSessionCheckpoint(ctx)
	if err != nil || string(cp) != `{"a":2,"b":1}` {
		t.Fatalf("checkpoint %s %v", cp, err)
	}
	rc, err := m.Context(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if rc.Budget != (controlplane.ContextBudget{LimitCents: 1000, RemainingCents: 100, SpentCents: 900}) {
		t.Fatalf("budget %+v", rc.Budget)
	}
	if len(rc.Ancestors) != 2 || rc.Ancestors[0].ID != "task-2" || rc.Ancestors[1].ID != "task-4" {
		t.Fatalf("ancestors %+v", rc.Ancestors)
	}
	var w map[string]any
	_ = json.Unmarshal(rc.Wake.Payload, &w)
	if w["token"] != controlplane.RedactedValue {
		t.Fatalf("wake payload %s", rc.Wake.Payload)
	}
	checkInvariants(t, m)

	cyc := richSeed()
	cyc.Tasks[0].ParentID = p("task-2")
	cyc.Tasks[1].ParentID = p("task-1")
	m = mustMemory(t, cyc)
	err = m.OpenRun(ctx, controlplane.OpenInput{Identity: controlplane.Identity{RunID: "run-1", SessionID: "s", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"}, BackendKind: "mock"})
	if controlplane.CodeOf(err) != "fixture_state_invalid" {
		t.Fatalf("ancestry cycle: %v", err)
	}
}

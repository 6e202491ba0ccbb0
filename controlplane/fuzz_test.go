package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
)

// FuzzApply feeds random command envelopes and events to a Memory with a rich state and
// checks that nothing panics, that a rejected command leaves the state byte-identical
// unless it persisted a deny or fault decision, and the invariants of checkInvariants.
func FuzzApply(f *testing.F) {
	valid := []string{
		`{"kind":"report_progress","body":"hi"}`,
		`{"kind":"write_document","key":"k","title":"T","body":"b","baseRevisionId":null}`,
		`{"kind":"request_human_input","interactionKind":"questions","title":"t","prompt":"p","continuationPolicy":"wake_assignee"}`,
		`{"kind":"resolve_human_input","interactionId":"fixture-interaction-0001","outcome":"answered","result":{}}`,
		`{"kind":"register_deliverable","filename":"f","contentType":"c","byteSize":1,"sha256":"s","contentRef":"r","title":"t"}`,
		`{"kind":"create_skill","name":"a-b","description":"d","markdown":"---\nname: a-b\ndescription: d\n---\nbody\n"}`,
		`{"kind":"reassign_task","targetTaskId":"task-2","assigneeActorId":"actor-1","expectedAssigneeActorId":"actor-2","expectedStatusVersion":0,"reason":"r"}`,
		`{"kind":"set_dependencies","blockedByTaskIds":["task-2","task-4"]}`,
		`{"kind":"create_task","title":"c","blockedByTaskIds":["task-1"],"assigneeActorId":"actor-2"}`,
		`{"kind":"request_approval","approvalType":"x","payload":{"token":"t"}}`,
		`{"kind":"decide_approval","approvalId":"approval-1","decision":"rejected","note":"n"}`,
		`{"kind":"comment_on_approval","approvalId":"approval-1","body":"b"}`,
		`{"kind":"control_workspace_service","serviceId":"service-1","action":"fail"}`,
		`{"kind":"record_budget_usage","cents":1000}`,
		`{"kind":"finish_task","summary":"s"}`,
		`{"kind":"block_task","reason":"r","blockedByTaskIds":[]}`,
		`{"kind":"request_review","summary":"s"}`,
		`{"kind":"release_task","reason":"r"}`,
		`{"kind":"schedule_wake","reason":"manual","delayTicks":2,"payload":{"apiKey":"k","list":[{"secretValue":1}]}}`,
		`{"kind":"report_progress","taskId":"task-foreign","body":"x"}`,
		`not json`,
	}
	events := []string{
		`{"schema":"paperclip.prp.event.v1","sourceEventId":"src:1","sourceSeq":1,"sourceInstanceId":"src","sourceKind":"runner","runId":"run-1","eventType":"item.delta","schemaVersion":1,"priority":2,"emittedAt":"2026-08-09T00:00:00Z","payload":{}}`,
		`{"schema":"paperclip.prp.event.v1","sourceEventId":"src:3","sourceSeq":3,"sourceInstanceId":"src","sourceKind":"runner","runId":"run-1","eventType":"run.terminal","schemaVersion":1,"priority":0,"emittedAt":"2026-08-09T00:00:00Z","payload":{"turnTerminalState":"completed","runTerminalState":"failed","reportedWorkDisposition":"blocked"}}`,
		`{"eventId":"n1","runId":"run-1","sequence":1,"type":"run.started"}`,
		`{"eventId":"n2","runId":"run-1","sequence":2,"type":"run.completed"}`,
		`[]`,
	}
	for i, c := range valid {
		f.Add(c, events[i%len(events)], "key", int64(i%3), i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, command, ev, key string, expected int64, useExpected bool) {
		ctx := context.Background()
		m := mustMemory(t, richSeed())
		openRun(t, m, "run-1", "task-1", "actor-1", "src")
		env := controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: key, Command: json.RawMessage(command)}
		if useExpected {
			env.ExpectedRevision = &expected
		}
		for round := 0; round < 2; round++ {
			before, _ := m.Serialize(ctx)
			beforeDecisions, _ := m.DecisionRecords(ctx)
			out, err := m.TryApplyCommand(ctx, env)
			if err != nil {
				t.Fatalf("TryApplyCommand returned a non-state-machine error: %v", err)
			}
			if !out.OK {
				after, _ := m.Serialize(ctx)
				ds, _ := m.DecisionRecords(ctx)
				switch added := len(ds) - len(beforeDecisions); {
				case out.Error.Retryable:
					// A scripted fault: retryable_error persists one faulted decision; lost_ack
					// commits the command, then persists a faulted decision.
					if added == 0 || ds[len(ds)-1].Outcome != "faulted" {
						t.Fatalf("scripted fault %s left no faulted decision", out.Error.Code)
					}
				case added == 0:
					if !bytes.Equal(before, after) {
						t.Fatalf("rejected command (%s) changed the state", out.Error.Code)
					}
				case added == 1:
					if o := ds[len(ds)-1].Outcome; o != "denied" && o != "faulted" {
						t.Fatalf("rejected command left a %s decision", o)
					}
				default:
					t.Fatalf("rejected command added %d decisions", added)
				}
			}
			checkInvariants(t, m)
			_, _ = m.AppendEvent(ctx, json.RawMessage(ev))
			checkInvariants(t, m)
		}
	})
}

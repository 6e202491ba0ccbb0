package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
)

const skillMarkdown = "---\nname: release-notes\ndescription: Write release notes\nallowed-tools:\n  - read\n---\n# Release notes\nWrite them.\n"

// step is one call of a scripted scenario with the code it must produce ("" = success).
type step struct {
	name string
	code controlplane.Code
	do   func(ctx context.Context, m *controlplane.Memory) error
}

// abcSHA is the SHA-256 of "abc".
const abcSHA = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

func apply(key, kind string, fields map[string]any) func(context.Context, *controlplane.Memory) error {
	return func(ctx context.Context, m *controlplane.Memory) error {
		_, err := m.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: key, Command: cmd(kind, fields)})
		return err
	}
}

func event(seq int64, eventType string, payload string) func(context.Context, *controlplane.Memory) error {
	return func(ctx context.Context, m *controlplane.Memory) error {
		ev := controlplane.PRPEvent{Schema: "paperclip.prp.event.v1", SourceEventID: "src:event:" + string(rune('0'+seq)), SourceSeq: seq,
			SourceInstanceID: "src", SourceKind: "runner", RunID: "run-1", EventType: eventType, SchemaVersion: 1, Priority: 1,
			EmittedAt: "2026-08-09T00:00:01.000Z", Payload: json.RawMessage(payload)}
		b, _ := json.Marshal(ev)
		_, err := m.AppendEvent(ctx, b)
		return err
	}
}

// scenario touches all 20 command kinds, events, faults, checkpoints and completion.
func scenario() []step {
	return []step{
		{"report_progress lost ack", "lost", apply("k1", "report_progress", map[string]any{"body": "start"})},
		{"report_progress retry", "", apply("k1", "report_progress", map[string]any{"body": "start"})},
		{"create_task invalid", "semantic_command_invalid", apply("k2", "create_task", map[string]any{"title": " "})},
		{"create_task fault", "flaky", apply("k2", "create_task", map[string]any{"title": "Child", "blockedByTaskIds": []string{"task-2"}})},
		{"create_task retry", "", apply("k2", "create_task", map[string]any{"title": "Child", "blockedByTaskIds": []string{"task-2"}})},
		{"create_task backlog", "", apply("k2b", "create_task", map[string]any{"title": "Later", "status": "backlog", "priority": "low"})},
		{"write_document v1", "", apply("k3", "write_document", map[string]any{"key": "plan", "title": "Plan", "body": "v1", "baseRevisionId": nil})},
		{"write_document stale", "document_revision_conflict", apply("k4", "write_document", map[string]any{"key": "plan", "title": "Plan", "body": "v2", "baseRevisionId": nil})},
		{"write_document v2", "", apply("k5", "write_document", map[string]any{"key": "plan", "title": "Plan 2", "body": "v2", "baseRevisionId": "fixture-revision-0001"})},
		{"request_human_input", "", apply("k6", "request_human_input", map[string]any{"interactionKind": "confirmation", "title": "OK?", "prompt": "Proceed?",
			"targetRevisionId": "fixture-revision-0002", "continuationPolicy": "wake_assignee", "payload": map[string]any{"secret": "kept in interactions"}})},
		{"resolve_human_input", "", apply("k7", "resolve_human_input", map[string]any{"interactionId": "fixture-interaction-0001", "outcome": "accepted", "result": map[string]any{"ok": true}})},
		{"resolve again", "interaction_already_resolved", apply("k8", "resolve_human_input", map[string]any{"interactionId": "fixture-interaction-0001", "outcome": "rejected"})},
		{"register_deliverable", "", apply("k9", "register_deliverable", map[string]any{"filename": "a.txt", "contentType": "text/plain", "byteSize": 3,
			"sha256": abcSHA, "contentBase64": "YWJj", "contentRef": "blob:1", "title": "A"})},
		{"register_deliverable by reference", "", apply("k9r", "register_deliverable", map[string]any{"filename": "b.txt", "contentType": "text/plain", "byteSize": 3,
			"sha256": abcSHA, "title": "B"})},
		{"register_deliverable bad size", "artifact_invalid", apply("k10", "register_deliverable", map[string]any{"filename": "a.txt", "contentType": "text/plain",
			"byteSize": 1.5, "sha256": abcSHA, "contentRef": "blob:1", "title": "A"})},
		{"register_deliverable wrong digest", "artifact_digest_mismatch", apply("k10d", "register_deliverable", map[string]any{"filename": "a.txt", "contentType": "text/plain",
			"byteSize": 3, "sha256": abcSHA, "contentBase64": "YWJk", "title": "A"})},
		{"register_deliverable wrong size by reference", "artifact_digest_mismatch", apply("k10s", "register_deliverable", map[string]any{"filename": "a.txt", "contentType": "text/plain",
			"byteSize": 4, "sha256": abcSHA, "title": "A"})},
		{"register_deliverable no bytes", "artifact_content_missing", apply("k10m", "register_deliverable", map[string]any{"filename": "a.txt", "contentType": "text/plain",
			"byteSize": 3, "sha256": strings.Repeat("0", 64), "title": "A"})},
		{"create_skill", "", apply("k11", "create_skill", map[string]any{"name": "release-notes", "description": "Write release notes", "markdown": skillMarkdown})},
		{"create_skill duplicate", "fixture_state_invalid", apply("k12", "create_skill", map[string]any{"name": "release-notes", "description": "Write release notes", "markdown": skillMarkdown})},
		{"create_skill bad", "invalid_skill_document", apply("k13", "create_skill", map[string]any{"name": "x", "description": "d", "markdown": "no frontmatter"})},
		{"comment_on_approval", "", apply("k14", "comment_on_approval", map[string]any{"approvalId": "approval-1", "body": "looking"})},
		{"decide_approval", "", apply("k15", "decide_approval", map[string]any{"approvalId": "approval-1", "decision": "approved", "note": "fine"})},
		{"decide_approval again", "approval_already_decided", apply("k16", "decide_approval", map[string]any{"approvalId": "approval-1", "decision": "rejected", "note": "no"})},
		{"control_workspace_service", "", apply("k17", "control_workspace_service", map[string]any{"serviceId": "service-1", "action": "start", "url": "http://127.0.0.1:9"})},
		{"schedule_wake", "", apply("k18", "schedule_wake", map[string]any{"reason": "scheduled_retry", "delayTicks": 5, "payload": map[string]any{"clientSecret": "s", "nested": []any{map[string]any{"Authorization": "Bearer x"}}}})},
		{"schedule_wake bad", "wake_delay_invalid", apply("k19", "schedule_wake", map[string]any{"reason": "manual", "delayTicks": -1})},
		{"set_dependencies self", "dependency_cycle", apply("k20", "set_dependencies", map[string]any{"blockedByTaskIds": []string{"task-1"}})},
		{"set_dependencies cycle", "dependency_cycle", apply("k21", "set_dependencies", map[string]any{"blockedByTaskIds": []string{"task-3"}})},
		{"set_dependencies clear", "", apply("k22", "set_dependencies", map[string]any{"blockedByTaskIds": []string{}})},
		{"reassign_task", "", apply("k23", "reassign_task", map[string]any{"targetTaskId": "task-2", "assigneeActorId": "actor-1",
			"expectedAssigneeActorId": "actor-2", "expectedStatusVersion": 0, "reason": "rebalance"})},
		{"reassign current", "reassignment_current_task", apply("k24", "reassign_task", map[string]any{"targetTaskId": "task-1", "assigneeActorId": "actor-2",
			"expectedAssigneeActorId": "actor-1", "expectedStatusVersion": 0, "reason": "x"})},
		{"request_approval", "", apply("k25", "request_approval", map[string]any{"approvalType": "merge", "payload": map[string]any{}})},
		{"block_task from review", "task_transition_illegal", apply("k26", "block_task", map[string]any{"reason": "waiting"})},
		{"request_review again", "task_transition_illegal", apply("k27", "request_review", map[string]any{"summary": "again"})},
		{"scope violation", "task_scope_violation", apply("k28", "report_progress", map[string]any{"taskId": "task-2", "body": "x"})},
		{"foreign task", "company_scope_violation", apply("k29", "report_progress", map[string]any{"taskId": "task-foreign", "body": "x"})},
		{"unknown kind", "semantic_command_invalid", apply("k30", "launch_rockets", map[string]any{})},
		{"event 2", "", event(2, "item.completed", `{"n":2}`)},
		{"event 1", "", event(1, "item.completed", `{"n":1}`)},
		{"event invalid", "native_event_invalid", event(3, "no.such.type", `{}`)},
		{"checkpoint", "", func(ctx context.Context, m *controlplane.Memory) error {
			return m.CheckpointSession(ctx, json.RawMessage(`{"cursor":2}`))
		}},
		{"post_chat_reply outside a chat", "task_not_conversation", apply("k30c", "post_chat_reply", map[string]any{"body": "hi"})},
		{"set_task_title", "", apply("k30t", "set_task_title", map[string]any{"title": "  Rotate the API keys  "})},
		{"set_task_title empty", "semantic_command_invalid", apply("k30e", "set_task_title", map[string]any{"title": "   "})},
		{"set_task_title too long", "semantic_command_invalid", apply("k30l", "set_task_title", map[string]any{"title": strings.Repeat("x", controlplane.MaxTaskTitleChars+1)})},
		{"finish_task", "", apply("k31", "finish_task", map[string]any{"summary": "all done"})},
		{"record_budget_usage", "", apply("k32", "record_budget_usage", map[string]any{"cents": 7})},
		{"release after done", "task_transition_illegal", apply("k33", "release_task", map[string]any{"reason": "bye"})},
		{"terminal event", "", event(3, "run.terminal", `{"turnTerminalState":"completed","runTerminalState":"succeeded","reportedWorkDisposition":"done"}`)},
		{"complete", "", func(ctx context.Context, m *controlplane.Memory) error {
			in := controlplane.CompleteInput{Terminal: json.RawMessage(`{"turnTerminalState":"completed","runTerminalState":"succeeded","reportedWorkDisposition":"done"}`),
				Result: json.RawMessage(`{"reportedWorkDisposition":"done","summary":"ok","completionClaim":{"contractRevision":1,"objectiveSatisfied":true,"criteria":[],"remainingWork":[]},"evidence":[],"verification":[],"attentionRequests":[],"artifacts":[]}`)}
			b, _ := json.Marshal(in)
			return m.CompleteRun(ctx, b)
		}},
		{"command after completion", "run_not_writable", apply("k34", "report_progress", map[string]any{"body": "late"})},
	}
}

func runScenario(t *testing.T, m *controlplane.Memory) {
	t.Helper()
	ctx := context.Background()
	for _, s := range scenario() {
		err := s.do(ctx, m)
		if got := controlplane.CodeOf(err); got != s.code || (s.code == "" && err != nil) {
			t.Fatalf("%s: got error %v, want code %q", s.name, err, s.code)
		}
		checkInvariants(t, m)
	}
}

// TestScenarioInvariants: the invariants hold after every call of a scenario touching
// all 20 command kinds; two adapters fed the same calls serialize byte-identically;
// context and replay agree after restore.
func TestScenarioInvariants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := mustMemory(t, richSeed()), mustMemory(t, richSeed())
	openRun(t, a, "run-1", "task-1", "actor-1", "src")
	openRun(t, b, "run-1", "task-1", "actor-1", "src")
	runScenario(t, a)
	runScenario(t, b)
	sa, _ := a.Serialize(ctx)
	sb, _ := b.Serialize(ctx)
	if !bytes.Equal(sa, sb) {
		t.Fatal("two adapters fed the same seed and calls serialize differently")
	}
	st, _ := a.Snapshot(ctx)
	kinds := map[string]bool{}
	for _, d := range st.Decisions {
		if d.Outcome == "allowed" {
			kinds[d.Operation] = true
		}
	}
	for _, k := range controlplane.CommandKinds() {
		if !kinds[string(k)] && k != controlplane.CommandBlockTask && k != controlplane.CommandRequestReview && k != controlplane.CommandReleaseTask &&
			k != controlplane.CommandPostChatReply && k != controlplane.CommandHandoffConversation { // chat runs: TestChat, conformance journey/04
			t.Errorf("command kind %s never applied in the scenario", k)
		}
	}
	r, err := controlplane.Restore(sa)
	if err != nil {
		t.Fatal(err)
	}
	q := controlplane.ReplayQuery{RunID: "run-1", SourceInstanceID: "src", Limit: 100}
	for _, pair := range [][2]*controlplane.Memory{{a, r}} {
		c1, err1 := pair[0].Context(ctx, "run-1")
		c2, err2 := pair[1].Context(ctx, "run-1")
		r1, err3 := pair[0].ReplayEvents(ctx, q)
		r2, err4 := pair[1].ReplayEvents(ctx, q)
		for _, err := range []error{err1, err2, err3, err4} {
			if err != nil {
				t.Fatal(err)
			}
		}
		j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
		if j(c1) != j(c2) || j(r1) != j(r2) {
			t.Fatalf("context or replay differ after restore")
		}
		if len(r1.Events) != 3 || r1.HighestContiguousSourceSeq != 3 {
			t.Fatalf("replay %d events hc %d, want 3/3", len(r1.Events), r1.HighestContiguousSourceSeq)
		}
	}
	if err := r.Start(ctx); controlplane.CodeOf(err) != "mock_already_running" {
		t.Fatalf("restored running state: start gave %v, want mock_already_running", err)
	}
}

// TestBlockAndReleaseKinds covers block_task, request_review and release_task applied.
func TestBlockAndReleaseKinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := mustMemory(t, richSeed())
	openRun(t, m, "run-1", "task-1", "actor-1", "src")
	steps := []step{
		{"block_task", "", apply("b1", "block_task", map[string]any{"reason": "waiting", "blockedByTaskIds": []string{"task-2"}})},
		{"release_task", "", apply("b2", "release_task", map[string]any{"reason": "handing back"})},
		{"after release", "task_ownership_violation", apply("b3", "report_progress", map[string]any{"body": "x"})},
	}
	for _, s := range steps {
		if err := s.do(ctx, m); controlplane.CodeOf(err) != s.code || (s.code == "" && err != nil) {
			t.Fatalf("%s: %v, want %q", s.name, err, s.code)
		}
		checkInvariants(t, m)
	}
	m2 := mustMemory(t, richSeed())
	openRun(t, m2, "run-1", "task-1", "actor-1", "src")
	if err := apply("r1", "request_review", map[string]any{"summary": "look"})(ctx, m2); err != nil {
		t.Fatal(err)
	}
	st, _ := m2.Snapshot(ctx)
	if st.Tasks[0].Status != "in_review" {
		t.Fatalf("request_review left %s", st.Tasks[0].Status)
	}
}

// TestFailedCommandsRollBack: a failed command leaves Serialize byte-identical, apart
// from a persisted deny (or fault) decision.
func TestFailedCommandsRollBack(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, kind string
		code       controlplane.Code
		fields     map[string]any
		denied     bool
	}{
		{"blank body", "report_progress", "semantic_command_invalid", map[string]any{"body": ""}, false},
		{"scope", "report_progress", "task_scope_violation", map[string]any{"taskId": "task-2", "body": "x"}, true},
		{"transition after partial work", "set_dependencies", "task_transition_illegal", map[string]any{"blockedByTaskIds": []string{"task-4"}}, false},
		{"cycle", "set_dependencies", "dependency_cycle", map[string]any{"blockedByTaskIds": []string{"task-3"}}, false},
		{"budget invalid", "record_budget_usage", "budget_usage_invalid", map[string]any{"cents": -5}, false},
		{"reassign conflict", "reassign_task", "reassignment_conflict", map[string]any{"targetTaskId": "task-2", "assigneeActorId": "actor-1",
			"expectedAssigneeActorId": "actor-2", "expectedStatusVersion": 3, "reason": "x"}, false},
		{"service missing", "control_workspace_service", "workspace_service_missing", map[string]any{"serviceId": "nope", "action": "start"}, false},
		{"self approval", "decide_approval", "self_approval_forbidden", map[string]any{"approvalId": "approval-2", "decision": "approved", "note": "n"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			m := mustMemory(t, richSeed())
			openRun(t, m, "run-1", "task-1", "actor-1", "src")
			if tc.code == "task_transition_illegal" {
				// Put the task in review so that set_dependencies replaces rows, then fails.
				if err := apply("pre", "request_review", map[string]any{"summary": "r"})(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := m.Serialize(ctx)
			beforeSnap, _ := m.Snapshot(ctx)
			err := apply("x", tc.kind, tc.fields)(ctx, m)
			if controlplane.CodeOf(err) != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			after, _ := m.Serialize(ctx)
			if !tc.denied {
				if !bytes.Equal(before, after) {
					t.Fatalf("state changed:\n%s\n%s", before, after)
				}
				return
			}
			st, _ := m.Snapshot(ctx)
			if len(st.Decisions) != len(beforeSnap.Decisions)+1 || st.Decisions[len(st.Decisions)-1].Outcome != "denied" {
				t.Fatalf("want exactly one more (denied) decision")
			}
			st.Decisions = st.Decisions[:len(st.Decisions)-1]
			st.Revision--
			st.Clock.Tick--
			st.Counters["decision"]--
			b1, _ := json.Marshal(st)
			b2, _ := json.Marshal(beforeSnap)
			if !bytes.Equal(b1, b2) {
				t.Fatalf("a denied command changed more than its decision record")
			}
		})
	}
}

// TestReturnedValuesAreCopies: mutating what the adapter returns does not change it.
func TestReturnedValuesAreCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := mustMemory(t, richSeed())
	openRun(t, m, "run-1", "task-1", "actor-1", "src")
	unchanged := func(before []byte, what string) {
		t.Helper()
		if after, _ := m.Serialize(ctx); !bytes.Equal(before, after) {
			t.Fatalf("mutating %s changed the state", what)
		}
	}
	before, _ := m.Serialize(ctx)
	st, _ := m.Snapshot(ctx)
	st.Tasks[0].Status = "done"
	*st.Tasks[0].AssigneeActorID = "forged"
	st.Runs[0].Capabilities[0] = "forged"
	unchanged(before, "a snapshot")
	rc, _ := m.Context(ctx, "run-1")
	rc.Capabilities[0] = "forged"
	rc.ActiveTask.Status = "cancelled"
	*rc.ActiveTask.AssigneeActorID = "forged"
	*rc.ActiveTask.CheckoutRunID = "forged"
	unchanged(before, "a context")
	ds, _ := m.DecisionRecords(ctx)
	ds[0].EntityRefs[0] = "forged"
	*ds[0].RunID = "forged"
	unchanged(before, "decision records")
	env := controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "c1", Command: cmd("write_document", map[string]any{"key": "k", "title": "T", "body": "b", "baseRevisionId": nil})}
	res, err := m.ApplyCommand(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	before, _ = m.Serialize(ctx)
	res.EntityRefs[0] = "forged"
	unchanged(before, "an applied command result")
	dup, err := m.ApplyCommand(ctx, env)
	if err != nil || dup.EntityRefs[0] == "forged" {
		t.Fatalf("a duplicate result shares memory with an earlier result: %v %v", dup.EntityRefs, err)
	}
	before, _ = m.Serialize(ctx)
	dup.EntityRefs[0] = "forged"
	unchanged(before, "a command result")
}

// TestRestoreRejects covers restore's error codes.
func TestRestoreRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		code     controlplane.Code
	}{
		{"not json", "{", "fixture_state_invalid"},
		{"wrong tag", `{"schema":"other"}`, "fixture_state_invalid"},
		{"foreign task", `{"schema":"paperclip.capability.mock-state.v1","company":{"id":"c"},"tasks":[{"id":"t","companyId":"d"}]}`, "company_scope_violation"},
		{"blank company", `{"schema":"paperclip.capability.mock-state.v1","company":{"id":" "}}`, "fixture_state_invalid"},
	} {
		_, err := controlplane.Restore([]byte(tc.in))
		if controlplane.CodeOf(err) != tc.code {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.code)
		}
	}
}

// TestSeedPayloadsAreCanonical: JSON embedded in a seed comes back canonical, so a
// context reads the same before and after a restore.
func TestSeedPayloadsAreCanonical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := richSeed()
	seed.Interactions = []*controlplane.Interaction{{ID: "i-1", TaskID: "task-1", Kind: "questions", Status: "answered", Title: "t", Prompt: "p",
		Payload: json.RawMessage(`{ "z": 1, "a": 2 }`), ContinuationPolicy: "none", Result: json.RawMessage(`{"b": [1, 2], "a": "x"}`), CreatedAt: "x"}}
	m := mustMemory(t, seed)
	openRun(t, m, "run-1", "task-1", "actor-1", "src")
	rc, err := m.Context(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(rc.InteractionResults[0].Result); got != `{"a":"x","b":[1,2]}` {
		t.Fatalf("interaction result %s is not canonical", got)
	}
	seed.Interactions[0].Result = json.RawMessage(`{"a":`)
	if _, err := controlplane.NewMemory(seed); controlplane.CodeOf(err) != "fixture_state_invalid" {
		t.Fatalf("invalid seed JSON: %v", err)
	}
}

// TestErrorJSONRoundTrip: the typed error survives a JSON round trip with its code.
func TestErrorJSONRoundTrip(t *testing.T) {
	t.Parallel()
	in := &controlplane.Error{Code: "checkout_conflict", Message: "taken", Retryable: true}
	b, _ := json.Marshal(in)
	var out controlplane.Error
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out != *in || controlplane.CodeOf(&out) != "checkout_conflict" || !controlplane.IsRetryable(&out) {
		t.Fatalf("round trip gave %+v", out)
	}
}

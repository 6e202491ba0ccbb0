package controlplane_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
)

// TestChat: a refused create_conversation leaves no task behind; a chat run replies
// (the backing task goes to review) and hands off without a plan (accepted: grading it
// is the chat_handoff matcher's business), the handoff recorded with no plan revision;
// the invariants hold after every step.
func TestChat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := mustMemory(t, richSeed())
	board := func(kind controlplane.BoardKind, in string) (controlplane.BoardResult, error) {
		return m.ApplyBoard(ctx, controlplane.BoardOp{Kind: kind, Input: json.RawMessage(in)})
	}
	before, _ := m.Snapshot(ctx)
	if _, err := board(controlplane.BoardCreateConversation, `{"title":"Chat","assigneeActorId":"nobody","body":"hi"}`); controlplane.CodeOf(err) != controlplane.CodeActorMissing {
		t.Fatalf("a conversation with an unknown agent: %v, want actor_missing", err)
	}
	after, _ := m.Snapshot(ctx)
	if len(after.Tasks) != len(before.Tasks) || len(after.Conversations) != 0 {
		t.Fatalf("a refused create_conversation left %d tasks (had %d) and %d conversations", len(after.Tasks), len(before.Tasks), len(after.Conversations))
	}
	res, err := board(controlplane.BoardCreateConversation, `{"title":"Chat","assigneeActorId":"actor-1","body":"hi"}`)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, m)
	st, _ := m.Snapshot(ctx)
	cv := controlplane.ConversationOf(st, res.ID)
	if cv == nil {
		t.Fatalf("conversation %s missing", res.ID)
	}
	if n := len(controlplane.Issues(st)); n != len(st.Tasks)-1 {
		t.Fatalf("the issue list has %d of %d tasks, want all but the backing task", n, len(st.Tasks))
	}
	openRun(t, m, "run-chat", cv.TaskID, "actor-1", "src")
	apply := func(key, kind string, fields map[string]any) error {
		_, err := m.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-chat", IdempotencyKey: key, Command: cmd(kind, fields)})
		return err
	}
	if err := apply("r1", "post_chat_reply", map[string]any{"body": " "}); controlplane.CodeOf(err) != controlplane.CodeSemanticCommandInvalid {
		t.Fatalf("an empty reply: %v, want semantic_command_invalid", err)
	}
	if err := apply("r2", "post_chat_reply", map[string]any{"body": "hello"}); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, m)
	if err := apply("h1", "handoff_conversation", map[string]any{"title": "Do it", "assigneeActorId": "actor-2"}); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, m)
	st, _ = m.Snapshot(ctx)
	cv = controlplane.ConversationOf(st, res.ID)
	if len(cv.Handoffs) != 1 || cv.Handoffs[0].PlanRevisionID != nil || cv.Handoffs[0].AssigneeActorID != "actor-2" {
		t.Fatalf("handoffs %+v, want one to actor-2 without a plan revision", cv.Handoffs)
	}
	for _, tk := range st.Tasks {
		if tk.ID == cv.TaskID && tk.Status != controlplane.TaskInReview {
			t.Fatalf("the backing task is %s after the reply and the handoff, want in_review", tk.Status)
		}
	}
}

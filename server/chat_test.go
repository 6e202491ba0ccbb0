package server_test

import (
	"context"
	"testing"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// TestChatRoutes: over HTTP, a conversation's backing task is left out of GET /issues
// (the ordinary issue is listed), GET /conversations/{id} returns its messages with
// /new recorded as a new generation, and an unknown conversation is 404
// conversation_missing.
func TestChatRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	body := "hello"
	created, err := w.co.CreateConversation(ctx, api.CreateConversationRequest{Title: "Chat", AssigneeActorID: w.agent, Body: &body})
	if err != nil {
		t.Fatal(err)
	}
	reset, err := w.co.ChatMessage(ctx, created.ID, "/new")
	if err != nil || len(reset.ScheduledWakeIDs) != 0 {
		t.Fatalf("/new: %+v, %v; want no wake", reset, err)
	}
	cv, err := w.co.Conversation(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cv.Generation != 2 || len(cv.Messages) != 2 || cv.Messages[1].Command != controlplane.ChatNew {
		t.Fatalf("conversation %+v, want generation 2 with the message and /new", cv)
	}
	issues, err := w.co.Issues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, is := range issues {
		ids = append(ids, is.ID)
	}
	if len(ids) != 1 || ids[0] != w.issue {
		t.Fatalf("GET /issues lists %v, want only %s (not the backing task %s)", ids, w.issue, cv.TaskID)
	}
	if _, err := w.co.Conversation(ctx, "conversation-nope"); controlplane.CodeOf(err) != controlplane.CodeConversationMissing {
		t.Fatalf("an unknown conversation: %v, want conversation_missing", err)
	}
}

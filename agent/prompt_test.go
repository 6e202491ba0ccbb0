package agent_test

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/controlplane"
)

// TestPromptChat: a chat run's prompt shows the conversation's current messages, in
// order, with their authors and session generation, and names the chat tools; a run
// without a conversation has no chat part.
func TestPromptChat(t *testing.T) {
	t.Parallel()
	rc := controlplane.RunContext{ActiveTask: controlplane.Task{ID: "task-1", Identifier: "APF-1", Title: "Release chat"},
		Wake: controlplane.Wake{Reason: controlplane.WakeChatMessage}}
	if p := agent.Prompt(rc); strings.Contains(p, "post_chat_reply") {
		t.Fatalf("a task prompt mentions the chat tools:\n%s", p)
	}
	rc.Conversation = &controlplane.ContextConversation{ID: "c-1", Title: "Release chat", Generation: 2, Messages: []controlplane.ChatMessage{
		{Author: controlplane.ChatHuman, Body: "hand it off"}, {Author: controlplane.ChatAgent, Body: "on it"}}}
	p := agent.Prompt(rc)
	for _, want := range []string{`the chat "Release chat" (session 2)`, "[human] hand it off\n[agent] on it\n", "post_chat_reply", "handoff_conversation"} {
		if !strings.Contains(p, want) {
			t.Errorf("the chat prompt lacks %q:\n%s", want, p)
		}
	}
}

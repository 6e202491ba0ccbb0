package match

import (
	"encoding/json"
	"strings"
	"testing"
)

// chatSpec is the chat_handoff matcher of the tests: the worker, the plan marker, two
// provider turns.
var chatSpec = Spec{Kind: KindChatHandoff, Name: "Release Worker", Expected: "PLAN_7", Count: func() *int { n := 2; return &n }()}

// chatDoc is a chat view in which everything holds; change edits it before encoding.
func chatObs(change func(map[string]any)) *Observation {
	doc := map[string]any{
		"conversation": map[string]any{
			"id": "conv-1", "taskId": "task-chat",
			"messages": []any{map[string]any{"id": "m1"}, map[string]any{"id": "m2"}, map[string]any{"id": "m3", "command": "new"}, map[string]any{"id": "m4"}},
			"handoffs": []any{map[string]any{"id": "h1", "taskId": "task-2", "assigneeActorId": "actor-w", "planRevisionId": "rev-1"}},
		},
		"actors": []any{map[string]any{"id": "actor-a", "name": "agent"}, map[string]any{"id": "actor-w", "name": "Release Worker"}},
		"tasks": []any{
			map[string]any{"id": "task-chat", "conversationId": "conv-1", "assigneeActorId": "actor-a"},
			map[string]any{"id": "task-2", "assigneeActorId": "actor-w"},
		},
		"documents": []any{map[string]any{"taskId": "task-2", "key": "plan", "revisions": []any{
			map[string]any{"id": "rev-1", "body": "1. PLAN_7 first\n2. then", "createdAt": "2026-08-09T00:00:10.000Z"}}}},
		"runs": []any{
			map[string]any{"id": "run-1", "taskId": "task-chat", "status": "succeeded", "wakeReason": "chat_message", "wakePayload": map[string]any{"messageId": "m1"}, "openedAt": "2026-08-09T00:00:02.000Z"},
			map[string]any{"id": "run-2", "taskId": "task-chat", "status": "cancelled", "wakeReason": "chat_message", "wakePayload": map[string]any{"messageId": "m4"}, "openedAt": "2026-08-09T00:00:08.000Z"},
		},
	}
	if change != nil {
		change(doc)
	}
	b, _ := json.Marshal(map[string]any{"chat": doc})
	return &Observation{JSON: b}
}

func handoff(doc map[string]any) map[string]any {
	return doc["conversation"].(map[string]any)["handoffs"].([]any)[0].(map[string]any)
}

// TestChatHandoff: chat_handoff passes a good handoff and names each rejected one:
// no plan, a plan without the text, a chat child, a wrong assignee, execution before
// the plan commit, a run woken by /new, a wrong number of provider turns (a cancelled
// run counts), two handoffs; no chat view is not reached.
func TestChatHandoff(t *testing.T) {
	t.Parallel()
	m, err := Compile(chatSpec)
	if err != nil {
		t.Fatal(err)
	}
	runs := func(doc map[string]any) []any { return doc["runs"].([]any) }
	tests := []struct {
		name    string
		change  func(map[string]any)
		problem string // "" passes
	}{
		{"good", nil, ""},
		{"no plan", func(d map[string]any) { handoff(d)["planRevisionId"] = nil }, "the handoff has no plan"},
		{"plan without the marker", func(d map[string]any) {
			d["documents"].([]any)[0].(map[string]any)["revisions"].([]any)[0].(map[string]any)["body"] = "1. other"
		}, "does not contain"},
		{"chat child", func(d map[string]any) { d["tasks"].([]any)[1].(map[string]any)["parentId"] = "task-chat" }, "chat child"},
		{"wrong assignee", func(d map[string]any) {
			handoff(d)["assigneeActorId"] = "actor-a"
			d["tasks"].([]any)[1].(map[string]any)["assigneeActorId"] = "actor-a"
		}, "not \\\"Release Worker\\\""},
		{"execution before the plan", func(d map[string]any) {
			d["runs"] = append(runs(d), map[string]any{"id": "run-3", "taskId": "task-2", "status": "running", "wakeReason": "issue_assigned", "openedAt": "2026-08-09T00:00:09.000Z"})
		}, "before its plan was committed"},
		{"a run woken by /new", func(d map[string]any) {
			runs(d)[1].(map[string]any)["wakePayload"] = map[string]any{"messageId": "m3"}
		}, "woken by the /new message"},
		{"a provider turn too few", func(d map[string]any) { d["runs"] = runs(d)[:1] }, "1 provider turns"},
		{"two handoffs", func(d map[string]any) {
			c := d["conversation"].(map[string]any)
			c["handoffs"] = append(c["handoffs"].([]any), handoff(d))
		}, "2 handoffs"},
	}
	for _, tt := range tests {
		o := m.Evaluate(chatObs(tt.change))
		switch {
		case tt.problem == "" && !o.Passed:
			t.Errorf("%s: %s, want a pass", tt.name, o.Detail)
		case tt.problem != "" && (o.Passed || o.NotReached || !strings.Contains(o.Detail, tt.problem)):
			t.Errorf("%s: %s, want a failure naming %q", tt.name, o.Detail, tt.problem)
		}
	}
	if o := m.Evaluate(&Observation{JSON: []byte(`{"issue":null}`)}); !o.NotReached {
		t.Errorf("no chat view: %s, want not reached", o.Detail)
	}
	for _, bad := range []Spec{{Kind: KindChatHandoff, Expected: "x", Count: chatSpec.Count}, {Kind: KindChatHandoff, Name: "w", Count: chatSpec.Count}, {Kind: KindChatHandoff, Name: "w", Expected: "x"}} {
		if _, err := Compile(bad); err == nil {
			t.Errorf("Compile(%+v) accepted a chat_handoff without all of name, expected and count", bad)
		}
	}
}

package match

import (
	"encoding/json"
	"strings"
	"testing"
)

// blockerDoc is a passing blocker-guidance observation that edit may break.
func blockerDoc(t *testing.T, edit func(doc map[string]any)) json.RawMessage {
	t.Helper()
	doc := map[string]any{
		"issue": map[string]any{"id": "task-1", "status": "done", "assigneeActorId": "worker"},
		"comments": []any{
			map[string]any{"id": "c-1", "authorActorId": "worker", "createdAt": "2026-01-01T00:00:01.000Z"},
			map[string]any{"id": "c-2", "authorActorId": nil, "createdAt": "2026-01-01T00:00:02.000Z"},
			map[string]any{"id": "c-3", "authorActorId": "worker", "createdAt": "2026-01-01T00:00:03.000Z"},
		},
		"company": map[string]any{
			"agentId": "worker", "managerId": "manager",
			"actors": []any{map[string]any{"id": "worker"}, map[string]any{"id": "manager"}},
			"tasks":  []any{map[string]any{"id": "task-1"}},
			"runs": []any{
				map[string]any{"id": "run-1", "actorId": "worker", "taskId": "task-1", "status": "succeeded", "wakeReason": "issue_assigned", "openedAt": "2026-01-01T00:00:00.000Z"},
				map[string]any{"id": "run-2", "actorId": "worker", "taskId": "task-1", "status": "succeeded", "wakeReason": "issue_commented", "openedAt": "2026-01-01T00:00:02.000Z"},
			},
		},
	}
	if edit != nil {
		edit(doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBlockerGuidance(t *testing.T) {
	t.Parallel()
	company := func(d map[string]any) map[string]any { return d["company"].(map[string]any) }
	run := func(d map[string]any, i int) map[string]any { return company(d)["runs"].([]any)[i].(map[string]any) }
	tests := []struct {
		name   string
		edit   func(map[string]any)
		pass   bool
		miss   bool
		detail string
	}{
		{name: "worker asks, human answers, worker continues", pass: true},
		{name: "no question", edit: func(d map[string]any) { d["comments"] = []any{} }, detail: "no question"},
		{name: "no answer", edit: func(d map[string]any) {
			d["comments"] = d["comments"].([]any)[:1]
		}, detail: "no human answer"},
		{name: "the manager ran", edit: func(d map[string]any) {
			company(d)["runs"] = append(company(d)["runs"].([]any), map[string]any{"id": "run-3", "actorId": "manager", "taskId": "task-1", "status": "succeeded", "wakeReason": "issue_assigned", "openedAt": "2026-01-01T00:00:04.000Z"})
		}, detail: "the manager ran"},
		{name: "continuation before the answer", edit: func(d map[string]any) { run(d, 1)["openedAt"] = "2026-01-01T00:00:01.500Z" }, detail: "not the worker's successful continuation"},
		{name: "no continuation", edit: func(d map[string]any) {
			company(d)["runs"] = company(d)["runs"].([]any)[:1]
		}, detail: "not the worker's successful continuation"},
		{name: "task not done", edit: func(d map[string]any) { d["issue"].(map[string]any)["status"] = "blocked" }, detail: "not done"},
		{name: "reassigned", edit: func(d map[string]any) { d["issue"].(map[string]any)["assigneeActorId"] = "manager" }, detail: "no longer assigned"},
		{name: "extra task", edit: func(d map[string]any) {
			company(d)["tasks"] = append(company(d)["tasks"].([]any), map[string]any{"id": "task-2"})
		}, detail: "2 tasks"},
		{name: "a hire", edit: func(d map[string]any) {
			company(d)["actors"] = append(company(d)["actors"].([]any), map[string]any{"id": "hire"})
		}, detail: "1 actors were added"},
		{name: "no manager", edit: func(d map[string]any) { company(d)["managerId"] = "" }, miss: true},
		{name: "no company view", edit: func(d map[string]any) { delete(d, "company") }, miss: true},
	}
	m, err := Compile(Spec{Kind: KindBlockerGuidance})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := m.Evaluate(&Observation{JSON: blockerDoc(t, tt.edit)})
			if o.Passed != tt.pass || o.NotReached != tt.miss || !strings.Contains(o.Detail, tt.detail) {
				t.Errorf("outcome = %+v, want passed=%v notReached=%v detail containing %q", o, tt.pass, tt.miss, tt.detail)
			}
		})
	}
	if o := m.Evaluate(&Observation{}); !o.NotReached {
		t.Errorf("no JSON: %+v, want not reached", o)
	}
	if _, err := Compile(Spec{Kind: KindBlockerGuidance, Expected: "x"}); err == nil {
		t.Error("blocker_guidance accepted a parameter")
	}
}

package match

import (
	"encoding/json"
	"strings"
	"testing"
)

// planJSON builds a composite observation: a plan document with the given revision
// bodies and decisions (id, status, target revision index; -1 for none).
func planJSON(t *testing.T, bodies []string, decisions ...[3]any) json.RawMessage {
	t.Helper()
	var revs []map[string]any
	for i, b := range bodies {
		revs = append(revs, map[string]any{"id": "rev-" + string(rune('1'+i)), "revision": i + 1, "body": b})
	}
	latest := ""
	if len(revs) > 0 {
		latest = revs[len(revs)-1]["id"].(string)
	}
	var inters, approvals []map[string]any
	for _, d := range decisions {
		x := map[string]any{"id": d[0], "status": d[1], "targetRevisionId": nil}
		if i := d[2].(int); i >= 0 {
			x["targetRevisionId"] = "rev-" + string(rune('1'+i))
		}
		if strings.HasPrefix(d[0].(string), "approval") {
			approvals = append(approvals, x)
		} else {
			inters = append(inters, x)
		}
	}
	b, err := json.Marshal(map[string]any{
		"documents":    []any{map[string]any{"key": "plan", "latestRevisionId": latest, "revisions": revs}},
		"interactions": inters, "approvals": approvals,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPlanRevisions(t *testing.T) {
	t.Parallel()
	two := "DRAFT\n\n1. Create the file.\n2. Report.\n"
	three := "REVISED\n\n1. Create the file.\n2) Verify it.\n3. Report.\n"
	revision := Spec{Kind: KindPlanRevisions, Expected: []any{
		map[string]any{"steps": 2, "contains": "DRAFT", "outcome": "rejected"},
		map[string]any{"steps": 3, "contains": "REVISED", "outcome": "accepted"},
	}}
	approval := Spec{Kind: KindPlanRevisions, Name: "plan", Expected: []any{map[string]any{"steps": 2, "outcome": "approved"}}}
	tests := []struct {
		name       string
		spec       Spec
		json       json.RawMessage
		pass, miss bool
		detail     string
	}{
		{name: "revision accepted", spec: revision, pass: true,
			json: planJSON(t, []string{two, three}, [3]any{"i-1", "rejected", 0}, [3]any{"i-2", "accepted", 1})},
		{name: "acceptance targets the old revision", spec: revision, detail: "exactly one",
			json: planJSON(t, []string{two, three}, [3]any{"i-1", "rejected", 0}, [3]any{"i-2", "accepted", 0})},
		{name: "acceptance without target", spec: revision, detail: "exactly one",
			json: planJSON(t, []string{two, three}, [3]any{"i-1", "rejected", 0}, [3]any{"i-2", "accepted", -1})},
		{name: "revision not revised", spec: revision, detail: "want 3",
			json: planJSON(t, []string{two, two}, [3]any{"i-1", "rejected", 0}, [3]any{"i-2", "accepted", 1})},
		{name: "one revision only", spec: revision,
			json: planJSON(t, []string{two}, [3]any{"i-1", "rejected", 0})},
		{name: "marker missing", spec: revision, detail: "lacks",
			json: planJSON(t, []string{two, strings.Replace(three, "REVISED", "OTHER", 1)}, [3]any{"i-1", "rejected", 0}, [3]any{"i-2", "accepted", 1})},
		{name: "approval approved", spec: approval, pass: true, json: planJSON(t, []string{two}, [3]any{"approval-1", "approved", 0})},
		{name: "approval pending", spec: approval, json: planJSON(t, []string{two}, [3]any{"approval-1", "pending", 0})},
		{name: "approval of three steps", spec: approval, json: planJSON(t, []string{three}, [3]any{"approval-1", "approved", 0})},
		{name: "two approvals", spec: approval, json: planJSON(t, []string{two}, [3]any{"approval-1", "approved", 0}, [3]any{"approval-2", "rejected", 0})},
		{name: "no document", spec: approval, json: json.RawMessage(`{"documents":[],"interactions":[],"approvals":[]}`), detail: "no document"},
		{name: "no observation", spec: approval, miss: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Compile(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			o := m.Evaluate(&Observation{JSON: tt.json})
			if o.Passed != tt.pass || o.NotReached != tt.miss || !strings.Contains(o.Detail, tt.detail) {
				t.Errorf("outcome = %+v, want passed=%v notReached=%v detail containing %q", o, tt.pass, tt.miss, tt.detail)
			}
		})
	}
}

func TestCompilePlanRevisions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		expected any
		want     string
	}{
		{"not a list", "plan", "non-empty list"},
		{"empty", []any{}, "non-empty list"},
		{"not an object", []any{"x"}, "must be an object"},
		{"no steps", []any{map[string]any{"outcome": "accepted"}}, "needs steps and outcome"},
		{"zero steps", []any{map[string]any{"steps": 0, "outcome": "accepted"}}, "integer ≥ 1"},
		{"bad outcome", []any{map[string]any{"steps": 2, "outcome": "done"}}, "outcome must be one of"},
		{"unknown field", []any{map[string]any{"steps": 2, "outcome": "accepted", "colour": "x"}}, `unknown field "colour"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(Spec{Kind: KindPlanRevisions, Expected: tt.expected})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPlanSteps(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]int{"": 0, "1. a\n2. b\n": 2, "MARK\n\n1. a\n  2) b\n3. c": 3, "1.a\n10. x": 1, "step 1. a": 0} {
		if got := PlanSteps(body); got != want {
			t.Errorf("PlanSteps(%q) = %d, want %d", body, got, want)
		}
	}
}

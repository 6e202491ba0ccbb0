package match

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var five = 5

// namingSpec is the naming form of task_title: API-key rotation within five calls.
var namingSpec = Spec{Kind: KindTaskTitle, Expected: []any{"api", "key|credential", "rotat|rollover"}, Count: &five}

// controlSpec is the control form: "Quarterly report" kept throughout.
var controlSpec = Spec{Kind: KindTaskTitle, Expected: "Quarterly report"}

// titleFixture describes a composite JSON observation for task_title; the zero value
// is a passing naming run: created untitled, named "Rotate API keys" at call 2 of run-1.
type titleFixture struct {
	created, current string
	changes          []map[string]any
	afterRun         []map[string]any
	calls            []map[string]any
	unrecorded       bool
	noTitles         bool
	noRuns           bool
}

func titleObs(f titleFixture) *Observation {
	if f.changes == nil {
		f.changes = []map[string]any{{"commandId": "command-1", "runId": "run-1", "title": "Rotate API keys"}}
	}
	if f.current == "" && f.created == "" {
		f.current = "Rotate API keys"
	}
	if f.afterRun == nil && !f.noRuns {
		f.afterRun = []map[string]any{{"runId": "run-1", "title": f.current}}
	}
	if f.afterRun == nil {
		f.afterRun = []map[string]any{}
	}
	if f.calls == nil {
		f.calls = []map[string]any{
			{"tool": "get_task_context", "class": "discovery", "status": 200},
			{"tool": "set_task_title", "class": "command", "status": 200},
			{"tool": "finish_task", "class": "command", "status": 200},
			{"tool": "events", "class": "protocol", "status": 200},
		}
	}
	doc := map[string]any{
		"titles":     map[string]any{"created": f.created, "changes": f.changes, "afterRun": f.afterRun, "current": f.current},
		"agentCalls": []any{map[string]any{"runId": "run-1", "recorded": !f.unrecorded, "calls": f.calls}},
	}
	if f.noTitles {
		delete(doc, "titles")
	}
	b, _ := json.Marshal(doc)
	return &Observation{JSON: b}
}

func call(tool, class string, status int) map[string]any {
	return map[string]any{"tool": tool, "class": class, "status": status}
}

// TestTaskTitle: the naming form passes only when the initial run named the task
// within the bound with a title about API-key rotation that the saved task, the audit
// and the call agree on; the control form only when the title never changed; missing
// evidence fails (never passes, never "not reached").
func TestTaskTitle(t *testing.T) {
	t.Parallel()
	late := []map[string]any{call("get_task_context", "discovery", 200), call("list_documents", "discovery", 200), call("read_file", "discovery", 200),
		call("report_progress", "command", 200), call("upload_blob", "file", 201), call("set_task_title", "command", 200)}
	protocolOnly := []map[string]any{call("events", "protocol", 200), call("checkpoint", "protocol", 204), call("set_task_title", "command", 200)}
	refusedFirst := []map[string]any{call("set_task_title", "command", 400), call("set_task_title", "command", 200)}
	tests := []struct {
		name   string
		spec   Spec
		obs    *Observation
		passed bool
		want   string // a substring of the detail
	}{
		{"named at call 2", namingSpec, titleObs(titleFixture{}), true, ""},
		{"the protocol does not count", namingSpec, titleObs(titleFixture{calls: protocolOnly}), true, ""},
		{"a refused call counts, the successful one names", namingSpec, titleObs(titleFixture{calls: refusedFirst}), true, ""},
		{"named at call 6", namingSpec, titleObs(titleFixture{calls: late}), false, "named the task at tool call 6, after the first 5"},
		{"never named", namingSpec, titleObs(titleFixture{calls: []map[string]any{call("finish_task", "command", 200)}, changes: []map[string]any{}, current: "", created: ""}), false, "never named the task"},
		{"off-topic title", namingSpec, titleObs(titleFixture{current: "Write a checklist", changes: []map[string]any{{"commandId": "c", "runId": "run-1", "title": "Write a checklist"}}}), false, `has none of \"api\"`},
		{"keywords in any case and form", namingSpec, titleObs(titleFixture{current: "Credential rollover for the API", changes: []map[string]any{{"commandId": "c", "runId": "run-1", "title": "Credential rollover for the API"}}}), true, ""},
		{"the saved title is not the change's", namingSpec, titleObs(titleFixture{current: "Rotate API key", changes: []map[string]any{{"commandId": "c", "runId": "run-1", "title": "Rotate API keys now"}}}), false, "is not the last change's"},
		{"named by another run", namingSpec, titleObs(titleFixture{changes: []map[string]any{{"commandId": "c", "runId": "run-2", "title": "Rotate API keys"}}}), false, "not the initial run run-1's"},
		{"calls not recorded", namingSpec, titleObs(titleFixture{unrecorded: true}), false, "missing evidence: the calls of the initial run run-1 were not recorded"},
		{"no titles view", namingSpec, titleObs(titleFixture{noTitles: true}), false, "missing evidence: the task's titles were not observed"},
		{"no run", namingSpec, titleObs(titleFixture{noRuns: true}), false, "missing evidence: the task has no run"},
		{"control kept", controlSpec, titleObs(titleFixture{created: "Quarterly report", current: "Quarterly report", changes: []map[string]any{}}), true, ""},
		{"control renamed and restored", controlSpec, titleObs(titleFixture{created: "Quarterly report", current: "Quarterly report",
			changes: []map[string]any{{"commandId": "c1", "runId": "run-1", "title": "Rotate keys"}, {"commandId": "c2", "runId": "run-1", "title": "Quarterly report"}}}), false, "changed the control title"},
		{"control changed between runs", controlSpec, titleObs(titleFixture{created: "Quarterly report", current: "Quarterly report", changes: []map[string]any{},
			afterRun: []map[string]any{{"runId": "run-1", "title": "Other"}, {"runId": "run-2", "title": "Quarterly report"}}}), false, `after run run-1 the title was \"Other\"`},
		{"control, no evidence", controlSpec, msg("x"), false, "missing evidence"},
	}
	for _, tt := range tests {
		m, err := Compile(tt.spec)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		o := m.Evaluate(tt.obs)
		if o.Passed != tt.passed || o.NotReached {
			t.Errorf("%s: passed %v notReached %v, want passed %v (detail %s)", tt.name, o.Passed, o.NotReached, tt.passed, o.Detail)
		}
		if tt.want != "" && !strings.Contains(o.Detail, tt.want) {
			t.Errorf("%s: detail %s, want it to contain %s", tt.name, o.Detail, tt.want)
		}
	}
}

// TestTaskTitleCompile: bad declarations are refused naming the field.
func TestTaskTitleCompile(t *testing.T) {
	t.Parallel()
	zero := 0
	for _, tt := range []struct {
		spec  Spec
		field string
	}{
		{Spec{Kind: KindTaskTitle, Expected: []any{"api"}}, "count"},
		{Spec{Kind: KindTaskTitle, Expected: []any{"api"}, Count: &zero}, "count"},
		{Spec{Kind: KindTaskTitle, Expected: []any{}, Count: &five}, "expected"},
		{Spec{Kind: KindTaskTitle, Expected: []any{"|"}, Count: &five}, "expected"},
		{Spec{Kind: KindTaskTitle, Expected: "Report", Count: &five}, "count"},
		{Spec{Kind: KindTaskTitle, Expected: " "}, "expected"},
		{Spec{Kind: KindTaskTitle, Expected: 3.0}, "expected"},
		{Spec{Kind: KindTaskTitle, Expected: "x", Path: "a"}, "path"},
	} {
		_, err := Compile(tt.spec)
		var se *SpecError
		if err == nil || !errors.As(err, &se) || se.Field != tt.field {
			t.Errorf("%+v: error %v, want one on field %s", tt.spec, err, tt.field)
		}
	}
}

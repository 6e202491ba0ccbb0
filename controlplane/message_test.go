package controlplane

import (
	"encoding/json"
	"testing"
)

func TestRunMessage(t *testing.T) {
	t.Parallel()
	runID, other := "run-1", "run-2"
	st := &State{
		Comments: []*Comment{{ID: "c1", Body: "progress"}, {ID: "c2", Body: "MARK"}, {ID: "c3", Body: "other run"}},
		Audit: []*AuditRecord{
			{RunID: &runID, Action: "semantic_command.applied", Details: json.RawMessage(`{"entityRefs":["comment:c1"]}`)},
			{RunID: &other, Action: "semantic_command.applied", Details: json.RawMessage(`{"entityRefs":["comment:c3"]}`)},
			{RunID: &runID, Action: "semantic_command.denied", Details: json.RawMessage(`{"entityRefs":["comment:c3"]}`)},
			{RunID: &runID, Action: "semantic_command.applied", Details: json.RawMessage(`{"entityRefs":["task:t","comment:c2"]}`)},
		},
	}
	tests := []struct {
		name string
		run  *Run
		want string
	}{
		{"presentation comment", &Run{ID: runID, Result: json.RawMessage(`{"result":{"presentationDecision":{"commentId":"c2"}}}`)}, "MARK"},
		{"presentation comment missing", &Run{ID: runID, Result: json.RawMessage(`{"result":{"presentationDecision":{"commentId":"nope"}}}`)}, ""},
		{"all applied comments of the run", &Run{ID: runID}, "progress\nMARK"},
		{"malformed result counts as absent", &Run{ID: runID, Result: json.RawMessage(`[`)}, "progress\nMARK"},
		{"run without comments", &Run{ID: "run-3"}, ""},
	}
	for _, tt := range tests {
		if got := st.RunMessage(tt.run); got != tt.want {
			t.Errorf("%s: RunMessage = %q, want %q", tt.name, got, tt.want)
		}
	}
}

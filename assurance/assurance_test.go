package assurance

import (
	"encoding/json"
	"testing"

	"github.com/agentproof/agentproof/evidence"
	"github.com/agentproof/agentproof/verdict"
)

func ptr[T any](v T) *T { return &v }

func TestClassify(t *testing.T) {
	t.Parallel()
	clean := func(code int) evidence.ProcessObservation {
		return evidence.ProcessObservation{Program: "pass", ProcessEnd: evidence.ProcessEnd{ExitCode: ptr(code), Exited: true, StdioClosed: true}, Workspace: evidence.WorkspaceRemoved}
	}
	tests := []struct {
		name string
		obs  func() evidence.ProcessObservation
		want verdict.Verdict
	}{
		{"pass", func() evidence.ProcessObservation { return clean(0) }, verdict.Passed},
		{"fail", func() evidence.ProcessObservation { return clean(1) }, verdict.Failed},
		{"usage", func() evidence.ProcessObservation { return clean(64) }, verdict.Failed},
		{"output error", func() evidence.ProcessObservation { return clean(74) }, verdict.Inconclusive},
		{"watchdog", func() evidence.ProcessObservation { return clean(124) }, verdict.Inconclusive},
		{"parent lost", func() evidence.ProcessObservation { return clean(125) }, verdict.Inconclusive},
		{"unknown code", func() evidence.ProcessObservation { return clean(7) }, verdict.Inconclusive},
		{"timeout with exit 0", func() evidence.ProcessObservation { o := clean(0); o.TimedOut = true; return o }, verdict.Inconclusive},
		{"collector error with exit 1", func() evidence.ProcessObservation { o := clean(1); o.CollectorError = ptr("x"); return o }, verdict.Inconclusive},
		{"signal", func() evidence.ProcessObservation {
			o := clean(0)
			o.ExitCode = nil
			o.Signal = ptr("SIGKILL")
			return o
		}, verdict.Inconclusive},
		{"null exit", func() evidence.ProcessObservation { o := clean(0); o.ExitCode = nil; return o }, verdict.Inconclusive},
		{"unconfirmed exit", func() evidence.ProcessObservation { o := clean(0); o.Exited = false; return o }, verdict.Inconclusive},
		{"stdio open", func() evidence.ProcessObservation { o := clean(0); o.StdioClosed = false; return o }, verdict.Inconclusive},
		{"output exceeded", func() evidence.ProcessObservation { o := clean(0); o.OutputExceeded = true; return o }, verdict.Inconclusive},
		{"aborted", func() evidence.ProcessObservation { o := clean(0); o.Aborted = true; return o }, verdict.Inconclusive},
		{"quarantined", func() evidence.ProcessObservation {
			o := clean(0)
			o.Workspace, o.WorkspaceReason = evidence.WorkspaceQuarantined, "unexpected content"
			return o
		}, verdict.Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Classify(evidence.Metadata{Observation: tt.obs()})
			if got.Verdict != tt.want || got.Reason == "" {
				t.Errorf("Classify = %+v, want verdict %s with a reason", got, tt.want)
			}
		})
	}
}

// TestClassView: the assurance names are a view of the verdicts (an invalid verdict is
// Inconclusive), and a Result's JSON form is {"class", "reason"} with that name.
func TestClassView(t *testing.T) {
	t.Parallel()
	want := map[verdict.Verdict]Class{verdict.Passed: Verified, verdict.Failed: Failed, verdict.Inconclusive: Inconclusive, "": Inconclusive, "maybe": Inconclusive}
	for v, c := range want {
		if got := ClassOf(v); got != c {
			t.Errorf("ClassOf(%q) = %s, want %s", v, got, c)
		}
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{
		{Result{verdict.Passed, "ok"}, `{"class":"Verified","reason":"ok"}`},
		{Result{verdict.Failed, "exited 1 (fail)"}, `{"class":"Failed","reason":"exited 1 (fail)"}`},
		{InconclusiveBecause("lost"), `{"class":"Inconclusive","reason":"lost"}`},
	} {
		b, err := json.Marshal(tt.r)
		if err != nil || string(b) != tt.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.r, b, err, tt.want)
		}
	}
}

package assurance

import (
	"testing"

	"github.com/agentproof/agentproof/evidence"
)

func ptr[T any](v T) *T { return &v }

func TestClassify(t *testing.T) {
	t.Parallel()
	clean := func(code int) evidence.ProcessObservation {
		return evidence.ProcessObservation{Program: "pass", ExitCode: ptr(code), Exited: true, StdioClosed: true, Workspace: evidence.WorkspaceRemoved}
	}
	tests := []struct {
		name string
		obs  func() evidence.ProcessObservation
		want Class
	}{
		{"pass", func() evidence.ProcessObservation { return clean(0) }, Verified},
		{"fail", func() evidence.ProcessObservation { return clean(1) }, Failed},
		{"usage", func() evidence.ProcessObservation { return clean(64) }, Failed},
		{"output error", func() evidence.ProcessObservation { return clean(74) }, Inconclusive},
		{"watchdog", func() evidence.ProcessObservation { return clean(124) }, Inconclusive},
		{"parent lost", func() evidence.ProcessObservation { return clean(125) }, Inconclusive},
		{"unknown code", func() evidence.ProcessObservation { return clean(7) }, Inconclusive},
		{"timeout with exit 0", func() evidence.ProcessObservation { o := clean(0); o.TimedOut = true; return o }, Inconclusive},
		{"collector error with exit 1", func() evidence.ProcessObservation { o := clean(1); o.CollectorError = ptr("x"); return o }, Inconclusive},
		{"signal", func() evidence.ProcessObservation {
			o := clean(0)
			o.ExitCode = nil
			o.Signal = ptr("SIGKILL")
			return o
		}, Inconclusive},
		{"null exit", func() evidence.ProcessObservation { o := clean(0); o.ExitCode = nil; return o }, Inconclusive},
		{"unconfirmed exit", func() evidence.ProcessObservation { o := clean(0); o.Exited = false; return o }, Inconclusive},
		{"stdio open", func() evidence.ProcessObservation { o := clean(0); o.StdioClosed = false; return o }, Inconclusive},
		{"output exceeded", func() evidence.ProcessObservation { o := clean(0); o.OutputExceeded = true; return o }, Inconclusive},
		{"aborted", func() evidence.ProcessObservation { o := clean(0); o.Aborted = true; return o }, Inconclusive},
		{"quarantined", func() evidence.ProcessObservation {
			o := clean(0)
			o.Workspace, o.WorkspaceReason = evidence.WorkspaceQuarantined, "unexpected content"
			return o
		}, Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Classify(evidence.Metadata{Observation: tt.obs()})
			if got.Class != tt.want || got.Reason == "" {
				t.Errorf("Classify = %+v, want class %s with a reason", got, tt.want)
			}
		})
	}
}

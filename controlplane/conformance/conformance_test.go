package conformance_test

import (
	"testing"

	"github.com/agentproof/agentproof/controlplane/conformance"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	conformance.Run(t, conformance.MemoryHarness{})
}

func TestCheckCountsEveryCase(t *testing.T) {
	t.Parallel()
	rs := conformance.Check(conformance.MemoryHarness{})
	passed, failed := conformance.Summary(rs)
	if passed+failed != 53 {
		t.Fatalf("Check returned %d results, want 53 (13 port steps + 40 cases)", passed+failed)
	}
	for _, r := range rs {
		if !r.Passed {
			t.Errorf("%s: %s", r.Name, r.Detail)
		}
	}
}

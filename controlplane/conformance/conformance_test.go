package conformance_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/controlplane"

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
	if passed+failed != 55 {
		t.Fatalf("Check returned %d results, want 55 (13 port steps + 40 cases + 2 journey cases)", passed+failed)
	}
	for _, r := range rs {
		if !r.Passed {
			t.Errorf("%s: %s", r.Name, r.Detail)
		}
	}
}

// lenientPort is a deliberately broken Port: it accepts a replayed event whose content
// changed as a duplicate instead of failing closed.
type lenientPort struct{ controlplane.Port }

func (p lenientPort) AppendEvent(ctx context.Context, ev json.RawMessage) (controlplane.Receipt, error) {
	r, err := p.Port.AppendEvent(ctx, ev)
	if controlplane.CodeOf(err) == "native_event_replay_conflict" {
		return controlplane.Receipt{Disposition: "duplicate"}, nil
	}
	return r, err
}

type lenientHarness struct{ conformance.MemoryHarness }

func (h lenientHarness) New(ctx context.Context, seed controlplane.Seed) (controlplane.Port, error) {
	p, err := h.MemoryHarness.New(ctx, seed)
	return lenientPort{p}, err
}

func (h lenientHarness) Restart(ctx context.Context, p controlplane.Port) (controlplane.Port, error) {
	r, err := h.MemoryHarness.Restart(ctx, p)
	return lenientPort{r}, err
}

// TestCheckCatchesABrokenPort: the suite fails exactly the cases that exercise replay
// conflicts when a Port swallows them.
func TestCheckCatchesABrokenPort(t *testing.T) {
	t.Parallel()
	var failed []string
	for _, r := range conformance.Check(lenientHarness{}) {
		if !r.Passed {
			failed = append(failed, r.Name)
		}
	}
	want := []string{
		"port/07-event-id-mutation-rejected", "port/08-event-sequence-mutation-rejected", "port/09-replay-exclusive-cursor",
		"port/10-replay-binding-rejected", "port/11-terminal-replay-idempotent", "port/12-result-mutation-rejected", "port/13-report",
		"case/29-event-replay-conflict", "case/40-port-contract",
	}
	if strings.Join(failed, ",") != strings.Join(want, ",") {
		t.Fatalf("failed cases:\n%s\nwant:\n%s", strings.Join(failed, "\n"), strings.Join(want, "\n"))
	}
}

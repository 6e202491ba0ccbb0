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
	if passed+failed != 63 {
		t.Fatalf("Check returned %d results, want 63 (13 port steps + 40 cases + 6 board cases + 4 journey cases)", passed+failed)
	}
	for _, r := range rs {
		if !r.Passed {
			t.Errorf("%s: %s", r.Name, r.Detail)
		}
	}
}

// boardPort is a Port that is also a Board, as every Port of agentproof is.
type boardPort interface {
	controlplane.Port
	controlplane.Board
}

// lenientPort is a deliberately broken Port: it accepts a replayed event whose content
// changed as a duplicate instead of failing closed.
type lenientPort struct{ boardPort }

func (p lenientPort) AppendEvent(ctx context.Context, ev json.RawMessage) (controlplane.Receipt, error) {
	r, err := p.boardPort.AppendEvent(ctx, ev)
	if controlplane.CodeOf(err) == "native_event_replay_conflict" {
		return controlplane.Receipt{Disposition: "duplicate"}, nil
	}
	return r, err
}

type lenientHarness struct{ conformance.MemoryHarness }

func (h lenientHarness) New(ctx context.Context, seed controlplane.Seed) (controlplane.Port, error) {
	p, err := h.MemoryHarness.New(ctx, seed)
	if err != nil {
		return nil, err
	}
	return lenientPort{p.(boardPort)}, nil
}

func (h lenientHarness) Restart(ctx context.Context, p controlplane.Port) (controlplane.Port, error) {
	r, err := h.MemoryHarness.Restart(ctx, p)
	if err != nil {
		return nil, err
	}
	return lenientPort{r.(boardPort)}, nil
}

// forgetfulPort is a deliberately broken Board: it ignores idempotency keys, so a
// replayed board write is applied again.
type forgetfulPort struct{ boardPort }

func (p forgetfulPort) ApplyBoard(ctx context.Context, op controlplane.BoardOp) (controlplane.BoardResult, error) {
	op.IdempotencyKey = ""
	return p.boardPort.ApplyBoard(ctx, op)
}

type forgetfulHarness struct{ conformance.MemoryHarness }

func (h forgetfulHarness) New(ctx context.Context, seed controlplane.Seed) (controlplane.Port, error) {
	p, err := h.MemoryHarness.New(ctx, seed)
	if err != nil {
		return nil, err
	}
	return forgetfulPort{p.(boardPort)}, nil
}

func (h forgetfulHarness) Restart(ctx context.Context, p controlplane.Port) (controlplane.Port, error) {
	r, err := h.MemoryHarness.Restart(ctx, p)
	if err != nil {
		return nil, err
	}
	return forgetfulPort{r.(boardPort)}, nil
}

// plainPort is a Port that is not a Board.
type plainPort struct{ controlplane.Port }

type plainHarness struct{ conformance.MemoryHarness }

func (h plainHarness) New(ctx context.Context, seed controlplane.Seed) (controlplane.Port, error) {
	p, err := h.MemoryHarness.New(ctx, seed)
	return plainPort{p}, err
}

func (h plainHarness) Restart(ctx context.Context, p controlplane.Port) (controlplane.Port, error) {
	r, err := h.MemoryHarness.Restart(ctx, p.(plainPort).Port)
	return plainPort{r}, err
}

// TestBoardCasesCatchBrokenBoards: a Board that forgets idempotency keys fails exactly
// the idempotency case; a Port that is no Board fails every board case and nothing else.
func TestBoardCasesCatchBrokenBoards(t *testing.T) {
	t.Parallel()
	failedOf := func(h conformance.Harness) []string {
		var out []string
		for _, r := range conformance.Check(h) {
			if !r.Passed {
				out = append(out, r.Name)
			}
		}
		return out
	}
	if got := strings.Join(failedOf(forgetfulHarness{}), ","); got != "board/04-idempotent-board-write,board/06-retry-interrupted-run" {
		t.Fatalf("a forgetful board fails %s, want board/04-idempotent-board-write and board/06-retry-interrupted-run (its keyed Retry replayed)", got)
	}
	var all []string
	for _, c := range conformance.BoardCases() {
		all = append(all, c.Name)
	}
	all = append(all, "journey/03-agent-names-untitled-task", "journey/04-agent-chat-new-handoff") // create their tasks through the board
	if got := strings.Join(failedOf(plainHarness{}), ","); got != strings.Join(all, ",") {
		t.Fatalf("a port that is no board fails %s, want %s", got, strings.Join(all, ","))
	}
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

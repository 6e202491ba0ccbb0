// Package conformance is the exported conformance suite of the control-plane port.
// It runs
// unchanged against any controlplane.Port: the in-memory Memory here, the durable store
// and the HTTP client later. The board cases (BoardCases) also need the Port to be a
// controlplane.Board (blobs, byte-verified deliverables, managed files, keyed board
// writes, Retry); every Port of agentproof is one. A Harness builds a fresh Port from a seed and can restart
// it; Check runs every case and returns one CaseResult per case, Run does the same as
// named subtests of a go test.
package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentproof/agentproof/controlplane"
)

// Harness builds Ports for the suite.
type Harness interface {
	// New returns a fresh, stopped Port whose state is built from seed.
	New(ctx context.Context, seed controlplane.Seed) (controlplane.Port, error)
	// Restart returns a Port that continues p's state after a restart (for Memory:
	// Serialize then Restore). p must not be used afterwards.
	Restart(ctx context.Context, p controlplane.Port) (controlplane.Port, error)
}

// MemoryHarness runs the suite against controlplane.Memory.
type MemoryHarness struct{}

// New builds a Memory from seed.
func (MemoryHarness) New(_ context.Context, seed controlplane.Seed) (controlplane.Port, error) {
	return controlplane.NewMemory(seed)
}

// Restart serializes p and restores a new Memory from the bytes.
func (MemoryHarness) Restart(ctx context.Context, p controlplane.Port) (controlplane.Port, error) {
	b, err := p.Serialize(ctx)
	if err != nil {
		return nil, err
	}
	return controlplane.Restore(b)
}

// CaseResult is the outcome of one conformance case; Detail explains a failure.
type CaseResult struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}

// Case is one named conformance case. Port steps (names "port/NN-…") share one run of
// the port contract; every other case builds its own Port.
type Case struct {
	Name string
	run  func(ctx context.Context, h Harness) error
}

// caseTimeout bounds one case against a slow (remote) Port.
const caseTimeout = 60 * time.Second

// Check runs every case against h and returns their results in order: the 13 port
// contract steps, the 40 Given/When/Then cases, the 5 board cases (BoardCases), then the
// journey cases (JourneyCases).
func Check(h Harness) []CaseResult {
	var out []CaseResult
	steps := runPortContract(h)
	out = append(out, steps...)
	for _, c := range append(append(Cases(), BoardCases()...), JourneyCases()...) {
		out = append(out, runCase(c, h))
	}
	return out
}

func runCase(c Case, h Harness) (res CaseResult) {
	res.Name = c.Name
	defer func() {
		if r := recover(); r != nil {
			res.Passed = false
			res.Detail = fmt.Sprintf("panic: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	if err := c.run(ctx, h); err != nil {
		res.Detail = err.Error()
		return res
	}
	res.Passed = true
	return res
}

// Run runs the suite as subtests of t, one per case, failing each that fails.
func Run(t *testing.T, h Harness) {
	t.Helper()
	t.Run("port", func(t *testing.T) {
		for _, r := range runPortContract(h) {
			t.Run(r.Name[len("port/"):], func(t *testing.T) {
				if !r.Passed {
					t.Fatal(r.Detail)
				}
			})
		}
	})
	for _, c := range append(append(Cases(), BoardCases()...), JourneyCases()...) {
		t.Run(c.Name, func(t *testing.T) {
			r := runCase(c, h)
			if !r.Passed {
				t.Fatal(r.Detail)
			}
		})
	}
}

// Summary counts passed and failed results.
func Summary(rs []CaseResult) (passed, failed int) {
	for _, r := range rs {
		if r.Passed {
			passed++
		} else {
			failed++
		}
	}
	return passed, failed
}

// ---- assertion helpers ----

func failf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// wantCode checks that err carries the state-machine code want.
func wantCode(err error, want controlplane.Code) error {
	if err == nil {
		return failf("expected error %s, got success", want)
	}
	if got := controlplane.CodeOf(err); got != want {
		return failf("expected error %s, got %v", want, err)
	}
	return nil
}

// noErr wraps an unexpected error with what was being done.
func noErr(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: unexpected error: %w", what, err)
	}
	return nil
}

func equal[T comparable](got, want T, what string) error {
	if got != want {
		return failf("%s: got %v, want %v", what, got, want)
	}
	return nil
}

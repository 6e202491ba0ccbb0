package campaign

import (
	"context"
	"io"
	"testing"

	"github.com/agentproof/agentproof/catalog"
)

// nopExecutor returns a passing outcome at once: the benchmarks below measure the
// scheduler's, planner's and display's own cost per attempt, nothing an executor does.
type nopExecutor struct{}

func (nopExecutor) ExecuteAttempt(context.Context, AttemptPlan) Outcome { return passOutcome }

// BenchmarkSchedulerPerCell runs the whole default catalog (every cell planned, nonce
// rendered, judged, counted and reported in plain mode) at max parallelism 4 and
// reports the scheduler's own cost per cell.
func BenchmarkSchedulerPerCell(b *testing.B) {
	c, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	seed := int64(1)
	p, err := NewPlan(c, catalog.Selector{All: true}, Options{CampaignID: "bench", MaxParallel: 4, Seed: &seed})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d := NewDisplay(ProgressPlain, io.Discard)
		(&Scheduler{Executor: nopExecutor{}, Observe: d.Observe}).Run(context.Background(), p)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(p.Cells)), "ns/cell")
}

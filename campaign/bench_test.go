package campaign

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/agentproof/agentproof/catalog"
)

// nopExecutor returns a passing outcome at once: the benchmarks below measure the
// scheduler's, planner's and display's own cost per attempt, nothing an executor does.
type nopExecutor struct{}

func (nopExecutor) ExecuteAttempt(context.Context, AttemptPlan) AttemptOutcome { return passOutcome }

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

func BenchmarkJudge(b *testing.B) {
	o := clean(okMatcher, okMatcher, failedMatcher, notReachedMatcher)
	o.Err = errors.New("the agent finished without asking the question")
	for b.Loop() {
		Judge(o)
	}
}

func BenchmarkClassifyText(b *testing.B) {
	msg := "flow question_resume_completion: waiting for the pending question: the run finished with status failed and no interaction"
	for b.Loop() {
		ClassifyText(msg)
	}
}

// BenchmarkRegistry sets up and tears down the six-fixture Paperclip graph.
func BenchmarkRegistry(b *testing.B) {
	log := &fixtureLog{}
	specs := []spec{
		{id: "company"}, {id: "secrets", deps: []string{"company"}},
		{id: "environment", deps: []string{"company", "secrets"}},
		{id: "agent", deps: []string{"company", "secrets", "environment"}},
		{id: "project", deps: []string{"company", "environment"}},
		{id: "task", deps: []string{"agent", "project"}, noTeardown: true},
	}
	reg := NewRegistry(nil)
	for _, s := range specs {
		if err := reg.Register(log.define(s)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		log.calls = log.calls[:0]
		fx, err := reg.SetupAll(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if err := fx.Teardown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

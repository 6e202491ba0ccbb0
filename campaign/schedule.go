package campaign

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentproof/agentproof/catalog"

	"github.com/agentproof/agentproof/verdict"
)

// AttemptResult is one judged attempt.
type AttemptResult struct {
	Plan      AttemptPlan
	Outcome   AttemptOutcome
	Judgement verdict.Judgement
	// Counted is how the attempt counts (Counted(cell.ExpectedVerdict, verdict)).
	Counted    verdict.Verdict
	StartedAt  time.Time
	FinishedAt time.Time
}

// Counts reports whether the attempt counts as a finished result: it was not
// interrupted, or it broke a safety rule before the interruption (a failed verdict:
// secret_leak or cleanup_failure), which an interruption must not hide.
func (r *AttemptResult) Counts() bool {
	return !r.Outcome.Interrupted || r.Judgement.Verdict == verdict.Failed
}

// CellStatus says how far a cell got.
type CellStatus string

// Cell statuses.
const (
	// CellFinished: at least one attempt counts (AttemptResult.Counts); the last such
	// attempt is the cell's result.
	CellFinished CellStatus = "finished"
	// CellInterrupted: an attempt started but none counts.
	CellInterrupted CellStatus = "interrupted"
	// CellNotStarted: the campaign was cancelled before the cell's first attempt.
	CellNotStarted CellStatus = "not_started"
)

// CellResult is one selected cell with its attempts in order.
type CellResult struct {
	Cell     *catalog.Cell
	Attempts []AttemptResult
	Status   CellStatus
	// Final is the index in Attempts of the attempt that counts (the last one that
	// Counts), -1 when none does.
	Final int
	// Verdict is the counted verdict of the final attempt, "" when none finished.
	Verdict verdict.Verdict
}

// Summary is a campaign's outcome. Cells are in plan (matrix) order.
type Summary struct {
	CampaignID string
	// Selected is the number of selected cells; Executed those that finished.
	Selected, Executed int
	// Passed, Failed and Inconclusive count finished cells by counted verdict.
	Passed, Failed, Inconclusive int
	// Retries is the number of automatic retries started.
	Retries int
	// Partial is true when the campaign was cancelled before every cell finished
	// (or an attempt was interrupted).
	Partial    bool
	Cells      []CellResult
	StartedAt  time.Time
	FinishedAt time.Time
}

// Line is the campaign's last output line: "Campaign <id>: <passed>/<selected> passed,
// <failed> failed, <inconclusive> inconclusive" (issue 9 "Progress"); a partial campaign
// adds ", <n> not run (partial)" so that the counts add up to the selection while the
// campaign report (which covers only the finished cells) says "partial" too.
func (s *Summary) Line() string {
	line := fmt.Sprintf("Campaign %s: %d/%d passed, %d failed, %d inconclusive",
		s.CampaignID, s.Passed, s.Selected, s.Failed, s.Inconclusive)
	if s.Partial {
		line += fmt.Sprintf(", %d not run (partial)", s.Selected-s.Passed-s.Failed-s.Inconclusive)
	}
	return line
}

// Worst is the campaign's verdict: failed if any cell failed, else inconclusive if any
// was inconclusive, else passed (DESIGN.md "Verdicts": 1 beats 3 beats 0). A campaign
// with no finished cell is inconclusive.
func (s *Summary) Worst() verdict.Verdict {
	switch {
	case s.Failed > 0:
		return verdict.Failed
	case s.Inconclusive > 0 || s.Executed == 0:
		return verdict.Inconclusive
	}
	return verdict.Passed
}

// EventKind is the kind of a progress Event.
type EventKind string

// Event kinds, in the order they occur for a campaign.
const (
	// EventCampaignStarted is the first event of every Run.
	EventCampaignStarted EventKind = "campaign_started"
	// EventAttemptStarted: an attempt is about to be executed (Cell, Attempt).
	EventAttemptStarted EventKind = "attempt_started"
	// EventAttemptFinished: an attempt returned and was judged (Result).
	EventAttemptFinished EventKind = "attempt_finished"
	// EventRetrying: an automatic retry of Cell follows (Attempt is its number; Result
	// the attempt that caused it).
	EventRetrying EventKind = "retrying"
	// EventInterrupted: the context was cancelled before every cell finished; emitted
	// once, as soon as the scheduler sees it (Counts.Running attempts are cancelled).
	EventInterrupted EventKind = "interrupted"
	// EventCampaignFinished is the last event of every Run (Summary).
	EventCampaignFinished EventKind = "campaign_finished"
)

// Counts are a campaign's running totals.
type Counts struct {
	Selected     int
	Running      int // attempts in progress
	Finished     int // cells finished
	Passed       int
	Failed       int
	Inconclusive int
	Retries      int
}

// Event is one progress report. Time comes from the plan's clock; Counts are the
// totals after the event.
type Event struct {
	Kind        EventKind
	Time        time.Time
	CampaignID  string
	MaxParallel int
	Counts      Counts
	// Cell and Attempt are set for attempt events and EventRetrying (Attempt is the
	// number of the attempt about to start).
	Cell    *catalog.Cell
	Attempt int
	// Result is set for EventAttemptFinished (the retry's class is in its Judgement).
	Result *AttemptResult
	// Summary is set for EventCampaignFinished.
	Summary *Summary
}

// Scheduler runs a Plan's cells through an Executor.
type Scheduler struct {
	Executor Executor
	// Observe receives every Event, one at a time and in order (calls are serialised,
	// so it need not be safe for concurrent use). It must not block for long: workers
	// wait for it. Nil means no progress reporting.
	Observe func(Event)
}

// run is the state of one Run.
type run struct {
	s      *Scheduler
	p      *Plan
	mu     sync.Mutex // guards counts, cells and event delivery
	counts Counts
	cells  []CellResult
	// interrupted is set once EventInterrupted was emitted.
	interrupted bool
}

// Run runs every cell of p, at most p.MaxParallel attempts at once, in plan order of
// start. After an attempt it applies the retry policy (ShouldRetry with
// p.MaxAutomaticRetries; the retry is a brand-new attempt with its own nonce). When ctx
// is cancelled it starts nothing more: running attempts see their ctx cancelled, their
// results and those of finished attempts are kept, and the Summary is Partial. An
// attempt that returns after the cancellation with an inconclusive verdict is counted
// as interrupted even if the executor did not say so, since the cancellation may be its
// cause. Run returns when every started attempt has returned; it never returns nil.
func (s *Scheduler) Run(ctx context.Context, p *Plan) *Summary {
	r := &run{s: s, p: p, cells: make([]CellResult, len(p.Cells))}
	for i, c := range p.Cells {
		r.cells[i] = CellResult{Cell: c, Status: CellNotStarted, Final: -1}
	}
	started := p.Now()
	r.counts.Selected = len(p.Cells)
	r.emit(Event{Kind: EventCampaignStarted})

	next := make(chan int)
	done := make(chan struct{})
	go func() {
		defer close(next)
		for i := range p.Cells {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	workers := min(max(p.MaxParallel, 1), len(p.Cells))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					continue // drain: the feeder may have sent before seeing the cancellation
				}
				r.runCell(ctx, i)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		r.interrupt()
		<-done
	}
	if ctx.Err() != nil {
		r.interrupt() // the cancellation raced with the last attempts' return
	}

	sum := &Summary{CampaignID: p.CampaignID, Selected: len(p.Cells), StartedAt: started, FinishedAt: p.Now()}
	r.mu.Lock()
	sum.Cells = r.cells
	sum.Retries = r.counts.Retries
	r.mu.Unlock()
	for _, c := range sum.Cells {
		if c.Status != CellFinished {
			sum.Partial = true
			continue
		}
		sum.Executed++
		switch c.Verdict {
		case verdict.Passed:
			sum.Passed++
		case verdict.Failed:
			sum.Failed++
		default:
			sum.Inconclusive++
		}
		for _, a := range c.Attempts {
			if a.Outcome.Interrupted {
				sum.Partial = true
			}
		}
	}
	r.emit(Event{Kind: EventCampaignFinished, Summary: sum})
	return sum
}

// runCell runs cell i's attempts: the first, then at most the retries the policy allows.
func (r *run) runCell(ctx context.Context, i int) {
	cell := r.p.Cells[i]
	for n := 1; ; n++ {
		res := r.attempt(ctx, cell, n)
		r.mu.Lock()
		c := &r.cells[i]
		c.Attempts = append(c.Attempts, res)
		r.counts.Running--
		if res.Counts() {
			if c.Status != CellFinished {
				r.counts.Finished++
			} else {
				r.uncount(c.Verdict)
			}
			c.Status, c.Final, c.Verdict = CellFinished, len(c.Attempts)-1, res.Counted
			r.count(res.Counted)
		} else if c.Status == CellNotStarted {
			c.Status = CellInterrupted
		}
		r.emitLocked(Event{Kind: EventAttemptFinished, Cell: cell, Attempt: n, Result: &res})
		retry := !res.Outcome.Interrupted && ctx.Err() == nil &&
			ShouldRetry(cell, res.Judgement, n, r.p.MaxAutomaticRetries)
		if retry {
			r.counts.Retries++
			r.emitLocked(Event{Kind: EventRetrying, Cell: cell, Attempt: n + 1, Result: &res})
		}
		r.mu.Unlock()
		if !retry {
			return
		}
	}
}

// attempt plans, executes and judges attempt n of cell.
func (r *run) attempt(ctx context.Context, cell *catalog.Cell, n int) AttemptResult {
	plan, planErr := r.p.Attempt(cell, n)
	if planErr != nil {
		plan = AttemptPlan{CampaignID: r.p.CampaignID, Cell: cell, Attempt: n}
	}
	r.mu.Lock()
	r.counts.Running++
	r.emitLocked(Event{Kind: EventAttemptStarted, Cell: cell, Attempt: n})
	r.mu.Unlock()
	res := AttemptResult{Plan: plan, StartedAt: r.p.Now()}
	if planErr != nil {
		// Nothing ran, so nothing needs cleaning up; the plan error is the harness's.
		res.Outcome = AttemptOutcome{Err: &ClassError{Class: verdict.PermanentInfrastructure, Err: planErr}, CleanupConfirmed: true}
	} else {
		res.Outcome = r.s.Executor.ExecuteAttempt(ctx, plan)
	}
	res.FinishedAt = r.p.Now()
	if ctx.Err() != nil && !res.Outcome.Interrupted && Judge(res.Outcome).Verdict == verdict.Inconclusive {
		res.Outcome.Interrupted = true
	}
	res.Judgement = Judge(res.Outcome)
	res.Counted = verdict.Counted(cell.ExpectedVerdict, res.Judgement.Verdict, res.Outcome.CleanupConfirmed)
	return res
}

// interrupt emits EventInterrupted once, unless every cell had already finished.
func (r *run) interrupt() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.interrupted {
		return
	}
	for _, c := range r.cells {
		if c.Status != CellFinished || r.counts.Running > 0 {
			r.interrupted = true
			r.emitLocked(Event{Kind: EventInterrupted})
			return
		}
	}
}

func (r *run) count(v verdict.Verdict) { r.add(v, 1) }

func (r *run) uncount(v verdict.Verdict) { r.add(v, -1) }

func (r *run) add(v verdict.Verdict, d int) {
	switch v {
	case verdict.Passed:
		r.counts.Passed += d
	case verdict.Failed:
		r.counts.Failed += d
	default:
		r.counts.Inconclusive += d
	}
}

func (r *run) emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emitLocked(e)
}

// emitLocked stamps and delivers e; r.mu is held.
func (r *run) emitLocked(e Event) {
	if r.s.Observe == nil {
		return
	}
	e.Time = r.p.Now()
	e.CampaignID = r.p.CampaignID
	e.MaxParallel = r.p.MaxParallel
	e.Counts = r.counts
	r.s.Observe(e)
}

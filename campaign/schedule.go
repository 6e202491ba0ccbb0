package campaign

import (
	"context"
	"sync"
	"time"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// EventKind is the kind of a progress Event.
type EventKind string

// Event kinds, in the order they occur for a campaign.
const (
	// EventCampaignStarted is the first event of every Run.
	EventCampaignStarted EventKind = "campaign_started"
	// EventCellNotRun: a selected cell runs no attempt because this machine cannot
	// provide its environment (Cell, NotRunReason); one per such cell, right after
	// EventCampaignStarted.
	EventCellNotRun EventKind = "cell_not_run_here"
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
	// KnownFailures counts the finished cells that are known failures (not in
	// Passed, Failed or Inconclusive).
	KnownFailures int
	// NotRun counts the selected cells this machine cannot run (Plan.NotRunHere).
	NotRun  int
	Retries int
}

// Event is one progress report. Time comes from the plan's clock; Counts are the
// totals after the event.
type Event struct {
	Kind        EventKind
	Time        time.Time
	CampaignID  string
	MaxParallel int
	// Repeat is the plan's number of repetitions per cell.
	Repeat int
	Counts Counts
	// Cell, Repetition and Attempt are set for attempt events and EventRetrying
	// (Attempt is the number of the attempt about to start).
	Cell       *catalog.Cell
	Repetition int
	Attempt    int
	// Result is set for EventAttemptFinished (the retry's class is in its Judgement).
	Result *AttemptResult
	// NotRunReason is set for EventCellNotRun: why this machine cannot run the cell.
	NotRunReason string
	// Summary is set for EventCampaignFinished.
	Summary *Summary
}

// Scheduler runs a Plan's cells through an Executor.
type Scheduler struct {
	Executor Executor
	// ResultsRoot, when set, is where each attempt that counts gets its result.json
	// (WriteResult), written as the attempt ends, by the attempt's worker goroutine,
	// outside any lock of the scheduler. "" writes nothing (tests of the policy).
	ResultsRoot string
	// Observe receives every Event, one at a time and in order (calls are serialised,
	// so it need not be safe for concurrent use). It must not block for long: workers
	// wait for it. It only renders progress: results are written before an attempt's
	// EventAttemptFinished. Nil means no progress reporting.
	Observe func(Event)
}

// run is the state of one Run.
type run struct {
	s      *Scheduler
	p      *Plan
	mu     sync.Mutex // guards counts, cells, writeErrs and event delivery
	counts Counts
	cells  []CellResult
	// interrupted is set once EventInterrupted was emitted.
	interrupted bool
	writeErrs   []string
}

// Run runs every cell of p, at most p.MaxParallel attempts at once, in plan order of
// start. After an attempt it writes the attempt's result (when it counts and
// ResultsRoot is set) and applies the retry policy (ShouldRetry with
// p.MaxAutomaticRetries; the retry is a brand-new attempt with its own nonce). When ctx
// is cancelled it starts nothing more: running attempts see their ctx cancelled, their
// results and those of finished attempts are kept, and the Summary is Partial. An
// attempt that returns after the cancellation with an inconclusive verdict is counted
// as interrupted even if the executor did not say so, since the cancellation may be its
// cause. Run returns when every started attempt has returned; it never returns nil.
func (s *Scheduler) Run(ctx context.Context, p *Plan) *Summary {
	r := &run{s: s, p: p, cells: make([]CellResult, len(p.Units))}
	for i, u := range p.Units {
		r.cells[i] = CellResult{Cell: u.Cell, Repetition: u.Repetition, Status: CellNotStarted, Final: -1}
	}
	started := p.Now()
	r.counts.Selected, r.counts.NotRun = len(p.Units), len(p.NotRunHere)
	r.emit(Event{Kind: EventCampaignStarted})
	for _, n := range p.NotRunHere {
		r.emit(Event{Kind: EventCellNotRun, Cell: n.Cell, NotRunReason: n.Reason})
	}
	r.work(ctx)
	if ctx.Err() != nil {
		r.interrupt() // the cancellation raced with the last attempts' return
	}
	sum := r.summary(started)
	r.emit(Event{Kind: EventCampaignFinished, Summary: sum})
	return sum
}

// work feeds the cells to at most MaxParallel workers and returns when every started
// attempt has returned (emitting EventInterrupted as soon as ctx is cancelled).
func (r *run) work(ctx context.Context) {
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range r.p.Units {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range min(max(r.p.MaxParallel, 1), len(r.p.Units)) {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil {
					continue // drain: the feeder may have sent before seeing the cancellation
				}
				r.runCell(ctx, i)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		r.interrupt()
		<-done
	}
}

// summary counts the finished cells: a cell is finished when every one of its
// repetitions (run now or kept from before) has a counted result, and then counts as
// verdict.Repeated of them.
func (r *run) summary(started time.Time) *Summary {
	sum := &Summary{CampaignID: r.p.CampaignID, Selected: len(r.p.Cells), Repeat: r.p.Repeat, Kept: len(r.p.Kept), StartedAt: started, FinishedAt: r.p.Now()}
	r.mu.Lock()
	sum.Cells, sum.Retries, sum.WriteErrors = r.cells, r.counts.Retries, r.writeErrs
	r.mu.Unlock()
	counted := map[string][]verdict.Verdict{}
	class := map[string]verdict.FailureClass{}
	unfinished := map[string]bool{}
	notRun := map[string]bool{}
	for _, n := range r.p.NotRunHere {
		notRun[n.Cell.ID] = true
		sum.NotRun++
		sum.NotRunIDs = append(sum.NotRunIDs, n.Cell.ID)
	}
	for _, k := range r.p.Kept {
		counted[k.Cell.ID] = append(counted[k.Cell.ID], k.Counted)
		class[k.Cell.ID] = worseClass(class[k.Cell.ID], k.Class)
	}
	for _, c := range sum.Cells {
		if c.Status != CellFinished {
			sum.Partial = true
			unfinished[c.Cell.ID] = true
			continue
		}
		counted[c.Cell.ID] = append(counted[c.Cell.ID], c.Verdict)
		class[c.Cell.ID] = worseClass(class[c.Cell.ID], c.Class)
		for _, a := range c.Attempts {
			if a.Outcome.Interrupted {
				sum.Partial = true
			}
		}
	}
	for _, cell := range r.p.Cells {
		vs := counted[cell.ID]
		if notRun[cell.ID] {
			continue // not an interruption: reported apart
		}
		if unfinished[cell.ID] || len(vs) == 0 {
			sum.Partial = true
			continue
		}
		sum.Executed++
		sum.Finished = append(sum.Finished, cell.ID)
		if verdict.Flaky(vs...) {
			sum.Flaky++
		}
		sum.count(result.StateFor(verdict.Repeated(vs...), class[cell.ID], knownOf(cell)))
	}
	return sum
}

// worseClass is b when it is a safety class (a secret leak or a cleanup failure, which
// no known failure hides), or when a is none; a otherwise.
func worseClass(a, b verdict.FailureClass) verdict.FailureClass {
	if a == "" || b == verdict.SecretLeak || b == verdict.CleanupFailure {
		return b
	}
	return a
}

// count counts a finished cell of state s.
func (s *Summary) count(st result.CellState) {
	switch {
	case st == result.StateKnownFailure:
		s.KnownFailures++
	case st == result.StateUnexpectedPass:
		s.UnexpectedPasses++
		s.Failed++
	case st.Counts() == verdict.Passed:
		s.Passed++
	case st.Counts() == verdict.Failed:
		s.Failed++
	default:
		s.Inconclusive++
	}
}

// runCell runs unit i's attempts: the first, then at most the retries the policy allows.
func (r *run) runCell(ctx context.Context, i int) {
	u := r.p.Units[i]
	for n := u.FirstAttempt; ; n++ {
		res := r.attempt(ctx, u, n)
		if res.Counts() && r.s.ResultsRoot != "" {
			// Only an attempt that counts is a result; an interrupted one keeps its
			// evidence but no result.json (its cell is then missing: the campaign is
			// partial). Written here, outside the lock.
			res.WriteErr = WriteResult(r.s.ResultsRoot, &res)
		}
		if !r.record(ctx, i, n, res) {
			return
		}
	}
}

// record counts attempt n of cell i and emits its events; it reports whether a retry
// follows.
func (r *run) record(ctx context.Context, i, n int, res AttemptResult) bool {
	u := r.p.Units[i]
	cell := u.Cell
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.cells[i]
	c.Attempts = append(c.Attempts, res)
	r.counts.Running--
	if res.WriteErr != nil {
		r.writeErrs = append(r.writeErrs, res.WriteErr.Error())
	}
	if res.Counts() {
		if c.Status != CellFinished {
			r.counts.Finished++
		} else {
			r.uncount(result.StateFor(c.Verdict, c.Class, knownOf(cell)))
		}
		c.Status, c.Final, c.Verdict, c.Class = CellFinished, len(c.Attempts)-1, res.Counted, res.Outcome.Judgement.FailureClass
		r.count(res.State)
	} else if c.Status == CellNotStarted {
		c.Status = CellInterrupted
	}
	r.emitLocked(Event{Kind: EventAttemptFinished, Cell: cell, Repetition: u.Repetition, Attempt: n, Result: &res})
	// The retry policy counts the attempts of this run of the unit, not those a
	// resumed campaign already held.
	retry := !res.Outcome.Interrupted && ctx.Err() == nil &&
		ShouldRetry(cell, res.Outcome.Judgement, n-u.FirstAttempt+1, r.p.MaxAutomaticRetries)
	if retry {
		r.counts.Retries++
		r.emitLocked(Event{Kind: EventRetrying, Cell: cell, Repetition: u.Repetition, Attempt: n + 1, Result: &res})
	}
	if r.s.ResultsRoot != "" {
		// Its result.json (when it counts) and its evidence are written: keep only
		// what the summary counts.
		c.Attempts[len(c.Attempts)-1].release()
	}
	return retry
}

// attempt plans, executes and counts attempt n of unit u.
func (r *run) attempt(ctx context.Context, u Unit, n int) AttemptResult {
	cell := u.Cell
	plan, planErr := r.p.AttemptOf(cell, u.Repetition, n)
	if planErr != nil {
		plan = AttemptPlan{CampaignID: r.p.CampaignID, Cell: cell, Repetition: u.Repetition, Attempt: n}
	}
	plan.FirstAttempt = u.FirstAttempt
	r.mu.Lock()
	r.counts.Running++
	r.emitLocked(Event{Kind: EventAttemptStarted, Cell: cell, Repetition: u.Repetition, Attempt: n})
	r.mu.Unlock()
	res := AttemptResult{Plan: plan, StartedAt: r.p.Now()}
	if planErr != nil {
		// Nothing ran, so nothing needs cleaning up; the plan error is the harness's.
		f := verdict.HarnessFault(planErr, false)
		res.Outcome = Outcome{Judgement: verdict.Judgement{Verdict: verdict.Inconclusive, FailureClass: f.Class, Reason: f.Class.Words() + ": " + f.Error()}, CleanupConfirmed: true}
	} else {
		res.Outcome = r.s.Executor.ExecuteAttempt(ctx, plan)
	}
	res.FinishedAt = r.p.Now()
	if ctx.Err() != nil && !res.Outcome.Interrupted && res.Outcome.Judgement.Verdict == verdict.Inconclusive {
		res.Outcome.Interrupted = true
		res.Outcome.Judgement = InterruptedJudgement()
	}
	res.Counted = verdict.Counted(cell.ExpectedVerdict, res.Outcome.Judgement.Verdict, res.Outcome.CleanupConfirmed)
	res.State = result.StateFor(res.Counted, res.Outcome.Judgement.FailureClass, knownOf(cell))
	return res
}

// knownOf is the verdict cell's known failure expects, "" when it has none.
func knownOf(cell *catalog.Cell) verdict.Verdict {
	if cell.KnownFailure == nil {
		return ""
	}
	return cell.KnownFailure.Expected
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

func (r *run) count(s result.CellState) { r.add(s, 1) }

func (r *run) uncount(s result.CellState) { r.add(s, -1) }

func (r *run) add(s result.CellState, d int) {
	if s == result.StateKnownFailure {
		r.counts.KnownFailures += d
		return
	}
	switch s.Counts() {
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
	e.Repeat = r.p.Repeat
	e.Counts = r.counts
	r.s.Observe(e)
}

// ShouldRetry reports whether attempt number attempt (1-based) of cell, judged j, is
// followed by an automatic retry in a brand-new isolated attempt: only when
// j's class is retryable, fewer than maxAutomaticRetries retries were made (0 or 1),
// the profile is not a qualification candidate and the case's automaticRetryPolicy is
// not "single_attempt". agentproof adds one rule: a calibration cell whose attempt
// already counts as passed (an expected inconclusive observed) is not retried, since a
// retry could only repeat the expectation. Callers also stop retrying once the
// campaign is cancelled.
func ShouldRetry(cell *catalog.Cell, j verdict.Judgement, attempt, maxAutomaticRetries int) bool {
	return j.FailureClass.Retryable() &&
		verdict.Counted(cell.ExpectedVerdict, j.Verdict, true) != verdict.Passed &&
		attempt <= maxAutomaticRetries &&
		!cell.Profile.QualificationCandidate &&
		cell.Case.AutomaticRetryPolicy != catalog.RetrySingleAttempt
}

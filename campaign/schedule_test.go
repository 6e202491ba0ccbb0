package campaign

// The executors in this file are fakes. They exist ONLY to test the scheduler's own
// logic — the concurrency bound, the retry policy, cancellation, counting and event
// order — which does not depend on what an attempt does. They say nothing about
// attempt isolation, fixtures, flows or grading, which the real executor (own
// `agentproof serve` child per attempt) must prove with real processes.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// hangGuard bounds how long a test waits for something that must happen; reaching it
// is a failure (a deadlock), not a measurement.
const hangGuard = 30 * time.Second

// scriptedExecutor returns, for each (cell, attempt), the outcome its script gives,
// and records every call.
type scriptedExecutor struct {
	script func(plan AttemptPlan) Outcome
	mu     sync.Mutex
	calls  []AttemptPlan
}

func (e *scriptedExecutor) ExecuteAttempt(_ context.Context, plan AttemptPlan) Outcome {
	e.mu.Lock()
	e.calls = append(e.calls, plan)
	e.mu.Unlock()
	return e.script(plan)
}

// fixedClock returns a clock that advances by step on every reading.
func fixedClock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := t
		t = t.Add(step)
		return now
	}
}

func newTestPlan(t *testing.T, sel catalog.Selector, opts Options) *Plan {
	t.Helper()
	if opts.CampaignID == "" {
		opts.CampaignID = "test"
	}
	if opts.Now == nil {
		opts.Now = fixedClock(time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC), time.Second)
	}
	p, err := NewPlan(loadDefault(t), sel, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// recorder collects events; Scheduler serialises Observe calls, the mutex only
// satisfies the race detector for reads after Run.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) observe(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) kinds(cellID string) []EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []EventKind
	for _, e := range r.events {
		if cellID == "" || (e.Cell != nil && e.Cell.ID == cellID) {
			out = append(out, e.Kind)
		}
	}
	return out
}

func TestSchedulerRetryPolicy(t *testing.T) {
	t.Parallel()
	const cell = markerCell
	tests := []struct {
		name        string
		maxRetries  int
		outcomes    []Outcome // by attempt
		wantCalls   int
		wantVerdict verdict.Verdict
		wantRetries int
	}{
		{"passes first time", 1, []Outcome{passOutcome}, 1, verdict.Passed, 0},
		{"transient then pass", 1, []Outcome{transientOutcome, passOutcome}, 2, verdict.Passed, 1},
		{"transient twice stays inconclusive", 1, []Outcome{transientOutcome, transientOutcome}, 2, verdict.Inconclusive, 1},
		{"provider variance then fail", 1, []Outcome{deadlineOutcome, failOutcome}, 2, verdict.Failed, 1},
		{"retries disabled", 0, []Outcome{transientOutcome, passOutcome}, 1, verdict.Inconclusive, 0},
		{"permanent is final", 1, []Outcome{permanentOutcome, passOutcome}, 1, verdict.Inconclusive, 0},
		{"candidate failure is final", 1, []Outcome{failOutcome, passOutcome}, 1, verdict.Failed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			exec := &scriptedExecutor{script: func(p AttemptPlan) Outcome { return tt.outcomes[p.Attempt-1] }}
			rec := &recorder{}
			p := newTestPlan(t, catalog.Selector{IDs: []string{cell}}, Options{MaxParallel: 2, MaxAutomaticRetries: tt.maxRetries})
			sum := (&Scheduler{Executor: exec, Observe: rec.observe}).Run(context.Background(), p)
			if len(exec.calls) != tt.wantCalls {
				t.Fatalf("executor called %d times, want %d", len(exec.calls), tt.wantCalls)
			}
			if tt.wantCalls == 2 {
				a1, a2 := exec.calls[0], exec.calls[1]
				if a1.Attempt != 1 || a2.Attempt != 2 || a1.Nonce == a2.Nonce || a1.Dir == a2.Dir {
					t.Errorf("the retry is not a brand-new attempt: %+v / %+v", a1, a2)
				}
			}
			cr := sum.Cells[0]
			if cr.Status != CellFinished || cr.Verdict != tt.wantVerdict || cr.Final != tt.wantCalls-1 || len(cr.Attempts) != tt.wantCalls {
				t.Errorf("cell result: status %s verdict %s final %d attempts %d", cr.Status, cr.Verdict, cr.Final, len(cr.Attempts))
			}
			if sum.Retries != tt.wantRetries || sum.Partial || sum.Executed != 1 {
				t.Errorf("summary: retries %d partial %v executed %d", sum.Retries, sum.Partial, sum.Executed)
			}
			want := []EventKind{EventAttemptStarted, EventAttemptFinished}
			if tt.wantCalls == 2 {
				want = append(want, EventRetrying, EventAttemptStarted, EventAttemptFinished)
			}
			if diff := cmp.Diff(want, rec.kinds(cell)); diff != "" {
				t.Errorf("cell events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSchedulerCountsCalibration runs the whole default catalog with an executor whose
// outcomes depend only on the profile, and checks the campaign's counts, the final
// line, the event order and the running totals.
func TestSchedulerCountsCalibration(t *testing.T) {
	t.Parallel()
	byProfile := map[string]Outcome{
		"fixture-pass":  passOutcome,
		"fixture-fail":  failOutcome,
		"fixture-hang":  deadlineOutcome, // expected inconclusive: met, so not retried
		"fixture-noisy": failOutcome,     // expected inconclusive: contradicted
		"reference":     passOutcome,
		"nop":           failOutcome,
		"wrong":         transientOutcome, // expected failed, observed inconclusive twice
	}
	exec := &scriptedExecutor{script: func(p AttemptPlan) Outcome { return byProfile[p.Cell.Profile.ID] }}
	rec := &recorder{}
	p := newTestPlan(t, catalog.Selector{All: true}, Options{MaxParallel: 3, MaxAutomaticRetries: 1})
	sum := (&Scheduler{Executor: exec, Observe: rec.observe}).Run(context.Background(), p)

	var want Summary
	want.Selected = len(p.Cells)
	for _, c := range p.Cells {
		o := byProfile[c.Profile.ID]
		v := verdict.Counted(c.ExpectedVerdict, o.Judgement.Verdict, o.CleanupConfirmed)
		switch v {
		case verdict.Passed:
			want.Passed++
		case verdict.Failed:
			want.Failed++
		default:
			want.Inconclusive++
		}
		if c.Profile.ID == "wrong" {
			want.Retries++
		}
	}
	if sum.Passed != want.Passed || sum.Failed != want.Failed || sum.Inconclusive != want.Inconclusive ||
		sum.Retries != want.Retries || sum.Executed != want.Selected || sum.Selected != want.Selected || sum.Partial {
		t.Errorf("summary %+v, want %+v", *sum, want)
	}
	// The default catalog exercises every counting rule: make sure the test does.
	if want.Passed == 0 || want.Failed == 0 || want.Inconclusive == 0 || want.Retries == 0 {
		t.Fatalf("the catalog no longer covers every rule: %+v", want)
	}
	if len(exec.calls) != want.Selected+want.Retries {
		t.Errorf("executor calls = %d, want %d", len(exec.calls), want.Selected+want.Retries)
	}
	wantLine := "Campaign test: " + itoa(want.Passed) + "/" + itoa(want.Selected) + " passed, " +
		itoa(want.Failed) + " failed, " + itoa(want.Inconclusive) + " inconclusive"
	if sum.Line() != wantLine {
		t.Errorf("Line = %q, want %q", sum.Line(), wantLine)
	}
	for i, c := range sum.Cells {
		if c.Cell != p.Cells[i] {
			t.Fatalf("cell %d out of plan order", i)
		}
	}
	kinds := rec.kinds("")
	if kinds[0] != EventCampaignStarted || kinds[len(kinds)-1] != EventCampaignFinished {
		t.Errorf("events start with %s and end with %s", kinds[0], kinds[len(kinds)-1])
	}
	last := rec.events[len(rec.events)-1]
	if last.Summary != sum || last.Counts.Finished != want.Selected || last.Counts.Running != 0 ||
		last.Counts.Passed != want.Passed || last.Counts.Failed != want.Failed || last.Counts.Inconclusive != want.Inconclusive {
		t.Errorf("final event counts %+v", last.Counts)
	}
	for _, e := range rec.events {
		if e.CampaignID != "test" || e.MaxParallel != 3 || e.Time.IsZero() {
			t.Fatalf("event %s not stamped: %+v", e.Kind, e)
		}
		if e.Counts.Running < 0 || e.Counts.Running > 3 {
			t.Fatalf("running count %d out of bounds", e.Counts.Running)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSchedulerConcurrencyBound checks that exactly MaxParallel attempts run at once:
// the executor blocks every attempt until MaxParallel are in flight together, and
// records the most it ever saw.
func TestSchedulerConcurrencyBound(t *testing.T) {
	t.Parallel()
	for _, maxParallel := range []int{1, 2, 4} {
		t.Run(itoa(maxParallel), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			inFlight, most := 0, 0
			full := make(chan struct{})
			var fullOnce sync.Once
			exec := &scriptedExecutor{script: func(AttemptPlan) Outcome {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				if inFlight == maxParallel {
					fullOnce.Do(func() { close(full) })
				}
				mu.Unlock()
				select {
				case <-full:
				case <-time.After(hangGuard):
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
				return passOutcome
			}}
			p := newTestPlan(t, catalog.Selector{All: true}, Options{MaxParallel: maxParallel})
			sum := (&Scheduler{Executor: exec}).Run(context.Background(), p)
			select {
			case <-full:
			default:
				t.Fatalf("never had %d attempts in flight together", maxParallel)
			}
			if most != maxParallel {
				t.Errorf("at most %d attempts ran at once, want exactly %d", most, maxParallel)
			}
			if sum.Executed != len(p.Cells) || len(exec.calls) != len(p.Cells) {
				t.Errorf("executed %d of %d cells with %d calls", sum.Executed, len(p.Cells), len(exec.calls))
			}
		})
	}
}

// blockingExecutor lets the first attempts finish with pass, then blocks every later
// attempt until its context is cancelled.
type blockingExecutor struct {
	finishFirst int
	// honest executors report Interrupted; dishonest ones return an inconclusive
	// outcome without saying why.
	honest  bool
	mu      sync.Mutex
	calls   int
	blocked chan string // receives the cell id of each attempt that starts blocking
}

func (e *blockingExecutor) ExecuteAttempt(ctx context.Context, plan AttemptPlan) Outcome {
	e.mu.Lock()
	e.calls++
	n := e.calls
	e.mu.Unlock()
	if n <= e.finishFirst {
		return passOutcome
	}
	e.blocked <- plan.Cell.ID
	select {
	case <-ctx.Done():
	case <-time.After(hangGuard):
		return judged(verdict.Failed, verdict.CandidateFailure, "the test never cancelled")
	}
	if e.honest {
		return interruptedOutcome
	}
	return judged(verdict.Inconclusive, verdict.TransientInfrastructure, "transient infrastructure failure: server connection reset")
}

func TestSchedulerCancellation(t *testing.T) {
	t.Parallel()
	for _, honest := range []bool{true, false} {
		name := "executor reports the interruption"
		if !honest {
			name = "scheduler infers the interruption"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const maxParallel, finishFirst = 2, 3
			exec := &blockingExecutor{finishFirst: finishFirst, honest: honest, blocked: make(chan string, 64)}
			rec := &recorder{}
			p := newTestPlan(t, catalog.Selector{Suites: []string{"core-compatibility", "local-session-integrity", "warm-continuity"}},
				Options{MaxParallel: maxParallel, MaxAutomaticRetries: 1})
			if len(p.Cells) <= finishFirst+maxParallel {
				t.Fatalf("need more than %d cells, have %d", finishFirst+maxParallel, len(p.Cells))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan *Summary)
			go func() { done <- (&Scheduler{Executor: exec, Observe: rec.observe}).Run(ctx, p) }()
			for range maxParallel {
				select {
				case <-exec.blocked:
				case <-time.After(hangGuard):
					t.Fatal("attempts never blocked")
				}
			}
			cancel()
			var sum *Summary
			select {
			case sum = <-done:
			case <-time.After(hangGuard):
				t.Fatal("Run did not return after cancellation")
			}
			if exec.calls != finishFirst+maxParallel {
				t.Errorf("executor called %d times, want %d (nothing starts after the cancellation)", exec.calls, finishFirst+maxParallel)
			}
			statuses := map[CellStatus]int{}
			for _, c := range sum.Cells {
				statuses[c.Status]++
				if c.Status == CellInterrupted && (len(c.Attempts) != 1 || !c.Attempts[0].Outcome.Interrupted || c.Verdict != "") {
					t.Errorf("%s: interrupted cell %+v", c.Cell.ID, c)
				}
			}
			want := map[CellStatus]int{CellFinished: finishFirst, CellInterrupted: maxParallel,
				CellNotStarted: len(p.Cells) - finishFirst - maxParallel}
			if diff := cmp.Diff(want, statuses); diff != "" {
				t.Errorf("cell statuses (-want +got):\n%s", diff)
			}
			if !sum.Partial || sum.Executed != finishFirst || sum.Passed != finishFirst || sum.Retries != 0 {
				t.Errorf("summary: partial %v executed %d passed %d retries %d", sum.Partial, sum.Executed, sum.Passed, sum.Retries)
			}
			kinds := rec.kinds("")
			if n := countKind(kinds, EventInterrupted); n != 1 {
				t.Errorf("%d interrupted events, want 1", n)
			}
			if kinds[len(kinds)-1] != EventCampaignFinished {
				t.Errorf("last event %s", kinds[len(kinds)-1])
			}
		})
	}
}

func countKind(kinds []EventKind, k EventKind) int {
	n := 0
	for _, x := range kinds {
		if x == k {
			n++
		}
	}
	return n
}

// TestSchedulerNoRetryAfterCancellation: a transient failure that returns after the
// campaign was cancelled is not retried.
func TestSchedulerNoRetryAfterCancellation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exec := &scriptedExecutor{script: func(AttemptPlan) Outcome {
		cancel()
		o := judged(verdict.Inconclusive, verdict.TransientInfrastructure, "transient infrastructure failure: x")
		o.Interrupted = true
		return o
	}}
	p := newTestPlan(t, catalog.Selector{IDs: []string{markerCell}}, Options{MaxParallel: 1, MaxAutomaticRetries: 1})
	sum := (&Scheduler{Executor: exec}).Run(ctx, p)
	if len(exec.calls) != 1 || sum.Retries != 0 || !sum.Partial || sum.Cells[0].Status != CellInterrupted {
		t.Errorf("calls %d retries %d partial %v status %s", len(exec.calls), sum.Retries, sum.Partial, sum.Cells[0].Status)
	}
}

// TestSchedulerPlanFailure: when an attempt cannot be planned (no randomness), the
// executor is not called and the cell is inconclusive, never passed.
func TestSchedulerPlanFailure(t *testing.T) {
	t.Parallel()
	exec := &scriptedExecutor{script: func(AttemptPlan) Outcome { return passOutcome }}
	p := newTestPlan(t, catalog.Selector{IDs: []string{markerCell}},
		Options{MaxParallel: 1, MaxAutomaticRetries: 1, Random: failingReader{}})
	sum := (&Scheduler{Executor: exec}).Run(context.Background(), p)
	if len(exec.calls) != 0 {
		t.Fatalf("executor called for an unplanned attempt")
	}
	j := sum.Cells[0].Attempts[0].Outcome.Judgement
	if sum.Cells[0].Verdict != verdict.Inconclusive || j.FailureClass != verdict.PermanentInfrastructure || sum.Retries != 0 {
		t.Errorf("verdict %s class %s retries %d (%s)", sum.Cells[0].Verdict, j.FailureClass, sum.Retries, j.Reason)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy exhausted") }

// TestSchedulerInterruptedSafetyFailureCounts: an interruption does not hide a leak or
// a cleanup failure found before it — the attempt counts as failed, and the campaign
// is still partial.
func TestSchedulerInterruptedSafetyFailureCounts(t *testing.T) {
	t.Parallel()
	for name, outcome := range map[string]Outcome{
		"leak":    {Interrupted: true, CleanupConfirmed: true, Judgement: verdict.Judgement{Verdict: verdict.Failed, FailureClass: verdict.SecretLeak, Reason: "secret leak: exact secret value at agent.log"}},
		"cleanup": {Interrupted: true, Judgement: verdict.Judgement{Verdict: verdict.Failed, FailureClass: verdict.CleanupFailure, Reason: "cleanup failed: process group survived SIGKILL"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			exec := &scriptedExecutor{script: func(AttemptPlan) Outcome {
				cancel()
				return outcome
			}}
			p := newTestPlan(t, catalog.Selector{IDs: []string{markerCell, "core-compatibility.reference.local.ask-question"}},
				Options{MaxParallel: 1, MaxAutomaticRetries: 1})
			sum := (&Scheduler{Executor: exec}).Run(ctx, p)
			c := sum.Cells[0]
			if c.Status != CellFinished || c.Verdict != verdict.Failed || sum.Failed != 1 || sum.Executed != 1 || !sum.Partial {
				t.Errorf("cell %s/%s; summary failed %d executed %d partial %v", c.Status, c.Verdict, sum.Failed, sum.Executed, sum.Partial)
			}
			if sum.Cells[1].Status != CellNotStarted || len(exec.calls) != 1 {
				t.Errorf("second cell %s after %d calls", sum.Cells[1].Status, len(exec.calls))
			}
		})
	}
}

// TestSchedulerWritesResults: with a results root, the scheduler writes each attempt
// that counts (result.json, evidence-manifest.json) as the attempt ends — before its
// EventAttemptFinished reaches Observe, which only renders — and none for an attempt an
// interruption cut short; a result that cannot be written is reported in the Summary.
func TestSchedulerWritesResults(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := newTestPlan(t, catalog.Selector{IDs: []string{markerCell, "core-compatibility.reference.local.ask-question"}}, Options{MaxParallel: 2, MaxAutomaticRetries: 0})
	exec := &scriptedExecutor{script: func(plan AttemptPlan) Outcome {
		if plan.Cell.ID == markerCell {
			return passOutcome
		}
		return interruptedOutcome
	}}
	var seen []string
	observe := func(e Event) {
		if e.Kind != EventAttemptFinished {
			return
		}
		_, err := os.Stat(filepath.Join(root, e.Result.Plan.Dir, ResultFile))
		seen = append(seen, fmt.Sprintf("%s written=%v", e.Cell.ID, err == nil))
	}
	sum := (&Scheduler{Executor: exec, ResultsRoot: root, Observe: observe}).Run(context.Background(), p)
	slices.Sort(seen)
	want := []string{"core-compatibility.reference.local.ask-question written=false", markerCell + " written=true"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("results on disk when the attempt finished (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(root, sum.Cells[0].Attempts[0].Plan.Dir, result.EvidenceManifestFile)); err != nil {
		t.Errorf("no evidence manifest: %v", err)
	}
	if len(sum.WriteErrors) != 0 {
		t.Errorf("write errors: %v", sum.WriteErrors)
	}

	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p = newTestPlan(t, catalog.Selector{IDs: []string{markerCell}}, Options{MaxParallel: 1})
	sum = (&Scheduler{Executor: &scriptedExecutor{script: func(AttemptPlan) Outcome { return passOutcome }}, ResultsRoot: blocked}).Run(context.Background(), p)
	if len(sum.WriteErrors) != 1 || sum.Cells[0].Attempts[0].WriteErr == nil {
		t.Errorf("a results root that is a file: write errors %v", sum.WriteErrors)
	}
}

// TestSchedulerNotRunHere: the cells a plan marks not run here run no attempt, get one
// EventCellNotRun each with their reason right after the campaign starts, are counted
// apart (NotRun, NotRunIDs) and do not make the campaign interrupted; the last line
// says so.
func TestSchedulerNotRunHere(t *testing.T) {
	t.Parallel()
	p := newTestPlan(t, catalog.Selector{Suites: []string{"core-compatibility"}, Profiles: []string{"reference"}}, Options{MaxParallel: 2})
	if len(p.Cells) < 2 {
		t.Fatalf("%d cells", len(p.Cells))
	}
	skipped := p.Cells[len(p.Cells)-1]
	p.SetNotRunHere(map[string]string{skipped.ID: "bubblewrap is not installed", "not.a.selected.cell": "ignored"})
	if len(p.Units) != len(p.Cells)-1 || len(p.NotRunHere) != 1 || p.NotRunReasons()[skipped.ID] != "bubblewrap is not installed" {
		t.Fatalf("units %d of %d cells, not run %v", len(p.Units), len(p.Cells), p.NotRunHere)
	}
	exec := &scriptedExecutor{script: func(AttemptPlan) Outcome { return passOutcome }}
	rec := &recorder{}
	sum := (&Scheduler{Executor: exec, Observe: rec.observe}).Run(context.Background(), p)
	if len(exec.calls) != len(p.Cells)-1 {
		t.Errorf("%d attempts for %d cells that run", len(exec.calls), len(p.Cells)-1)
	}
	for _, c := range exec.calls {
		if c.Cell.ID == skipped.ID {
			t.Errorf("the cell not run here ran")
		}
	}
	if got := rec.kinds(skipped.ID); !slices.Equal(got, []EventKind{EventCellNotRun}) {
		t.Errorf("events of the cell not run here: %v", got)
	}
	if rec.events[1].Kind != EventCellNotRun || rec.events[1].NotRunReason != "bubblewrap is not installed" || rec.events[1].Counts.NotRun != 1 {
		t.Errorf("second event %+v", rec.events[1])
	}
	if sum.Partial || sum.NotRun != 1 || !slices.Equal(sum.NotRunIDs, []string{skipped.ID}) || sum.Passed != len(p.Cells)-1 {
		t.Errorf("summary: partial %t notRun %d %v passed %d", sum.Partial, sum.NotRun, sum.NotRunIDs, sum.Passed)
	}
	if want := "1 not run here (partial)"; !strings.Contains(sum.Line(), want) {
		t.Errorf("line %q lacks %q", sum.Line(), want)
	}
	if line := plainLine(rec.events[1]); line != "not run here "+skipped.ID+": bubblewrap is not installed" {
		t.Errorf("progress line %q", line)
	}
}

package campaign

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/verdict"
)

// goldenCells is a fixed selection covering calibration expectations, a retry, a
// failure and a pass.
var goldenCells = []string{
	"calibration.fixture-pass.local.process-exit",
	"calibration.fixture-hang.local.process-exit",
	"grader-calibration.nop.local.message-marker",
	markerCell,
	"core-compatibility.reference.local.ask-question",
	"warm-continuity.reference.local.warm-three-turn",
}

// goldenScript gives each golden cell a fixed outcome per attempt (a fake executor:
// it only feeds the display; see schedule_test.go).
func goldenScript(p AttemptPlan) Outcome {
	switch p.Cell.ID {
	case "calibration.fixture-hang.local.process-exit":
		return deadlineOutcome
	case "grader-calibration.nop.local.message-marker":
		return failOutcome
	case "core-compatibility.reference.local.ask-question":
		if p.Attempt == 1 {
			return transientOutcome
		}
		return passOutcome
	case "warm-continuity.reference.local.warm-three-turn":
		// a reason on two lines
		return judged(verdict.Inconclusive, verdict.PermanentInfrastructure, "permanent infrastructure failure: 401 unauthorized:\n  token expired")
	}
	return passOutcome
}

func TestPlainProgressGolden(t *testing.T) {
	t.Parallel()
	for _, mode := range []ProgressMode{ProgressPlain, ProgressNone, ProgressAuto} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			d := NewDisplay(mode, &out)
			if mode == ProgressAuto && d.Mode() != ProgressPlain {
				t.Fatalf("auto on a buffer resolved to %s, want plain", d.Mode())
			}
			p := newTestPlan(t, catalog.Selector{IDs: goldenCells}, Options{CampaignID: "golden", MaxParallel: 1, MaxAutomaticRetries: 1})
			sum := (&Scheduler{Executor: &scriptedExecutor{script: goldenScript}, Observe: d.Observe}).Run(context.Background(), p)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			name := "progress/plain-complete.golden"
			if mode == ProgressNone {
				name = "progress/none-complete.golden"
			}
			golden.Assert(t, out.String(), name)
			if !strings.HasSuffix(out.String(), "\n"+sum.Line()+"\n") && out.String() != sum.Line()+"\n" {
				t.Errorf("the last line is not the summary line %q", sum.Line())
			}
		})
	}
}

// TestPlainProgressInterruptedGolden cancels the campaign during its third attempt; the
// executor returns only once the display has reported the interruption, so the output
// is deterministic.
func TestPlainProgressInterruptedGolden(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	d := NewDisplay(ProgressPlain, &out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupted := make(chan struct{})
	observe := func(e Event) {
		d.Observe(e)
		if e.Kind == EventInterrupted {
			close(interrupted)
		}
	}
	var calls int
	exec := &scriptedExecutor{script: func(p AttemptPlan) Outcome {
		calls++
		if calls < 3 {
			return goldenScript(p)
		}
		cancel()
		select {
		case <-interrupted:
		case <-time.After(hangGuard):
		}
		return interruptedOutcome
	}}
	p := newTestPlan(t, catalog.Selector{IDs: goldenCells}, Options{CampaignID: "golden", MaxParallel: 1, MaxAutomaticRetries: 1})
	sum := (&Scheduler{Executor: exec, Observe: observe}).Run(ctx, p)
	if !sum.Partial {
		t.Fatal("campaign not partial")
	}
	golden.Assert(t, out.String(), "progress/plain-interrupted.golden")
}

func TestParseProgressMode(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"auto", "tty", "plain", "none"} {
		if m, err := ParseProgressMode(s); err != nil || string(m) != s {
			t.Errorf("ParseProgressMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "TTY", "json"} {
		if _, err := ParseProgressMode(s); err == nil || !strings.Contains(err.Error(), "auto, tty, plain or none") {
			t.Errorf("ParseProgressMode(%q) error = %v", s, err)
		}
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", maxReasonDisplay) // 2 bytes each: the cut lands mid-rune
	tests := []struct{ in, want string }{
		{"a\nb\t c", "a b c"},
		{"  ", ""},
		{long, long[:maxReasonDisplay] + "…"},
		{"x" + long, "x" + long[:maxReasonDisplay-2] + "…"},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in); got != tt.want {
			t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if IsTerminal(&b) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is a terminal")
	}
}

// syncBuffer is a bytes.Buffer safe for the live display's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mpbGoroutines returns the stacks of live goroutines running the progress library.
func mpbGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/vbauerster/mpb") {
			out = append(out, g)
		}
	}
	return out
}

// waitNoMPB waits until the progress library's goroutines have returned (they are
// finishing their deferred calls when Wait returns).
func waitNoMPB(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		left := mpbGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d progress goroutines leaked:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTTYProgress runs campaigns through the live display (not in parallel with other
// tests, so that its goroutine check sees only its own goroutines): it must not crash,
// must end with the summary line and must leave no goroutine behind — after a complete
// campaign, an interrupted one, and a Close without a finished campaign.
func TestTTYProgress(t *testing.T) {
	t.Run("complete", func(t *testing.T) {
		out := &syncBuffer{}
		d := NewDisplay(ProgressTTY, out)
		slow := &scriptedExecutor{script: func(p AttemptPlan) Outcome {
			time.Sleep(20 * time.Millisecond) // let the display refresh with bars on screen
			return goldenScript(p)
		}}
		p := newTestPlan(t, catalog.Selector{IDs: goldenCells}, Options{CampaignID: "tty", MaxParallel: 2, MaxAutomaticRetries: 1})
		sum := (&Scheduler{Executor: slow, Observe: d.Observe}).Run(context.Background(), p)
		must(t, d.Close())
		waitNoMPB(t)
		s := out.String()
		if !strings.HasSuffix(s, "\n"+sum.Line()+"\n") {
			t.Errorf("output does not end with %q:\n%s", sum.Line(), s)
		}
		for _, id := range goldenCells {
			if !strings.Contains(s, " "+id+" attempt 1 in ") {
				t.Errorf("no finished line for %s", id)
			}
		}
		if !strings.Contains(s, "Retrying core-compatibility.reference.local.ask-question") {
			t.Error("no retry line")
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		out := &syncBuffer{}
		d := NewDisplay(ProgressTTY, out)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		exec := &blockingExecutor{finishFirst: 1, honest: true, blocked: make(chan string, 64)}
		p := newTestPlan(t, catalog.Selector{IDs: goldenCells}, Options{CampaignID: "tty", MaxParallel: 2})
		done := make(chan *Summary)
		go func() { done <- (&Scheduler{Executor: exec, Observe: d.Observe}).Run(ctx, p) }()
		for range 2 {
			<-exec.blocked
		}
		cancel()
		sum := <-done
		must(t, d.Close())
		waitNoMPB(t)
		s := out.String()
		if !sum.Partial || !strings.Contains(s, "was interrupted") || !strings.HasSuffix(s, sum.Line()+"\n") ||
			!regexp.MustCompile(`, (\d+) not finished \(interrupted: 2 stopped mid-attempt(, \d+ never started)?\)$`).MatchString(sum.Line()) {
			t.Errorf("partial campaign output:\n%s", s)
		}
	})
	t.Run("close without a finished campaign", func(t *testing.T) {
		out := &syncBuffer{}
		d := NewDisplay(ProgressTTY, out)
		c := loadDefault(t).Cell(markerCell)
		d.Observe(Event{Kind: EventAttemptStarted, Cell: c, Attempt: 1}) // before the start: ignored
		d.Observe(Event{Kind: EventCampaignStarted, CampaignID: "tty", Counts: Counts{Selected: 3}})
		d.Observe(Event{Kind: EventAttemptStarted, Cell: c, Attempt: 1, Counts: Counts{Selected: 3, Running: 1}})
		must(t, d.Close())
		must(t, d.Close())
		d.Observe(Event{Kind: EventAttemptStarted, Cell: c, Attempt: 2}) // ignored after Close
		waitNoMPB(t)
	})
}

// TestAttemptLineCalibration: a calibration cell's line leads with how it counts, so
// that "failed" at the head of a line is always a failure of the campaign; the
// observed and expected verdicts follow.
func TestAttemptLineCalibration(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		expected verdict.Verdict
		outcome  Outcome
		counted  verdict.Verdict
		want     string
	}{
		{"ordinary cell", "", failOutcome, verdict.Failed,
			`failed c attempt 1 in 1s [candidate_failure]: matcher failed: #1 message_contains: expected "MARK"; observed "nothing"`},
		{"expected failure observed", verdict.Failed, failOutcome, verdict.Passed,
			`passed (calibration: failed as expected) c attempt 1 in 1s [candidate_failure]: matcher failed: #1 message_contains: expected "MARK"; observed "nothing"`},
		{"expected failure not observed", verdict.Failed, passOutcome, verdict.Failed,
			"failed (calibration: observed passed, expected failed) c attempt 1 in 1s: every matcher passed (1), cleanup confirmed, no leak"},
		{"expected pass without confirmed cleanup", verdict.Passed, passOutcome, verdict.Failed,
			"failed (calibration: passed as expected, but it counts as failed) c attempt 1 in 1s: every matcher passed (1), cleanup confirmed, no leak"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &AttemptResult{
				Plan:    AttemptPlan{Cell: &catalog.Cell{ID: "c", ExpectedVerdict: tt.expected}, Attempt: 1},
				Outcome: tt.outcome, Counted: tt.counted, StartedAt: start, FinishedAt: start.Add(time.Second),
			}
			if got := attemptLine(r, 1); got != tt.want {
				t.Errorf("attemptLine:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestAttemptLineLeadsWithAbnormalEnd: the progress line of an attempt that did not
// pass leads with its run's termination summary when the agent's run ended abnormally
// (an exec agent that exited 0 without completing its run), before the matcher
// differences; a normal end, or a passed attempt, keeps the judgement's reason alone.
func TestAttemptLineLeadsWithAbnormalEnd(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	leftOpen := json.RawMessage(`{"summary":"the exec agent exited 0 without completing its run; exited with code 0 after 5ms","started":true,"exitCode":0,"leftOpen":true}`)
	normal := json.RawMessage(`{"summary":"exited with code 0 after 5ms","started":true,"exitCode":0}`)
	with := func(o Outcome, term json.RawMessage) Outcome {
		o.Facts = &Facts{Termination: term}
		return o
	}
	tests := []struct {
		name    string
		outcome Outcome
		counted verdict.Verdict
		want    string
	}{
		{"left open", with(failOutcome, leftOpen), verdict.Failed,
			`failed c attempt 1 in 1s [candidate_failure]: the exec agent exited 0 without completing its run; exited with code 0 after 5ms; matcher failed: #1 message_contains: expected "MARK"; observed "nothing"`},
		{"normal end", with(failOutcome, normal), verdict.Failed,
			`failed c attempt 1 in 1s [candidate_failure]: matcher failed: #1 message_contains: expected "MARK"; observed "nothing"`},
		{"passed", with(passOutcome, leftOpen), verdict.Passed,
			"passed c attempt 1 in 1s: every matcher passed (1), cleanup confirmed, no leak"},
	}
	for _, tt := range tests {
		r := &AttemptResult{Plan: AttemptPlan{Cell: &catalog.Cell{ID: "c"}, Attempt: 1},
			Outcome: tt.outcome, Counted: tt.counted, StartedAt: start, FinishedAt: start.Add(time.Second)}
		if got := attemptLine(r, 1); got != tt.want {
			t.Errorf("%s: attemptLine:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

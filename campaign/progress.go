package campaign

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// ProgressMode selects how a campaign reports progress (--progress).
type ProgressMode string

// Progress modes.
const (
	// ProgressAuto is tty when the output is a terminal, plain otherwise.
	ProgressAuto ProgressMode = "auto"
	// ProgressTTY is a live multi-line display: one line per running attempt, a
	// campaign bar and the counts.
	ProgressTTY ProgressMode = "tty"
	// ProgressPlain is one timestamped line per event.
	ProgressPlain ProgressMode = "plain"
	// ProgressNone prints only the final campaign line.
	ProgressNone ProgressMode = "none"
)

// ParseProgressMode parses a --progress value; anything but auto, tty, plain or none is
// an error naming the accepted values.
func ParseProgressMode(s string) (ProgressMode, error) {
	switch m := ProgressMode(s); m {
	case ProgressAuto, ProgressTTY, ProgressPlain, ProgressNone:
		return m, nil
	}
	return "", fmt.Errorf("--progress must be auto, tty, plain or none, not %q", s)
}

// IsTerminal reports whether w is a terminal (an *os.File on a TTY).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Display renders campaign Events to a writer. Observe must receive a campaign's
// events in order (Scheduler.Observe does that); the display ends with the campaign's
// Summary.Line as its last line, in every mode, when EventCampaignFinished arrives.
// Close releases the live display if the campaign never finished (a panic, a bug);
// it is safe to call more than once, but not concurrently with Observe.
type Display struct {
	mode ProgressMode
	w    io.Writer

	// tty mode
	mu       sync.Mutex // guards counts (read by the decorator goroutine)
	counts   Counts
	progress *mpb.Progress
	campaign *mpb.Bar
	running  map[attemptKey]*mpb.Bar
	closed   bool
}

type attemptKey struct {
	cell       string
	repetition int
	attempt    int
}

// unitName names a cell's repetition on a progress line: the cell id, followed by
// "repetition <k>" when the campaign repeats cells.
func unitName(cell *catalog.Cell, rep, repeat int) string {
	if repeat > 1 {
		return fmt.Sprintf("%s repetition %d", cell.ID, rep)
	}
	return cell.ID
}

// NewDisplay returns a display writing to w in mode (ProgressAuto resolved with
// IsTerminal(w)). The tty display refreshes on its own goroutines until the campaign
// finishes or Close is called.
func NewDisplay(mode ProgressMode, w io.Writer) *Display {
	if mode == ProgressAuto {
		mode = ProgressPlain
		if IsTerminal(w) {
			mode = ProgressTTY
		}
	}
	return &Display{mode: mode, w: w, running: make(map[attemptKey]*mpb.Bar)}
}

// Mode is the resolved mode (never ProgressAuto).
func (d *Display) Mode() ProgressMode { return d.mode }

// Observe renders one event.
func (d *Display) Observe(e Event) {
	switch d.mode {
	case ProgressTTY:
		d.observeTTY(e)
	case ProgressPlain:
		if line := plainLine(e); line != "" {
			fmt.Fprintf(d.w, "%s %s\n", e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), line)
		}
		if e.Kind == EventCampaignFinished {
			d.finalLines(e.Summary)
		}
	default:
		if e.Kind == EventCampaignFinished {
			d.finalLines(e.Summary)
		}
	}
}

// maxReasonDisplay bounds a reason on a progress line, in bytes.
const maxReasonDisplay = 240

// oneLine makes s a single display line of at most maxReasonDisplay bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxReasonDisplay {
		cut := maxReasonDisplay
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// plainLine is the text of an event in plain mode (without the timestamp), "" for none.
func plainLine(e Event) string {
	c := e.Counts
	switch e.Kind {
	case EventCampaignStarted:
		if e.Repeat > 1 {
			return fmt.Sprintf("Campaign %s: running %d repetition(s) (%d each) with max parallelism %d", e.CampaignID, c.Selected, e.Repeat, e.MaxParallel)
		}
		line := fmt.Sprintf("Campaign %s: running %d cell(s) with max parallelism %d", e.CampaignID, c.Selected, e.MaxParallel)
		if c.NotRun > 0 {
			line += fmt.Sprintf("; %d selected cell(s) not run here", c.NotRun)
		}
		return line
	case EventCellNotRun:
		return fmt.Sprintf("not run here %s: %s", e.Cell.ID, oneLine(e.NotRunReason))
	case EventAttemptStarted:
		return fmt.Sprintf("start %s attempt %d", unitName(e.Cell, e.Repetition, e.Repeat), e.Attempt)
	case EventAttemptFinished:
		if !e.Result.Counts() {
			// An interrupted attempt finished no cell: no [finished/selected] counter,
			// which would repeat the previous line's.
			return attemptLine(e.Result, e.Repeat)
		}
		return fmt.Sprintf("[%d/%d] %s", c.Finished, c.Selected, attemptLine(e.Result, e.Repeat))
	case EventRetrying:
		return fmt.Sprintf("Retrying %s in a fresh isolated attempt after %s", unitName(e.Cell, e.Repetition, e.Repeat), e.Result.Outcome.Judgement.FailureClass.Words())
	case EventInterrupted:
		return fmt.Sprintf("interrupted: starting nothing more; cancelling %d running attempt(s)", c.Running)
	case EventCampaignFinished:
		s := e.Summary
		if s.Partial {
			return fmt.Sprintf("Campaign %s was interrupted: %d of %d cell(s) finished", s.CampaignID, s.Executed, s.Selected)
		}
	}
	return ""
}

// attemptLine describes a finished attempt: verdict (for a calibration cell how it
// counts, then its observed and expected verdicts), cell, attempt, duration, class and
// reason (attemptReason); an interrupted attempt that does not count is reported as such, without a verdict.
func attemptLine(r *AttemptResult, repeat int) string {
	var b strings.Builder
	name := unitName(r.Plan.Cell, r.Plan.Repetition, repeat)
	j := r.Outcome.Judgement
	took := r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond)
	if !r.Counts() {
		fmt.Fprintf(&b, "interrupted %s attempt %d after %s: %s", name, r.Plan.Attempt, took, oneLine(j.Reason))
		return b.String()
	}
	// A calibration cell's line leads with how it counts, so that a failed line is a
	// failure of the campaign: its observed verdict follows, beside the expected one;
	// a known failure's line leads with its state.
	switch exp := r.Plan.Cell.ExpectedVerdict; {
	case r.Plan.Cell.KnownFailure != nil:
		b.WriteString(knownLead(r))
	case exp == "":
		b.WriteString(string(j.Verdict))
	case j.Verdict == exp && r.Counted == verdict.Passed:
		fmt.Fprintf(&b, "%s (calibration: %s as expected)", r.Counted, j.Verdict)
	case j.Verdict == exp:
		fmt.Fprintf(&b, "%s (calibration: %s as expected, but it counts as %s)", r.Counted, j.Verdict, r.Counted)
	default:
		fmt.Fprintf(&b, "%s (calibration: observed %s, expected %s)", r.Counted, j.Verdict, exp)
	}
	fmt.Fprintf(&b, " %s attempt %d in %s", name, r.Plan.Attempt, took)
	if r.Outcome.Interrupted {
		b.WriteString(" (interrupted)")
	}
	if j.FailureClass != "" {
		fmt.Fprintf(&b, " [%s]", j.FailureClass)
	}
	b.WriteString(": ")
	b.WriteString(oneLine(attemptReason(r)))
	return b.String()
}

// attemptReason is the reason a finished attempt's line shows: for a known failure the
// behaviour its baseline entry records (summary.md shows how this attempt failed
// beside it); else the judgement's, led for an attempt failed for the candidate's
// fault by the summary of its run's abnormal end (result.Headline).
func attemptReason(r *AttemptResult) string {
	j := r.Outcome.Judgement
	if r.State == result.StateKnownFailure && r.Plan.Cell.KnownFailure != nil {
		return r.Plan.Cell.KnownFailure.Reason
	}
	if r.Outcome.Facts == nil {
		return j.Reason
	}
	return result.Headline(j.FailureClass, j.Reason, r.Outcome.Facts.Termination)
}

// knownLead is the lead of a known-failure cell's line: "known failure (failed as
// expected; known since V)" (the line ends with the entry's reason, attemptReason),
// "failed (unexpectedly passed — remove it from the baseline: SOURCE)", or its verdict
// beside what its entry expects.
func knownLead(r *AttemptResult) string {
	k, v := r.Plan.Cell.KnownFailure, r.Outcome.Judgement.Verdict
	switch r.State {
	case result.StateKnownFailure:
		return fmt.Sprintf("known failure (%s as expected; known since %s)", v, k.Since)
	case result.StateUnexpectedPass:
		return fmt.Sprintf("%s (%s: %s)", verdict.Failed, r.State.Words(), k.Source)
	}
	return fmt.Sprintf("%s (a known failure expected %s)", v, k.Expected)
}

func (d *Display) observeTTY(e Event) {
	d.mu.Lock()
	d.counts = e.Counts
	d.mu.Unlock()
	if d.closed || (d.progress == nil && e.Kind != EventCampaignStarted) {
		return // closed, or events of a campaign whose start this display never saw
	}
	switch e.Kind {
	case EventCampaignStarted:
		d.progress = mpb.New(mpb.WithOutput(d.w), mpb.WithAutoRefresh(), mpb.WithRefreshRate(150*time.Millisecond))
		d.campaign = d.progress.AddBar(int64(e.Counts.Selected),
			mpb.BarPriority(math.MaxInt32),
			mpb.PrependDecorators(decor.Name("campaign "+e.CampaignID+" ")),
			mpb.AppendDecorators(decor.CountersNoUnit(" %d/%d"), decor.Any(d.countsText)))
	case EventAttemptStarted:
		bar := d.progress.AddSpinner(0,
			mpb.PrependDecorators(decor.Name(fmt.Sprintf("%s #%d ", unitName(e.Cell, e.Repetition, e.Repeat), e.Attempt))),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO)))
		d.running[attemptKey{e.Cell.ID, e.Repetition, e.Attempt}] = bar
	case EventAttemptFinished:
		k := attemptKey{e.Cell.ID, e.Repetition, e.Attempt}
		if bar := d.running[k]; bar != nil {
			bar.Abort(true)
			delete(d.running, k)
		}
		d.campaign.SetCurrent(int64(e.Counts.Finished))
		fmt.Fprintln(d.progress, attemptLine(e.Result, e.Repeat))
	case EventRetrying, EventInterrupted, EventCellNotRun:
		fmt.Fprintln(d.progress, plainLine(e))
	case EventCampaignFinished:
		if line := plainLine(e); line != "" {
			fmt.Fprintln(d.progress, line)
		}
		d.shutdown()
		d.finalLines(e.Summary)
	}
}

// finalLines writes a finished campaign's last lines: its Notes, then its Line.
func (d *Display) finalLines(s *Summary) {
	for _, n := range s.Notes {
		fmt.Fprintln(d.w, n)
	}
	fmt.Fprintln(d.w, s.Line())
}

// countsText is the campaign bar's counts decorator.
func (d *Display) countsText(decor.Statistics) string {
	d.mu.Lock()
	c := d.counts
	d.mu.Unlock()
	text := fmt.Sprintf("  %d running, %d passed, %d failed, %d inconclusive", c.Running, c.Passed, c.Failed, c.Inconclusive)
	if c.KnownFailures > 0 {
		text += fmt.Sprintf(", %d known failure(s)", c.KnownFailures)
	}
	if c.NotRun > 0 {
		text += fmt.Sprintf(", %d not run here", c.NotRun)
	}
	return text
}

// shutdown ends every bar and waits for the live display's goroutines.
func (d *Display) shutdown() {
	if d.closed || d.progress == nil {
		d.closed = true
		return
	}
	d.closed = true
	for k, bar := range d.running {
		bar.Abort(true)
		delete(d.running, k)
	}
	d.campaign.Abort(false) // no-op when it completed
	d.progress.Wait()
}

// Close stops the live display if it is still running. It returns nil; the error
// result lets it serve as an io.Closer.
func (d *Display) Close() error {
	if d.mode == ProgressTTY {
		d.shutdown()
	}
	return nil
}

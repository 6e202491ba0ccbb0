package campaign

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"

	"github.com/agentproof/agentproof/verdict"
)

// AttemptResult is one judged attempt.
type AttemptResult struct {
	Plan    AttemptPlan
	Outcome Outcome
	// Counted is how the attempt counts (verdict.Counted of the cell's expected verdict,
	// the attempt's verdict and its cleanup).
	Counted verdict.Verdict
	// State is the attempt's state (result.StateFor its counted verdict, its class and
	// the cell's known failure): a known failure or an unexpected pass beside the
	// counted verdicts.
	State      result.CellState
	StartedAt  time.Time
	FinishedAt time.Time
	// WriteErr is why its result.json could not be written (Scheduler.ResultsRoot), or
	// nil.
	WriteErr error
}

// Counts reports whether the attempt counts as a finished result: it was not
// interrupted, or it broke a safety rule before the interruption (a failed verdict:
// secret_leak or cleanup_failure), which an interruption must not hide.
func (r *AttemptResult) Counts() bool {
	return !r.Outcome.Interrupted || r.Outcome.Judgement.Verdict == verdict.Failed
}

// release drops what only the attempt's result.json needed (its evidence writer and
// secret set, its facts, the rendered case), once that file was written: a campaign
// then keeps a few hundred bytes per finished attempt (its plan's identity, judgement,
// counted verdict, times) instead of everything it observed, so that its memory does
// not grow with its evidence.
func (r *AttemptResult) release() {
	r.Outcome.Evidence, r.Outcome.Secrets, r.Outcome.Facts = nil, nil, nil
	r.Plan.Case = nil
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

// CellResult is one unit of the plan (a repetition of a selected cell) with its
// attempts in order.
type CellResult struct {
	Cell *catalog.Cell
	// Repetition is the unit's repetition (1..Plan.Repeat).
	Repetition int
	Attempts   []AttemptResult
	Status     CellStatus
	// Final is the index in Attempts of the attempt that counts (the last one that
	// Counts), -1 when none does.
	Final int
	// Verdict is the counted verdict of the final attempt, "" when none finished; Class
	// its failure class.
	Verdict verdict.Verdict
	Class   verdict.FailureClass
}

// Summary is a campaign's outcome. Cells are in plan (matrix) order.
type Summary struct {
	CampaignID string
	// Selected is the number of selected cells; Executed those that finished (every
	// repetition has a counted result, run now or kept).
	Selected, Executed int
	// Passed, Failed, Inconclusive and KnownFailures count finished cells by state
	// (result.StateFor verdict.Repeated of their repetitions: a known failure apart, an
	// unexpected pass as failed, and in UnexpectedPasses too).
	Passed, Failed, Inconclusive, KnownFailures, UnexpectedPasses int
	// NotRun counts the selected cells this machine could not run (Plan.NotRunHere),
	// NotRunIDs are their ids in plan order: neither finished nor interrupted.
	NotRun    int
	NotRunIDs []string
	// Repeat is the number of repetitions of every cell; Flaky counts the finished
	// cells whose repetitions disagree (verdict.Flaky).
	Repeat, Flaky int
	// Kept is the number of repetitions a resumed campaign kept from before.
	Kept int
	// Finished are the ids of the finished cells, in plan order.
	Finished []string
	// Retries is the number of automatic retries started.
	Retries int
	// Partial is true when the campaign was cancelled before every cell finished
	// (or an attempt was interrupted).
	Partial bool
	// WriteErrors are the results that could not be written (AttemptResult.WriteErr).
	WriteErrors []string
	// Cells are the plan's units (Plan.Units), in order.
	Cells []CellResult
	// Notes are lines the display prints just before Line (Display.Observe of
	// EventCampaignFinished), set by the caller that holds that event back until it
	// knows them: the cells that passed only on a later attempt, how to resume an
	// interrupted campaign.
	Notes      []string
	StartedAt  time.Time
	FinishedAt time.Time
}

// Unfinished counts the selected cells that did not finish (Selected − Executed):
// stopped, those of which an attempt of this run started but none counts (the
// interruption cut it short), and never, those of which no attempt started.
func (s *Summary) Unfinished() (stopped, never int) {
	finished := map[string]bool{}
	for _, id := range s.Finished {
		finished[id] = true
	}
	started := map[string]bool{}
	for _, c := range s.Cells {
		if !finished[c.Cell.ID] && len(c.Attempts) > 0 {
			started[c.Cell.ID] = true
		}
	}
	unfinished := max(0, s.Selected-s.Executed)
	stopped = min(len(started), unfinished)
	return stopped, unfinished - stopped
}

// Line is the campaign's last output line: result.Counts' line ("Campaign <id>:
// <passed>/<selected> passed, <failed> failed, <inconclusive> inconclusive" with the
// known failures and cells not run here; docs/ARCHITECTURE.md "Data flow"); a partial campaign
// adds ", <n> not finished (interrupted: <s> stopped mid-attempt, <m> never started)"
// (zero parts left out; see Unfinished) so that the counts add up to the selection while
// the campaign report (which covers only the finished cells) says "interrupted" too.
func (s *Summary) Line() string {
	line := result.Counts{Selected: s.Selected, Passed: s.Passed, Failed: s.Failed, Inconclusive: s.Inconclusive,
		KnownFailures: s.KnownFailures, UnexpectedPasses: s.UnexpectedPasses, NotRun: s.NotRun}.Line(s.CampaignID)
	if s.Partial {
		stopped, never := s.Unfinished()
		var parts []string
		if stopped > 0 {
			parts = append(parts, fmt.Sprintf("%d stopped mid-attempt", stopped))
		}
		if never > 0 {
			parts = append(parts, fmt.Sprintf("%d never started", never))
		}
		why := "interrupted"
		if len(parts) > 0 {
			why += ": " + strings.Join(parts, ", ")
		}
		line += fmt.Sprintf(", %d not finished (%s)", stopped+never, why)
	}
	if s.Repeat > 1 {
		line += fmt.Sprintf(" (%d repetitions each, %d flaky)", s.Repeat, s.Flaky)
	}
	return line
}

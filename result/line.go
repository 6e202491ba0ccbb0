package result

import "fmt"

// Tally is what a campaign's output line counts: the selected cells and how they
// ended (Campaign's fields of the same names).
type Tally struct {
	CampaignID                                                              string
	Selected, Passed, Failed, Inconclusive, KnownFailures, UnexpectedPasses int
	NotRun                                                                  int
}

// Line is the campaign's line both `agentproof run` and `agentproof report` print:
// "Campaign <id>: <passed>/<selected> passed, <failed> failed, <inconclusive>
// inconclusive", then ", <n> known failure(s)", " (<n> of the failed unexpectedly
// passed: remove them from the known failures)" and ", <n> not run here (partial)",
// each only when its count is not zero.
func (t Tally) Line() string {
	line := fmt.Sprintf("Campaign %s: %d/%d passed, %d failed, %d inconclusive",
		t.CampaignID, t.Passed, t.Selected, t.Failed, t.Inconclusive)
	if t.KnownFailures > 0 {
		line += fmt.Sprintf(", %d known failure(s)", t.KnownFailures)
	}
	if t.UnexpectedPasses > 0 {
		line += fmt.Sprintf(" (%d of the failed unexpectedly passed: remove them from the known failures)", t.UnexpectedPasses)
	}
	if t.NotRun > 0 {
		line += fmt.Sprintf(", %d not run here (partial)", t.NotRun)
	}
	return line
}

// Tally is the campaign's counts.
func (c *Campaign) Tally() Tally {
	return Tally{CampaignID: c.CampaignID, Selected: c.Selected, Passed: c.Passed, Failed: c.Failed,
		Inconclusive: c.Inconclusive, KnownFailures: c.KnownFailures, UnexpectedPasses: c.UnexpectedPasses, NotRun: c.NotRun}
}

// Line is the line `agentproof report` prints for the campaign: Tally's line, then the
// state of its selection in parentheses (Selection), except when that state is only
// "cells not run here", which the line says already.
func (c *Campaign) Line() string {
	line := c.Tally().Line()
	if c.Interruption == nil && c.Partial && c.NotRun > 0 && c.missing() == 0 {
		return line
	}
	return line + " (" + c.Selection() + ")"
}

// ProbeCommand is the command that says what this machine gives and how to get the
// environments it cannot provide: the hint `agentproof run`, summary.md and the
// dashboard give beside cells not run here.
const ProbeCommand = "agentproof environments probe"

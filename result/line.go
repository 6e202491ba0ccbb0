package result

import "fmt"

// Line is the line both `agentproof run` and `agentproof report` print for campaign id:
// "Campaign <id>: <passed>/<selected> passed, <failed> failed, <inconclusive>
// inconclusive", then ", <n> known failure(s)", " (<n> of the failed unexpectedly
// passed: remove them from the known failures)" and ", <n> not run here (partial)",
// each only when its count is not zero.
func (c Counts) Line(id string) string {
	line := fmt.Sprintf("Campaign %s: %d/%d passed, %d failed, %d inconclusive",
		id, c.Passed, c.Selected, c.Failed, c.Inconclusive)
	if c.KnownFailures > 0 {
		line += fmt.Sprintf(", %d known failure(s)", c.KnownFailures)
	}
	if c.UnexpectedPasses > 0 {
		line += fmt.Sprintf(" (%d of the failed unexpectedly passed: remove them from the known failures)", c.UnexpectedPasses)
	}
	if c.NotRun > 0 {
		line += fmt.Sprintf(", %d not run here (partial)", c.NotRun)
	}
	return line
}

// Line is the line `agentproof report` prints for the campaign: its Counts' line, then the
// state of its selection in parentheses (Selection), except when that state is only
// "cells not run here", which the line says already.
func (c *Campaign) Line() string {
	line := c.Counts.Line(c.CampaignID)
	if c.Interruption == nil && c.Partial && c.NotRun > 0 && c.missing() == 0 {
		return line
	}
	return line + " (" + c.Selection() + ")"
}

// ProbeCommand is the command that says what this machine gives and how to get the
// environments it cannot provide: the hint `agentproof run`, summary.md and the
// dashboard give beside cells not run here.
const ProbeCommand = "agentproof environments probe"

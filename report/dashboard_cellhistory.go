package report

import (
	"fmt"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// CellHistoryCampaigns is how many campaigns, newest last, a card's per-cell history
// shows (the campaigns of the history that ran the cell, up to this one).
const CellHistoryCampaigns = 12

// cellHistoryView is one card's history strip: one point per campaign that ran the
// cell (oldest first, at most CellHistoryCampaigns), and Change, the last outcome
// change of the cell in words ("passed → failed in camp-2"; "" when it never changed).
type cellHistoryView struct {
	Points []cellPoint
	Change string
	// ChangeClass is "bad" when the last change went from passed to not passed, "ok"
	// when it went to passed.
	ChangeClass string
}

// cellPoint is one campaign of a cell's history: the campaign, what the cell counted
// as there, whether its repetitions disagreed, whether the suite's definition differs
// from the point before (a boundary: outcomes across it are not compared), and
// whether it is this campaign.
type cellPoint struct {
	CampaignID, Outcome, Title string
	Flaky, Boundary, Current   bool
}

// addCellHistory fills every selected card's history strip from hist (the history as
// of this campaign, History.Upto) and marks the cards and "Needs attention" entries of
// the cells that regressed against their suite's latest green campaign (Baselines).
func addCellHistory(v *dashView, c *result.Campaign, hist *result.History) {
	type seen struct {
		id, hash string
		e        result.HistoryExecution
	}
	byCell := map[string][]seen{}
	if hist != nil {
		for i := len(hist.Campaigns) - 1; i >= 0; i-- { // chronological
			hc := &hist.Campaigns[i]
			hashes := map[string]string{}
			for _, s := range hc.Suites {
				hashes[s.SuiteID] = s.SuiteDefinitionHash
			}
			for _, e := range hc.Executions {
				byCell[e.ExecutionID] = append(byCell[e.ExecutionID], seen{hc.CampaignID, hashes[e.SuiteID], e})
			}
		}
	}
	for si := range v.Suites {
		for ri := range v.Suites[si].Rows {
			for _, cell := range v.Suites[si].Rows[ri].Cells {
				for k := range cell {
					cv := &cell[k]
					if !cv.Selected {
						continue
					}
					if since, ok := c.RegressedSince(cv.ExecutionID); ok {
						cv.Regressed = regressionWords(since)
					}
					all := byCell[cv.ExecutionID]
					if len(all) > CellHistoryCampaigns {
						all = all[len(all)-CellHistoryCampaigns:]
					}
					var hv cellHistoryView
					last := map[string]verdict.Verdict{}
					for j, s := range all {
						if s.e.NotRunHere {
							continue // it did not run there: no outcome to show or compare
						}
						p := cellPoint{CampaignID: s.id, Outcome: string(s.e.Outcome), Flaky: s.e.Flaky, Current: s.id == c.CampaignID}
						if s.e.State == result.StateKnownFailure {
							p.Outcome = string(s.e.State)
						}
						p.Boundary = j > 0 && all[j-1].hash != s.hash
						p.Title = fmt.Sprintf("%s: %s", s.id, s.e.Outcome)
						if p.Flaky {
							p.Title += fmt.Sprintf(" (flaky: %d/%d repetitions passed)", s.e.PassedRepetitions, s.e.Repetitions)
						}
						if p.Boundary {
							p.Title += " (suite definition changed)"
						}
						// A change is against the cell's last outcome under the same suite
						// definition: outcomes across definitions are not compared.
						if prev, ok := last[s.hash]; ok && prev != s.e.Outcome {
							hv.Change = fmt.Sprintf("%s → %s in %s", prev, s.e.Outcome, s.id)
							hv.ChangeClass = "ok"
							if prev == verdict.Passed {
								hv.ChangeClass = "bad"
							}
						}
						last[s.hash] = s.e.Outcome
						hv.Points = append(hv.Points, p)
					}
					cv.History = hv
				}
			}
		}
	}
	for i := range v.Triage {
		if since, ok := c.RegressedSince(v.Triage[i].ExecutionID); ok {
			v.Triage[i].Regressed = regressionWords(since)
		}
	}
	v.Regressions = c.Regressions()
	v.Compared, v.Without = baselineGroups(c.Baselines)
}

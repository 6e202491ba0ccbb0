package report

import (
	"fmt"

	"github.com/agentproof/agentproof/result"
)

// regressionWords is "regressed since <id> (latest green)".
func regressionWords(since string) string {
	return fmt.Sprintf("regressed since %s (latest green)", since)
}

// regressedCount is the word the summary and dashboard use for n regressions.
func regressedCount(n int) string {
	if n == 1 {
		return "1 cell regressed"
	}
	return fmt.Sprintf("%d cells regressed", n)
}

// baselineGroup is the suites of a campaign that had nothing to compare with for the
// same reason (a result.Baseline without a campaign: its Note), in campaign order.
type baselineGroup struct {
	Note   string
	Suites []string
}

// baselineGroups splits a campaign's baselines into those compared with a latest
// green campaign (in order) and the groups of suites without one, one per reason in
// the order each reason first appears: a first run's "no earlier green campaign" is
// one group, not one line per suite.
func baselineGroups(bs []result.Baseline) (compared []result.Baseline, without []baselineGroup) {
	at := map[string]int{}
	for _, bl := range bs {
		if bl.CampaignID != "" {
			compared = append(compared, bl)
			continue
		}
		i, ok := at[bl.Note]
		if !ok {
			i = len(without)
			at[bl.Note] = i
			without = append(without, baselineGroup{Note: bl.Note})
		}
		without[i].Suites = append(without[i].Suites, bl.SuiteID)
	}
	return compared, without
}

// nothingToCompare is what the summary and the dashboard say when no suite of a
// campaign had a latest green campaign to compare with (a first run).
const nothingToCompare = "Nothing to compare with: no suite of this campaign has an earlier green campaign of its definition."

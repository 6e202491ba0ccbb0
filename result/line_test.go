package result

import "testing"

// TestCampaignLine: the line `agentproof report` prints counts what `agentproof run`
// counts (Counts.Line: known failures, unexpected passes, cells not run here), then the
// selection's state, which is left out when it would only repeat "not run here".
func TestCampaignLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    Campaign
		want string
	}{
		{"complete", Campaign{CampaignID: "c", Counts: Counts{Selected: 3, Passed: 3}},
			"Campaign c: 3/3 passed, 0 failed, 0 inconclusive (complete)"},
		{"known failures", Campaign{CampaignID: "c", Counts: Counts{Selected: 3, Passed: 1, Failed: 1, KnownFailures: 1, UnexpectedPasses: 1}, Partial: true},
			"Campaign c: 1/3 passed, 1 failed, 0 inconclusive, 1 known failure(s) (1 of the failed unexpectedly passed: remove them from the known failures) (subset of the catalog)"},
		{"not run here", Campaign{CampaignID: "c", Counts: Counts{Selected: 3, Passed: 2, NotRun: 1}, Partial: true, Results: []Result{{Synthetic: true, NotRunHere: "no bubblewrap"}}},
			"Campaign c: 2/3 passed, 0 failed, 0 inconclusive, 1 not run here (partial)"},
		{"not run here and missing", Campaign{CampaignID: "c", Counts: Counts{Selected: 3, Passed: 1, Inconclusive: 1, NotRun: 1}, Partial: true,
			Results: []Result{{Synthetic: true, NotRunHere: "no bubblewrap"}, {Synthetic: true}}},
			"Campaign c: 1/3 passed, 0 failed, 1 inconclusive, 1 not run here (partial) (cut short: 1 of 3 selected cell(s) left no result)"},
	} {
		if got := tc.c.Line(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

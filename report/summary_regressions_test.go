package report

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/result"
)

// TestSummaryBaselinesCollapse: the suites without an earlier green campaign share one
// line with their count and ids (a first run of 31 suites is not 31 lines), a suite
// alone with its reason keeps its own line, and a campaign where no suite had anything
// to compare with says so instead of "no cell regressed".
func TestSummaryBaselinesCollapse(t *testing.T) {
	t.Parallel()
	const none = "no earlier green campaign of this suite definition"
	first := &result.Campaign{CampaignID: "c", Baselines: []result.Baseline{{SuiteID: "a", Note: none}, {SuiteID: "b", Note: none}, {SuiteID: "c", Note: none}}}
	var b strings.Builder
	writeRegressions(&b, first)
	want := "## Regressions against the latest green campaign\n\n" +
		"Nothing to compare with: no suite of this campaign has an earlier green campaign of its definition.\n\n" +
		"- 3 suites: " + none + " (a, b, c)\n\n"
	if b.String() != want {
		t.Errorf("first run:\n%s\nwant:\n%s", b.String(), want)
	}
	later := &result.Campaign{CampaignID: "d", Baselines: []result.Baseline{{SuiteID: "a", Note: none}, {SuiteID: "b", CampaignID: "c", Regressed: []result.CellChange{}}, {SuiteID: "e", Note: "latest green campaign x could not be read"}, {SuiteID: "f", Note: none}}}
	b.Reset()
	writeRegressions(&b, later)
	want = "## Regressions against the latest green campaign\n\n" +
		"No cell regressed since the latest green campaign of its suite definition.\n\n" +
		"- b: latest green c — 0 cells regressed\n" +
		"- 2 suites: " + none + " (a, f)\n" +
		"- e: latest green campaign x could not be read\n\n"
	if b.String() != want {
		t.Errorf("later run:\n%s\nwant:\n%s", b.String(), want)
	}
}

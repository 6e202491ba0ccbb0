package report

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// TestDashboardFirstRunFoldsBaselines: on a first campaign the dashboard's regressions
// list folds the suites without an earlier green campaign into one expandable line with
// their count, every suite id kept inside it, and says there was nothing to compare
// with; a suite alone with its reason keeps its own line.
func TestDashboardFirstRunFoldsBaselines(t *testing.T) {
	t.Parallel()
	const none = "no earlier green campaign of this suite definition"
	c := &result.Campaign{CampaignID: "c", Counts: result.Counts{CleanupPassed: true}, Baselines: []result.Baseline{
		{SuiteID: "a", Note: none}, {SuiteID: "b", Note: none}, {SuiteID: "c", Note: none}, {SuiteID: "e", Note: "latest green campaign x could not be read"}}}
	b, err := Dashboard(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dash := string(b)
	for _, w := range []string{
		`<p class="desc">` + nothingToCompare + `</p>`,
		`<li class="without" data-suites="3"><details><summary><b>3 suites</b>: ` + none + `</summary><span class="suite-id">a</span>, <span class="suite-id">b</span>, <span class="suite-id">c</span></details></li>`,
		`<li class="without" data-suite="e"><b>e</b>: latest green campaign x could not be read</li>`,
	} {
		if !strings.Contains(dash, w) {
			t.Errorf("dashboard lacks %q", w)
		}
	}
	if n := strings.Count(dash, none); n != 1 {
		t.Errorf("the dashboard says %q %d times, want once", none, n)
	}
}

// TestDashboardCleanupTile: the "cleanups confirmed" tile of a campaign whose only
// unconfirmed cleanups are calibration cells' expected ones says so, as summary.md
// does, and so does the suite's cleanup tile, not marked bad; one with a cell that
// really left something behind does not.
func TestDashboardCleanupTile(t *testing.T) {
	t.Parallel()
	const suite = "calibration"
	expected := result.Result{ExecutionID: "calibration.hostile_daemon.local.cleanup", SuiteID: suite, Verdict: verdict.Failed, ExpectedVerdict: verdict.Failed, Cleanup: result.CleanupFailed}
	candidate := result.Result{ExecutionID: "calibration.p.local.c", SuiteID: suite, Verdict: verdict.Failed, Cleanup: result.CleanupFailed}
	ok := result.Result{ExecutionID: "calibration.p.local.ok", SuiteID: suite, Verdict: verdict.Passed, Cleanup: result.CleanupPassed}
	const suiteTile = `<div class="tile"><div class="l">Cleanup</div>`
	tests := []struct {
		name    string
		results []result.Result
		clean   bool
		want    string
		tile    string
	}{
		{"all confirmed", []result.Result{ok}, true, `<b>all</b><span>cleanups confirmed</span>`, suiteTile + `<div class="v ">passed</div></div>`},
		{"only expected", []result.Result{ok, expected}, false,
			`<b>as expected</b><span>cleanups: every one confirmed but those calibration cell(s) calibration.hostile_daemon.local.cleanup expect not to be</span>`,
			suiteTile + `<div class="v ">not confirmed</div><div class="n">as expected by calibration cell(s) calibration.hostile_daemon.local.cleanup</div></div>`},
		{"a real one", []result.Result{expected, candidate}, false, `<b>not all</b><span>cleanups confirmed</span>`,
			suiteTile + `<div class="v bad">not confirmed</div></div>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &result.Campaign{CampaignID: "c", Results: tt.results, Counts: result.Counts{CleanupPassed: tt.clean},
				Suites: []result.SuiteSummary{{SuiteID: suite, Counts: result.Counts{CleanupPassed: tt.clean}}}}
			b, err := Dashboard(c, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{`<div class="count" id="count-cleanup">` + tt.want + `</div>`, tt.tile} {
				if !strings.Contains(string(b), w) {
					t.Errorf("dashboard lacks %q", w)
				}
			}
		})
	}
}

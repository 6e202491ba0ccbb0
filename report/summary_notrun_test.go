package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// TestNotRunHereReported: a selected cell whose environment the machine could not
// provide (no result, a reason given) is "not run here" with that reason in every
// printer: the summary's headline and its own section (with the command that says how
// to get the environment), a JUnit skipped element with the reason as its message, a
// CTRF skipped test and a dashboard card of its own state with that hint in the header; the campaign is partial, never counts it passed, and `agentproof report`
// (no expected ids) regenerates it from campaign.json.
func TestNotRunHereReported(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), nil)
	// This machine could not provide the daytona environment: its cell has no result.
	if err := os.RemoveAll(filepath.Join(root, "camp-2", "core", "reference", "daytona")); err != nil {
		t.Fatal(err)
	}
	cat := loadCatalog(t, nil)
	why := "needs the Daytona API key, which is not set"
	g, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat, ExpectedIDs: fixtureExpected,
		NotRunHere: map[string]string{"core.reference.daytona.message-marker": why}})
	if err != nil {
		t.Fatal(err)
	}
	c := g.Campaign
	if c.NotRun != 1 || !c.Partial || c.Passed+c.Failed+c.Inconclusive+c.NotRun != c.Selected {
		t.Fatalf("counts: %d passed, %d failed, %d inconclusive, %d not run of %d", c.Passed, c.Failed, c.Inconclusive, c.NotRun, c.Selected)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, "camp-2", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	summary := read(SummaryFile)
	for _, want := range []string{"Not run here: 1", "## Not run here", "1 cell(s) of environment daytona: " + why, "- core.reference.daytona.message-marker",
		"| core.reference.daytona.message-marker | not run here | 0 |",
		"`agentproof environments probe` says what this machine gives and how to get the rest."} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, summary)
		}
	}
	if junit := read(JUnitFile); !strings.Contains(junit, `<skipped message="not run here: `+why) {
		t.Errorf("junit.xml has no skipped element with the reason:\n%s", junit)
	}
	if ctrf := read(CTRFFile); !strings.Contains(ctrf, `"status": "skipped"`) {
		t.Errorf("ctrf.json has no skipped test")
	}
	if dash := read(DashboardFile); !strings.Contains(dash, `data-state="not-run-here"`) || !strings.Contains(dash, `id="count-not-run-here">1<`) {
		t.Errorf("the dashboard shows no not-run card or count: %d %d", strings.Count(dash, "not-run-here"), strings.Count(dash, "count-not-run-here"))
	} else if !strings.Contains(dash, `id="not-run-here-hint">1 selected cell(s) not run here`) || !strings.Contains(dash, `<code>agentproof environments probe</code> says what this machine gives`) {
		t.Errorf("the dashboard gives no hint how to run the cells not run here")
	} else if strings.Contains(dash, `class="tri-cell">core.reference.daytona.message-marker<`) {
		t.Errorf("the dashboard lists a cell not run here among the inconclusive cells that need attention")
	}
	// Regenerated from campaign.json alone: the same.
	again, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	if again.Campaign.NotRun != 1 || again.Campaign.NotRunHere["core.reference.daytona.message-marker"] != why || read(SummaryFile) != summary {
		t.Errorf("regeneration lost the cell not run here: %d, %v", again.Campaign.NotRun, again.Campaign.NotRunHere)
	}
	if code := c.ExitCode(); code == verdict.ExitPassed {
		t.Errorf("a campaign with a cell not run here exits 0")
	}
}

// TestTriageNothingSaysWhy: when no cell needs attention, the dashboard's "Needs
// attention" says so in the words the summary uses — never "every cell passed" while
// selected cells were not run here.
func TestTriageNothingSaysWhy(t *testing.T) {
	t.Parallel()
	green := []string{"calibration.fixture-fail.local.process-exit", "calibration.fixture-pass.local.process-exit", "core.reference.local.message-marker"}
	for _, tc := range []struct {
		name   string
		notRun map[string]string
		want   string
	}{
		{"all passed", nil, `id="triage-none">Nothing: every cell passed (calibration cells: met their expectation).<`},
		{"one not run here", map[string]string{"core.reference.daytona.message-marker": "needs the Daytona API key, which is not set"},
			`id="triage-none">Nothing failed or was inconclusive; 1 selected cell(s) were not run here: they did not pass either.<`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), nil)
			if err := os.RemoveAll(filepath.Join(root, "camp-2", "core", "reference", "daytona")); err != nil {
				t.Fatal(err)
			}
			ids := green
			if tc.notRun != nil {
				ids = append(slices.Clone(green), "core.reference.daytona.message-marker")
			}
			if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: loadCatalog(t, nil), ExpectedIDs: ids, NotRunHere: tc.notRun}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(root, "camp-2", DashboardFile))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.want) {
				i := strings.Index(string(b), `id="triage-none"`)
				t.Errorf("dashboard's Needs attention: want %s, got %.200s", tc.want, string(b[max(i, 0):]))
			}
		})
	}
}

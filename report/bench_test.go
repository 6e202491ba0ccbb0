package report

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// benchCampaign builds a campaign of n cells (copies of the fixture's daytona result,
// each with its own id) in memory.
func benchCampaign(b *testing.B, n int) *result.Campaign {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata/results/camp-2/core/reference/daytona/message-marker/attempt-1", result.ResultFile))
	if err != nil {
		b.Fatal(err)
	}
	r, err := result.DecodeResult("bench", raw)
	if err != nil {
		b.Fatal(err)
	}
	results := make([]result.Result, n)
	ids := make([]string, n)
	for i := range results {
		results[i] = *r
		results[i].ProfileID = fmt.Sprintf("p%03d", i/10)
		results[i].CaseID = fmt.Sprintf("c%d", i%10)
		results[i].ExecutionID = "core." + results[i].ProfileID + ".daytona." + results[i].CaseID
		ids[i] = results[i].ExecutionID
	}
	return result.BuildCampaign("bench", nil, ids, results, nil, false)
}

// BenchmarkRender renders summary.md, junit.xml and the dashboard of a 1,000-cell
// campaign.
func BenchmarkRender(b *testing.B) {
	c := benchCampaign(b, 1000)
	h := new(result.History).Merge(c.Entry())
	b.ReportAllocs()
	for b.Loop() {
		_ = Summary(c)
		_ = JUnit(c)
		if _, err := Dashboard(c, nil, h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerateFixture runs Generate over the fixed five-cell campaign on disk
// (load, validate, choose, render, write atomically).
func BenchmarkGenerateFixture(b *testing.B) {
	root := b.TempDir()
	copyDir(b, "testdata/results/camp-2", filepath.Join(root, "camp-2"), nil)
	cat := loadCatalog(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat, ExpectedIDs: fixtureExpected}); err != nil {
			b.Fatal(err)
		}
	}
}

// defaultSizedHistory is a history of n campaigns shaped like the default catalog run
// daily (one a day, newest first, every suite complete and green): every suite and
// every cell of the default catalog in each.
func defaultSizedHistory(b testing.TB, n int) *result.History {
	b.Helper()
	cat, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	h := &result.History{Schema: result.HistorySchema}
	day := time.Date(2024, 1, 1, 6, 0, 0, 0, time.UTC)
	entries := make([]result.HistoryCampaign, 0, n)
	for i := range n {
		c := result.HistoryCampaign{CampaignID: fmt.Sprintf("daily-%04d", i), GeneratedAt: day.AddDate(0, 0, i).Format(time.RFC3339),
			Counts: result.Counts{Selected: len(cat.Cells), Executed: len(cat.Cells), Passed: len(cat.Cells), CleanupPassed: true}}
		for _, s := range cat.Suites {
			c.Suites = append(c.Suites, result.SuiteSummary{SuiteID: s.ID, Label: s.Label, SuiteDefinitionHash: s.Fingerprint,
				Expected: s.ExpectedMatrixSize, Counts: result.Counts{Selected: s.ExpectedMatrixSize, Executed: s.ExpectedMatrixSize, Passed: s.ExpectedMatrixSize,
					CleanupPassed: true}, Complete: true, DurationMs: 60000})
		}
		for _, cell := range cat.Cells {
			c.Executions = append(c.Executions, result.HistoryExecution{ExecutionID: cell.ID, SuiteID: cell.Suite.ID, ProfileID: cell.Profile.ID,
				EnvironmentID: cell.Environment.ID, CaseID: cell.Case.ID, Provider: cell.Profile.Provider, Model: cell.Profile.Model,
				Verdict: verdict.Passed, Outcome: verdict.Passed, DurationMs: 1234, Attempt: 1, Cleanup: result.CleanupPassed})
		}
		entries = append(entries, c)
	}
	for i := len(entries) - 1; i >= 0; i-- { // newest first
		h.Campaigns = append(h.Campaigns, entries[i])
	}
	return h.Merge(entries[len(entries)-1]) // pointers computed
}

// BenchmarkReportHistory is `agentproof report` of one campaign (the five-cell
// fixture, newer than every stored one) after 10, 100 and 1,000 campaigns shaped like
// the default catalog run daily, bounded (the default, --history-keep 28: history.json
// as earlier bounded reports left it) and unbounded (--history-keep 0, as before the
// bound: every campaign kept): time per report, and history.json's size after it
// (history-MB).
func BenchmarkReportHistory(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		full := defaultSizedHistory(b, n)
		for _, mode := range []struct {
			name string
			keep int
		}{{"bounded", result.DefaultHistoryKeep}, {"unbounded", -1}} {
			hist, err := result.EncodeHistory(full.Trim(mode.keep))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/stored=%d", mode.name, n), func(b *testing.B) {
				root := b.TempDir()
				copyDir(b, "testdata/results/camp-2", filepath.Join(root, "camp-2"), nil)
				cat := loadCatalog(b, nil)
				path := filepath.Join(root, result.HistoryFile)
				for b.Loop() {
					b.StopTimer()
					if err := os.WriteFile(path, hist, 0o644); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat, ExpectedIDs: fixtureExpected, HistoryKeep: mode.keep}); err != nil {
						b.Fatal(err)
					}
				}
				fi, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(fi.Size())/1e6, "history-MB")
			})
		}
	}
}

// TestDefaultHistorySize holds the bound docs/regressions.md promises: the default
// catalog run daily, bounded by the default --history-keep, keeps history.json under
// 5 MB (a year of daily campaigns trimmed as every report trims it).
func TestDefaultHistorySize(t *testing.T) {
	t.Parallel()
	h := defaultSizedHistory(t, 365).Trim(result.DefaultHistoryKeep)
	b, err := result.EncodeHistory(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= 5_000_000 {
		t.Errorf("history.json of the default catalog run daily, %d campaigns kept: %d bytes, want under 5 MB (lower result.DefaultHistoryKeep or shrink the entries)", len(h.Campaigns), len(b))
	}
}

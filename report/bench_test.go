package report

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentproof/agentproof/result"
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

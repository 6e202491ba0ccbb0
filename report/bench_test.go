package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/redact"
)

// benchCampaign builds a campaign of n cells (copies of the fixture's daytona result,
// each with its own id) in memory.
func benchCampaign(b *testing.B, n int) *Campaign {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata/results/camp-2/core/reference/daytona/message-marker/attempt-1", ResultFile))
	if err != nil {
		b.Fatal(err)
	}
	r, err := DecodeResult("bench", raw)
	if err != nil {
		b.Fatal(err)
	}
	results := make([]Result, n)
	ids := make([]string, n)
	for i := range results {
		results[i] = *r
		results[i].ProfileID = fmt.Sprintf("p%03d", i/10)
		results[i].CaseID = fmt.Sprintf("c%d", i%10)
		results[i].ExecutionID = "core." + results[i].ProfileID + ".daytona." + results[i].CaseID
		ids[i] = results[i].ExecutionID
	}
	return buildCampaign("bench", nil, ids, results, nil, false)
}

// BenchmarkRender renders summary.md, junit.xml and the dashboard of a 1,000-cell
// campaign.
func BenchmarkRender(b *testing.B) {
	c := benchCampaign(b, 1000)
	h := emptyHistory().Merge(c.Entry())
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
		if _, err := Generate(Options{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat, ExpectedIDs: fixtureExpected}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardSanitize measures the evidence guard on clean content (the common case:
// scan only, written byte for byte): a 64 KiB log and a 64 KiB JSON snapshot, with a
// secret set of ten values.
func BenchmarkGuardSanitize(b *testing.B) {
	var vals []string
	for i := range 10 {
		vals = append(vals, fmt.Sprintf("bench-secret-%02d-0123456789abcdef", i))
	}
	g := Guard{Secrets: redact.NewSet(vals...)}
	line := "2026-11-30T04:00:00Z run hb-1 step 3: report_progress accepted\n"
	log := []byte(strings.Repeat(line, (64<<10)/len(line)))
	items := make([]map[string]any, 0, 400)
	for i := range 400 {
		items = append(items, map[string]any{"id": fmt.Sprintf("comment-%04d", i), "body": "Starting the task, step " + fmt.Sprint(i), "authorActorId": "agent-1"})
	}
	doc, _ := json.Marshal(map[string]any{"comments": items})
	for _, c := range []struct {
		name string
		data []byte
	}{{"log", log}, {"json", doc}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if _, leaks, err := g.Sanitize("a."+c.name, c.data, true); err != nil || len(leaks) > 0 {
					b.Fatal(err, leaks)
				}
			}
		})
	}
}

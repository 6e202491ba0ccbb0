package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
)

// assertAsInMemory checks that the files Generate wrote for campaign id under root —
// from result summaries, each result read whole again one at a time — are the bytes
// the renderers give over the whole campaign in memory (campaign.json read back, with
// every result whole): campaign.json, summary.md, junit.xml, dashboard.html (with its
// transcripts) and index.html.
func assertAsInMemory(t *testing.T, root, id string, cat *catalog.Catalog) {
	t.Helper()
	dir := filepath.Join(root, id)
	c, err := result.ReadCampaign(filepath.Join(dir, result.CampaignFile))
	if err != nil {
		t.Fatal(err)
	}
	hist, _, err := result.ReadHistory(filepath.Join(root, result.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	campaignJSON, err := encodeIndented(c)
	if err != nil {
		t.Fatal(err)
	}
	dash, err := Dashboard(c, cat, hist.Upto(c.GeneratedAt, c.CampaignID), LoadTranscripts(dir, c))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{result.CampaignFile: campaignJSON, SummaryFile: Summary(c), JUnitFile: JUnit(c), DashboardFile: dash, IndexFile: dash} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/%s differs from the in-memory rendering:\n%s", id, name, cmp.Diff(string(want), string(got)))
		}
	}
}

// TestGenerateAsInMemory: for the fixture history (retries, a failed and an
// inconclusive cell, a synthetic one, candidate notes, regressions against a green
// campaign, transcripts), with secrets to redact, and for a repeated campaign, the
// streamed files are the in-memory rendering's.
func TestGenerateAsInMemory(t *testing.T) {
	t.Parallel()
	t.Run("history", func(t *testing.T) {
		t.Parallel()
		root, cat, _ := buildFixtureHistory(t)
		for _, id := range []string{"camp-green", "camp-2"} {
			assertAsInMemory(t, root, id, cat)
		}
	})
	t.Run("secrets", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		const secret = "very-secret-value-0123456789"
		copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), func(s string) string {
			return strings.ReplaceAll(s, "fixture exited with code 1", "token "+secret+" rejected")
		})
		cat := loadCatalog(t, nil)
		if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat, ExpectedIDs: fixtureExpected, Secrets: redact.NewSet(secret)}); err != nil {
			t.Fatal(err)
		}
		assertAsInMemory(t, root, "camp-2", cat)
	})
	t.Run("repeats", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		base := filepath.Join(root, "c1", "s", "p", "local", "c")
		rep := func(k int, doc string) string {
			return strings.Replace(doc, `"attempt":1`, fmt.Sprintf(`"attempt":1,"repetition":%d,"repeat":3`, k), 1)
		}
		failed := strings.Replace(validResult, `"verdict":"passed"`, `"verdict":"failed","failureClass":"candidate_failure"`, 1)
		failed = strings.Replace(failed, `"passed":true,"detail":"matched"`, `"passed":false,"expected":"succeeded","observed":"failed","detail":"run failed"`, 1)
		writeResult(t, filepath.Join(base, "repeat-1", "attempt-1"), rep(1, validResult))
		writeResult(t, filepath.Join(base, "repeat-2", "attempt-1"), rep(2, failed))
		writeResult(t, filepath.Join(base, "repeat-3", "attempt-1"), rep(3, validResult))
		if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "c1", Repeat: 3}); err != nil {
			t.Fatal(err)
		}
		assertAsInMemory(t, root, "c1", nil)
	})
}

// encodeIndented is the in-memory encoding of a whole document as agentproof writes
// it: two-space indentation, no HTML escaping, a final newline.
func encodeIndented(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return buf.Bytes(), err
}

package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentproof/agentproof/result"
)

// TestReportBoundsHistory: a report over a history of eight daily default-catalog
// campaigns keeps the newest HistoryKeep campaigns of each suite definition whole,
// the new one, and the latest green campaign before those without its cells (the
// baseline of their regression check), says what it left out, and keeps every
// campaign with HistoryKeep < 0.
func TestReportBoundsHistory(t *testing.T) {
	t.Parallel()
	stored := defaultSizedHistory(t, 8)
	hist, err := result.EncodeHistory(stored)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		keep, campaigns, dropped, stripped int
	}{{3, 5, 4, 1}, {-1, 9, 0, 0}} {
		root := t.TempDir()
		copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), nil)
		path := filepath.Join(root, result.HistoryFile)
		if err := os.WriteFile(path, hist, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: loadCatalog(t, nil), ExpectedIDs: fixtureExpected, HistoryKeep: tc.keep}); err != nil {
			t.Fatal(err)
		}
		h, _, err := result.ReadHistory(path)
		if err != nil {
			t.Fatal(err)
		}
		dropped, stripped := 0, 0
		if h.Trimmed != nil {
			dropped, stripped = h.Trimmed.Dropped, h.Trimmed.Stripped
		}
		if len(h.Campaigns) != tc.campaigns || dropped != tc.dropped || stripped != tc.stripped || *h.LatestCampaignID != "camp-2" {
			t.Errorf("keep %d: %d campaigns (want %d), %d dropped (want %d), %d stripped (want %d), latest %s",
				tc.keep, len(h.Campaigns), tc.campaigns, dropped, tc.dropped, stripped, tc.stripped, *h.LatestCampaignID)
		}
	}
}

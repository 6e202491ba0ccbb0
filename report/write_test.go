package report

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentproof/agentproof/result"
)

// TestGenerateAllOrNothing: the campaign's files are staged together, so when one of
// them cannot be staged (here history.json, whose directory is a file) Generate fails
// and puts none of them in place, leaving no temporary file; once it can, every file
// appears.
func TestGenerateAllOrNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), nil)
	dir := filepath.Join(root, "camp-2")
	before := names(t, dir)
	blocked := filepath.Join(root, "blocked")
	if err := os.WriteFile(blocked, []byte("a file, not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: loadCatalog(t, nil), ExpectedIDs: fixtureExpected,
		HistoryPath: filepath.Join(blocked, result.HistoryFile)}
	if _, err := Generate(opts); err == nil {
		t.Fatal("Generate wrote a report whose history.json cannot be written")
	}
	if after := names(t, dir); !slices.Equal(after, before) {
		t.Errorf("a failed Generate changed the campaign directory: %v, before %v", after, before)
	}
	opts.HistoryPath = filepath.Join(root, result.HistoryFile)
	if _, err := Generate(opts); err != nil {
		t.Fatal(err)
	}
	after := names(t, dir)
	for _, f := range []string{result.CampaignFile, SummaryFile, JUnitFile, CTRFFile, DashboardFile, IndexFile} {
		if !slices.Contains(after, f) {
			t.Errorf("%s missing after Generate: %v", f, after)
		}
	}
	if _, err := os.Stat(opts.HistoryPath); err != nil {
		t.Error(err)
	}
}

// names lists the entries of dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

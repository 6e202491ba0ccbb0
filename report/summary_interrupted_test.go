package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/result"
)

// TestSummaryInterrupted: an interrupted campaign's summary.md says so first, with how
// many selected cells did not finish (stopped mid-attempt, never started) and the
// command that resumes it; `agentproof report` (no expected ids) regenerates it byte
// for byte, and a run that finished (expected ids, no interruption) drops it.
func TestSummaryInterrupted(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), nil)
	cat := loadCatalog(t, nil)
	in := &result.Interruption{Selected: 9, Stopped: 1, NeverStarted: 3, Resume: "agentproof run --resume camp-2 --results res"}
	read := func() string {
		b, err := os.ReadFile(filepath.Join(root, "camp-2", SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat, ExpectedIDs: fixtureExpected, Interruption: in}); err != nil {
		t.Fatal(err)
	}
	first := read()
	for _, w := range []string{
		"**This campaign was interrupted: 5 of 9 selected cell(s) finished; 4 not finished (1 stopped mid-attempt, 3 never started).** The counts below cover the finished cells only. Continue it with `agentproof run --resume camp-2 --results res`.\n\nPassed: 3/5 finished ",
		"· Selection: interrupted: 5 of 9 cell(s) finished\n",
	} {
		if !strings.Contains(first, w) {
			t.Errorf("summary.md lacks %q:\n%s", w, first)
		}
	}
	if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	if again := read(); again != first {
		t.Errorf("regenerated summary.md differs:\n%s\nwant:\n%s", again, first)
	}
	if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat, ExpectedIDs: fixtureExpected}); err != nil {
		t.Fatal(err)
	}
	if done := read(); strings.Contains(done, "interrupted") {
		t.Errorf("a finished run's summary.md still says interrupted:\n%s", done)
	}
}

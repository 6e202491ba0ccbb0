package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentproof/agentproof/result"
)

// TestDashboardPrefetchSameBytes: the dashboard of 100 cells (more than the prefetch
// window) rendered with cards prepared ahead by 1, 3 or 8 workers is byte for byte the
// page rendered with none; a result that can no longer be read fails the page either
// way.
func TestDashboardPrefetchSameBytes(t *testing.T) {
	t.Parallel()
	src, target := t.TempDir(), t.TempDir()
	ids := benchShards(t, src, 100)
	if _, err := result.Merge(result.MergeOptions{Sources: []string{src}, ResultsRoot: target, CampaignID: "bench"}); err != nil {
		t.Fatal(err)
	}
	a, err := result.Assemble(result.CampaignOptions{ResultsRoot: target, CampaignID: "bench", ExpectedIDs: ids}, summaryResult)
	if err != nil {
		t.Fatal(err)
	}
	render := func(workers int) ([]byte, error) {
		var b bytes.Buffer
		err := renderDashboard(&b, a.Campaign, nil, a.History, a.CampaignDir, a.Full, workers)
		return b.Bytes(), err
	}
	want, err := render(0)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(want, []byte(`class="transcripts"`)); n != 100 {
		t.Fatalf("the page shows %d transcripts, want one per card (100)", n)
	}
	for _, workers := range []int{1, 3, 8} {
		got, err := render(workers)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%d workers: the page differs from the one rendered without prefetch", workers)
		}
	}
	if err := os.Remove(filepath.Join(target, "bench", "core", "p005", "daytona", "c0", "attempt-1", result.ResultFile)); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{0, 3} {
		if _, err := render(workers); err == nil {
			t.Errorf("%d workers: a result that cannot be read again rendered a page", workers)
		}
	}
}

package shard

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
)

var defaultCatalog = sync.OnceValues(func() (*catalog.Catalog, error) { return catalog.Default() })

// allCells are the cells of `run --all` in the default catalog.
func allCells(t *testing.T) (*catalog.Catalog, []*catalog.Cell) {
	t.Helper()
	c, err := defaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cells, err := c.Select(catalog.Selector{All: true})
	if err != nil {
		t.Fatal(err)
	}
	return c, cells
}

// TestBuildIsAPartition: every selected cell is in exactly one shard, every shard has
// cells, the totals add up, and the same inputs give the same plan and fingerprint.
func TestBuildIsAPartition(t *testing.T) {
	t.Parallel()
	_, cells := allCells(t)
	for _, n := range []int{1, 2, 8, 13} {
		p, err := Build(cells, n, Estimate(cells, nil))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		var sum int64
		for _, s := range p.Shards {
			if len(s.Cells) == 0 {
				t.Errorf("%d shards: shard %d is empty", n, s.Index)
			}
			var ms int64
			for _, c := range s.Cells {
				seen[c.ExecutionID]++
				ms += c.ExpectedMs
			}
			if ms != s.ExpectedMs {
				t.Errorf("shard %d: expectedMs %d, its cells add up to %d", s.Index, s.ExpectedMs, ms)
			}
			sum += ms
		}
		if len(seen) != len(cells) || sum != p.ExpectedMs {
			t.Errorf("%d shards: %d distinct cells of %d, total %d vs %d", n, len(seen), len(cells), sum, p.ExpectedMs)
		}
		for id, k := range seen {
			if k != 1 {
				t.Errorf("%s is in %d shards", id, k)
			}
		}
		q, _ := Build(slices.Clone(cells), n, Estimate(cells, nil))
		if q.Fingerprint != p.Fingerprint {
			t.Errorf("%d shards: two builds of the same inputs differ: %s, %s", n, p.Fingerprint, q.Fingerprint)
		}
	}
	if _, err := Build(cells, 0, Estimate(cells, nil)); err == nil {
		t.Error("0 shards accepted")
	}
	if _, err := Build(cells[:3], 4, Estimate(cells[:3], nil)); err == nil {
		t.Error("4 shards of 3 cells accepted")
	}
}

// history is a history with one campaign whose executions took the given durations.
func history(id string, ms map[string]int64) *result.History {
	c := result.HistoryCampaign{CampaignID: id}
	for cell, d := range ms {
		c.Executions = append(c.Executions, result.HistoryExecution{ExecutionID: cell, DurationMs: d, Attempt: 1})
	}
	return &result.History{Campaigns: []result.HistoryCampaign{c}}
}

// TestEstimate: the median over campaigns for a cell with history, the deadline scaled
// by the median ratio for one without, and synthetic (attempt 0) entries ignored.
func TestEstimate(t *testing.T) {
	t.Parallel()
	_, cells := allCells(t)
	a, b, c := cells[0], cells[1], cells[2]
	h := history("c1", map[string]int64{a.ID: 100, b.ID: 1000})
	h2 := history("c2", map[string]int64{a.ID: 300, b.ID: 3000})
	h3 := history("c3", map[string]int64{a.ID: 200})
	h.Campaigns = append(h.Campaigns, h2.Campaigns[0], h3.Campaigns[0])
	h.Campaigns = append(h.Campaigns, result.HistoryCampaign{CampaignID: "c4", Executions: []result.HistoryExecution{{ExecutionID: a.ID, DurationMs: 999999, Attempt: 0}}})
	est := Estimate([]*catalog.Cell{a, b, c}, h)
	if got := est.Cells[a.ID]; got.ExpectedMs != 200 || got.Source != FromHistory || got.Samples != 3 {
		t.Errorf("a: %+v, want the median 200 of 3 samples from history", got)
	}
	if got := est.Cells[b.ID]; got.ExpectedMs != 1000 || got.Samples != 2 {
		t.Errorf("b: %+v, want the lower middle 1000 of 2 samples", got)
	}
	ra, rb := 200*1000/a.AttemptTimeoutMs, 1000*1000/b.AttemptTimeoutMs
	perMille := min(ra, rb) // the lower middle of two ratios
	if est.Weights.DeadlinePerMille != max(1, perMille) {
		t.Errorf("deadline ratio %d‰, want %d‰", est.Weights.DeadlinePerMille, perMille)
	}
	if got := est.Cells[c.ID]; got.Source != FromDeadline || got.ExpectedMs != max(1, c.AttemptTimeoutMs*max(1, perMille)/1000) {
		t.Errorf("c: %+v, want its deadline %d ms × %d‰", got, c.AttemptTimeoutMs, perMille)
	}
	if !slices.Equal(est.Weights.Campaigns, []string{"c1", "c2", "c3", "c4"}) {
		t.Errorf("campaigns %v", est.Weights.Campaigns)
	}
}

// TestLPTBalances: with weights that LPT balances perfectly the shards come out equal,
// and a fingerprint changes with the assignment.
func TestLPTBalances(t *testing.T) {
	t.Parallel()
	_, cells := allCells(t)
	cells = cells[:8]
	ms := map[string]int64{}
	for i, c := range cells {
		ms[c.ID] = []int64{8, 7, 6, 5, 4, 3, 2, 1}[i] * 1000
	}
	p, err := Build(cells, 2, Estimate(cells, history("h", ms)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Shards[0].ExpectedMs != 18000 || p.Shards[1].ExpectedMs != 18000 || p.Imbalance != 0 {
		t.Errorf("shards %d and %d ms (imbalance %d‰), want 18000 each", p.Shards[0].ExpectedMs, p.Shards[1].ExpectedMs, p.Imbalance)
	}
	ms[cells[0].ID] = 30000
	q, _ := Build(cells, 2, Estimate(cells, history("h", ms)))
	if q.Fingerprint == p.Fingerprint {
		t.Error("another assignment, same fingerprint")
	}
}

// TestDecode: a plan round-trips; an edited plan, a wrong schema, unknown fields and
// trailing data are refused with the label.
func TestDecode(t *testing.T) {
	t.Parallel()
	_, cells := allCells(t)
	p, err := Build(cells, 4, Estimate(cells, nil))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.Encode(&b); err != nil {
		t.Fatal(err)
	}
	q, err := Decode("plan.json", b.Bytes())
	if err != nil || q.Fingerprint != p.Fingerprint || !slices.Equal(q.AllIDs(), p.AllIDs()) {
		t.Fatalf("round trip: %v", err)
	}
	moved := strings.Replace(b.String(), `"index": 2`, `"index": 3`, 1)
	first := p.Shards[0].Cells[0].ExecutionID
	swapped := strings.Replace(b.String(), first, p.Shards[1].Cells[0].ExecutionID+"x", 1)
	for name, doc := range map[string]string{
		"edited cell":    swapped,
		"bad index":      moved,
		"schema":         strings.Replace(b.String(), Schema, "agentproof.shards/v2", 1),
		"unknown field":  strings.Replace(b.String(), `"count"`, `"extra": 1, "count"`, 1),
		"trailing data":  b.String() + "{}",
		"not a document": "[]",
	} {
		if _, err := Decode("plan.json", []byte(doc)); err == nil || !strings.Contains(err.Error(), "plan.json") {
			t.Errorf("%s: %v, want an error naming plan.json", name, err)
		}
	}
}

// TestAgainst: a plan whose suite definition differs from the catalog's is refused,
// naming the suite and both hashes; so is a cell the catalog lacks.
func TestAgainst(t *testing.T) {
	t.Parallel()
	c, cells := allCells(t)
	p, err := Build(cells, 3, Estimate(cells, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Against(c); err != nil {
		t.Fatalf("the plan of the catalog's own cells: %v", err)
	}
	p.Suites[0].DefinitionHash = strings.Repeat("0", 64)
	p.Shards[0].Cells = append(p.Shards[0].Cells, Cell{ExecutionID: "nosuch.a.b.c"})
	err = p.Against(c)
	for _, want := range []string{"suite " + p.Suites[0].SuiteID, strings.Repeat("0", 64), "cell nosuch.a.b.c"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Against: %v, want it to name %q", err, want)
		}
	}
}

// TestParseIndex pins the --shard syntax.
func TestParseIndex(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		i, n int
		ok   bool
	}{
		{"1/1", 1, 1, true}, {"3/8", 3, 8, true}, {" 8/8 ", 8, 8, true},
		{"0/8", 0, 0, false}, {"9/8", 0, 0, false}, {"3", 0, 0, false}, {"a/b", 0, 0, false},
		{"1/0", 0, 0, false}, {fmt.Sprintf("1/%d", MaxShards+1), 0, 0, false}, {"", 0, 0, false},
	} {
		i, n, err := ParseIndex(c.in)
		if (err == nil) != c.ok || i != c.i || n != c.n {
			t.Errorf("ParseIndex(%q) = %d, %d, %v", c.in, i, n, err)
		}
	}
}

// TestGapsAndForeign: a shard without a run and with missing cells is a gap that says
// so; runs of another plan are named.
func TestGapsAndForeign(t *testing.T) {
	t.Parallel()
	_, cells := allCells(t)
	p, err := Build(cells[:6], 3, Estimate(cells[:6], nil))
	if err != nil {
		t.Fatal(err)
	}
	runs := []Run{{Dir: "a", Ref: result.ShardRef{Index: 1, Count: 3, Fingerprint: p.Fingerprint}},
		{Dir: "b", Ref: result.ShardRef{Index: 2, Count: 3, Fingerprint: p.Fingerprint}}}
	have := map[string]bool{}
	for _, id := range append(p.IDs(1), p.IDs(2)[1:]...) {
		have[id] = true
	}
	gaps := p.Gaps(runs, have)
	if len(gaps) != 2 || gaps[0].Index != 2 || gaps[0].NoRun || len(gaps[0].Missing) != 1 ||
		gaps[1].Index != 3 || !gaps[1].NoRun || !slices.Equal(gaps[1].Missing, p.IDs(3)) {
		t.Errorf("gaps %+v", gaps)
	}
	if f := Foreign(runs, p.Fingerprint); f != nil {
		t.Errorf("runs of the plan called foreign: %v", f)
	}
	runs = append(runs, Run{Dir: "c", Ref: result.ShardRef{Index: 1, Count: 2, Fingerprint: "other"}})
	if f := Foreign(runs, ""); len(f) != 1 || !strings.Contains(f[0], "c ran shard 1/2 of plan other") {
		t.Errorf("foreign %v", f)
	}
}

// TestDefaultCatalogBalanced: the default `run --all` selection in 8 shards weighed by
// the history of a real `./agentproof run --all` on these machines
// (testdata/history-default.json, campaign full-1, 177/177 passed): the longest shard's
// expected time is within 15 % of the mean.
func TestDefaultCatalogBalanced(t *testing.T) {
	t.Parallel()
	_, cells := allCells(t)
	h, warn, err := result.ReadHistory("testdata/history-default.json")
	if err != nil || warn != "" {
		t.Fatalf("%v %s", err, warn)
	}
	est := Estimate(cells, h)
	p, err := Build(cells, 8, est)
	if err != nil {
		t.Fatal(err)
	}
	fromHistory := 0
	for _, c := range est.Cells {
		if c.Source == FromHistory {
			fromHistory++
		}
	}
	if fromHistory < 150 {
		t.Fatalf("only %d of %d cells have history: the fixture no longer describes the default catalog", fromHistory, len(cells))
	}
	if p.MaxMs*100 > p.MeanMs*115 {
		t.Errorf("%d cells in 8 shards: longest %d ms, mean %d ms: more than 15 %% over", len(cells), p.MaxMs, p.MeanMs)
	}
	t.Logf("%d cells (%d with history) in 8 shards: mean %d ms, longest %d ms (+%.2f %%)", len(cells), fromHistory, p.MeanMs, p.MaxMs, float64(p.Imbalance)/10)
}

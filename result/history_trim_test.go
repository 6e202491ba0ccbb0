package result

import (
	"fmt"
	"testing"
)

// trimHistory is a history of n campaigns (newest first, camp-<n-1> … camp-0), each
// running suite "a" (definition "h1", then "h2" from campaign 10 on) and, every other
// campaign, suite "b"; green tells whether campaign i's suites are green.
func trimHistory(n int, green func(i int) bool) *History {
	h := emptyHistory()
	for i := n - 1; i >= 0; i-- {
		hash := "h1"
		if i >= 10 {
			hash = "h2"
		}
		c := HistoryCampaign{CampaignID: fmt.Sprintf("camp-%03d", i), GeneratedAt: fmt.Sprintf("2026-01-01T00:%02d:%02dZ", i/60, i%60),
			Executions: []HistoryExecution{{ExecutionID: "a.p.local.k"}}}
		s := SuiteSummary{SuiteID: "a", SuiteDefinitionHash: hash, Complete: true}
		if !green(i) {
			s.Failed = 1
		}
		c.Suites = append(c.Suites, s)
		if i%2 == 0 {
			c.Suites = append(c.Suites, SuiteSummary{SuiteID: "b", SuiteDefinitionHash: "hb", Complete: true})
		}
		h.Campaigns = append(h.Campaigns, c)
	}
	h.repoint()
	return h
}

// TestHistoryTrim: the newest keep campaigns of every suite definition are kept
// whole; the latest green campaign of each definition older than a kept campaign is
// kept without its executions (its suites, which a regression check reads, stay);
// everything else is left out and counted; keep < 1 keeps everything.
func TestHistoryTrim(t *testing.T) {
	t.Parallel()
	// Campaigns 20..29 fail suite a; the rest are green.
	h := trimHistory(30, func(i int) bool { return i < 20 })
	got := h.Trim(4)
	kept := map[string]int{}
	for _, c := range got.Campaigns {
		kept[c.CampaignID] = len(c.Executions)
	}
	// Whole: the 4 newest of a:h2 (29..26) and of b:hb (28, 26, 24, 22); a:h1 (0..9)
	// keeps 9..6 whole too. Stripped, the baselines: the latest green a:h2 before them
	// (19), b:hb before 22 (20) and before 6 (4), a:h1 before 6 (5).
	want := map[string]int{"camp-029": 1, "camp-028": 1, "camp-027": 1, "camp-026": 1, "camp-024": 1, "camp-022": 1,
		"camp-009": 1, "camp-008": 1, "camp-007": 1, "camp-006": 1, "camp-019": 0, "camp-020": 0, "camp-005": 0, "camp-004": 0}
	for id, n := range want {
		if m, ok := kept[id]; !ok || m != n {
			t.Errorf("%s: kept %t with %d executions, want %d", id, ok, m, n)
		}
	}
	if len(kept) != len(want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	if tr := got.Trimmed; tr == nil || tr.Keep != 4 || tr.Dropped != 30-len(want) || tr.Stripped != 4 || tr.Through != "2026-01-01T00:00:25Z" {
		t.Errorf("trimmed %+v", got.Trimmed)
	}
	if *got.LatestCampaignID != "camp-029" || got.LatestGreenBySuite["a"] != "camp-019" {
		t.Errorf("pointers: latest %s, latest green of a %s", *got.LatestCampaignID, got.LatestGreenBySuite["a"])
	}
	// Trimming again changes nothing but keeps the counts.
	if again := got.Trim(4); len(again.Campaigns) != len(got.Campaigns) || again.Trimmed.Dropped != got.Trimmed.Dropped {
		t.Errorf("a second trim: %d campaigns, %+v", len(again.Campaigns), again.Trimmed)
	}
	if all := h.Trim(0); len(all.Campaigns) != 30 || all.Trimmed != nil {
		t.Errorf("keep 0 kept %d campaigns, trimmed %+v", len(all.Campaigns), all.Trimmed)
	}
}

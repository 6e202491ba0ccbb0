package result

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/workspace"
)

// TestBaselines covers the choice of the latest green campaign: same suite and
// definition hash, green (complete, nothing failed or inconclusive), not newer than the
// campaign, not itself and not a regrade of it; an unreadable baseline leaves the suite unchecked, saying so.
func TestBaselines(t *testing.T) {
	t.Parallel()
	suite := func(hash string, complete bool, failed int) SuiteSummary {
		return SuiteSummary{SuiteID: "s", SuiteDefinitionHash: hash, Complete: complete, Counts: Counts{Failed: failed}}
	}
	camp := func(id, at string, s SuiteSummary) HistoryCampaign {
		return HistoryCampaign{CampaignID: id, GeneratedAt: at, Suites: []SuiteSummary{s}}
	}
	res := func(id string, v verdict.Verdict) Result {
		return Result{ExecutionID: "s.p.e." + id, SuiteID: "s", SuiteDefinitionHash: "h1", Verdict: v, Cleanup: CleanupPassed}
	}
	cur := &Campaign{CampaignID: "now", GeneratedAt: "2026-01-05T00:00:00Z", Suites: []SuiteSummary{suite("h1", true, 1)},
		Results: []Result{res("a", verdict.Failed), res("b", verdict.Passed)}}
	hist := &History{Campaigns: []HistoryCampaign{
		camp("future", "2026-01-09T00:00:00Z", suite("h1", true, 0)),                                                                     // newer: never a baseline
		camp("now", "2026-01-05T00:00:00Z", suite("h1", true, 0)),                                                                        // itself (an earlier generation)
		{CampaignID: "now-regrade", GeneratedAt: "2026-01-05T00:00:00Z", Suites: []SuiteSummary{suite("h1", true, 0)}, RegradeOf: "now"}, // its regrade: its times
		camp("other-def", "2026-01-04T00:00:00Z", suite("h0", true, 0)),
		camp("partial", "2026-01-03T00:00:00Z", suite("h1", false, 0)),
		camp("red", "2026-01-02T00:00:00Z", suite("h1", true, 1)),
		camp("green", "2026-01-01T00:00:00Z", suite("h1", true, 0)),
	}}
	green := &Campaign{CampaignID: "green", Results: []Result{res("a", verdict.Passed), res("b", verdict.Passed)}}
	read := func(id string) (*Campaign, error) {
		if id == "green" {
			return green, nil
		}
		return nil, errors.New("unexpected read of " + id)
	}
	bs := baselines(cur, hist, read)
	if len(bs) != 1 || bs[0].CampaignID != "green" || len(bs[0].Regressed) != 1 || bs[0].Regressed[0].ExecutionID != "s.p.e.a" || bs[0].Counts[StillPassing] != 1 {
		t.Fatalf("baselines: %+v", bs)
	}
	cur.Baselines = bs
	if since, ok := cur.RegressedSince("s.p.e.a"); !ok || since != "green" || cur.Regressions() != 1 {
		t.Errorf("RegressedSince: %q %v, %d regressions", since, ok, cur.Regressions())
	}
	bs = baselines(cur, hist, func(string) (*Campaign, error) { return nil, errors.New("gone") })
	if bs[0].CampaignID != "" || !strings.Contains(bs[0].Note, "latest green campaign green could not be read (gone)") {
		t.Errorf("unreadable baseline: %+v", bs[0])
	}
	bs = baselines(cur, &History{Campaigns: hist.Campaigns[:6]}, read)
	if bs[0].CampaignID != "" || bs[0].Note != "no earlier green campaign of this suite definition" {
		t.Errorf("without a green campaign: %+v", bs[0])
	}
}

// TestSanitizeWorkspaceDiff: a secret in a workspace diff's text, path or link target
// is redacted before anything is rendered.
func TestSanitizeWorkspaceDiff(t *testing.T) {
	t.Parallel()
	secret := "sk-live-0123456789abcdefSECRET"
	text := "token=" + secret + "\n"
	r := Result{WorkspaceDiff: []workspace.TurnDiff{{Turn: 1, Changes: []workspace.FileChange{
		{Path: "dir-" + secret + "/f.txt", Change: workspace.ChangeAdded, Type: workspace.TypeFile, After: &text},
		{Path: "link", Change: workspace.ChangeModified, Type: workspace.TypeSymlink, BeforeTarget: "/x/" + secret, Before: &text},
	}}}}
	SanitizeResult(redact.NewSet(secret), &r)
	b, err := EncodeResult(&r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("the secret survived sanitising:\n%s", b)
	}
	if *r.WorkspaceDiff[0].Changes[0].After == text || text != "token="+secret+"\n" {
		t.Errorf("the text was not redacted into a copy: %q", *r.WorkspaceDiff[0].Changes[0].After)
	}
}

// TestWorkspaceDiffValidated: a result.json whose workspace diff exceeds the bounds the
// attempt records it within is invalid, each problem named.
func TestWorkspaceDiffValidated(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", workspace.DiffTextBytes+1)
	got := checkWorkspaceDiff([]workspace.TurnDiff{{Turn: 0, Changes: []workspace.FileChange{{Change: "renamed", Type: "dir", After: &big}}}})
	want := []string{
		"workspaceDiff[0].turn: 0 is not positive",
		`workspaceDiff[0].changes[0].change: "renamed" is not added, removed or modified`,
		`workspaceDiff[0].changes[0].type: "dir" is not file, symlink or other`,
		"workspaceDiff[0].changes[0]: a text of 8193 bytes, more than 8192",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s", strings.Join(got, "\n"))
	}
	if p := checkWorkspaceDiff([]workspace.TurnDiff{{Turn: 1, Changes: []workspace.FileChange{{Change: workspace.ChangeAdded, Type: workspace.TypeFile}}}}); len(p) != 0 {
		t.Errorf("a valid diff: %q", p)
	}
}

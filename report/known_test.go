package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// knownCampaign is a campaign of three cells: one passed, one known failure, one known
// failure that passed.
func knownCampaign() *result.Campaign {
	kf := &result.KnownFailure{Reason: "ends a rejected turn with no message", Expected: verdict.Failed, Since: "codex-acp 0.16.0", Source: "catalog/default/known-failures.yaml:4:5"}
	mk := func(id string, v verdict.Verdict, class verdict.FailureClass, k *result.KnownFailure) result.Result {
		r := result.Result{Schema: result.ResultSchema, ExecutionID: "s.p.local." + id, CampaignID: "c1", SuiteID: "s", SuiteDefinitionHash: "h",
			ProfileID: "p", EnvironmentID: "local", CaseID: id, Attempt: 1, Verdict: v, FailureClass: class, Cleanup: result.CleanupPassed,
			StartedAt: "2026-12-06T04:00:00Z", FinishedAt: "2026-12-06T04:00:01Z", DurationMs: 1000, KnownFailure: k,
			Evidence: []string{"s.p.local." + id + "/attempt-1/logs/flow.log"}}
		if v == verdict.Failed {
			r.Error = "matcher failed: #3 message_exact"
		}
		return r
	}
	rs := []result.Result{mk("a", verdict.Passed, "", nil), mk("b", verdict.Failed, verdict.CandidateFailure, kf), mk("c", verdict.Passed, "", kf)}
	return result.BuildCampaign("c1", nil, []string{"s.p.local.a", "s.p.local.b", "s.p.local.c"}, rs, nil, false)
}

// TestKnownFailureReports: summary.md counts known failures apart and lists them with
// their reason, outside "Needs attention", where the unexpected pass is; junit.xml has
// the known failure as skipped with its reason and the unexpected pass as a failure;
// the dashboard counts and labels both.
func TestKnownFailureReports(t *testing.T) {
	t.Parallel()
	c := knownCampaign()
	if c.ExitCode() != verdict.ExitFailed || c.KnownFailures != 1 || c.UnexpectedPasses != 1 {
		t.Fatalf("campaign %+v", c)
	}
	sum := string(Summary(c))
	for _, w := range []string{
		"Passed: 1/3 · Failed: 1 · Inconclusive: 0 · Known failures: 1 · Unexpectedly passed (remove from the known failures): 1",
		"## Known failures\n\nCells the catalog's baseline expects to fail",
		"- **s.p.local.b** — ends a rejected turn with no message (known since codex-acp 0.16.0; catalog/default/known-failures.yaml:4:5): candidate\\_failure; matcher failed",
		"- **s.p.local.c** — failed (unexpectedly passed — remove it from the baseline: catalog/default/known-failures.yaml:4:5)",
		"| s.p.local.b | known failure (failed as expected) |",
	} {
		if !strings.Contains(sum, w) {
			t.Errorf("summary.md lacks %q:\n%s", w, sum)
		}
	}
	if att := sum[strings.Index(sum, "## Needs attention"):strings.Index(sum, "## Known failures")]; strings.Contains(att, "s.p.local.b") {
		t.Errorf("the known failure is under Needs attention:\n%s", att)
	}
	junit := string(JUnit(c))
	for _, w := range []string{
		`name="s.p.local.b" time="1.000">` + "\n      <skipped>known failure since codex-acp 0.16.0: ends a rejected turn with no message",
		`<failure message="failed (unexpectedly passed — remove it from the baseline: catalog/default/known-failures.yaml:4:5): ok" type="unexpected_pass">`,
		`tests="3" failures="1"`,
	} {
		if !strings.Contains(junit, w) {
			t.Errorf("junit.xml lacks %q:\n%s", w, junit)
		}
	}
	dash, err := Dashboard(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`id="count-known">1</b><span>known failures`, `data-state="known_failure" data-verdict="known_failure"`,
		`known failure since codex-acp 0.16.0: ends a rejected turn with no message`, `failed: unexpectedly passed — remove it from the baseline`} {
		if !strings.Contains(string(dash), w) {
			t.Errorf("dashboard lacks %q", w)
		}
	}
}

// TestNothingNeedsAttentionWithKnownFailures: a campaign whose only non-passing cells
// are known failures (and, in the second case, cells not run here) says in summary.md
// and the dashboard that nothing failed or was inconclusive, counts the known failures
// with where to see them (the dashboard: a link to the known-failure filter), and
// counts the cells not run here too; the dashboard shows "Needs attention" before the
// regressions block.
func TestNothingNeedsAttentionWithKnownFailures(t *testing.T) {
	t.Parallel()
	kf := knownCampaign()
	rs := []result.Result{}
	for _, r := range kf.Results {
		if r.ExecutionID != "s.p.local.c" {
			rs = append(rs, r)
		}
	}
	for _, tc := range []struct {
		name      string
		ids       []string
		notRun    map[string]string
		summary   string
		dashboard string
	}{
		{"known failures only", []string{"s.p.local.a", "s.p.local.b"}, nil,
			"Nothing failed or was inconclusive: 1 known failure(s) ended as the baseline expects (section Known failures).\n",
			`id="triage-none">Nothing failed or was inconclusive: 1 known failure(s) ended as the baseline expects (<a href="#verdict=known_failure">show them</a>).</p>`},
		{"and not run here", []string{"s.p.local.a", "s.p.local.b", "s.p.local.d"}, map[string]string{"s.p.local.d": "needs root"},
			"Nothing failed or was inconclusive: 1 known failure(s) ended as the baseline expects (section Known failures); 1 selected cell(s) were not run here (section Not run here): they did not pass either.\n",
			`id="triage-none">Nothing failed or was inconclusive: 1 known failure(s) ended as the baseline expects (<a href="#verdict=known_failure">show them</a>); 1 selected cell(s) were not run here: they did not pass either.</p>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			all := slices.Clone(rs)
			for id, why := range tc.notRun { // as the report assembles a cell not run here
				r := result.Synthetic(nil, "c1", id, why)
				r.NotRunHere, r.Verdict, r.FailureClass, r.Error = why, "", "", why
				all = append(all, r)
			}
			c := result.BuildCampaign("c1", nil, tc.ids, all, nil, false)
			if c.KnownFailures != 1 || c.Failed != 0 || c.NotRun != len(tc.notRun) {
				t.Fatalf("campaign %+v", c)
			}
			if sum := string(Summary(c)); !strings.Contains(sum, tc.summary) {
				t.Errorf("summary.md lacks %q:\n%s", tc.summary, sum)
			}
			dash, err := Dashboard(c, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := string(dash)
			if !strings.Contains(d, tc.dashboard) {
				i := strings.Index(d, `id="triage-none"`)
				t.Errorf("dashboard's Needs attention: want %s, got %.300s", tc.dashboard, d[max(i, 0):])
			}
			if i, j := strings.Index(d, `id="triage-none"`), strings.Index(d, `<div id="regressions">`); i < 0 || j < 0 || j < i {
				t.Errorf("the regressions block (at %d) is not after Needs attention's first line (at %d)", j, i)
			}
		})
	}
}

package result

import (
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// qualifiedResult is a result of profile on case cs with the given verdict and CLI
// version ("" : agentproof's own agent).
func qualifiedResult(suite, profile, cs string, v verdict.Verdict, cliVersion string) Result {
	r := Result{ExecutionID: suite + "." + profile + ".local." + cs, SuiteID: suite, ProfileID: profile, EnvironmentID: "local",
		CaseID: cs, Verdict: v, Attempt: 1, Cleanup: CleanupPassed, Model: "m", Provider: "p",
		Evidence: []string{suite + "/" + profile + "/local/" + cs + "/attempt-1/logs/flow.log"}}
	if cliVersion != "" {
		r.RuntimeFacts = []RuntimeFacts{{Driver: "exec:codex", CLIName: "codex", CLIVersion: cliVersion}}
	}
	return r
}

// TestQualifyTwoCLIVersions: a runner that passed a boundary at one CLI version and
// fails it at the next shows failed since that version, with both in its history; a
// boundary it kept passing shows passed since the first; a case two suites ran in one
// campaign counts once, as the worse; cases are grouped by capability in order.
func TestQualifyTwoCLIVersions(t *testing.T) {
	t.Parallel()
	a := &Campaign{CampaignID: "camp-a", GeneratedAt: "2026-12-01T00:00:00Z", Results: []Result{
		qualifiedResult("nb", "codex", "permission-approve-write", verdict.Passed, "0.170.0"),
		qualifiedResult("nb", "codex", "pending-permission-stop", verdict.Passed, "0.170.0"),
		qualifiedResult("core", "reference", "message-marker", verdict.Passed, ""),
	}}
	b := &Campaign{CampaignID: "camp-b", GeneratedAt: "2026-12-02T00:00:00Z", Results: []Result{
		qualifiedResult("nb", "codex", "permission-approve-write", verdict.Failed, "0.171.0"),
		qualifiedResult("nb", "codex", "pending-permission-stop", verdict.Passed, "0.171.0"),
		qualifiedResult("core", "reference", "message-marker", verdict.Passed, ""),
		qualifiedResult("more", "reference", "message-marker", verdict.Inconclusive, ""),
		qualifiedResult("core", "reference", "mystery-case", verdict.Passed, ""),
	}}
	q := Qualify([]*Campaign{b, a})
	if len(q.Campaigns) != 2 || q.Campaigns[0].CampaignID != "camp-a" {
		t.Fatalf("campaigns %+v, want camp-a then camp-b", q.Campaigns)
	}
	var caps []Capability
	for _, c := range q.Capabilities {
		caps = append(caps, c.Name)
	}
	if len(caps) != 4 || caps[0] != CapBasics || caps[1] != CapPermissions || caps[2] != CapStop || caps[3] != CapOther {
		t.Errorf("capabilities %v", caps)
	}
	if len(q.Runners) != 2 || q.Runners[0].Profile != "codex" || q.Runners[0].CLIVersion != "0.171.0" || q.Runners[0].Driver != "exec:codex" {
		t.Fatalf("runners %+v", q.Runners)
	}
	codex := q.Runners[0].Cells
	perm, stop := codex[0], codex[1]
	if perm.Case != "permission-approve-write" || perm.State != StateFailed || perm.SinceVersion != "0.171.0" || len(perm.History) != 2 ||
		perm.History[0].State != StatePassed || perm.History[0].CLIVersion != "0.170.0" {
		t.Errorf("the approve boundary: %+v", perm)
	}
	if stop.State != StatePassed || stop.SinceVersion != "0.170.0" || stop.SinceCampaign != "camp-a" {
		t.Errorf("the Stop boundary: %+v", stop)
	}
	ref := q.Runners[1].Cells[0]
	if ref.State != StateInconclusive || len(ref.History) != 2 || ref.History[1].Suite != "core,more" || ref.SinceCampaign != "camp-b" {
		t.Errorf("the reference agent's message-marker: %+v", ref)
	}
	if perm.Evidence != "camp-b/nb/codex/local/permission-approve-write/attempt-1/" {
		t.Errorf("evidence %q", perm.Evidence)
	}
}

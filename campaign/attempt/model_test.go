package attempt

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"

	"github.com/agentproof/agentproof/verdict"
)

// TestCLIFailureClasses: a CLI's own failure is the candidate's; a model stream closed
// before completion is a scripted-model defect, an idle scripted model and
// an MCP server that did not start are the harness's (inconclusive, never failed);
// live, the stream and idleness are the provider's and the text rules apply to
// the rest.
func TestCLIFailureClasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg    string
		pace   Pace
		origin verdict.Origin
		want   verdict.FailureClass
	}{
		{"run r failed: exited with code 1; codex reported: agentproof scripted model: step 1 (call x)", PaceScripted, verdict.Candidate, verdict.CandidateFailure},
		{"run r failed: codex reported: stream disconnected before completion: closed", PaceScripted, verdict.Harness, verdict.PermanentInfrastructure},
		{"run r failed: codex reported: idle timeout waiting for SSE", PaceScripted, verdict.Harness, verdict.TransientInfrastructure},
		{"run r failed: required MCP servers failed to initialize: agentproof", PaceScripted, verdict.Harness, verdict.TransientInfrastructure},
		{"run r failed: codex reported: stream disconnected before completion: closed", PaceLive, verdict.Provider, verdict.ProviderVariance},
		{"run r failed: codex reported: idle timeout waiting for SSE", PaceLive, verdict.Provider, verdict.ProviderVariance},
		{"run r failed: 401 unauthorized: invalid api key", PaceLive, verdict.Provider, verdict.PermanentInfrastructure},
		{"run r failed: exited with code 1", PaceLive, verdict.Candidate, verdict.CandidateFailure},
	} {
		if f := cliFault(tc.pace, tc.msg); f.Origin != tc.origin || f.Class != tc.want {
			t.Errorf("%s %q: %s/%s, want %s/%s", tc.pace, tc.msg, f.Origin, f.Class, tc.origin, tc.want)
		}
	}
}

// TestModelScriptsByProfile: oracle scripts follow the reference turns, nop and wrong
// scripts cover every expected run.
func TestModelScriptsByProfile(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"core-compatibility.codex.local.plan-revise-accept":                 "write_document",
		"cli-calibration.opencode-nop.local.message-marker":                 "",
		"local-session-integrity.opencode.local.structured-question-resume": "request_human_input",
	} {
		cell := c.Cell(id)
		rc, err := cell.Render("n0nce1")
		if err != nil {
			t.Fatal(err)
		}
		scripts, err := ModelScripts(campaign.AttemptPlan{Cell: cell, Case: rc}, "/workspace")
		if err != nil {
			t.Fatal(err)
		}
		if len(scripts) != cell.Case.ExpectedRunCount {
			t.Errorf("%s: %d scripts, want %d (one per run)", id, len(scripts), cell.Case.ExpectedRunCount)
		}
		first := scripts[0].Steps[0]
		if first.Call != want || (want == "" && !strings.Contains(first.Answer, "will not")) {
			t.Errorf("%s: first step %+v, want call %q", id, first, want)
		}
	}
}

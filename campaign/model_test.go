package campaign

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"

	"github.com/agentproof/agentproof/verdict"
)

// TestCLIFailureClasses: a CLI's own failure is the candidate's; a model stream closed
// before completion is a scripted-model defect (F08), an idle timeout (F09) and an MCP
// server that did not start are infrastructure (inconclusive, never failed).
func TestCLIFailureClasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg  string
		want verdict.FailureClass
	}{
		{"run r failed: exited with code 1; codex reported: agentproof scripted model: step 1 (call x)", verdict.CandidateFailure},
		{"run r failed: codex reported: stream disconnected before completion: closed", verdict.PermanentInfrastructure},
		{"run r failed: codex reported: idle timeout waiting for SSE", verdict.TransientInfrastructure},
		{"run r failed: required MCP servers failed to initialize: agentproof", verdict.TransientInfrastructure},
	} {
		if got := ClassifyError(cliFailureError(tc.msg)); got != tc.want {
			t.Errorf("%q classed %s, want %s", tc.msg, got, tc.want)
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
		scripts, err := ModelScripts(AttemptPlan{Cell: cell, Case: rc})
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

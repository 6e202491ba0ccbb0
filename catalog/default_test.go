package catalog

import (
	"github.com/agentproof/agentproof/agent/clis"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDefaultCatalog pins the embedded default catalog's shape: suites, sizes,
// calibration expectations.
func TestDefaultCatalog(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for _, cell := range c.Cells {
		sizes[cell.Suite.ID]++
	}
	wantSizes := map[string]int{"calibration": 4, "grader-calibration": 24, "core-compatibility": 9, "local-session-integrity": 6, "warm-continuity": 1,
		"cli-calibration": 4, "claude": 6, "sandbox-compatibility": 6, "hostile-sandbox": 9, "container-compatibility": 6, "calibration-container": 4, "hostile-container": 9, "hostile-local": 6, "board-idempotency": 9, "agent-files": 3, "board-idempotency-cli": 4, "board-idempotency-opencode": 4,
		"native-boundaries": 18, "native-boundaries-cli": 6, "native-boundaries-claude": 3, "native-boundaries-warm-claude": 1, "native-boundaries-warm": 6, "native-boundaries-warm-cli": 2,
		"native-boundaries-undo": 4, "native-boundaries-order": 4, "native-boundaries-opencode": 3, "native-boundaries-warm-opencode": 1, "native-boundaries-sandbox-cli": 6, "native-boundaries-warm-sandbox-cli": 1, "native-boundaries-pi": 6, "native-boundaries-pi-undo": 1, "native-boundaries-warm-pi": 2, "native-boundaries-codex-app": 10, "native-boundaries-warm-codex-app": 2, "native-boundaries-codex-app-calibration": 12, "native-boundaries-claude-app": 8, "native-boundaries-warm-claude-app": 2, "native-boundaries-claude-app-calibration": 12, "pi-native": 10, "journey-calibration": 8, "product-journeys": 4, "task-title-calibration": 6, "task-titles": 4, "agent-chat-calibration": 3, "agent-chat": 2, "runtime-mode-calibration": 1,
		"coding-tasks-calibration": 3, "coding-tasks-hostile": 2, "coding-tasks": 2, "coding-tasks-sandbox": 2, "coding-tasks-sessions": 3, "coding-tasks-shell": 2, "coding-tasks-claude": 1, "coding-tasks-claude-acp": 1, "coding-tasks-container": 3, "coding-tasks-container-hostile": 1, "coding-tasks-container-sessions": 2,
		BreadthLiveSuite: 5, BreadthOfflineSuite: 5, "more-clis-calibration": 6, "more-clis": 12}
	if diff := cmp.Diff(wantSizes, sizes); diff != "" {
		t.Errorf("suite sizes (-want +got):\n%s", diff)
	}
	verdicts := map[string]string{}
	for _, cell := range c.Cells {
		if cell.ExpectedVerdict != "" {
			verdicts[cell.Profile.ID+"@"+cell.Environment.ID] = string(cell.ExpectedVerdict)
		}
	}
	wantVerdicts := map[string]string{
		"fixture-pass@local": "passed", "fixture-fail@local": "failed", "fixture-hang@local": "inconclusive", "fixture-noisy@local": "inconclusive",
		"fixture-pass@container": "passed", "fixture-fail@container": "failed", "fixture-hang@container": "inconclusive", "fixture-noisy@container": "inconclusive",
		"reference@local": "passed", "nop@local": "failed", "wrong@local": "failed", "leaky@local": "failed",
		"codex@local": "passed", "codex-nop@local": "failed", "opencode@local": "passed", "opencode-nop@local": "failed",
		// the hostile suite: contained in the sandbox (the limits fail the cell, named);
		// under local the read, environ, connect and write attacks succeed (secret_leak)
		// and the daemon escapes its process group (cleanup_failure)
		"hostile-read-server@sandbox-hostile": "passed", "hostile-write-server@sandbox-hostile": "passed", "hostile-daemon@sandbox-hostile": "passed",
		"hostile-proc-environ@sandbox-hostile": "passed", "hostile-connect@sandbox-hostile": "passed", "hostile-write-outside@sandbox-hostile": "passed",
		"hostile-forkbomb@sandbox-hostile": "failed", "hostile-memory@sandbox-hostile": "failed", "hostile-diskfill@sandbox-hostile": "failed",
		// the same attacks contained in a container (the limits named from its cgroup's counters)
		"hostile-read-server@container-hostile": "passed", "hostile-write-server@container-hostile": "passed", "hostile-daemon@container-hostile": "passed",
		"hostile-proc-environ@container-hostile": "passed", "hostile-connect@container-hostile": "passed", "hostile-write-outside@container-hostile": "passed",
		"hostile-forkbomb@container-hostile": "failed", "hostile-memory@container-hostile": "failed", "hostile-diskfill@container-hostile": "failed",
		"hostile-read-server@local": "failed", "hostile-write-server@local": "failed", "hostile-proc-environ@local": "failed",
		"hostile-connect@local": "failed", "hostile-write-outside@local": "failed", "hostile-daemon@local": "failed",
		"acp-reference@local": "passed", "acp-nop@local": "failed", "acp-wrong@local": "failed",
		"acp-reference-warm@local": "passed", "acp-reference-per-turn@local": "failed", "acp-wrong-warm@local": "failed",
		// the same calibration with the ACP agent inside the sandbox lease, and the covering
		// agent (only no_mutation catches it)
		"acp-reference@sandbox": "passed", "acp-nop@sandbox": "failed", "acp-wrong@sandbox": "failed",
		"acp-reference-warm@sandbox": "passed", "acp-reference-per-turn@sandbox": "failed", "acp-wrong-warm@sandbox": "failed",
		"acp-wrong-undo@local": "failed", "acp-wrong-undo@sandbox": "failed",
		// the approvals that do not cover the write (only permission_order catches them)
		"acp-write-first@local": "failed", "acp-write-first@sandbox": "failed", "acp-ask-other@local": "failed", "acp-ask-other@sandbox": "failed",
		"kilo@local": "passed", "kilo-nop@local": "failed", "qwen@local": "passed", "qwen-nop@local": "failed", "copilot@local": "passed", "copilot-nop@local": "failed",
		"pi@local": "passed", "pi-nop@local": "failed", "pi-wrong-undo@local": "failed", "reference-legacy@local": "failed", "pi-warm@local": "passed", "pi-per-turn@local": "failed",
		"codex-app-nop@local": "failed", "codex-app-wrong@local": "failed", "codex-app-on-request@local": "failed",
		"claude-app-nop@local": "failed",
		// the coding task's tampering twin in a container (verifier_tampered)
		"reference@container": "failed", "claude-app-wrong@local": "failed", "claude-app-bypass@local": "failed",
	}
	if diff := cmp.Diff(wantVerdicts, verdicts); diff != "" {
		t.Errorf("calibration verdicts (-want +got):\n%s", diff)
	}
	for _, cell := range c.Cells {
		if cell.Suite.ID == "core-compatibility" && cell.ExpectedVerdict != "" {
			t.Errorf("%s: a non-calibration cell declares verdict %q", cell.ID, cell.ExpectedVerdict)
		}
		if len(cell.RequiredCredentials) != 0 {
			t.Errorf("%s needs credentials %v; the default catalog runs offline", cell.ID, cell.RequiredCredentials)
		}
		// Manual-only exactly when the suite runs an optional CLI (installed only on
		// request: .ci/run does not) or is the live breadth suite.
		optional := false
		for _, pr := range cell.Suite.ResolvedProfiles() {
			if name, ok := pr.Driver.Package(); ok {
				if pin, _ := clis.Lookup(name); pin.Optional {
					optional = true
				}
			}
		}
		// explicitOnly: these journeys run only when selected explicitly, and a CLI already covered
		// by run --all makes them minutes long.
		explicitOnly := cell.Suite.ID == "board-idempotency-opencode"
		if manual := optional || explicitOnly || cell.Suite.ID == BreadthLiveSuite; manual != cell.Suite.ManualOnly {
			t.Errorf("%s: manual-only = %v; want it exactly for the suites of optional CLIs, the explicit-only journeys and the live breadth suite", cell.ID, cell.Suite.ManualOnly)
		}
		if (cell.Profile.Driver.String() == "reference" || strings.HasPrefix(cell.Profile.Driver.String(), "exec:")) && cell.Case.Reference == nil {
			t.Errorf("%s: no reference script", cell.ID)
		}
	}
	if got := c.Cell("core-compatibility.reference.local.message-marker").AttemptTimeoutMs; got != 480000 {
		t.Errorf("message-marker attempt timeout = %d ms, want 480000", got)
	}
}

// TestRenderDefaultCases renders every default case for one attempt and checks the
// per-attempt nonce reaches markers, matchers and the reference script.
func TestRenderDefaultCases(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	const nonce = "a1b2c3d4e5"
	for _, cell := range c.Cells {
		r, err := cell.Render(nonce)
		if err != nil {
			t.Fatalf("%s: %v", cell.ID, err)
		}
		if cell.Case.Flow == "process_exit" {
			continue
		}
		if !strings.HasSuffix(r.Marker, "_"+nonce) || (!strings.Contains(r.Title, nonce) && !cell.Case.Untitled) || (cell.Case.Untitled && r.Title != "") {
			t.Errorf("%s: marker %q / title %q lack the nonce", cell.ID, r.Marker, r.Title)
		}
		for _, s := range append([]string{r.Title, r.Prompt, r.RevisionRequest}, r.Followups...) {
			if strings.Contains(s, "{{") {
				t.Errorf("%s: unrendered template in %q", cell.ID, s)
			}
		}
		if len(r.Reference.Turns) != len(cell.Case.Reference.Turns) {
			t.Errorf("%s: %d reference turns rendered of %d", cell.ID, len(r.Reference.Turns), len(cell.Case.Reference.Turns))
		}
	}

	mm := c.Cell("core-compatibility.reference.local.message-marker")
	r, _ := mm.Render(nonce)
	if r.Marker != "PAPERCLIP_E2E_OK_"+nonce {
		t.Errorf("marker = %q", r.Marker)
	}
	last := r.Reference.Turns[0].Steps[1]
	if last.Command != "finish_task" || last.Args["summary"] != r.Marker || !last.Present {
		t.Errorf("message-marker reference finish step = %+v", last)
	}
	wantKinds := map[string]any{"message_exact": r.Marker, "issue_status": "done", "run_status": "succeeded", "runtime_mode": "native", "environment": "local"}
	for _, m := range r.Matchers {
		if w, ok := wantKinds[string(m.Kind)]; ok && m.Expected != w {
			t.Errorf("matcher %s expected = %v, want %v", m.Kind, m.Expected, w)
		}
	}

	warm, _ := c.Cell("warm-continuity.reference.local.warm-three-turn").Render(nonce)
	if warm.WorkspaceFile != "warm-"+nonce+".txt" || len(warm.Followups) != 2 || len(warm.TurnMarkers) != 3 {
		t.Fatalf("warm render = %+v", warm)
	}
	var file strings.Builder
	for _, turn := range warm.Reference.Turns {
		e := turn.Steps[0].Edit
		if e == nil || e.Path != warm.WorkspaceFile || e.Append == nil {
			t.Fatalf("warm turn edit = %+v", e)
		}
		file.WriteString(*e.Append)
	}
	for _, m := range warm.Matchers {
		if m.Kind == "file_exact" && m.Expected != file.String() {
			t.Errorf("warm file_exact expects %q; the reference script writes %q", m.Expected, file.String())
		}
	}

	if _, err := mm.Render("bad nonce!"); err == nil {
		t.Error("Render accepted a malformed nonce")
	}
}

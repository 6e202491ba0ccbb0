package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/catalog"
)

// defCatalog is the default catalog plus a suite "def" of the reference agent on a
// case "def-marker" whose message_exact matcher expects expected.
func defCatalog(t *testing.T, expected string) *catalog.Catalog {
	t.Helper()
	dir := t.TempDir()
	src := `cases:
  - id: def-marker
    label: Marker
    workMode: standard
    flow: single_turn
    expectedRunCount: 1
    attemptTimeoutMs: {local: 480000}
    expectedTerminalState: {issue: done, run: succeeded}
    title: "Def {{nonce}}"
    prompt: "Say {{marker}}"
    marker: "DEF_{{nonce}}"
    matchers:
      - {kind: message_exact, expected: "` + expected + `"}
    reference:
      turns:
        - trigger: assignment
          steps:
            - command: finish_task
              args: {summary: "{{marker}}"}
              present: true
suites:
  - id: def
    label: Def
    description: A suite whose matcher the test edits.
    profiles: [reference, nop]
    environments: [local]
    cases: [def-marker]
    expectedMatrixSize: 2
`
	if err := os.WriteFile(filepath.Join(dir, "def.yaml"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.LoadSources(catalog.Sources{Default: true, Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestResumeDefinitionChanged: a campaign whose suite's matcher changed since it
// started is refused naming the field; with NewDefinition it starts a boundary (every
// cell of the suite runs again, nothing of the old definition is kept, the boundary is
// recorded); a hand-edited plan.json is refused.
func TestResumeDefinitionChanged(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	old := defCatalog(t, "{{marker}}")
	now := func() time.Time { return time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC) }
	p, err := NewPlan(old, catalog.Selector{Suites: []string{"def"}}, Options{CampaignID: "d", MaxParallel: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePlanRecord(root, p); err != nil {
		t.Fatal(err)
	}
	// The reference cell finishes; the campaign is then interrupted.
	for i, u := range p.Units {
		if strings.Contains(u.Cell.ID, ".reference.") {
			p.Units = p.Units[i : i+1]
			break
		}
	}
	(&Scheduler{Executor: &scriptedExecutor{script: func(AttemptPlan) Outcome { return passOutcome }}, ResultsRoot: root}).Run(context.Background(), p)

	edited := defCatalog(t, "X{{marker}}")
	_, err = ResumePlan(edited, root, Resume, Options{CampaignID: "d", MaxParallel: 1})
	var re *ResumeError
	if !errors.As(err, &re) || len(re.Problems) != 1 ||
		!strings.Contains(re.Problems[0], `suite def changed since the campaign started (first change: grading.cases[def-marker].matchers[0].expected (was "{{marker}}", now "X{{marker}}"))`) ||
		!strings.Contains(re.Problems[0], "--new-definition") {
		t.Fatalf("resume after a matcher edit: %v", err)
	}
	if rp, err := ResumePlan(old, root, Resume, Options{CampaignID: "d", MaxParallel: 1}); err != nil || len(rp.Kept) != 1 || len(rp.Units) != 1 {
		t.Fatalf("resume with the same catalog: %v (kept %d, units %d)", err, len(rp.Kept), len(rp.Units))
	}
	rp, err := ResumePlan(edited, root, Resume, Options{CampaignID: "d", MaxParallel: 1, NewDefinition: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.Kept) != 0 || len(rp.Units) != 2 || len(rp.Boundaries) != 1 || rp.Boundaries[0].SuiteID != "def" ||
		!strings.Contains(rp.Boundaries[0].Change, "matchers[0].expected") {
		t.Errorf("new definition: kept %d units %d boundaries %+v", len(rp.Kept), len(rp.Units), rp.Boundaries)
	}
	for _, u := range rp.Units {
		if u.Cell.Suite.Fingerprint != edited.Suite("def").Fingerprint || (strings.Contains(u.Cell.ID, "reference") && u.FirstAttempt != 2) {
			t.Errorf("unit %s first attempt %d", u.Cell.ID, u.FirstAttempt)
		}
	}
	if err := WritePlanRecord(root, rp); err != nil {
		t.Fatal(err)
	}
	if _, err := ResumePlan(edited, root, Resume, Options{CampaignID: "d", MaxParallel: 1}); err != nil {
		t.Errorf("resume of the new definition: %v", err)
	}

	// plan.json edited by hand: its digest no longer matches.
	path := filepath.Join(root, "d", PlanFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	rec["repeat"] = 1.0
	rec["seed"] = 7.0
	b, _ = json.Marshal(rec)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ResumePlan(edited, root, Resume, Options{CampaignID: "d"}); !errors.As(err, &re) || !strings.Contains(err.Error(), "was edited after agentproof run wrote it") {
		t.Errorf("hand-edited plan.json: %v", err)
	}
}

package campaign

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// TestSchedulerKnownFailures: a known-failure cell that fails as expected is counted
// apart (its line leads with "known failure" and its reason), one that passes counts
// as failed and says to remove it from the baseline, and both record their entry in
// result.json; the last line counts the known failures separately.
func TestSchedulerKnownFailures(t *testing.T) {
	t.Parallel()
	const (
		known      = "core-compatibility.reference.local.message-marker"
		unexpected = "core-compatibility.reference.local.ask-question"
		plain      = "core-compatibility.reference.local.plan-revise-accept"
	)
	dir := t.TempDir()
	kf := "knownFailures:\n  - {cell: " + known + ", reason: ends the turn with no message, expected: failed, since: ref 1}\n" +
		"  - {cell: " + unexpected + ", reason: never asks, expected: failed, since: ref 1}\n"
	if err := os.WriteFile(filepath.Join(dir, "known-failures.yaml"), []byte(kf), 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.LoadSources(catalog.Sources{Default: true, Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(cat, catalog.Selector{IDs: []string{known, unexpected, plain}}, Options{CampaignID: "kf", MaxParallel: 1,
		Now: fixedClock(time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC), time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	exec := &scriptedExecutor{script: func(plan AttemptPlan) Outcome {
		if plan.Cell.ID == known {
			return failOutcome
		}
		return passOutcome
	}}
	root := t.TempDir()
	var lines []string
	sum := (&Scheduler{Executor: exec, ResultsRoot: root, Observe: func(e Event) {
		if l := plainLine(e); e.Kind == EventAttemptFinished {
			lines = append(lines, l)
		}
	}}).Run(context.Background(), p)
	if sum.Passed != 1 || sum.Failed != 1 || sum.KnownFailures != 1 || sum.UnexpectedPasses != 1 || sum.Inconclusive != 0 {
		t.Errorf("summary %+v", *sum)
	}
	want := "Campaign kf: 1/3 passed, 1 failed, 0 inconclusive, 1 known failure(s) (1 of the failed unexpectedly passed: remove them from the known failures)"
	if sum.Line() != want {
		t.Errorf("line %q\nwant %q", sum.Line(), want)
	}
	text := strings.Join(lines, "\n")
	for _, w := range []string{"known failure (failed as expected; known since ref 1) " + known,
		"]: ends the turn with no message",
		"failed (unexpectedly passed — remove it from the baseline: " + filepath.Join(dir, "known-failures.yaml") + ":3:5) " + unexpected,
		"] passed " + plain} {
		if !strings.Contains(text, w) {
			t.Errorf("progress lacks %q:\n%s", w, text)
		}
	}
	for _, c := range sum.Cells {
		b, err := os.ReadFile(filepath.Join(root, c.Attempts[0].Plan.Dir, ResultFile))
		if err != nil {
			t.Fatal(err)
		}
		r, err := result.DecodeResult(c.Cell.ID, b)
		if err != nil {
			t.Fatal(err)
		}
		if (r.KnownFailure != nil) != (c.Cell.ID != plain) || (r.KnownFailure != nil && r.KnownFailure.Expected != verdict.Failed) {
			t.Errorf("%s: knownFailure %+v", c.Cell.ID, r.KnownFailure)
		}
	}
}

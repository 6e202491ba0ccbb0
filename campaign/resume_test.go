package campaign

// The executor here is the scripted fake of schedule_test.go: these tests cover only
// the scheduler's and the planner's bookkeeping of repetitions and resumed campaigns
// (which repetition runs, with which attempt number, how the cells count). Real
// attempts of repeated and resumed campaigns run in internal/cli (run_repeat.txtar,
// TestRunInterrupted).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
)

// TestRepeatsAndResume: --repeat 3 runs every repetition in its own directory and
// counts the cell by verdict.Repeated (flaky when mixed); ResumePlan keeps the stored
// results, runs a repetition whose result is gone after its highest attempt directory,
// and RerunFailed reruns the failed repetitions only.
func TestRepeatsAndResume(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	askCell := "core-compatibility.reference.local.ask-question"
	sel := catalog.Selector{IDs: []string{markerCell, askCell}}
	p := newTestPlan(t, sel, Options{MaxParallel: 2, Repeat: 3})
	if len(p.Units) != 6 {
		t.Fatalf("units = %d, want 6 (2 cells × 3)", len(p.Units))
	}
	if err := WritePlanRecord(root, p); err != nil {
		t.Fatal(err)
	}
	// The ask-question cell fails its second repetition: flaky, failed.
	script := func(plan AttemptPlan) Outcome {
		if plan.Cell.ID == askCell && plan.Repetition == 2 {
			return failOutcome
		}
		return passOutcome
	}
	sum := (&Scheduler{Executor: &scriptedExecutor{script: script}, ResultsRoot: root}).Run(context.Background(), p)
	if sum.Passed != 1 || sum.Failed != 1 || sum.Flaky != 1 || sum.Selected != 2 || sum.Partial {
		t.Fatalf("summary = %+v, want 1 passed, 1 failed (flaky) of 2 cells", sum)
	}
	if want := "Campaign test: 1/2 passed, 1 failed, 0 inconclusive (3 repetitions each, 1 flaky)"; sum.Line() != want {
		t.Errorf("line %q, want %q", sum.Line(), want)
	}
	cellDir := filepath.Join(root, "test", "core-compatibility", "reference", "local")
	for _, rep := range []string{"repeat-1", "repeat-2", "repeat-3"} {
		if _, err := os.Stat(filepath.Join(cellDir, "message-marker", rep, "attempt-1", ResultFile)); err != nil {
			t.Errorf("repetition %s: %v", rep, err)
		}
	}

	// A result lost with its attempt (killed mid-attempt): --resume runs only it, as
	// attempt 2 of its repetition.
	if err := os.Remove(filepath.Join(cellDir, "message-marker", "repeat-3", "attempt-1", ResultFile)); err != nil {
		t.Fatal(err)
	}
	c := loadDefault(t)
	rp, err := ResumePlan(c, root, Resume, Options{CampaignID: "test", MaxParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := []Unit{}
	for _, u := range rp.Units {
		got = append(got, Unit{Cell: &catalog.Cell{ID: u.Cell.ID}, Repetition: u.Repetition, FirstAttempt: u.FirstAttempt})
	}
	if diff := cmp.Diff([]Unit{{Cell: &catalog.Cell{ID: markerCell}, Repetition: 3, FirstAttempt: 2}}, got); diff != "" {
		t.Errorf("resumed units (-want +got):\n%s", diff)
	}
	if len(rp.Kept) != 5 || rp.Repeat != 3 {
		t.Errorf("kept %d repetitions with repeat %d, want 5 and 3", len(rp.Kept), rp.Repeat)
	}
	exec := &scriptedExecutor{script: script}
	sum = (&Scheduler{Executor: exec, ResultsRoot: root}).Run(context.Background(), rp)
	if len(exec.calls) != 1 || exec.calls[0].Dir != filepath.Join("test", "core-compatibility", "reference", "local", "message-marker", "repeat-3", "attempt-2") {
		t.Errorf("resumed calls %+v", exec.calls)
	}
	if sum.Passed != 1 || sum.Failed != 1 || sum.Kept != 5 || sum.Partial {
		t.Errorf("resumed summary = %+v, want the whole campaign counted", sum)
	}
	// The resumed attempt 2 says where this run started, so the report counts it as
	// no retry.
	b, err := os.ReadFile(filepath.Join(cellDir, "message-marker", "repeat-3", "attempt-2", ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	res, err := result.DecodeResult("attempt-2", b)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempt != 2 || res.FirstAttempt != 2 {
		t.Errorf("resumed result: attempt %d, firstAttempt %d, want 2 and 2", res.Attempt, res.FirstAttempt)
	}
	if sum.Retries != 0 {
		t.Errorf("resumed run counted %d retries, want 0", sum.Retries)
	}

	// --rerun-failed reruns the failed repetition 2 of ask-question, as attempt 2.
	rp, err = ResumePlan(c, root, RerunFailed, Options{CampaignID: "test", MaxParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.Units) != 1 || rp.Units[0].Cell.ID != askCell || rp.Units[0].Repetition != 2 || rp.Units[0].FirstAttempt != 2 {
		t.Errorf("rerun units %+v", rp.Units)
	}
	sum = (&Scheduler{Executor: &scriptedExecutor{script: func(AttemptPlan) Outcome { return passOutcome }}, ResultsRoot: root}).Run(context.Background(), rp)
	if sum.Passed != 2 || sum.Flaky != 0 {
		t.Errorf("after the rerun: %+v, want 2 passed, none flaky", sum)
	}

	// A suite whose definition changed, a campaign without plan.json and another
	// --repeat are refused, every problem at once.
	rec := p.Record()
	rec.Cells[0].SuiteDefinitionHash = "sha256:other"
	writeRecord(t, root, rec)
	_, err = ResumePlan(c, root, Resume, Options{CampaignID: "test", Repeat: 2})
	var re *ResumeError
	if !errors.As(err, &re) || len(re.Problems) != 2 {
		t.Errorf("changed suite: %v, want a ResumeError with 2 problems", err)
	}
	if _, err := ResumePlan(c, root, Resume, Options{CampaignID: "none"}); !errors.As(err, &re) {
		t.Errorf("no plan.json: %v", err)
	}
}

func writeRecord(t *testing.T, root string, rec PlanRecord) {
	t.Helper()
	p := &Plan{CampaignID: rec.CampaignID, Repeat: rec.Repeat}
	for _, pc := range rec.Cells {
		p.Cells = append(p.Cells, &catalog.Cell{ID: pc.ExecutionID, Suite: &catalog.Suite{Fingerprint: pc.SuiteDefinitionHash}})
	}
	if err := WritePlanRecord(root, p); err != nil {
		t.Fatal(err)
	}
}

func TestRepeatedNonces(t *testing.T) {
	t.Parallel()
	seed := int64(7)
	p := newTestPlan(t, catalog.Selector{IDs: []string{markerCell}}, Options{Seed: &seed, Repeat: 2})
	one, _ := p.AttemptOf(p.Cells[0], 1, 1)
	two, _ := p.AttemptOf(p.Cells[0], 2, 1)
	plain, _ := p.Attempt(p.Cells[0], 1)
	if one.Nonce == two.Nonce || one.Nonce != plain.Nonce {
		t.Errorf("nonces: repetition 1 %s, repetition 2 %s, Attempt %s: want repetition 1 = Attempt ≠ repetition 2", one.Nonce, two.Nonce, plain.Nonce)
	}
	if !slices.Contains([]string{filepath.Join("test", "core-compatibility", "reference", "local", "message-marker", "repeat-2", "attempt-1")}, two.Dir) {
		t.Errorf("dir %s", two.Dir)
	}
	if _, err := NewPlan(loadDefault(t), catalog.Selector{IDs: []string{markerCell}}, Options{Repeat: MaxRepeat + 1}); err == nil {
		t.Errorf("repeat %d accepted", MaxRepeat+1)
	}
}

package result

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

func TestStateFor(t *testing.T) {
	t.Parallel()
	cand, leak, infra := verdict.CandidateFailure, verdict.SecretLeak, verdict.TransientInfrastructure
	for _, tc := range []struct {
		counted verdict.Verdict
		class   verdict.FailureClass
		known   verdict.Verdict
		want    CellState
	}{
		{verdict.Passed, "", "", StatePassed},
		{verdict.Failed, cand, "", StateFailed},
		{verdict.Inconclusive, infra, "", StateInconclusive},
		{verdict.Failed, cand, verdict.Failed, StateKnownFailure},
		{verdict.Passed, "", verdict.Failed, StateUnexpectedPass},
		{verdict.Passed, "", verdict.Inconclusive, StateUnexpectedPass},
		{verdict.Failed, leak, verdict.Failed, StateFailed},                    // a leak is never hidden
		{verdict.Failed, verdict.CleanupFailure, verdict.Failed, StateFailed},  // nor a cleanup failure
		{verdict.Inconclusive, infra, verdict.Failed, StateInconclusive},       // not what was expected
		{verdict.Inconclusive, infra, verdict.Inconclusive, StateKnownFailure}, // any inconclusive class
		{verdict.Failed, cand, verdict.Inconclusive, StateFailed},              // worse than expected
	} {
		got := StateFor(tc.counted, tc.class, tc.known)
		if got != tc.want {
			t.Errorf("StateFor(%s, %s, %q) = %s, want %s", tc.counted, tc.class, tc.known, got, tc.want)
		}
	}
	for s, want := range map[CellState]verdict.Verdict{StatePassed: verdict.Passed, StateKnownFailure: verdict.Passed,
		StateFailed: verdict.Failed, StateUnexpectedPass: verdict.Failed, StateInconclusive: verdict.Inconclusive, StateMissing: verdict.Inconclusive} {
		if got := s.Counts(); got != want {
			t.Errorf("%s counts as %s, want %s", s, got, want)
		}
	}
}

// TestKnownFailureCounts: a campaign counts known failures apart (they do not fail
// it, and its suite can be green), and an unexpected pass as failed (exit 1), also
// when every other cell passed.
func TestKnownFailureCounts(t *testing.T) {
	t.Parallel()
	mk := func(id string, v verdict.Verdict, class verdict.FailureClass, known verdict.Verdict) Result {
		r, err := DecodeResult("r", []byte(validResult))
		if err != nil {
			t.Fatal(err)
		}
		r.ExecutionID, r.CaseID, r.Verdict, r.FailureClass = "s.p.local."+id, id, v, class
		if known != "" {
			r.KnownFailure = &KnownFailure{Reason: "ends the turn with no message", Expected: known, Since: "x 1.0"}
		}
		return *r
	}
	for _, tc := range []struct {
		name    string
		results []Result
		counts  [5]int // passed, failed, inconclusive, known, unexpected
		exit    verdict.ExitCode
	}{
		{"known failure", []Result{mk("a", verdict.Passed, "", ""), mk("b", verdict.Failed, verdict.CandidateFailure, verdict.Failed)}, [5]int{1, 0, 0, 1, 0}, verdict.ExitPassed},
		{"unexpected pass", []Result{mk("a", verdict.Passed, "", ""), mk("b", verdict.Passed, "", verdict.Failed)}, [5]int{1, 1, 0, 0, 1}, verdict.ExitFailed},
		{"known inconclusive", []Result{mk("b", verdict.Inconclusive, verdict.PermanentInfrastructure, verdict.Inconclusive)}, [5]int{0, 0, 0, 1, 0}, verdict.ExitPassed},
		{"leak in a known failure", []Result{mk("b", verdict.Failed, verdict.SecretLeak, verdict.Failed)}, [5]int{0, 1, 0, 0, 0}, verdict.ExitFailed},
	} {
		var ids []string
		for _, r := range tc.results {
			ids = append(ids, r.ExecutionID)
		}
		c := BuildCampaign("c1", nil, ids, tc.results, nil, true)
		got := [5]int{c.Passed, c.Failed, c.Inconclusive, c.KnownFailures, c.UnexpectedPasses}
		if got != tc.counts || c.ExitCode() != tc.exit || c.Passed+c.Failed+c.Inconclusive+c.KnownFailures != c.Selected {
			t.Errorf("%s: counts %v exit %d, want %v exit %d", tc.name, got, c.ExitCode(), tc.counts, tc.exit)
		}
		if s := c.Suites[0]; [5]int{s.Passed, s.Failed, s.Inconclusive, s.KnownFailures, s.UnexpectedPasses} != tc.counts {
			t.Errorf("%s: suite counts %+v", tc.name, s)
		}
	}
}

// TestCompareKnownFailures: compare shows a known failure and an unexpected pass as
// changes of their own, with the state beside the outcome and the entry's reason.
func TestCompareKnownFailures(t *testing.T) {
	t.Parallel()
	r, err := DecodeResult("r", []byte(validResult))
	if err != nil {
		t.Fatal(err)
	}
	a := &Campaign{CampaignID: "a", Results: []Result{*r}}
	known := *r
	known.Verdict, known.FailureClass, known.Error = verdict.Failed, verdict.CandidateFailure, "no message"
	known.KnownFailure = &KnownFailure{Reason: "ends the turn with no message", Expected: verdict.Failed, Since: "x 1.0"}
	unexpected := *r
	unexpected.KnownFailure = known.KnownFailure
	for _, tc := range []struct {
		b          Result
		change     Change
		state      CellState
		reasonPart string
	}{
		{known, ChangeKnownFailure, StateKnownFailure, "no message; known failure since x 1.0: ends the turn with no message"},
		{unexpected, ChangeUnexpectedPass, StateUnexpectedPass, "known failure since x 1.0"},
	} {
		cmpn := Compare(a, &Campaign{CampaignID: "b", Results: []Result{tc.b}})
		cc := cmpn.Cells[0]
		if cc.Change != tc.change || cc.StateAfter != tc.state || cmpn.HasRegression || cmpn.Counts[tc.change] != 1 || !strings.Contains(cc.Reason, tc.reasonPart) {
			t.Errorf("compare: %+v (counts %v)", cc, cmpn.Counts)
		}
	}
}

// TestBetterPrefersTheCurrentDefinition: of two valid attempts of a cell, one of the
// catalog's definition hash wins over a later one of another definition; without a
// current hash the latest wins.
func TestBetterPrefersTheCurrentDefinition(t *testing.T) {
	t.Parallel()
	old, err := DecodeResult("old", []byte(strings.ReplaceAll(validResult, "10:00:01Z", "11:00:00Z")))
	if err != nil {
		t.Fatal(err)
	}
	old.Attempt = 2
	cur, err := DecodeResult("cur", []byte(validResult))
	if err != nil {
		t.Fatal(err)
	}
	cur.SuiteDefinitionHash = "h2"
	a, b := &Candidate{Result: cur, Dir: "a"}, &Candidate{Result: old, Dir: "b"}
	if !better(a, b, "h2") || better(b, a, "h2") {
		t.Error("the attempt of the current definition did not win")
	}
	if better(a, b, "") || !better(b, a, "") {
		t.Error("without a current definition the latest attempt did not win")
	}
}

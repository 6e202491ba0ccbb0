package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/verdict"
)

const validResult = `{"schema":"agentproof.result/v1","executionId":"s.p.local.c","campaignId":"c1","suiteId":"s","suiteDefinitionHash":"h","profileId":"p","environmentId":"local","caseId":"c","provider":"x","model":"m","attempt":1,"verdict":"passed","runIds":["r"],"startedAt":"2026-11-29T10:00:00Z","finishedAt":"2026-11-29T10:00:01Z","durationMs":1000,"matcherResults":[{"kind":"run_status","passed":true,"detail":"matched"}],"termination":{"exitCode":0},"usage":{"inputTokens":3},"cleanup":"passed","evidence":["logs/agent.log"]}`

// edit returns validResult with one top-level field replaced (value "" removes it).
func edit(t *testing.T, field, value string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(validResult), &m); err != nil {
		t.Fatal(err)
	}
	if value == "" {
		delete(m, field)
	} else {
		m[field] = json.RawMessage(value)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeResultStrict(t *testing.T) {
	t.Parallel()
	if _, err := DecodeResult("ok", []byte(validResult)); err != nil {
		t.Fatalf("valid result rejected: %v", err)
	}
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field", edit(t, "extra", `1`), "unknown field"},
		{"trailing data", validResult + "{}", "trailing data"},
		{"schema", edit(t, "schema", `"paperclip.runner-e2e.result/v2"`), "schema"},
		{"id grammar", edit(t, "executionId", `"s.p.local"`), "executionId"},
		{"id disagrees", edit(t, "caseId", `"other"`), "caseId"},
		{"campaign id", edit(t, "campaignId", `"../x"`), "campaignId"},
		{"verdict enum", edit(t, "verdict", `"ok"`), "verdict"},
		{"failed needs class", edit(t, "verdict", `"failed"`), "failureClass: required"},
		{"class enum", edit(t, "failureClass", `"oops"`), "failureClass"},
		{"date", edit(t, "startedAt", `"yesterday"`), "startedAt"},
		{"order", edit(t, "finishedAt", `"2026-11-29T09:00:00Z"`), "before startedAt"},
		{"negative duration", edit(t, "durationMs", `-1`), "durationMs"},
		{"attempt", edit(t, "attempt", `0`), "attempt"},
		{"wrong type", edit(t, "attempt", `"1"`), "not a result document"},
		{"first attempt after attempt", edit(t, "firstAttempt", `5`), "firstAttempt"},
		{"first attempt 1", edit(t, "firstAttempt", `1`), "firstAttempt"},
		{"cleanup enum", edit(t, "cleanup", `"done"`), "cleanup"},
		{"evidence escape", edit(t, "evidence", `["../../etc/passwd"]`), "evidence[0]"},
		{"evidence absolute", edit(t, "evidence", `["/etc/passwd"]`), "evidence[0]"},
		{"termination not object", edit(t, "termination", `[1]`), "termination"},
		{"runtime mode", edit(t, "runtimeMode", `"hybrid"`), "runtimeMode"},
		{"runtime facts digest", edit(t, "runtimeFacts", `[{"runId":"r","driver":"exec:codex","binarySha256":"not-hex"}]`), "runtimeFacts[0].binarySha256"},
		{"runtime facts mode", edit(t, "runtimeFacts", `[{"runId":"r","driver":"d","runtimeMode":"hybrid"}]`), "runtimeFacts[0].runtimeMode"},
		{"runtime facts target", edit(t, "runtimeFacts", `[{"runId":"r","driver":"d","executionTarget":"moon"}]`), "runtimeFacts[0].executionTarget"},
		{"runtime facts run", edit(t, "runtimeFacts", `[{"runId":"","driver":""}]`), "runId and driver are required"},
		{"runtime facts pid", edit(t, "runtimeFacts", `[{"runId":"r","driver":"d","pid":-1}]`), "pid must not be negative"},
		{"url userinfo", edit(t, "source", `{"sha":null,"ref":null,"workflowRunUrl":"https://u:p@example.com/x"}`), "workflowRunUrl"},
		{"ranking snapshot", edit(t, "rankingSnapshot", `{"snapshotId":"s","capturedAt":"now","sourceUrl":"ftp://x","rank":0,"canonicalModelId":"m"}`), "rankingSnapshot"},
		{"matcher both", edit(t, "matcherResults", `[{"kind":"k","passed":true,"notReached":true,"detail":""}]`), "not reached"},
		{"runtime status", edit(t, "runtimeUsage", `{"provider":"local","agentRunDurationMs":1,"leaseDurationMs":null,"leaseCount":0,"costStatus":"free","costSource":"x"}`), "costStatus"},
		{"estimate without amount", edit(t, "runtimeUsage", `{"provider":"daytona","agentRunDurationMs":1,"leaseDurationMs":1,"leaseCount":1,"costStatus":"estimated","costSource":"x"}`), "estimatedListCostUsd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeResult("r", []byte(tt.doc))
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("want a ValidationError, got %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
	// Several problems are reported together.
	_, err := DecodeResult("r", []byte(strings.Replace(strings.Replace(validResult, `"cleanup":"passed"`, `"cleanup":"?"`, 1), `"verdict":"passed"`, `"verdict":"?"`, 1)))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Errorf("want two problems together, got %v", err)
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    Result
		want verdict.Verdict
	}{
		{"passed", Result{Verdict: verdict.Passed, Cleanup: CleanupPassed}, verdict.Passed},
		{"passed without cleanup", Result{Verdict: verdict.Passed, Cleanup: CleanupFailed}, verdict.Failed},
		{"failed", Result{Verdict: verdict.Failed, Cleanup: CleanupPassed}, verdict.Failed},
		{"inconclusive", Result{Verdict: verdict.Inconclusive, Cleanup: CleanupPassed}, verdict.Inconclusive},
		{"calibration met", Result{Verdict: verdict.Failed, ExpectedVerdict: verdict.Failed, Cleanup: CleanupPassed}, verdict.Passed},
		{"calibration inconclusive met", Result{Verdict: verdict.Inconclusive, ExpectedVerdict: verdict.Inconclusive}, verdict.Passed},
		{"calibration unmet", Result{Verdict: verdict.Passed, ExpectedVerdict: verdict.Failed}, verdict.Failed},
		{"calibration unknown", Result{Verdict: verdict.Inconclusive, ExpectedVerdict: verdict.Passed}, verdict.Inconclusive},
		{"synthetic never meets expectation", Result{Verdict: verdict.Inconclusive, ExpectedVerdict: verdict.Inconclusive, Synthetic: true}, verdict.Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Outcome(&tt.r); got != tt.want {
				t.Errorf("Outcome = %s, want %s", got, tt.want)
			}
		})
	}
}

func writeResult(t *testing.T, dir, doc string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultFile), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestChooseBestAttempt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "s", "p", "local", "c")
	late := strings.ReplaceAll(validResult, "10:00:01Z", "11:00:00Z")
	// attempt-1: valid, earlier; attempt-2: invalid (newest); attempt-3: valid, latest;
	// attempt-1-dup: same finish as attempt-3 but a lower attempt.
	writeResult(t, filepath.Join(base, "attempt-1"), validResult)
	writeResult(t, filepath.Join(base, "attempt-2"), strings.Replace(strings.ReplaceAll(validResult, "10:00:01Z", "12:00:00Z"), `"cleanup":"passed"`, `"cleanup":"maybe"`, 1))
	writeResult(t, filepath.Join(base, "attempt-3"), strings.Replace(late, `"attempt":1`, `"attempt":3`, 1))
	writeResult(t, filepath.Join(base, "attempt-1-dup"), late)
	writeResult(t, filepath.Join(dir, "x", "y", "z", "w", "attempt-1"), strings.ReplaceAll(validResult, "s.p.local.c", "x.y.z.w"))
	writeResult(t, filepath.Join(dir, "junk", "attempt-1"), "{not json")
	cands, err := LoadCandidates(dir)
	if err != nil {
		t.Fatal(err)
	}
	results, notes, unexpected := Choose(nil, "c1", []string{"s.p.local.c", "s.p.local.gone"}, cands)
	if len(results) != 2 || results[0].ExecutionID != "s.p.local.c" || results[0].Attempt != 3 {
		t.Fatalf("chosen: %+v", results)
	}
	if results[0].Evidence[0] != "s/p/local/c/attempt-3/logs/agent.log" {
		t.Errorf("evidence not relative to the campaign: %v", results[0].Evidence)
	}
	gone := results[1]
	if !gone.Synthetic || gone.Verdict != verdict.Inconclusive || gone.FailureClass != verdict.PermanentInfrastructure || gone.Attempt != 0 || gone.SuiteDefinitionHash != "unknown" {
		t.Errorf("synthetic: %+v", gone)
	}
	if diff := cmp.Diff([]string{"(undecodable junk/attempt-1/result.json)", "x.y.z.w"}, unexpected); diff != "" {
		t.Errorf("unexpected (-want +got):\n%s", diff)
	}
	var chosen, invalid int
	for _, n := range notes {
		if n.Chosen {
			chosen++
		}
		if !n.Valid {
			invalid++
			if len(n.Problems) == 0 || !strings.Contains(n.Problems[0], "cleanup") {
				t.Errorf("invalid note lacks its problem: %+v", n)
			}
		}
	}
	if len(notes) != 4 || chosen != 1 || invalid != 1 {
		t.Errorf("notes: %+v", notes)
	}

	// Only an invalid attempt: the synthetic result names its problems.
	only := t.TempDir()
	writeResult(t, filepath.Join(only, "s", "attempt-1"), edit(t, "verdict", `"maybe"`))
	writeResult(t, filepath.Join(only, "t", "attempt-1"), edit(t, "synthetic", `true`))
	cands, err = LoadCandidates(only)
	if err != nil {
		t.Fatal(err)
	}
	results, _, _ = Choose(nil, "c1", []string{"s.p.local.c"}, cands)
	if !results[0].Synthetic || !strings.Contains(results[0].Error, "no valid result.json") || !strings.Contains(results[0].Error, "verdict") {
		t.Errorf("synthetic for invalid: %+v", results[0])
	}
}

func TestHistoryMerge(t *testing.T) {
	t.Parallel()
	suite := func(id string, complete bool, failed int) SuiteSummary {
		return SuiteSummary{SuiteID: id, Complete: complete, Counts: Counts{Failed: failed}}
	}
	green := HistoryCampaign{CampaignID: "a", GeneratedAt: "2026-01-01T00:00:00Z", Suites: []SuiteSummary{suite("s", true, 0), suite("t", true, 0)}}
	red := HistoryCampaign{CampaignID: "b", GeneratedAt: "2026-01-02T00:00:00Z", Counts: Counts{Failed: 1}, Suites: []SuiteSummary{suite("s", true, 1), suite("t", true, 0)}}
	partial := HistoryCampaign{CampaignID: "c", GeneratedAt: "2026-01-03T00:00:00Z", Partial: true, Suites: []SuiteSummary{suite("t", false, 0)}}
	h := emptyHistory().Merge(green).Merge(partial).Merge(red)
	ids := []string{}
	for _, c := range h.Campaigns {
		ids = append(ids, c.CampaignID)
	}
	if diff := cmp.Diff([]string{"c", "b", "a"}, ids); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if *h.LatestCampaignID != "c" || *h.LatestGreenCampaignID != "a" || h.UpdatedAt != "2026-01-03T00:00:00Z" {
		t.Errorf("pointers: %v %v %s", *h.LatestCampaignID, *h.LatestGreenCampaignID, h.UpdatedAt)
	}
	if diff := cmp.Diff(map[string]string{"s": "b", "t": "c"}, h.LatestBySuite); diff != "" {
		t.Errorf("latestBySuite: %s", diff)
	}
	if diff := cmp.Diff(map[string]string{"s": "a", "t": "b"}, h.LatestGreenBySuite); diff != "" {
		t.Errorf("latestGreenBySuite: %s", diff)
	}
	// Re-merging an entry replaces it.
	fixed := red
	fixed.Failed = 0
	fixed.Suites = []SuiteSummary{suite("s", true, 0), suite("t", true, 0)}
	h2 := h.Merge(fixed)
	if len(h2.Campaigns) != 3 || *h2.LatestGreenCampaignID != "b" {
		t.Errorf("re-merge: %d campaigns, green %v", len(h2.Campaigns), *h2.LatestGreenCampaignID)
	}
	if up := h2.Upto(red.GeneratedAt, "b"); len(up.Campaigns) != 2 || *up.LatestCampaignID != "b" {
		t.Errorf("Upto: %+v", up)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "history.json")
	if err := os.WriteFile(p, []byte(`{"schema":"paperclip.runner-e2e.history/v1","campaigns":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, warn, err := ReadHistory(p); err != nil || warn == "" || len(got.Campaigns) != 0 {
		t.Errorf("other schema: %v %q %v", got, warn, err)
	}
	if err := os.WriteFile(p, []byte(`{not json`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadHistory(p); err == nil {
		t.Error("corrupt history must not be replaced silently")
	}
}

func FuzzParseExpectedIDs(f *testing.F) {
	f.Add([]byte("a.b.c.d\n"))
	f.Add([]byte(`{"executionIds":["a.b.c.d"]}`))
	f.Add([]byte(`["a.b.c.d","a.b.c.d"]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := ParseExpectedIDs("fuzz", b)
		if err != nil {
			return
		}
		for i, id := range ids {
			if _, _, _, _, ok := ParseExecutionID(id); !ok {
				t.Fatalf("accepted malformed id %q", id)
			}
			if i > 0 && ids[i-1] >= id {
				t.Fatalf("ids not sorted and unique: %q", ids)
			}
		}
	})
}

func TestResultJSONAmongEvidenceIsNoAttempt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeResult(t, filepath.Join(dir, "s", "p", "local", "c", "attempt-1"), validResult)
	// An agent wrote a result.json into its workspace evidence: not an attempt.
	writeResult(t, filepath.Join(dir, "s", "p", "local", "c", "attempt-1", "workspace"), strings.Replace(validResult, `"attempt":1`, `"attempt":9`, 1))
	cands, err := LoadCandidates(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 1 || cands[0].Result.Attempt != 1 {
		t.Errorf("candidates: %+v", cands)
	}
}

// TestChooseRepeated: with repeats every repetition gets its best attempt (or a
// synthetic result when it has none), the cell's result is the first repetition whose
// outcome is the cell's (verdict.Repeated), and the repeats say pass rate, pass^k,
// pass@k and flakiness.
func TestChooseRepeated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "s", "p", "local", "c")
	rep := func(k int, doc string) string {
		return strings.Replace(doc, `"attempt":1`, fmt.Sprintf(`"attempt":1,"repetition":%d,"repeat":4`, k), 1)
	}
	failed := strings.Replace(validResult, `"verdict":"passed"`, `"verdict":"failed","failureClass":"candidate_failure"`, 1)
	writeResult(t, filepath.Join(base, "repeat-1", "attempt-1"), rep(1, validResult))
	writeResult(t, filepath.Join(base, "repeat-2", "attempt-1"), rep(2, failed))
	writeResult(t, filepath.Join(base, "repeat-3", "attempt-1"), rep(3, validResult))
	// repeat-4 has no result: a synthetic, inconclusive repetition.
	cands, err := LoadCandidates(dir)
	if err != nil {
		t.Fatal(err)
	}
	results, _, unexpected, repeats := ChooseRepeated(nil, "c1", []string{"s.p.local.c"}, cands, 4)
	if len(unexpected) != 0 || len(results) != 1 || len(repeats) != 1 {
		t.Fatalf("results %+v, repeats %+v, unexpected %v", results, repeats, unexpected)
	}
	if r := results[0]; r.Repetition != 2 || Outcome(&r) != verdict.Failed {
		t.Errorf("the cell's result is repetition %d counted %s, want the failed repetition 2", r.Repetition, Outcome(&r))
	}
	got := repeats[0]
	got.Outcomes = nil
	want := Repeats{ExecutionID: "s.p.local.c", Repetitions: 4, Passed: 2, Failed: 1, Inconclusive: 1, PassAny: true, Flaky: true, Verdict: verdict.Failed}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("repeats (-want +got):\n%s", diff)
	}
	if o := repeats[0].Outcomes[3]; !o.Missing || o.Counted != verdict.Inconclusive {
		t.Errorf("repetition 4: %+v, want missing and inconclusive", o)
	}
	// Without repeats, repetitions after the first are not the campaign's.
	if _, _, unexpected, _ := ChooseRepeated(nil, "c1", []string{"s.p.local.c"}, cands, 1); len(unexpected) != 2 {
		t.Errorf("unexpected %v, want the repeated results named", unexpected)
	}
}

// A resumed attempt (firstAttempt set) is no automatic retry; an attempt after the
// first of its own run is.
func TestRetriesCountFromFirstAttempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		attempt, firstAttempt int
		want                  int
	}{
		{"first attempt", 1, 0, 0},
		{"automatic retry", 2, 0, 1},
		{"resumed attempt", 2, 2, 0},
		{"retry of a resumed attempt", 3, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := DecodeResult("r", []byte(validResult))
			if err != nil {
				t.Fatal(err)
			}
			r.Attempt, r.FirstAttempt = tt.attempt, tt.firstAttempt
			c := BuildCampaign(r.CampaignID, nil, []string{r.ExecutionID}, []Result{*r}, nil, false)
			if c.Retries != tt.want {
				t.Errorf("retries = %d, want %d", c.Retries, tt.want)
			}
		})
	}
}

func TestSelectionWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Campaign
		want string
	}{
		{"complete", Campaign{}, "complete"},
		{"subset", Campaign{Partial: true, Suites: []SuiteSummary{{Complete: true}}}, "subset of the catalog"},
		{"filtered", Campaign{Partial: true, Counts: Counts{Selected: 2}, Suites: []SuiteSummary{{Complete: true}, {Complete: false}}, Results: []Result{{}, {}}}, "subset of the catalog"},
		{"cut short", Campaign{Partial: true, Counts: Counts{Selected: 3}, Suites: []SuiteSummary{{Complete: true}, {Complete: false}}, Results: []Result{{}, {Synthetic: true}, {}}}, "cut short: 1 of 3 selected cell(s) left no result"},
	}
	for _, tt := range tests {
		if got := tt.c.Selection(); got != tt.want {
			t.Errorf("%s: Selection() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParseExpectedIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []string
		wantErr  string
	}{
		{"plain lines", "# ids\nb.p.e.c\n\na.p.e.c\n", []string{"a.p.e.c", "b.p.e.c"}, ""},
		{"json array", `["a.p.e.c"]`, []string{"a.p.e.c"}, ""},
		{"matrix include only", `{"include":[{"executionId":"a.p.e.c"}]}`, []string{"a.p.e.c"}, ""},
		{"duplicate", "a.p.e.c\na.p.e.c\n", nil, "appears twice"},
		{"malformed", "a.p.e\n", nil, "not an execution id"},
		{"empty", "\n", nil, "no execution ids"},
		{"bad json", `{"include":`, nil, "not a --matrix-json document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseExpectedIDs("ids", []byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// TestCleanupStatusWireForm: result.json's cleanup decodes into the typed status and
// encodes back as the plain string; every listed status is Valid, another is not.
func TestCleanupStatusWireForm(t *testing.T) {
	t.Parallel()
	r, err := DecodeResult("r", []byte(validResult))
	if err != nil {
		t.Fatal(err)
	}
	if r.Cleanup != CleanupPassed {
		t.Fatalf("cleanup = %q", r.Cleanup)
	}
	b, err := EncodeResult(r)
	if err != nil || !strings.Contains(string(b), `"cleanup": "passed"`) && !strings.Contains(string(b), `"cleanup":"passed"`) {
		t.Fatalf("EncodeResult = %s, %v", b, err)
	}
	for _, c := range CleanupStatuses {
		if !c.Valid() {
			t.Errorf("%q is not Valid", c)
		}
	}
	if CleanupStatus("done").Valid() {
		t.Error(`"done" is Valid`)
	}
}

package result

import (
	"encoding/json"
	wsource "github.com/agentproof/agentproof/workspace/source"
	"math"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/workspace"
)

// richResult is validResult decoded, with every optional part a validator checks set
// to a valid value: source, ranking snapshot, a resumed first attempt, repeats, an
// expected verdict, turn timings, runtime usage, billing, runtime facts, a trajectory
// and a workspace diff.
func richResult(t *testing.T) *Result {
	t.Helper()
	r, err := DecodeResult("rich", []byte(validResult))
	if err != nil {
		t.Fatal(err)
	}
	sha, ref, url := "0123abc", "refs/heads/main", "https://ci.example.com/run/1"
	r.Source = &Source{SHA: &sha, Ref: &ref, WorkflowRunURL: &url}
	r.RankingSnapshot = &RankingSnapshot{SnapshotID: "snap", CapturedAt: "2026-11-01T00:00:00Z", SourceURL: "https://rank.example.com", Rank: 1, CanonicalModelID: "m"}
	r.RuntimeMode = "native"
	r.Attempt, r.FirstAttempt = 3, 2
	r.Repeat, r.Repetition = 2, 1
	r.ExpectedVerdict = verdict.Passed
	started, lat := "2026-11-29T10:00:00.5Z", int64(10)
	r.TurnTimings = []TurnTiming{{Turn: 1, SubmittedAt: "2026-11-29T10:00:00Z", RunStartedAt: &started, RunFinishedAt: &started, SchedulerLatencyMs: &lat, RunDurationMs: &lat, ResponseLatencyMs: &lat, RunID: "r", LeaseAcquisitionOutcome: "created"}}
	cost := 0.25
	rt := billing.RuntimeUsage{Provider: "daytona", AgentRunDurationMs: 1000, LeaseDurationMs: &lat, LeaseCount: 1, CPUCores: &cost, EstimatedListCostUSD: &cost, CostStatus: billing.RuntimeEstimated, CostSource: "rate table", PricingURL: "https://prices.example.com"}
	r.RuntimeUsage = &rt
	r.Billing = &billing.Summary{Runtime: rt, LLM: billing.LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, InputTokens: 3, TotalTokens: 3, CostStatus: billing.CostUnavailable}, EstimatedRuntimeCostUSD: &cost}
	r.RuntimeFacts = []RuntimeFacts{{RunID: "r", Driver: "exec:codex", CLIName: "codex", BinarySHA256: strings.Repeat("ab", 32), Argv: []string{"codex", "exec"}, RuntimeMode: "native", ExecutionTarget: "local", PID: 42}}
	r.Trajectories = []TrajectoryRef{{Path: "trajectories/run-1.json", Format: "codex-exec-json", RunID: "r", Steps: 2, ToolCalls: 1}}
	text := "hello\n"
	r.WorkspaceDiff = []workspace.TurnDiff{{Turn: 1, Changes: []workspace.FileChange{{Path: "a.txt", Change: workspace.ChangeAdded, Type: workspace.TypeFile, AfterBytes: 6, After: &text}}}}
	r.WorkspaceSource = &wsource.Record{Kind: wsource.KindDir, Ref: "files/repo", Digest: "sha256:" + strings.Repeat("ab", 32)}
	if err := r.Validate("rich"); err != nil {
		t.Fatalf("the rich result is not valid: %v", err)
	}
	return r
}

// TestFieldChecks: each validator of a result passes the valid (rich) result and
// refuses its invalid case with a problem naming its field, which Validate reports.
func TestFieldChecks(t *testing.T) {
	t.Parallel()
	bad := "bad\x00text"
	neg, nan := int64(-1), math.NaN()
	invalid := map[string]struct {
		mutate func(r *Result)
		want   string
	}{
		"schema": {func(r *Result) { r.Schema = "agentproof.result/v2" }, "schema: want"},
		"executionId, suiteId, profileId, environmentId, caseId": {func(r *Result) { r.ProfileID = "q" }, "profileId: \"q\" disagrees with executionId"},
		"campaignId":          {func(r *Result) { r.CampaignID = ".." }, "campaignId:"},
		"suiteDefinitionHash": {func(r *Result) { r.SuiteDefinitionHash = "" }, "suiteDefinitionHash:"},
		"provider, model":     {func(r *Result) { r.Model = bad }, "model: must be printable"},
		"runtimeMode":         {func(r *Result) { r.RuntimeMode = "hybrid" }, "runtimeMode:"},
		"source":              {func(r *Result) { r.Source.Ref = &bad }, "source.ref:"},
		"rankingSnapshot":     {func(r *Result) { r.RankingSnapshot.CapturedAt = "today" }, "rankingSnapshot.capturedAt:"},
		"attempt":             {func(r *Result) { r.Attempt, r.FirstAttempt = 0, 0 }, "attempt: must be at least 1"},
		"firstAttempt":        {func(r *Result) { r.FirstAttempt = 4 }, "firstAttempt:"},
		"repeat, repetition":  {func(r *Result) { r.Repetition = 3 }, "repetition: must be between 1 and repeat"},
		"verdict":             {func(r *Result) { r.Verdict = "ok" }, "verdict:"},
		"expectedVerdict":     {func(r *Result) { r.ExpectedVerdict = "ok" }, "expectedVerdict:"},
		"knownFailure": {func(r *Result) {
			r.ExpectedVerdict, r.KnownFailure = "", &KnownFailure{Expected: verdict.Passed, Reason: "r", Since: "v1"}
		}, "knownFailure.expected: \"passed\" is not failed or inconclusive"},
		"failureClass":                    {func(r *Result) { r.FailureClass = verdict.CandidateFailure }, "failureClass: \"candidate_failure\" given for a passed verdict"},
		"error, issueId, issueIdentifier": {func(r *Result) { r.IssueID = "\xff" }, "error, issueId, issueIdentifier:"},
		"runIds":                          {func(r *Result) { r.RunIDs = []string{"r", ""} }, "runIds[1]:"},
		"startedAt, finishedAt":           {func(r *Result) { r.FinishedAt = "2026-11-29T09:00:00Z" }, "finishedAt: before startedAt"},
		"durationMs":                      {func(r *Result) { r.DurationMs = -1 }, "durationMs:"},
		"turnTimings":                     {func(r *Result) { r.TurnTimings[0].RunDurationMs = &neg }, "turnTimings[0]: latencies must not be negative"},
		"matcherResults":                  {func(r *Result) { r.MatcherResults[0].Kind = "" }, "matcherResults[0].kind:"},
		"termination":                     {func(r *Result) { r.Termination = json.RawMessage(`"stopped"`) }, "termination:"},
		"usage":                           {func(r *Result) { r.Usage = map[string]any{"inputTokens": nan} }, "usage:"},
		"runtimeUsage":                    {func(r *Result) { r.RuntimeUsage.CostStatus = "free" }, "runtimeUsage.costStatus:"},
		"billing":                         {func(r *Result) { r.Billing.LLM.InputTokens = -1 }, "billing.llm: counts must not be negative"},
		"runtimeFacts":                    {func(r *Result) { r.RuntimeFacts[0].ExecutionTarget = "moon" }, "runtimeFacts[0].executionTarget:"},
		"cleanup":                         {func(r *Result) { r.Cleanup = "done" }, "cleanup:"},
		"evidence":                        {func(r *Result) { r.Evidence = []string{"logs/../../x"} }, "evidence[0]:"},
		"trajectories":                    {func(r *Result) { r.Trajectories[0].Partial = true }, "trajectories[0]: partial"},
		"workspaceDiff":                   {func(r *Result) { r.WorkspaceDiff[0].Changes[0].Type = "pipe" }, "workspaceDiff[0].changes[0].type:"},
		"workspaceSource": {func(r *Result) {
			r.WorkspaceSource = &wsource.Record{Kind: wsource.KindGit, Ref: "../repo", Commit: "main", Digest: "git:" + strings.Repeat("a", 40)}
		}, "workspaceSource: a git source has a full commit"},
	}
	seen := map[string]bool{}
	for _, fc := range resultChecks {
		seen[fc.fields] = true
		t.Run(fc.fields, func(t *testing.T) {
			t.Parallel()
			if p := fc.check(richResult(t)); len(p) != 0 {
				t.Errorf("the valid result refused: %q", p)
			}
			tc, ok := invalid[fc.fields]
			if !ok {
				t.Fatal("no invalid case for this validator")
			}
			r := richResult(t)
			tc.mutate(r)
			p := fc.check(r)
			if len(p) != 1 || !strings.Contains(p[0], tc.want) {
				t.Errorf("problems %q, want one naming %q", p, tc.want)
			}
			if err := r.Validate("r"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
	for fields := range invalid {
		if !seen[fields] {
			t.Errorf("invalid case %q has no validator", fields)
		}
	}
}

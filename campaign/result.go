package campaign

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// ResultFile is the name of an attempt's result document in its directory.
const ResultFile = "result.json"

// ResultOf maps a judged attempt to its result.json document (schema
// agentproof.result/v1, with agentproof's verdicts):
// identity and definition hash from the cell (and its entry in the baseline of known
// failures, if any), verdict, expected verdict and failure
// class from the Judgement, the reason as error for a verdict other than passed, and
// the repetition and the plan's repetitions (only with --repeat), the executor's facts (task, runs, turns, termination, usage, matcher results, the
// runtime facts the runner recorded) and evidence files. The runtime mode is the one
// the runner recorded launching the runs when every run agrees, and "" (not observed)
// otherwise: never the profile's declaration. Cleanup is "passed" when the outcome confirmed it, "failed" otherwise.
// Usage is null when the executor reported none (unavailable, never 0).
func ResultOf(r *AttemptResult) *result.Result {
	cell := r.Plan.Cell
	res := &result.Result{
		Schema:              result.ResultSchema,
		ExecutionID:         cell.ID,
		CampaignID:          r.Plan.CampaignID,
		SuiteID:             cell.Suite.ID,
		SuiteDefinitionHash: cell.Suite.Fingerprint,
		ProfileID:           cell.Profile.ID,
		EnvironmentID:       cell.Environment.ID,
		CaseID:              cell.Case.ID,
		Provider:            cell.Profile.Provider,
		Model:               cell.Profile.Model,
		Attempt:             r.Plan.Attempt,
		Verdict:             r.Outcome.Judgement.Verdict,
		ExpectedVerdict:     cell.ExpectedVerdict,
		FailureClass:        r.Outcome.Judgement.FailureClass,
		RunIDs:              []string{},
		StartedAt:           r.StartedAt.UTC().Format(time.RFC3339Nano),
		FinishedAt:          r.FinishedAt.UTC().Format(time.RFC3339Nano),
		DurationMs:          max(0, r.FinishedAt.Sub(r.StartedAt).Milliseconds()),
		MatcherResults:      []result.MatcherResult{},
		Cleanup:             result.CleanupFailed,
		Evidence:            []string{},
	}
	if r.Plan.Repeat > 1 {
		res.Repetition, res.Repeat = r.Plan.Repetition, r.Plan.Repeat
	}
	if k := cell.KnownFailure; k != nil {
		res.KnownFailure = &result.KnownFailure{Reason: k.Reason, Expected: k.Expected, Since: k.Since, Source: k.Source}
	}
	if r.Plan.FirstAttempt > 1 {
		res.FirstAttempt = r.Plan.FirstAttempt
	}
	if p := cell.Profile.Ranking; p != nil {
		res.RankingSnapshot = &result.RankingSnapshot{SnapshotID: p.SnapshotID, CapturedAt: p.CapturedAt, SourceURL: p.SourceURL, Rank: p.Rank, CanonicalModelID: p.CanonicalModelID}
	}
	if r.Outcome.Judgement.Verdict != verdict.Passed {
		res.Error = r.Outcome.Judgement.Reason
	}
	if r.Outcome.CleanupConfirmed {
		res.Cleanup = result.CleanupPassed
	}
	if f := r.Outcome.Facts; f != nil {
		addFacts(res, f)
	}
	if ev := r.Outcome.Evidence; ev != nil {
		res.Evidence = ev.Files()
	}
	return res
}

// addFacts copies an executor's facts into res.
func addFacts(res *result.Result, f *Facts) {
	res.IssueID, res.IssueIdentifier = f.IssueID, f.IssueIdentifier
	if f.RunIDs != nil {
		res.RunIDs = slices.Clone(f.RunIDs)
	}
	res.TurnTimings = slices.Clone(f.TurnTimings)
	res.Trajectories = slices.Clone(f.Trajectories)
	res.WorkspaceDiff = slices.Clone(f.WorkspaceDiff)
	if f.WorkspaceSource != nil {
		ws := *f.WorkspaceSource
		res.WorkspaceSource = &ws
	}
	res.Termination = f.Termination
	res.Usage = f.Usage
	res.MatcherResults = append(res.MatcherResults, MatcherResults(f.Matchers)...)
	res.RuntimeFacts = slices.Clone(f.Runtime)
	res.RuntimeMode = agreedRuntimeMode(f.Runtime)
	res.Leases = slices.Clone(f.Leases)
	if f.RuntimeUsage != nil {
		rt := *f.RuntimeUsage
		res.RuntimeUsage = &rt
	}
}

// agreedRuntimeMode is the runtime mode every recorded run launched with, or "".
func agreedRuntimeMode(facts []result.RuntimeFacts) string {
	mode := ""
	for i, rf := range facts {
		if i > 0 && rf.RuntimeMode != mode {
			return ""
		}
		mode = rf.RuntimeMode
	}
	return mode
}

// WriteResult writes attempt r's result.json into root/r.Plan.Dir and then its
// evidence-manifest.json (result.EvidenceManifest: every file of the attempt with size
// and SHA-256, the leaks found while writing, dropped and missing files), after
// validating the result (result.Result.Validate). Both pass the evidence guard
// (result.Guard) with the attempt's secret set: result.json is sanitised
// (result.SanitizeResult), scanned and refused if a secret remains; every write is
// atomic (temp file, fsync, rename), so a killed run leaves no half-written JSON, and
// the attempt's evidence is made durable before result.json (Evidence).
// Errors: an invalid document, an encoding or a write failure, with the path.
func WriteResult(root string, r *AttemptResult) error {
	ev := r.Outcome.Evidence
	if ev == nil {
		ev = NewEvidence(filepath.Join(root, r.Plan.Dir))
	}
	return writeResultAndManifest(ResultOf(r), r.Outcome.Secrets, ev)
}

// WriteRegraded writes the result.json of an attempt `agentproof regrade` graded
// again, and then its evidence-manifest.json, through ev (WriteResult's rules; the
// regrade holds no secret value, so the guard looks for secret shapes).
func WriteRegraded(res *result.Result, ev *Evidence) error {
	return writeResultAndManifest(res, redact.NewSet(), ev)
}

// MatcherResults are the matchers' outcomes as result.json records them, in order.
func MatcherResults(ms []match.Outcome) []result.MatcherResult {
	out := []result.MatcherResult{}
	for _, m := range ms {
		out = append(out, result.MatcherResult{Kind: string(m.Kind), Passed: m.Passed, NotReached: m.NotReached, Expected: m.Expected, Observed: m.Observed, Detail: m.Detail})
	}
	return out
}

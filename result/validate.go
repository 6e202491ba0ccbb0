package result

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/verdict"
)

// fieldCheck is one validator of a Result: the fields it checks, by their JSON names
// (comma-separated when a rule spans several), and the check, which returns one
// problem per violation, each naming its field, or nothing.
type fieldCheck struct {
	fields string
	check  func(r *Result) []string
}

// resultChecks are Validate's validators, in the order their problems are reported.
var resultChecks = []fieldCheck{
	{"schema", checkSchema},
	{"executionId, suiteId, profileId, environmentId, caseId", checkIdentity},
	{"campaignId", checkCampaignID},
	{"suiteDefinitionHash", checkSuiteDefinitionHash},
	{"provider, model", checkProviderModel},
	{"runtimeMode", checkRuntimeMode},
	{"source", checkSource},
	{"rankingSnapshot", checkRankingSnapshot},
	{"attempt", checkAttempt},
	{"firstAttempt", checkFirstAttempt},
	{"repeat, repetition", checkRepeat},
	{"verdict", checkVerdict},
	{"expectedVerdict", checkExpectedVerdict},
	{"knownFailure", checkKnownFailure},
	{"failureClass", checkFailureClass},
	{"error, issueId, issueIdentifier", checkTexts},
	{"runIds", checkRunIDs},
	{"startedAt, finishedAt", checkTimes},
	{"durationMs", checkDuration},
	{"turnTimings", checkTurnTimings},
	{"matcherResults", checkMatcherResults},
	{"termination", checkTermination},
	{"usage", checkUsage},
	{"runtimeUsage", checkRuntimeUsage},
	{"billing", checkBilling},
	{"runtimeFacts", checkAllRuntimeFacts},
	{"cleanup", checkCleanup},
	{"evidence", checkEvidence},
	{"trajectories", func(r *Result) []string { return checkTrajectories(r.Trajectories) }},
	{"workspaceDiff", func(r *Result) []string { return checkWorkspaceDiff(r.WorkspaceDiff) }},
	{"workspaceSource", checkWorkspaceSource},
}

// checkWorkspaceSource: a workspace source record is well formed (its kind, ref,
// commit and digest agree).
func checkWorkspaceSource(r *Result) []string {
	if r.WorkspaceSource == nil {
		return nil
	}
	var p []string
	for _, s := range r.WorkspaceSource.Problems() {
		p = append(p, "workspaceSource: "+s)
	}
	return p
}

// Validate checks every field of r (see DecodeResult) with each of its validators and
// returns a *ValidationError labelled label naming each problem, or nil.
func (r *Result) Validate(label string) error {
	var p []string
	for _, fc := range resultChecks {
		p = append(p, fc.check(r)...)
	}
	if len(p) > 0 {
		return &ValidationError{Label: label, Problems: p}
	}
	return nil
}

// problem is one problem, formatted.
func problem(format string, args ...any) []string { return []string{fmt.Sprintf(format, args...)} }

// checkSchema: the schema tag is ResultSchema.
func checkSchema(r *Result) []string {
	if r.Schema != ResultSchema {
		return problem("schema: want %q, got %q", ResultSchema, r.Schema)
	}
	return nil
}

// checkIdentity: the execution id is well-formed and its components are the suite,
// profile, environment and case ids.
func checkIdentity(r *Result) []string {
	return checkExecutionID(r.ExecutionID, r.SuiteID, r.ProfileID, r.EnvironmentID, r.CaseID)
}

// checkCampaignID: the campaign id is one (ValidCampaignID).
func checkCampaignID(r *Result) []string {
	if !validCampaignID(r.CampaignID) {
		return problem("campaignId: %q must match [A-Za-z0-9][A-Za-z0-9._-]{0,199}", r.CampaignID)
	}
	return nil
}

// checkSuiteDefinitionHash: non-empty printable text of at most 200 bytes.
func checkSuiteDefinitionHash(r *Result) []string {
	if r.SuiteDefinitionHash == "" || !printable(r.SuiteDefinitionHash) || len(r.SuiteDefinitionHash) > 200 {
		return problem("suiteDefinitionHash: must be a non-empty printable string")
	}
	return nil
}

// checkProviderModel: provider and model are printable text of at most 512 bytes.
func checkProviderModel(r *Result) []string {
	var p []string
	for _, f := range []struct{ name, v string }{{"provider", r.Provider}, {"model", r.Model}} {
		if !printable(f.v) || len(f.v) > 512 {
			p = append(p, problem("%s: must be printable text of at most 512 bytes", f.name)...)
		}
	}
	return p
}

// checkRuntimeMode: absent, legacy or native.
func checkRuntimeMode(r *Result) []string {
	switch r.RuntimeMode {
	case "", "legacy", "native":
		return nil
	}
	return problem("runtimeMode: %q is not legacy or native", r.RuntimeMode)
}

// checkSource: a workflow run URL is http(s) without user information; sha and ref are
// printable text of at most 512 bytes.
func checkSource(r *Result) []string {
	if r.Source == nil {
		return nil
	}
	var p []string
	if r.Source.WorkflowRunURL != nil && !safeURL(*r.Source.WorkflowRunURL) {
		p = append(p, "source.workflowRunUrl: must be an http(s) URL without user information")
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"source.sha", r.Source.SHA}, {"source.ref", r.Source.Ref}} {
		if f.v != nil && (!printable(*f.v) || len(*f.v) > 512) {
			p = append(p, problem("%s: must be printable text", f.name)...)
		}
	}
	return p
}

// checkRankingSnapshot: printable ids, a rank of at least 1, an RFC 3339 capture time
// and an http(s) source URL without user information.
func checkRankingSnapshot(r *Result) []string {
	rs := r.RankingSnapshot
	if rs == nil {
		return nil
	}
	var p []string
	if rs.SnapshotID == "" || !printable(rs.SnapshotID) || !printable(rs.CanonicalModelID) || rs.Rank < 1 {
		p = append(p, "rankingSnapshot: needs a printable snapshotId and canonicalModelId and a rank of at least 1")
	}
	if _, ok := parseTime(rs.CapturedAt); !ok {
		p = append(p, problem("rankingSnapshot.capturedAt: %q is not an RFC 3339 time", rs.CapturedAt)...)
	}
	if !safeURL(rs.SourceURL) {
		p = append(p, "rankingSnapshot.sourceUrl: must be an http(s) URL without user information")
	}
	return p
}

// checkAttempt: at least 1, except for a synthetic result (0).
func checkAttempt(r *Result) []string {
	if r.Attempt < 1 && !r.Synthetic {
		return problem("attempt: must be at least 1, got %d", r.Attempt)
	}
	return nil
}

// checkFirstAttempt: absent, or between 2 and the attempt.
func checkFirstAttempt(r *Result) []string {
	if r.FirstAttempt != 0 && (r.FirstAttempt < 2 || r.FirstAttempt > r.Attempt) {
		return problem("firstAttempt: must be absent or between 2 and attempt (%d), got %d", r.Attempt, r.FirstAttempt)
	}
	return nil
}

// checkRepeat: repeat between 0 and maxRepeat; a repetition only with a repeat, and
// then between 1 and it.
func checkRepeat(r *Result) []string {
	switch {
	case r.Repeat < 0 || r.Repeat > maxRepeat:
		return problem("repeat: must be between 0 and %d, got %d", maxRepeat, r.Repeat)
	case r.Repeat == 0 && r.Repetition != 0:
		return problem("repetition: %d given without repeat", r.Repetition)
	case r.Repeat > 0 && (r.Repetition < 1 || r.Repetition > r.Repeat):
		return problem("repetition: must be between 1 and repeat (%d), got %d", r.Repeat, r.Repetition)
	}
	return nil
}

// checkVerdict: passed, failed or inconclusive.
func checkVerdict(r *Result) []string {
	if !r.Verdict.Valid() {
		return problem("verdict: %q is not passed, failed or inconclusive", r.Verdict)
	}
	return nil
}

// checkExpectedVerdict: absent, or passed, failed or inconclusive.
func checkExpectedVerdict(r *Result) []string {
	if r.ExpectedVerdict != "" && !r.ExpectedVerdict.Valid() {
		return problem("expectedVerdict: %q is not passed, failed or inconclusive", r.ExpectedVerdict)
	}
	return nil
}

// checkKnownFailure: absent, or a reason and a since (each at most 2000 bytes) with
// failed or inconclusive expected, on a cell without an expected verdict.
func checkKnownFailure(r *Result) []string {
	k := r.KnownFailure
	if k == nil {
		return nil
	}
	var p []string
	if k.Expected != verdict.Failed && k.Expected != verdict.Inconclusive {
		p = append(p, problem("knownFailure.expected: %q is not failed or inconclusive", k.Expected)...)
	}
	for name, v := range map[string]string{"reason": k.Reason, "since": k.Since} {
		if v == "" || len(v) > 2000 || !utf8.ValidString(v) {
			p = append(p, problem("knownFailure.%s: must be 1..2000 bytes of UTF-8", name)...)
		}
	}
	if r.ExpectedVerdict != "" {
		p = append(p, problem("knownFailure: a calibration cell (expectedVerdict %s) takes no known failure", r.ExpectedVerdict)...)
	}
	slices.Sort(p)
	return p
}

// checkFailureClass: a known class, required for a valid verdict other than passed
// and refused for passed.
func checkFailureClass(r *Result) []string {
	switch {
	case r.FailureClass == "":
		if r.Verdict != verdict.Passed && r.Verdict.Valid() {
			return problem("failureClass: required when the verdict is %s", r.Verdict)
		}
	case r.FailureClass.Valid():
		if r.Verdict == verdict.Passed {
			return problem("failureClass: %q given for a passed verdict", r.FailureClass)
		}
	default:
		return problem("failureClass: %q is not one of %v", r.FailureClass, verdict.FailureClasses)
	}
	return nil
}

// checkTexts: error, issueId and issueIdentifier are valid UTF-8.
func checkTexts(r *Result) []string {
	if !utf8.ValidString(r.Error) || !utf8.ValidString(r.IssueID) || !utf8.ValidString(r.IssueIdentifier) {
		return problem("error, issueId, issueIdentifier: must be valid UTF-8")
	}
	return nil
}

// checkRunIDs: every run id is non-empty printable text.
func checkRunIDs(r *Result) []string {
	var p []string
	for i, id := range r.RunIDs {
		if id == "" || !printable(id) {
			p = append(p, problem("runIds[%d]: must be non-empty printable text", i)...)
		}
	}
	return p
}

// checkTimes: startedAt and finishedAt are RFC 3339 times, finishedAt not before
// startedAt.
func checkTimes(r *Result) []string {
	var p []string
	start, okStart := parseTime(r.StartedAt)
	end, okEnd := parseTime(r.FinishedAt)
	if !okStart {
		p = append(p, problem("startedAt: %q is not an RFC 3339 time", r.StartedAt)...)
	}
	if !okEnd {
		p = append(p, problem("finishedAt: %q is not an RFC 3339 time", r.FinishedAt)...)
	}
	if okStart && okEnd && end.Before(start) {
		p = append(p, "finishedAt: before startedAt")
	}
	return p
}

// checkDuration: durationMs is not negative.
func checkDuration(r *Result) []string {
	if r.DurationMs < 0 {
		return problem("durationMs: must not be negative")
	}
	return nil
}

// checkTurnTimings checks each turn: a turn of at least 1, RFC 3339 times, latencies
// not negative, a known lease acquisition outcome.
func checkTurnTimings(r *Result) []string {
	var p []string
	for i, t := range r.TurnTimings {
		if t.Turn < 1 {
			p = append(p, problem("turnTimings[%d].turn: must be at least 1", i)...)
		}
		if _, ok := parseTime(t.SubmittedAt); !ok {
			p = append(p, problem("turnTimings[%d].submittedAt: not an RFC 3339 time", i)...)
		}
		for _, s := range []*string{t.RunStartedAt, t.RunFinishedAt} {
			if s != nil {
				if _, ok := parseTime(*s); !ok {
					p = append(p, problem("turnTimings[%d]: run time %q is not an RFC 3339 time", i, *s)...)
				}
			}
		}
		for _, v := range []*int64{t.SchedulerLatencyMs, t.RunDurationMs, t.ResponseLatencyMs} {
			if v != nil && *v < 0 {
				p = append(p, problem("turnTimings[%d]: latencies must not be negative", i)...)
			}
		}
		switch t.LeaseAcquisitionOutcome {
		case "created", "resumed", "replacement", "unknown":
		default:
			p = append(p, problem("turnTimings[%d].leaseAcquisitionOutcome: %q is not created, resumed, replacement or unknown", i, t.LeaseAcquisitionOutcome)...)
		}
	}
	return p
}

// checkMatcherResults checks each matcher result: a printable kind, not both passed
// and not reached, a UTF-8 detail, finite numbers.
func checkMatcherResults(r *Result) []string {
	var p []string
	for i, m := range r.MatcherResults {
		if m.Kind == "" || !printable(m.Kind) {
			p = append(p, problem("matcherResults[%d].kind: must be non-empty printable text", i)...)
		}
		if m.Passed && m.NotReached {
			p = append(p, problem("matcherResults[%d]: cannot be both passed and not reached", i)...)
		}
		if !utf8.ValidString(m.Detail) {
			p = append(p, problem("matcherResults[%d].detail: must be valid UTF-8", i)...)
		}
		if !finiteJSON(m.Expected) || !finiteJSON(m.Observed) {
			p = append(p, problem("matcherResults[%d]: numbers must be finite", i)...)
		}
	}
	return p
}

// checkTermination: absent, or a JSON object.
func checkTermination(r *Result) []string {
	if len(r.Termination) == 0 {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(r.Termination, &obj); err != nil || obj == nil {
		return problem("termination: must be a JSON object")
	}
	return nil
}

// checkUsage: every number of the raw usage is finite.
func checkUsage(r *Result) []string {
	if !finiteJSON(r.Usage) {
		return problem("usage: numbers must be finite")
	}
	return nil
}

// checkRuntimeUsage: absent, or a valid runtime usage (checkRuntime).
func checkRuntimeUsage(r *Result) []string {
	if r.RuntimeUsage == nil {
		return nil
	}
	return checkRuntime("runtimeUsage", r.RuntimeUsage)
}

// checkBilling: absent, or a valid runtime part, LLM part and non-negative finite (or
// null) cost totals.
func checkBilling(r *Result) []string {
	if r.Billing == nil {
		return nil
	}
	p := checkRuntime("billing.runtime", &r.Billing.Runtime)
	p = append(p, checkLLM("billing.llm", &r.Billing.LLM)...)
	for _, f := range []struct {
		name string
		v    *float64
	}{{"billing.reportedCostUsd", r.Billing.ReportedCostUSD}, {"billing.estimatedRuntimeCostUsd", r.Billing.EstimatedRuntimeCostUSD}, {"billing.observedAndEstimatedCostUsd", r.Billing.ObservedAndEstimatedCostUSD}} {
		if !nonNegative(f.v) {
			p = append(p, problem("%s: must be a non-negative finite number or null", f.name)...)
		}
	}
	return p
}

// checkAllRuntimeFacts checks each run's launch facts (checkRuntimeFacts).
func checkAllRuntimeFacts(r *Result) []string {
	var p []string
	for i, rf := range r.RuntimeFacts {
		p = append(p, checkRuntimeFacts(fmt.Sprintf("runtimeFacts[%d]", i), &rf)...)
	}
	return p
}

// checkCleanup: not_started, passed or failed.
func checkCleanup(r *Result) []string {
	if r.Cleanup.Valid() {
		return nil
	}
	return problem("cleanup: %q is not not_started, passed or failed", r.Cleanup)
}

// checkEvidence: every evidence path is a safe relative path (SafeRelPath).
func checkEvidence(r *Result) []string {
	var p []string
	for i, e := range r.Evidence {
		if !SafeRelPath(e) {
			p = append(p, problem("evidence[%d]: %q is not a safe relative path", i, e)...)
		}
	}
	return p
}

// checkRuntimeFacts checks one run's launch facts: printable bounded text, a hex
// SHA-256, known runtime modes and execution targets, a non-negative pid.
func checkRuntimeFacts(name string, rf *RuntimeFacts) []string {
	var p []string
	texts := []string{rf.RunID, rf.Driver, rf.AdapterType, rf.Provider, rf.CLIName, rf.CLIVersion, rf.VersionSource, rf.Binary, rf.EnvironmentID}
	texts = append(append(texts, rf.Argv...), rf.Problems...)
	for _, t := range texts {
		if !printable(t) || len(t) > 4096 {
			p = append(p, name+": every text must be printable, at most 4096 bytes")
			break
		}
	}
	if rf.RunID == "" || rf.Driver == "" {
		p = append(p, name+": runId and driver are required")
	}
	if rf.BinarySHA256 != "" && !isSHA256Hex(rf.BinarySHA256) {
		p = append(p, name+".binarySha256: must be 64 lower-case hex digits")
	}
	switch rf.RuntimeMode {
	case "", "legacy", "native":
	default:
		p = append(p, fmt.Sprintf("%s.runtimeMode: %q is not legacy or native", name, rf.RuntimeMode))
	}
	switch rf.ExecutionTarget {
	case "", "local", "remote":
	default:
		p = append(p, fmt.Sprintf("%s.executionTarget: %q is not local or remote", name, rf.ExecutionTarget))
	}
	if rf.PID < 0 || len(rf.Argv) > 256 || len(rf.Problems) > 64 {
		p = append(p, name+": pid must not be negative; at most 256 argv entries and 64 problems")
	}
	return p
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func checkRuntime(name string, rt *billing.RuntimeUsage) []string {
	var p []string
	switch rt.CostStatus {
	case billing.RuntimeEstimated, billing.RuntimeUnavailable, billing.RuntimeNotMetered, billing.RuntimeUnpriced:
	default:
		p = append(p, fmt.Sprintf("%s.costStatus: %q is not estimated, unavailable, unpriced or not_metered", name, rt.CostStatus))
	}
	if rt.AgentRunDurationMs < 0 || (rt.LeaseDurationMs != nil && *rt.LeaseDurationMs < 0) || rt.LeaseCount < 0 {
		p = append(p, name+": durations and counts must not be negative")
	}
	for _, v := range []*float64{rt.CPUCores, rt.MemoryGiB, rt.DiskGiB, rt.EstimatedListCostUSD} {
		if !nonNegative(v) {
			p = append(p, name+": resources and estimates must be non-negative finite numbers")
			break
		}
	}
	if rt.CostStatus == billing.RuntimeEstimated && rt.EstimatedListCostUSD == nil {
		p = append(p, name+": an estimated runtime cost needs estimatedListCostUsd")
	}
	if rt.PricingURL != "" && !safeURL(rt.PricingURL) {
		p = append(p, name+".pricingUrl: must be an http(s) URL without user information")
	}
	return p
}

func checkLLM(name string, l *billing.LLMUsage) []string {
	var p []string
	switch l.CostStatus {
	case billing.CostReported, billing.CostPartial, billing.CostUnpriced, billing.CostUnavailable:
	default:
		p = append(p, fmt.Sprintf("%s.costStatus: %q is not reported, partial, unpriced or unavailable", name, l.CostStatus))
	}
	if l.RunCount < 0 || l.RunsWithTokenUsage < 0 || l.RunsWithReportedCost < 0 || l.InputTokens < 0 || l.OutputTokens < 0 || l.CachedInputTokens < 0 || l.CacheWriteInputTokens < 0 || l.TotalTokens < 0 {
		p = append(p, name+": counts must not be negative")
	}
	if !nonNegative(l.ReportedCostUSD) {
		p = append(p, name+".reportedCostUsd: must be a non-negative finite number or null")
	}
	return p
}

func nonNegative(v *float64) bool {
	return v == nil || (!math.IsNaN(*v) && !math.IsInf(*v, 0) && *v >= 0)
}

func finiteJSON(v any) bool {
	switch x := v.(type) {
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case map[string]any:
		for _, e := range x {
			if !finiteJSON(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !finiteJSON(e) {
				return false
			}
		}
	}
	return true
}

// checkExecutionID: id is an execution id whose components are suite, profile, env and cs.
func checkExecutionID(id, suite, profile, env, cs string) []string {
	s, p, e, c, ok := ParseExecutionID(id)
	if !ok {
		return []string{fmt.Sprintf("executionId: %q must be <suite>.<profile>.<environment>.<case> of catalog ids (at most %d bytes)", Clip(id, 80), MaxExecutionIDLength)}
	}
	var out []string
	for _, f := range []struct{ name, got, want string }{{"suiteId", suite, s}, {"profileId", profile, p}, {"environmentId", env, e}, {"caseId", cs, c}} {
		if f.got != f.want {
			out = append(out, fmt.Sprintf("%s: %q disagrees with executionId (%q)", f.name, Clip(f.got, 80), f.want))
		}
	}
	return out
}

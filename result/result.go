package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentproof/agentproof/workspace"
	"io"
	"math"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/verdict"
)

// Schema tags of the files this package reads and writes (DESIGN.md "Files a campaign
// writes": agentproof.<name>/v<N>).
const (
	ResultSchema   = "agentproof.result/v1"
	CampaignSchema = "agentproof.campaign/v1"
	HistorySchema  = "agentproof.history/v1"
)

// Cleanup states of an attempt's teardown (spec §7.1).
const (
	CleanupNotStarted = "not_started"
	CleanupPassed     = "passed"
	CleanupFailed     = "failed"
)

// maxRepeat bounds a result's repeat (campaign.MaxRepeat, which imports this package).
const maxRepeat = 1000

// MaxExecutionIDLength bounds an execution id, in bytes (spec §7.1).
const MaxExecutionIDLength = 512

// Source says which code produced a result (spec §7.1): commit, ref and CI run URL, each
// nullable.
type Source struct {
	SHA            *string `json:"sha"`
	Ref            *string `json:"ref"`
	WorkflowRunURL *string `json:"workflowRunUrl"`
}

// RankingSnapshot ties a ranked profile's result to the model-ranking snapshot it was
// chosen from (spec §7.1, §1.4): snapshot id, capture time (RFC 3339), source URL, rank
// (≥ 1) and canonical model id.
type RankingSnapshot struct {
	SnapshotID       string `json:"snapshotId"`
	CapturedAt       string `json:"capturedAt"`
	SourceURL        string `json:"sourceUrl"`
	Rank             int    `json:"rank"`
	CanonicalModelID string `json:"canonicalModelId"`
}

// MatcherResult is one matcher's outcome, shaped like match.Outcome: the matcher kind,
// whether it passed, whether its evidence was never reached, the expectation and the
// observed value (arbitrary JSON, bounded by the matcher package) and a detail sentence.
type MatcherResult struct {
	Kind       string `json:"kind"`
	Passed     bool   `json:"passed"`
	NotReached bool   `json:"notReached,omitempty"`
	Expected   any    `json:"expected,omitempty"`
	Observed   any    `json:"observed,omitempty"`
	Detail     string `json:"detail"`
}

// TurnTiming is one turn of a multi-turn case (spec §7.1): when the human submitted it,
// when its run started and finished (RFC 3339, nullable) and the derived latencies in ms.
type TurnTiming struct {
	Turn                    int     `json:"turn"`
	SubmittedAt             string  `json:"submittedAt"`
	RunStartedAt            *string `json:"runStartedAt"`
	RunFinishedAt           *string `json:"runFinishedAt"`
	SchedulerLatencyMs      *int64  `json:"schedulerLatencyMs"`
	RunDurationMs           *int64  `json:"runDurationMs"`
	ResponseLatencyMs       *int64  `json:"responseLatencyMs"`
	RunID                   string  `json:"runId"`
	LeaseAcquisitionOutcome string  `json:"leaseAcquisitionOutcome"`
}

// RuntimeFacts is what the heartbeat runner recorded launching one run's agent
// process (api.LaunchFacts; docs/ARCHITECTURE.md "Observed facts"): the driver, the
// adapter type and model provider it launched with, the agent CLI's name and version
// (VersionSource says where the version came from: the shipping npm package's
// package.json, or "--version" output), the
// executable's path and SHA-256 (hex), the argv shape (flags kept, values replaced by
// "<value>": never a secret), the runtime mode (legacy | native), the control-plane
// environment id and execution target (local | remote), the process id and its start
// time in clock ticks since boot (/proc/<pid>/stat field 22), and the facts the runner
// could not observe (Problems).
type RuntimeFacts struct {
	RunID             string   `json:"runId"`
	Driver            string   `json:"driver"`
	AdapterType       string   `json:"adapterType,omitempty"`
	Provider          string   `json:"provider,omitempty"`
	CLIName           string   `json:"cliName,omitempty"`
	CLIVersion        string   `json:"cliVersion,omitempty"`
	VersionSource     string   `json:"versionSource,omitempty"`
	Binary            string   `json:"binary,omitempty"`
	BinarySHA256      string   `json:"binarySha256,omitempty"`
	Argv              []string `json:"argv,omitempty"`
	RuntimeMode       string   `json:"runtimeMode,omitempty"`
	EnvironmentID     string   `json:"environmentId,omitempty"`
	ExecutionTarget   string   `json:"executionTarget,omitempty"`
	PID               int      `json:"pid,omitempty"`
	ProcessStartTicks uint64   `json:"processStartTicks,omitempty"`
	Problems          []string `json:"problems,omitempty"`
}

// Result is one attempt of one cell, `result.json` (schema agentproof.result/v1; spec
// runner-e2e-harness §7.1 with agentproof's verdicts). Times are RFC 3339 in UTC,
// durations in ms. Usage is the raw, sanitised provider usage (any JSON or null);
// RuntimeUsage and Billing are computed by package billing. Termination is the process
// termination summary, an opaque JSON object. Evidence lists the attempt's evidence
// files relative to the attempt directory (slash-separated, no "..").
// Trajectories lists the ATIF trajectory written of each run (TrajectoryRef).
//
// Repetition (1..Repeat) and Repeat (the campaign's repetitions per cell) are set only
// with `run --repeat N`, N > 1; both are 0 otherwise.
//
// Synthetic is set on results this package made up for expected cells without any
// result (attempt 0); they are never written to disk as result.json.
type Result struct {
	Schema              string           `json:"schema"`
	ExecutionID         string           `json:"executionId"`
	CampaignID          string           `json:"campaignId"`
	SuiteID             string           `json:"suiteId"`
	SuiteDefinitionHash string           `json:"suiteDefinitionHash"`
	ProfileID           string           `json:"profileId"`
	EnvironmentID       string           `json:"environmentId"`
	CaseID              string           `json:"caseId"`
	Provider            string           `json:"provider"`
	Model               string           `json:"model"`
	RuntimeMode         string           `json:"runtimeMode,omitempty"`
	Source              *Source          `json:"source,omitempty"`
	RankingSnapshot     *RankingSnapshot `json:"rankingSnapshot,omitempty"`
	Attempt             int              `json:"attempt"`
	// FirstAttempt is set (> 1) when a resumed or rerun campaign made this attempt
	// after attempts the campaign already held: the number of the first attempt of that
	// run. Retries count from it, so a resumed attempt is not an automatic retry.
	FirstAttempt    int                       `json:"firstAttempt,omitempty"`
	Repetition      int                       `json:"repetition,omitempty"`
	Repeat          int                       `json:"repeat,omitempty"`
	Verdict         verdict.Verdict           `json:"verdict"`
	ExpectedVerdict verdict.Verdict           `json:"expectedVerdict,omitempty"`
	FailureClass    verdict.FailureClass      `json:"failureClass,omitempty"`
	Error           string                    `json:"error,omitempty"`
	IssueID         string                    `json:"issueId,omitempty"`
	IssueIdentifier string                    `json:"issueIdentifier,omitempty"`
	RunIDs          []string                  `json:"runIds"`
	TurnTimings     []TurnTiming              `json:"turnTimings,omitempty"`
	StartedAt       string                    `json:"startedAt"`
	FinishedAt      string                    `json:"finishedAt"`
	DurationMs      int64                     `json:"durationMs"`
	MatcherResults  []MatcherResult           `json:"matcherResults"`
	Termination     json.RawMessage           `json:"termination,omitempty"`
	Usage           any                       `json:"usage"`
	RuntimeUsage    *billing.RuntimeUsage     `json:"runtimeUsage,omitempty"`
	Billing         *billing.Summary          `json:"billing,omitempty"`
	Cleanup         string                    `json:"cleanup"`
	RuntimeFacts    []RuntimeFacts            `json:"runtimeFacts,omitempty"`
	Leases          []environment.LeaseRecord `json:"leases,omitempty"`
	Evidence        []string                  `json:"evidence"`
	Trajectories    []TrajectoryRef           `json:"trajectories,omitempty"`
	Synthetic       bool                      `json:"synthetic,omitempty"`
	// WorkspaceDiff is what each turn changed in the workspace (package workspace:
	// text before/after within its bounds, binary files by SHA-256), omitted when
	// none was recorded.
	WorkspaceDiff []workspace.TurnDiff `json:"workspaceDiff,omitempty"`
}

// ValidationError lists every problem found in one document, each naming its field.
type ValidationError struct {
	Label    string
	Problems []string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s: %d problem(s): %s", e.Label, len(e.Problems), strings.Join(e.Problems, "; "))
}

// ErrInvalid matches every *ValidationError with errors.Is.
var ErrInvalid = errors.New("invalid report document")

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// DecodeResult parses and strictly validates one result.json (spec §7.1 "newer versions
// validate every field strictly"): unknown fields, trailing data, wrong types, unknown
// enumerations, malformed dates, unsafe evidence paths, negative or non-finite numbers
// and an execution id that disagrees with its components are all reported together in a
// *ValidationError labelled label. Other errors are JSON syntax errors.
func DecodeResult(label string, b []byte) (*Result, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, &ValidationError{Label: label, Problems: []string{"not a result document: " + err.Error()}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ValidationError{Label: label, Problems: []string{"trailing data after the result object"}}
	}
	r.Usage = plainNumbers(r.Usage)
	for i := range r.MatcherResults {
		r.MatcherResults[i].Expected = plainNumbers(r.MatcherResults[i].Expected)
		r.MatcherResults[i].Observed = plainNumbers(r.MatcherResults[i].Observed)
	}
	if err := r.Validate(label); err != nil {
		return nil, err
	}
	return &r, nil
}

// plainNumbers turns json.Number values back into float64 (as encoding/json decodes
// into any), so that Usage keeps the shape package billing expects.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
		return x
	}
	return v
}

// Validate checks every field of r (see DecodeResult) and returns a *ValidationError
// naming each problem, or nil.
func (r *Result) Validate(label string) error {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if r.Schema != ResultSchema {
		add("schema: want %q, got %q", ResultSchema, r.Schema)
	}
	p = append(p, checkExecutionID(r.ExecutionID, r.SuiteID, r.ProfileID, r.EnvironmentID, r.CaseID)...)
	if !validCampaignID(r.CampaignID) {
		add("campaignId: %q must match [A-Za-z0-9][A-Za-z0-9._-]{0,199}", r.CampaignID)
	}
	if r.SuiteDefinitionHash == "" || !printable(r.SuiteDefinitionHash) || len(r.SuiteDefinitionHash) > 200 {
		add("suiteDefinitionHash: must be a non-empty printable string")
	}
	for _, f := range []struct{ name, v string }{{"provider", r.Provider}, {"model", r.Model}} {
		if !printable(f.v) || len(f.v) > 512 {
			add("%s: must be printable text of at most 512 bytes", f.name)
		}
	}
	switch r.RuntimeMode {
	case "", "legacy", "native":
	default:
		add("runtimeMode: %q is not legacy or native", r.RuntimeMode)
	}
	if r.Source != nil {
		if r.Source.WorkflowRunURL != nil && !safeURL(*r.Source.WorkflowRunURL) {
			add("source.workflowRunUrl: must be an http(s) URL without user information")
		}
		for _, f := range []struct {
			name string
			v    *string
		}{{"source.sha", r.Source.SHA}, {"source.ref", r.Source.Ref}} {
			if f.v != nil && (!printable(*f.v) || len(*f.v) > 512) {
				add("%s: must be printable text", f.name)
			}
		}
	}
	if rs := r.RankingSnapshot; rs != nil {
		if rs.SnapshotID == "" || !printable(rs.SnapshotID) || !printable(rs.CanonicalModelID) || rs.Rank < 1 {
			add("rankingSnapshot: needs a printable snapshotId and canonicalModelId and a rank of at least 1")
		}
		if _, ok := parseTime(rs.CapturedAt); !ok {
			add("rankingSnapshot.capturedAt: %q is not an RFC 3339 time", rs.CapturedAt)
		}
		if !safeURL(rs.SourceURL) {
			add("rankingSnapshot.sourceUrl: must be an http(s) URL without user information")
		}
	}
	if r.Attempt < 1 && !r.Synthetic {
		add("attempt: must be at least 1, got %d", r.Attempt)
	}
	if r.FirstAttempt != 0 && (r.FirstAttempt < 2 || r.FirstAttempt > r.Attempt) {
		add("firstAttempt: must be absent or between 2 and attempt (%d), got %d", r.Attempt, r.FirstAttempt)
	}
	switch {
	case r.Repeat < 0 || r.Repeat > maxRepeat:
		add("repeat: must be between 0 and %d, got %d", maxRepeat, r.Repeat)
	case r.Repeat == 0 && r.Repetition != 0:
		add("repetition: %d given without repeat", r.Repetition)
	case r.Repeat > 0 && (r.Repetition < 1 || r.Repetition > r.Repeat):
		add("repetition: must be between 1 and repeat (%d), got %d", r.Repeat, r.Repetition)
	}
	if !r.Verdict.Valid() {
		add("verdict: %q is not passed, failed or inconclusive", r.Verdict)
	}
	if r.ExpectedVerdict != "" && !r.ExpectedVerdict.Valid() {
		add("expectedVerdict: %q is not passed, failed or inconclusive", r.ExpectedVerdict)
	}
	switch {
	case r.FailureClass == "":
		if r.Verdict != verdict.Passed && r.Verdict.Valid() {
			add("failureClass: required when the verdict is %s", r.Verdict)
		}
	case r.FailureClass.Valid():
		if r.Verdict == verdict.Passed {
			add("failureClass: %q given for a passed verdict", r.FailureClass)
		}
	default:
		add("failureClass: %q is not one of %v", r.FailureClass, verdict.FailureClasses)
	}
	if !utf8.ValidString(r.Error) || !utf8.ValidString(r.IssueID) || !utf8.ValidString(r.IssueIdentifier) {
		add("error, issueId, issueIdentifier: must be valid UTF-8")
	}
	for i, id := range r.RunIDs {
		if id == "" || !printable(id) {
			add("runIds[%d]: must be non-empty printable text", i)
		}
	}
	start, okStart := parseTime(r.StartedAt)
	end, okEnd := parseTime(r.FinishedAt)
	if !okStart {
		add("startedAt: %q is not an RFC 3339 time", r.StartedAt)
	}
	if !okEnd {
		add("finishedAt: %q is not an RFC 3339 time", r.FinishedAt)
	}
	if okStart && okEnd && end.Before(start) {
		add("finishedAt: before startedAt")
	}
	if r.DurationMs < 0 {
		add("durationMs: must not be negative")
	}
	for i, t := range r.TurnTimings {
		if t.Turn < 1 {
			add("turnTimings[%d].turn: must be at least 1", i)
		}
		if _, ok := parseTime(t.SubmittedAt); !ok {
			add("turnTimings[%d].submittedAt: not an RFC 3339 time", i)
		}
		for _, s := range []*string{t.RunStartedAt, t.RunFinishedAt} {
			if s != nil {
				if _, ok := parseTime(*s); !ok {
					add("turnTimings[%d]: run time %q is not an RFC 3339 time", i, *s)
				}
			}
		}
		for _, v := range []*int64{t.SchedulerLatencyMs, t.RunDurationMs, t.ResponseLatencyMs} {
			if v != nil && *v < 0 {
				add("turnTimings[%d]: latencies must not be negative", i)
			}
		}
		switch t.LeaseAcquisitionOutcome {
		case "created", "resumed", "replacement", "unknown":
		default:
			add("turnTimings[%d].leaseAcquisitionOutcome: %q is not created, resumed, replacement or unknown", i, t.LeaseAcquisitionOutcome)
		}
	}
	for i, m := range r.MatcherResults {
		if m.Kind == "" || !printable(m.Kind) {
			add("matcherResults[%d].kind: must be non-empty printable text", i)
		}
		if m.Passed && m.NotReached {
			add("matcherResults[%d]: cannot be both passed and not reached", i)
		}
		if !utf8.ValidString(m.Detail) {
			add("matcherResults[%d].detail: must be valid UTF-8", i)
		}
		if !finiteJSON(m.Expected) || !finiteJSON(m.Observed) {
			add("matcherResults[%d]: numbers must be finite", i)
		}
	}
	if len(r.Termination) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(r.Termination, &obj); err != nil || obj == nil {
			add("termination: must be a JSON object")
		}
	}
	if !finiteJSON(r.Usage) {
		add("usage: numbers must be finite")
	}
	if r.RuntimeUsage != nil {
		p = append(p, checkRuntime("runtimeUsage", r.RuntimeUsage)...)
	}
	if r.Billing != nil {
		p = append(p, checkRuntime("billing.runtime", &r.Billing.Runtime)...)
		p = append(p, checkLLM("billing.llm", &r.Billing.LLM)...)
		for _, f := range []struct {
			name string
			v    *float64
		}{{"billing.reportedCostUsd", r.Billing.ReportedCostUSD}, {"billing.estimatedRuntimeCostUsd", r.Billing.EstimatedRuntimeCostUSD}, {"billing.observedAndEstimatedCostUsd", r.Billing.ObservedAndEstimatedCostUSD}} {
			if !nonNegative(f.v) {
				add("%s: must be a non-negative finite number or null", f.name)
			}
		}
	}
	for i, rf := range r.RuntimeFacts {
		p = append(p, checkRuntimeFacts(fmt.Sprintf("runtimeFacts[%d]", i), &rf)...)
	}
	switch r.Cleanup {
	case CleanupNotStarted, CleanupPassed, CleanupFailed:
	default:
		add("cleanup: %q is not not_started, passed or failed", r.Cleanup)
	}
	for i, e := range r.Evidence {
		if !SafeRelPath(e) {
			add("evidence[%d]: %q is not a safe relative path", i, e)
		}
	}
	p = append(p, checkTrajectories(r.Trajectories)...)
	p = append(p, checkWorkspaceDiff(r.WorkspaceDiff)...)
	if len(p) > 0 {
		return &ValidationError{Label: label, Problems: p}
	}
	return nil
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

// ParseExecutionID splits "<suite>.<profile>.<environment>.<case>" into its four
// components, each following catalog.IDPattern. ok is false for anything else,
// including ids longer than MaxExecutionIDLength.
func ParseExecutionID(id string) (suite, profile, env, cs string, ok bool) {
	if len(id) > MaxExecutionIDLength {
		return "", "", "", "", false
	}
	parts := strings.Split(id, ".")
	if len(parts) != 4 {
		return "", "", "", "", false
	}
	for _, p := range parts {
		if !catalog.IDPattern().MatchString(p) {
			return "", "", "", "", false
		}
	}
	return parts[0], parts[1], parts[2], parts[3], true
}

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

// validCampaignID reports whether id is a campaign id: ^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$
// (spec §7.5), and not "." or "..".
func validCampaignID(id string) bool {
	if id == "" || len(id) > 200 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || (c != '.' && c != '_' && c != '-')) {
			return false
		}
	}
	return true
}

// ValidCampaignID reports whether id may name a campaign (and its directory): a letter
// or digit followed by at most 199 letters, digits, '.', '_' or '-' (spec §7.5).
func ValidCampaignID(id string) bool { return validCampaignID(id) }

func parseTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func safeURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// SafeRelPath reports whether p is a clean, slash-separated relative path inside a
// directory: no empty, "." or ".." element, no leading slash, no backslash, no control
// characters.
func SafeRelPath(p string) bool {
	if p == "" || len(p) > 1024 || strings.Contains(p, "\\") || !printable(p) {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return path.Clean(p) == p
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// maxDiffTurns bounds the turns of a result's workspace diff.
const maxDiffTurns = 1000

// checkWorkspaceDiff checks a result's workspace diff against the bounds the attempt
// records it within (package workspace), so a result.json from elsewhere (report merge)
// cannot bloat the reports: at most maxDiffTurns turns of at most
// workspace.DiffTurnFiles changes, each a known change and type, each text at most
// workspace.DiffTextBytes, at most workspace.DiffTurnTextBytes per turn.
func checkWorkspaceDiff(turns []workspace.TurnDiff) []string {
	var p []string
	if len(turns) > maxDiffTurns {
		return []string{fmt.Sprintf("workspaceDiff: %d turns, more than %d", len(turns), maxDiffTurns)}
	}
	for i, td := range turns {
		if td.Turn < 1 {
			p = append(p, fmt.Sprintf("workspaceDiff[%d].turn: %d is not positive", i, td.Turn))
		}
		if len(td.Changes) > workspace.DiffTurnFiles {
			p = append(p, fmt.Sprintf("workspaceDiff[%d].changes: %d entries, more than %d", i, len(td.Changes), workspace.DiffTurnFiles))
			continue
		}
		text := 0
		for j, fc := range td.Changes {
			at := fmt.Sprintf("workspaceDiff[%d].changes[%d]", i, j)
			switch fc.Change {
			case workspace.ChangeAdded, workspace.ChangeRemoved, workspace.ChangeModified:
			default:
				p = append(p, fmt.Sprintf("%s.change: %q is not added, removed or modified", at, fc.Change))
			}
			switch fc.Type {
			case workspace.TypeFile, workspace.TypeSymlink, workspace.TypeOther:
			default:
				p = append(p, fmt.Sprintf("%s.type: %q is not file, symlink or other", at, fc.Type))
			}
			if fc.BeforeBytes < 0 || fc.AfterBytes < 0 {
				p = append(p, at+": negative size")
			}
			for _, t := range []*string{fc.Before, fc.After} {
				if t == nil {
					continue
				}
				if len(*t) > workspace.DiffTextBytes {
					p = append(p, fmt.Sprintf("%s: a text of %d bytes, more than %d", at, len(*t), workspace.DiffTextBytes))
				}
				text += len(*t)
			}
		}
		if text > workspace.DiffTurnTextBytes {
			p = append(p, fmt.Sprintf("workspaceDiff[%d]: %d bytes of text, more than %d", i, text, workspace.DiffTurnTextBytes))
		}
	}
	return p
}

package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/workspace"
	wsource "github.com/agentproof/agentproof/workspace/source"
)

// Schema tags of the files this package reads and writes: agentproof.<name>/v<N>.
const (
	ResultSchema   = "agentproof.result/v1"
	CampaignSchema = "agentproof.campaign/v1"
	HistorySchema  = "agentproof.history/v1"
)

// CleanupStatus is the state of an attempt's teardown (Result.Cleanup): one of
// CleanupStatuses. Its JSON form is the plain string.
type CleanupStatus string

// Cleanup states of an attempt's teardown.
const (
	// CleanupNotStarted: the teardown never ran (a result written for a cell that did
	// not run, or one whose attempt was lost).
	CleanupNotStarted CleanupStatus = "not_started"
	// CleanupPassed: every resource the attempt held was released and confirmed.
	CleanupPassed CleanupStatus = "passed"
	// CleanupFailed: some resource was not released or its release not confirmed.
	CleanupFailed CleanupStatus = "failed"
)

// CleanupStatuses lists every cleanup status.
var CleanupStatuses = []CleanupStatus{CleanupNotStarted, CleanupPassed, CleanupFailed}

// Valid reports whether c is one of CleanupStatuses.
func (c CleanupStatus) Valid() bool { return slices.Contains(CleanupStatuses, c) }

// maxRepeat bounds a result's repeat (campaign.MaxRepeat, which imports this package).
const maxRepeat = 1000

// MaxExecutionIDLength bounds an execution id, in bytes.
const MaxExecutionIDLength = 512

// Source says which code produced a result: commit, ref and CI run URL, each
// nullable.
type Source struct {
	SHA            *string `json:"sha"`
	Ref            *string `json:"ref"`
	WorkflowRunURL *string `json:"workflowRunUrl"`
}

// RankingSnapshot ties a ranked profile's result to the model-ranking snapshot it was
// chosen from: snapshot id, capture time (RFC 3339), source URL, rank
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

// TurnTiming is one turn of a multi-turn case: when the human submitted it,
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

// KnownFailure is a cell's entry in the baseline of known failures as a result
// records it (catalog.KnownFailure): the observed behaviour that makes it fail, what
// it is expected to end as (failed or inconclusive), since which version, and where
// the entry is declared ("file:line:column").
type KnownFailure struct {
	Reason   string          `json:"reason"`
	Expected verdict.Verdict `json:"expected"`
	Since    string          `json:"since"`
	Source   string          `json:"source,omitempty"`
}

// Result is one attempt of one cell, `result.json` (schema agentproof.result/v1, with
// agentproof's verdicts). Times are RFC 3339 in UTC,
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
// result (attempt 0); they are never written to disk as result.json. NotRunHere, set
// only on a synthetic result, says why the cell did not run at all: the machine that
// ran the campaign could not provide its environment (CampaignOptions.NotRunHere).
// Such a result has no verdict (Verdict is empty): the cell is neither passed, failed
// nor inconclusive, and is counted apart (Campaign.NotRun).
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
	FirstAttempt    int             `json:"firstAttempt,omitempty"`
	Repetition      int             `json:"repetition,omitempty"`
	Repeat          int             `json:"repeat,omitempty"`
	Verdict         verdict.Verdict `json:"verdict"`
	ExpectedVerdict verdict.Verdict `json:"expectedVerdict,omitempty"`
	// KnownFailure is the cell's entry in the catalog's baseline of known failures
	// when the attempt ran (nil: none); StateOf reads it.
	KnownFailure    *KnownFailure             `json:"knownFailure,omitempty"`
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
	Cleanup         CleanupStatus             `json:"cleanup"`
	RuntimeFacts    []RuntimeFacts            `json:"runtimeFacts,omitempty"`
	Leases          []environment.LeaseRecord `json:"leases,omitempty"`
	Evidence        []string                  `json:"evidence"`
	Trajectories    []TrajectoryRef           `json:"trajectories,omitempty"`
	Synthetic       bool                      `json:"synthetic,omitempty"`
	NotRunHere      string                    `json:"notRunHere,omitempty"`
	// WorkspaceDiff is what each turn changed in the workspace (package workspace:
	// text before/after within its bounds, binary files by SHA-256), omitted when
	// none was recorded.
	WorkspaceDiff []workspace.TurnDiff `json:"workspaceDiff,omitempty"`
	// WorkspaceSource is the source the attempt's workspace was seeded from (its kind,
	// how the catalog named it, a git source's commit, and the digest of what was
	// read), omitted when the workspace started empty; the per-turn diff is relative
	// to it.
	WorkspaceSource *wsource.Record `json:"workspaceSource,omitempty"`
	// RegradeOf, set on a result of `agentproof regrade`, names the stored attempt it
	// graded again (docs/regrade.md); SuiteDefinitionHash is then the definition that
	// graded it.
	RegradeOf *RegradeOf `json:"regradeOf,omitempty"`
}

// RegradeOf names what a regrade graded again: the source campaign, the fingerprint
// (a campaign's) or suite definition hash (a result's) that graded it first, and — on
// a result — the source attempt's directory relative to the source campaign's and its
// verdict there.
type RegradeOf struct {
	CampaignID  string          `json:"campaignId"`
	Fingerprint string          `json:"fingerprint"`
	Attempt     string          `json:"attempt,omitempty"`
	Verdict     verdict.Verdict `json:"verdict,omitempty"`
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

// DecodeResult parses and strictly validates one result.json (every field is validated
// strictly): unknown fields, trailing data, wrong types, unknown
// enumerations, malformed dates, unsafe evidence paths, negative or non-finite numbers
// and an execution id that disagrees with its components are all reported together in a
// *ValidationError labelled label. Other errors are JSON syntax errors.
func DecodeResult(label string, b []byte) (*Result, error) {
	var r Result
	if err := decodeStrict(label, b, &r, true, "a result document", "result"); err != nil {
		return nil, err
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

// decodeStrict decodes b, one JSON object and nothing after it, into v, refusing
// unknown fields; with numbers, a number in an interface field stays a json.Number.
// Errors: a *ValidationError labelled label, "not <what>: <the decoder's error>" or
// "trailing data after the <object> object".
func decodeStrict(label string, b []byte, v any, numbers bool, what, object string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if numbers {
		dec.UseNumber()
	}
	if err := dec.Decode(v); err != nil {
		return &ValidationError{Label: label, Problems: []string{"not " + what + ": " + err.Error()}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &ValidationError{Label: label, Problems: []string{"trailing data after the " + object + " object"}}
	}
	return nil
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

// validCampaignID reports whether id is a campaign id: ^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$,
// and not "." or "..".
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
// or digit followed by at most 199 letters, digits, '.', '_' or '-'.
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

// Clip is s cut to its first n bytes followed by "…" when it is longer.
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

package result

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/verdict"
)

// CampaignFile is the campaign document's name at the campaign root.
const CampaignFile = "campaign.json"

// Campaign is campaign.json (schema agentproof.campaign/v1, counted with agentproof's
// verdicts): the selection (Expected, sorted), the counts over
// the chosen result of every expected cell, per-suite summaries and the results
// themselves (sorted by execution id).
//
// Counts: Selected = |Expected|; with repeats a cell's result is its representative
// repetition (ChooseRepeated), so every count below is of cells; Executed = results
// with attempt > 0; Passed, Failed, Inconclusive and KnownFailures count cell states
// (StateOf) and NotRun the cells not run here (Result.NotRunHere; their reasons by
// execution id in NotRunHere); the five always sum to Selected: a known failure is
// counted apart, an unexpected pass (counted in UnexpectedPasses too) as failed, and
// a cell not run here makes the campaign partial; Retries =
// Σ max(0, attempt − max(1, firstAttempt)) (a resumed attempt is no retry);
// CleanupPassed = every result's cleanup passed. Partial is true
// unless every suite of the catalog that is not manual-only appears and every listed
// suite is complete (see SuiteSummary). GeneratedAt is the latest finishedAt of the
// results (never the wall clock, so regeneration is byte-identical); StartedAt the
// earliest startedAt.
type Campaign struct {
	Schema      string `json:"schema"`
	CampaignID  string `json:"campaignId"`
	StartedAt   string `json:"startedAt"`
	GeneratedAt string `json:"generatedAt"`
	Partial     bool   `json:"partial"`
	Counts
	DurationMs            int64  `json:"durationMs"`
	InconclusiveAsFailure bool   `json:"inconclusiveAsFailure"`
	Fingerprint           string `json:"fingerprint"`
	// NotRunHere maps every cell not run here to why (omitted when none).
	NotRunHere map[string]string `json:"notRunHere,omitempty"`
	// Repeat is the repetitions per cell (`run --repeat`; 0 or 1: none); Flaky counts
	// the cells whose repetitions disagree; Repeats has one entry per cell when Repeat
	// > 1 (and is omitted otherwise).
	Repeat  int       `json:"repeat,omitempty"`
	Flaky   int       `json:"flaky,omitempty"`
	Repeats []Repeats `json:"repeats,omitempty"`
	// RankingSnapshots are the results' ranking snapshots, de-duplicated by snapshot id
	// and sorted by it.
	RankingSnapshots []CampaignRankingSnapshot `json:"rankingSnapshots"`
	Billing          billing.Aggregate         `json:"billing"`
	Expected         []string                  `json:"expected"`
	Suites           []SuiteSummary            `json:"suites"`
	Results          []Result                  `json:"results"`
	// Baselines is the regression check of every suite against its latest green
	// campaign of the same suite definition (Baseline; docs/regressions.md), in suite
	// order; omitted when the campaign has no suites.
	Baselines []Baseline `json:"baselines,omitempty"`
	// Provenance is what produced the campaign (nil when the generator was given none
	// and no earlier campaign.json had one).
	Provenance *Provenance `json:"provenance,omitempty"`
	// Catalog is the catalog the campaign was run with (nil when not recorded: a
	// campaign of an older agentproof, or one reported without a run).
	Catalog *CatalogSources `json:"catalog,omitempty"`
	// Candidates lists, per execution id, the attempts that were considered and why an
	// attempt was not chosen or not valid (sorted; empty when every cell had exactly one
	// valid attempt).
	Candidates []CandidateNote `json:"candidates"`
	// Interruption, when non-nil, says the run was interrupted before every selected
	// cell finished (the results then cover only the finished cells); nil for a
	// campaign that ran to its end.
	Interruption *Interruption `json:"interruption,omitempty"`
	// RegradeOf, set on a campaign `agentproof regrade` made, names the campaign whose
	// stored evidence it graded again and that campaign's fingerprint; Fingerprint is
	// then the definition that graded it (docs/regrade.md).
	RegradeOf *RegradeOf `json:"regradeOf,omitempty"`
}

// Interruption is how far an interrupted campaign got: the cells its run selected, how
// many of them did not finish, split into those stopped mid-attempt and those never
// started, and Resume, the command that continues it (`agentproof run --resume ...`).
type Interruption struct {
	Selected     int    `json:"selected"`
	Stopped      int    `json:"stopped"`
	NeverStarted int    `json:"neverStarted"`
	Resume       string `json:"resume"`
}

// Words say in one line how far an interrupted campaign got: "interrupted: 6 of 9
// selected cell(s) finished; 3 not finished (1 stopped mid-attempt, 2 never started)".
func (in *Interruption) Words() string {
	n := in.Stopped + in.NeverStarted
	return fmt.Sprintf("interrupted: %d of %d selected cell(s) finished; %d not finished (%d stopped mid-attempt, %d never started)",
		max(0, in.Selected-n), in.Selected, n, in.Stopped, in.NeverStarted)
}

// Repeats is one cell of a campaign run with `run --repeat N` (N > 1): its N
// repetitions' outcomes in order, how many counted as passed, failed and inconclusive
// (Passed/Repetitions is the pass rate), pass^k (PassAll: every repetition passed),
// pass@k (PassAny: at least one did), Flaky (verdict.Flaky: the repetitions disagree)
// and the cell's verdict (verdict.Repeated: passed only when every repetition passed).
type Repeats struct {
	ExecutionID  string              `json:"executionId"`
	Repetitions  int                 `json:"repetitions"`
	Passed       int                 `json:"passed"`
	Failed       int                 `json:"failed"`
	Inconclusive int                 `json:"inconclusive"`
	PassAll      bool                `json:"passAll"`
	PassAny      bool                `json:"passAny"`
	Flaky        bool                `json:"flaky"`
	Verdict      verdict.Verdict     `json:"verdict"`
	Outcomes     []RepetitionOutcome `json:"outcomes"`
}

// RepetitionOutcome is one repetition of a repeated cell: the attempt chosen for it
// (0 when it has none: Missing), its verdict and how it counts (Outcome).
type RepetitionOutcome struct {
	Repetition int             `json:"repetition"`
	Attempt    int             `json:"attempt"`
	Verdict    verdict.Verdict `json:"verdict"`
	Counted    verdict.Verdict `json:"counted"`
	Missing    bool            `json:"missing,omitempty"`
}

// CatalogSources is the catalog a campaign was run with (`--catalog`, repeatable, and
// `--with-default`), recorded in plan.json and campaign.json so that `agentproof report`
// regenerates the campaign with the same catalog: Default says the embedded default
// catalog is part of it, Paths are the --catalog paths, absolute, in the order given.
type CatalogSources struct {
	Default bool     `json:"default"`
	Paths   []string `json:"paths"`
}

// IsDefault reports whether the sources are the embedded default catalog alone.
func (s *CatalogSources) IsDefault() bool { return s == nil || (s.Default && len(s.Paths) == 0) }

// Provenance is what produced a campaign: agentproof's module version, VCS revision
// ("unknown" for a binary built without VCS stamping) and whether its tree was
// modified, the Go version, the host's OS and architecture (Go's GOOS/GOARCH names) —
// all of the binary that ran the campaign, recorded by `agentproof run` — and every
// agent CLI the results record launching (CLIs, derived from the results' runtime
// facts when the report is generated).
type Provenance struct {
	Version  string          `json:"version"`
	Revision string          `json:"revision"`
	Modified bool            `json:"modified"`
	Go       string          `json:"go"`
	OS       string          `json:"os"`
	Arch     string          `json:"arch"`
	CLIs     []CLIProvenance `json:"clis"`
}

// CLIProvenance is one agent CLI binary a campaign's runs launched: its name, version
// and the SHA-256 (hex) of the binary, as the heartbeat runner observed them (empty
// when not observed). Sorted by name, version, digest; each distinct triple once.
type CLIProvenance struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	BinarySHA256 string `json:"binarySha256"`
}

// cliProvenance collects the distinct agent CLIs the results record launching.
func cliProvenance(results []Result) []CLIProvenance {
	out := []CLIProvenance{}
	for i := range results {
		for _, rf := range results[i].RuntimeFacts {
			if rf.CLIName == "" {
				continue
			}
			p := CLIProvenance{Name: rf.CLIName, Version: rf.CLIVersion, BinarySHA256: rf.BinarySHA256}
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b CLIProvenance) int {
		return strings.Compare(a.Name+"\x00"+a.Version+"\x00"+a.BinarySHA256, b.Name+"\x00"+b.Version+"\x00"+b.BinarySHA256)
	})
	return out
}

// CampaignRankingSnapshot is one ranking snapshot the campaign's results used.
type CampaignRankingSnapshot struct {
	SnapshotID string `json:"snapshotId"`
	CapturedAt string `json:"capturedAt"`
	SourceURL  string `json:"sourceUrl"`
}

// CandidateNote records an attempt that was found for an expected cell: where it was
// found (relative to the campaign directory), whether it was valid, whether it was
// chosen, how a valid one counts (Outcome; "" for an invalid one) and its validation
// problems.
type CandidateNote struct {
	ExecutionID string          `json:"executionId"`
	Repetition  int             `json:"repetition,omitempty"`
	Dir         string          `json:"dir"`
	Attempt     int             `json:"attempt"`
	Valid       bool            `json:"valid"`
	Chosen      bool            `json:"chosen"`
	Outcome     verdict.Verdict `json:"outcome,omitempty"`
	Problems    []string        `json:"problems,omitempty"`
}

// LaterPass is a cell that counts as passed although an earlier attempt of it did not:
// the chosen attempt, whether it came from a later run of the campaign (Rerun: `run
// --rerun-failed` or `--resume` made it; else an automatic retry of the same run), and
// the earlier valid attempts that did not count as passed, in attempt order.
type LaterPass struct {
	ExecutionID string
	Repetition  int
	Attempt     int
	Rerun       bool
	Earlier     []CandidateNote
}

// LaterPasses lists the results that count as passed while an earlier valid attempt of
// the same cell (and repetition) did not (failed or inconclusive), in result order: a
// reader of "177/177 passed" must see which cells needed another attempt.
func (c *Campaign) LaterPasses() []LaterPass {
	var out []LaterPass
	for i := range c.Results {
		r := &c.Results[i]
		if r.Synthetic || Outcome(r) != verdict.Passed {
			continue
		}
		lp := LaterPass{ExecutionID: r.ExecutionID, Repetition: r.Repetition, Attempt: r.Attempt, Rerun: r.FirstAttempt > 1}
		for _, n := range c.Candidates {
			if n.ExecutionID == r.ExecutionID && n.Repetition == r.Repetition && n.Valid && !n.Chosen &&
				n.Attempt < r.Attempt && n.Outcome != "" && n.Outcome != verdict.Passed {
				lp.Earlier = append(lp.Earlier, n)
			}
		}
		if len(lp.Earlier) > 0 {
			slices.SortFunc(lp.Earlier, func(a, b CandidateNote) int { return a.Attempt - b.Attempt })
			out = append(out, lp)
		}
	}
	return out
}

// Words describe a later pass in one line: "passed on attempt 2 (a later run:
// --rerun-failed or --resume) after attempt 1 was failed".
func (lp LaterPass) Words() string {
	how := "automatic retry"
	if lp.Rerun {
		how = "a later run: --rerun-failed or --resume"
	}
	var earlier []string
	for _, n := range lp.Earlier {
		earlier = append(earlier, fmt.Sprintf("attempt %d was %s", n.Attempt, n.Outcome))
	}
	return fmt.Sprintf("passed on attempt %d (%s) after %s", lp.Attempt, how, strings.Join(earlier, ", "))
}

// SuiteSummary summarises one suite of a campaign. SuiteDefinitionHash is the
// reporting catalog's fingerprint of the suite, or the selection fingerprint
// ("selection-…") for a suite the catalog does not know. Complete ⇔ the catalog knows
// the suite, its expectedMatrixSize equals the selection, every catalog cell of the
// suite is selected, and every result carries the catalog's hash (a mixed-definition
// run is partial).
type SuiteSummary struct {
	SuiteID             string `json:"suiteId"`
	Label               string `json:"label"`
	SuiteDefinitionHash string `json:"suiteDefinitionHash"`
	Expected            int    `json:"expected"`
	Counts
	Complete   bool              `json:"complete"`
	DurationMs int64             `json:"durationMs"`
	Billing    billing.Aggregate `json:"billing"`
}

// Outcome is what a result counts as in a campaign: a synthetic result counts as its
// own verdict (a missing result proves nothing, so it never meets a calibration
// expectation; a cell not run here has none: ""); any other counts by the one rule,
// verdict.Counted, of its verdict against its expected verdict, with its cleanup (a
// pass needs cleanup passed).
func Outcome(r *Result) verdict.Verdict {
	if r.Synthetic {
		return r.Verdict
	}
	return verdict.Counted(r.ExpectedVerdict, r.Verdict, r.Cleanup == CleanupPassed)
}

// ExitCode is the campaign's exit code: the worst of its cells' states by the one
// worst-of rule (verdict.Worst: failed beats inconclusive beats not run here beats
// passed; a known failure does not fail it, an unexpected pass does:
// CellState.Counts). With InconclusiveAsFailure an inconclusive cell counts as failed.
// A campaign whose cells that ran all passed but some selected cells were not run here
// exits verdict.ExitPartial: not a failure, never a pass of the cells it did not run.
func (c *Campaign) ExitCode() verdict.ExitCode {
	switch {
	case c.Failed > 0, c.Inconclusive > 0 && c.InconclusiveAsFailure:
		return verdict.WorstOf(verdict.Failed)
	case c.Inconclusive > 0:
		return verdict.WorstOf(verdict.Inconclusive)
	case c.NotRun > 0:
		return verdict.ExitPartial
	}
	return verdict.WorstOf(verdict.Passed)
}

// BuildCampaign computes the campaign document of campaign id from chosen results (one
// per expected id, sorted by execution id, as ChooseRepeated returns them) and the
// notes on their candidates: counts, per-suite summaries (in the order of cat's suites;
// cat may be nil), billing, ranking snapshots, fingerprint and whether it is partial.
func BuildCampaign(id string, cat *catalog.Catalog, expected []string, results []Result, notes []CandidateNote, inconclusiveAsFailure bool) *Campaign {
	c := &Campaign{
		Schema: CampaignSchema, CampaignID: id, Expected: expected, Results: results,
		Counts: Counts{Selected: len(expected), CleanupPassed: true}, InconclusiveAsFailure: inconclusiveAsFailure,
		Candidates: notes,
	}
	if c.Candidates == nil {
		c.Candidates = []CandidateNote{}
	}
	bySuite := map[string][]*Result{}
	var suiteOrder []string
	var all []billing.Summary
	for i := range results {
		r := &results[i]
		if _, ok := bySuite[r.SuiteID]; !ok {
			suiteOrder = append(suiteOrder, r.SuiteID)
		}
		bySuite[r.SuiteID] = append(bySuite[r.SuiteID], r)
		c.DurationMs += c.add(r)
		if r.NotRunHere != "" {
			if c.NotRunHere == nil {
				c.NotRunHere = map[string]string{}
			}
			c.NotRunHere[r.ExecutionID] = r.NotRunHere
		}
		all = append(all, BillingOf(r))
		if r.FinishedAt > c.GeneratedAt {
			c.GeneratedAt = r.FinishedAt
		}
		if r.StartedAt != "" && (c.StartedAt == "" || r.StartedAt < c.StartedAt) {
			c.StartedAt = r.StartedAt
		}
	}
	c.Billing = billing.Sum(all)
	c.RankingSnapshots = []CampaignRankingSnapshot{}
	for i := range results {
		if rs := results[i].RankingSnapshot; rs != nil && !slices.ContainsFunc(c.RankingSnapshots, func(s CampaignRankingSnapshot) bool { return s.SnapshotID == rs.SnapshotID }) {
			c.RankingSnapshots = append(c.RankingSnapshots, CampaignRankingSnapshot{SnapshotID: rs.SnapshotID, CapturedAt: rs.CapturedAt, SourceURL: rs.SourceURL})
		}
	}
	slices.SortFunc(c.RankingSnapshots, func(a, b CampaignRankingSnapshot) int { return strings.Compare(a.SnapshotID, b.SnapshotID) })
	slices.Sort(suiteOrder)
	if cat != nil {
		// Catalog order reads better than alphabetical order and is just as stable.
		slices.SortStableFunc(suiteOrder, func(a, b string) int { return suiteIndex(cat, a) - suiteIndex(cat, b) })
	}
	present := map[string]bool{}
	var prints []string
	for _, sid := range suiteOrder {
		s := summarizeSuite(cat, sid, bySuite[sid])
		present[sid] = s.Complete
		c.Suites = append(c.Suites, s)
		prints = append(prints, sid+":"+s.SuiteDefinitionHash)
	}
	if c.Suites == nil {
		c.Suites = []SuiteSummary{}
	}
	slices.Sort(prints)
	c.Fingerprint = strings.Join(prints, "|")
	c.Partial = cat == nil || len(c.Suites) == 0 || c.NotRun > 0
	for _, s := range c.Suites {
		if !s.Complete {
			c.Partial = true
		}
	}
	if cat != nil {
		for _, s := range cat.Suites {
			if !s.ManualOnly && !present[s.ID] {
				c.Partial = true
			}
		}
	}
	return c
}

// Selection is the one-word-or-phrase state of a campaign's selection, for the
// summary, the dashboard and `agentproof report`: "interrupted: N of M cell(s)
// finished" for an interrupted run; "complete" (Partial false); "cut short: N of M
// selected cell(s) left no result" when selected cells have only a synthetic result
// (shards that never reported, a run killed before its interruption was recorded);
// "partial: N of M selected cell(s) not run here (…)" when cells were not run on this
// machine; else "subset of the catalog" (every selected cell has a result, but not
// every cell of the catalog's non-manual suites was selected, e.g. `run --suite` or
// `--profile`).
func (c *Campaign) Selection() string {
	if in := c.Interruption; in != nil {
		return fmt.Sprintf("interrupted: %d of %d cell(s) finished", max(0, in.Selected-in.Stopped-in.NeverStarted), in.Selected)
	}
	if !c.Partial {
		return "complete"
	}
	missing := c.missing()
	switch {
	case missing > 0:
		return fmt.Sprintf("cut short: %d of %d selected cell(s) left no result", missing, c.Selected)
	case c.NotRun > 0:
		return fmt.Sprintf("partial: %d of %d selected cell(s) not run here (this machine cannot provide their environment)", c.NotRun, c.Selected)
	}
	return "subset of the catalog"
}

// missing counts the selected cells with only a synthetic result that are not cells
// not run here (shards that never reported, a run killed before its interruption was
// recorded).
func (c *Campaign) missing() int {
	n := 0
	for i := range c.Results {
		if c.Results[i].Synthetic && c.Results[i].NotRunHere == "" {
			n++
		}
	}
	return n
}

func suiteIndex(cat *catalog.Catalog, id string) int {
	for i, s := range cat.Suites {
		if s.ID == id {
			return i
		}
	}
	return len(cat.Suites)
}

// Counts are the verdict counts of a set of cells (a campaign's, a suite's, a history
// entry's): Selected, the cells selected; Executed, those with an attempt; Passed, Failed
// and Inconclusive, how the others count (StateOf). KnownFailures counts the cells of the
// baseline of known failures that ended as their entry expects (StateKnownFailure):
// apart from Passed, Failed and Inconclusive, never failing the campaign;
// UnexpectedPasses counts those that passed (StateUnexpectedPass), which are counted in
// Failed too. NotRun counts the cells not run here (StateNotRunHere): no verdict, apart
// from every other count. Retries counts the attempts after each cell's first;
// CleanupPassed is false when any cell's cleanup did not pass.
type Counts struct {
	Selected         int  `json:"selected"`
	Executed         int  `json:"executed"`
	Passed           int  `json:"passed"`
	Failed           int  `json:"failed"`
	Inconclusive     int  `json:"inconclusive"`
	KnownFailures    int  `json:"knownFailures,omitempty"`
	UnexpectedPasses int  `json:"unexpectedPasses,omitempty"`
	NotRun           int  `json:"notRun,omitempty"`
	Retries          int  `json:"retries"`
	CleanupPassed    bool `json:"cleanupPassed"`
}

// add counts r and returns the duration (ms) it adds to the set's: a cell not run here
// only to NotRun (it ran nothing, left nothing to clean up: 0 ms), any other to Executed
// (when it has an attempt), its outcome, Retries, CleanupPassed and its duration. A
// known failure moves from Passed (how it counts) to KnownFailures; an unexpected pass
// is counted in UnexpectedPasses (it is in Failed already).
func (c *Counts) add(r *Result) (durationMs int64) {
	if r.NotRunHere != "" {
		c.NotRun++
		return 0
	}
	if r.Attempt > 0 {
		c.Executed++
	}
	st := StateOf(r)
	switch st.Counts() {
	case verdict.Passed:
		c.Passed++
	case verdict.Failed:
		c.Failed++
	default:
		c.Inconclusive++
	}
	switch st {
	case StateKnownFailure:
		c.KnownFailures++
		c.Passed--
	case StateUnexpectedPass:
		c.UnexpectedPasses++
	}
	c.Retries += max(0, r.Attempt-max(1, r.FirstAttempt))
	if r.Cleanup != CleanupPassed {
		c.CleanupPassed = false
	}
	return r.DurationMs
}

// BillingOf returns the result's billing summary, computing one from its usage and
// runtime usage when the result carries none (then the agent time is the attempt's
// duration; local execution is not metered, any other environment unavailable).
func BillingOf(r *Result) billing.Summary {
	if r.Billing != nil {
		return *r.Billing
	}
	rt := billing.RuntimeUsage{Provider: r.EnvironmentID, AgentRunDurationMs: r.DurationMs, CostStatus: billing.RuntimeUnavailable, CostSource: billing.SourceProviderCostUnavailable}
	if r.RuntimeUsage != nil {
		rt = *r.RuntimeUsage
	} else if r.EnvironmentID == "local" {
		rt.CostStatus, rt.CostSource = billing.RuntimeNotMetered, billing.SourceLocalNotMetered
	}
	return billing.Summarize(billing.ExtractLLM(r.Usage, r.RunIDs), rt)
}

func summarizeSuite(cat *catalog.Catalog, sid string, rs []*Result) SuiteSummary {
	s := SuiteSummary{SuiteID: sid, Label: sid, Counts: Counts{Selected: len(rs), CleanupPassed: true}}
	var sums []billing.Summary
	selected := map[string]bool{}
	for _, r := range rs {
		s.DurationMs += s.add(r)
		sums = append(sums, BillingOf(r))
		selected[r.ExecutionID] = true
	}
	s.Billing = billing.Sum(sums)
	var suite *catalog.Suite
	if cat != nil {
		suite = cat.Suite(sid)
	}
	if suite == nil {
		ids := make([]string, 0, len(rs))
		for _, r := range rs {
			ids = append(ids, r.ExecutionID)
		}
		s.SuiteDefinitionHash = catalog.SelectionFingerprint(ids)
		return s
	}
	if suite.Label != "" {
		s.Label = suite.Label
	}
	s.SuiteDefinitionHash = suite.Fingerprint
	s.Expected = suite.ExpectedMatrixSize
	catalogCells := 0
	allSelected := true
	for _, cell := range cat.Cells {
		if cell.Suite.ID != sid {
			continue
		}
		catalogCells++
		if !selected[cell.ID] {
			allSelected = false
		}
	}
	sameHash := true
	for _, r := range rs {
		if r.SuiteDefinitionHash != suite.Fingerprint {
			sameHash = false
		}
	}
	s.Complete = allSelected && sameHash && catalogCells == len(rs) && s.Expected == len(rs)
	return s
}

// ShardRef says which shard of which plan a campaign directory ran (`agentproof run
// --shard i/N`): the 1-based index, the shard count and the plan's fingerprint (package
// shard). It is recorded in the campaign's plan record.
type ShardRef struct {
	Index       int    `json:"index"`
	Count       int    `json:"count"`
	Fingerprint string `json:"fingerprint"`
}

package report

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

//go:embed dashboard.tmpl
var dashboardTemplate string

//go:embed dashboard.js
var dashboardScript string

// dashboardTmpl parses the dashboard template on first use: parsing it at package
// init would cost every agentproof process (serve children, agents) at start.
var dashboardTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("dashboard").Funcs(template.FuncMap{
		"tokens":              Tokens,
		"clean":               func(s string) string { return result.Clean(s, false) },
		"duration":            Duration,
		"transcriptTextBytes": func() int { return TranscriptTextBytes },
		"transcriptBytes":     func() int { return TranscriptBytes },
		"transcriptSteps":     func() int { return TranscriptSteps },
		"probeCommand":        func() string { return result.ProbeCommand },
		"nothingToCompare":    func() string { return nothingToCompare },
	}).Parse(dashboardTemplate + transcriptTemplate))
})

// ChartCampaigns is how many complete campaigns the history trend charts show.
const ChartCampaigns = 20

// Dashboard renders dashboard.html: one self-contained
// file — inline CSS, one inline script allowed by a hash in the page's
// Content-Security-Policy (default-src 'none', so nothing is fetched), inline SVG charts
// drawn from numbers, no external asset, no content from evidence files (evidence is
// only linked, with cleaned relative hrefs). All text is HTML-escaped by html/template.
// cat may be nil (grids are then built from the results' ids); hist may be nil (no
// history section content); it should be the history as of this campaign (History.Upto).
//
// ts are the runs' transcripts (LoadTranscripts; none: cards show no transcript).
func Dashboard(c *result.Campaign, cat *catalog.Catalog, hist *result.History, ts ...Transcripts) ([]byte, error) {
	v := buildView(c, cat, hist)
	for _, t := range ts {
		addTranscripts(v, t)
	}
	var b bytes.Buffer
	if err := dashboardTmpl().Execute(&b, v); err != nil {
		return nil, fmt.Errorf("rendering dashboard: %w", err)
	}
	return b.Bytes(), nil
}

// WriteDashboard renders the dashboard Dashboard renders with LoadTranscripts(campaignDir,
// c) into w, the same bytes, as it goes: each card's transcripts are read from
// campaignDir shortly before the card is rendered (by workers beside the template, at
// most prefetchWindow cards ahead: prefetchCards) and dropped after it, so neither the
// page nor every transcript is held at once. Errors: the template's or w's.
func WriteDashboard(w io.Writer, c *result.Campaign, cat *catalog.Catalog, hist *result.History, campaignDir string) error {
	return writeDashboard(w, c, cat, hist, campaignDir, func(i int) (*result.Result, error) { return &c.Results[i], nil })
}

// writeDashboard is WriteDashboard where each card's result is full(i), i its index in
// c.Results, read when the card is rendered (c.Results may then hold summaries only;
// see summaryResult).
func writeDashboard(w io.Writer, c *result.Campaign, cat *catalog.Catalog, hist *result.History, campaignDir string, full func(i int) (*result.Result, error)) error {
	return renderDashboard(w, c, cat, hist, campaignDir, full, dashboardWorkers())
}

// renderDashboard is writeDashboard with workers goroutines preparing the cards'
// details ahead of the template (prefetchCards; 0: none).
func renderDashboard(w io.Writer, c *result.Campaign, cat *catalog.Catalog, hist *result.History, campaignDir string, full func(i int) (*result.Result, error), workers int) error {
	v := buildView(c, cat, hist)
	index := make(map[*result.Result]int, len(c.Results))
	for i := range c.Results {
		index[&c.Results[i]] = i
	}
	var cards []*cardView
	forEachCard(v, func(cv *cardView) {
		if cv.R != nil {
			cv.transcriptDir = campaignDir
			if i, ok := index[cv.R]; ok {
				cv.load = func() (*result.Result, error) { return full(i) }
			}
			cards = append(cards, cv)
		}
	})
	stop := prefetchCards(cards, workers)
	defer stop()
	if err := dashboardTmpl().Execute(w, v); err != nil {
		return fmt.Errorf("rendering dashboard: %w", err)
	}
	return nil
}

type dashView struct {
	CSP          string
	Script       template.JS
	Campaign     *result.Campaign
	State        string
	TotalTime    string
	PassPercent  string
	Tiles        []tile
	Suites       []suiteView
	History      historyView
	Unknown      []result.CandidateNote
	HasNotes     bool
	CampaignNote string
	// CleanupExpected names the calibration cells whose unconfirmed cleanup their
	// expected verdict asked for, when they are the only cells whose cleanup was not
	// confirmed (expectedCleanups); "" otherwise.
	CleanupExpected string
	// Triage lists the cells that did not count as passed, failed first, then
	// inconclusive (missing included), each in execution id order; Classes are the
	// failure classes of the campaign's results, for the cell filter.
	Triage  []triageView
	Classes []string
	// Regressions counts the cells that regressed against their suite's latest green
	// campaign; Compared are the campaign's checks against one, Without the suites
	// that had none, grouped by reason (baselineGroups; dashboard_cellhistory.go).
	Regressions int
	Compared    []result.Baseline
	Without     []baselineGroup
}

// triageView is one cell of the "Needs attention" list: a link to its card, its
// outcome, class, one-line reason and the first of its evidence files.
type triageView struct {
	Anchor, ExecutionID, Outcome, StateLabel, Class, Reason, Search string
	Evidence                                                        *linkView
	// Regressed is "regressed since <id> (latest green)", or "".
	Regressed string
}

type tile struct{ Label, Value, Note, Class string }

type suiteView struct {
	ID, Label, Description, Hash, Anchor string
	Summary                              result.SuiteSummary
	Strip                                []tile
	Envs                                 []headView
	Rows                                 []rowView
}

type headView struct{ Label, Sub string }

type rowView struct {
	Label, Sub string
	Cells      [][]cardView
}

type cardView struct {
	State, StateLabel, CaseID, CaseLabel, ExecutionID, Anchor string
	// Reason is the one-line reason shown on a card that did not pass (detailText);
	// Class its failure class; Search the lower-case text the cell filter matches.
	Reason, Class, Search string
	// Repeats summarises a repeated cell's repetitions ("" without --repeat).
	Repeats string
	// Regressed is "regressed since <id> (latest green)", or ""; History the cell's
	// outcomes over the campaigns of the history (dashboard_cellhistory.go).
	Regressed string
	History   cellHistoryView
	// Workspace is the per-turn workspace diff (dashboard_workspacediff.go), and
	// WorkspaceSource what the workspace was seeded from ("" when it started empty).
	Workspace                                 []workspaceTurnView
	WorkspaceSource                           string
	Error                                     string
	Expected                                  string
	Selected                                  bool
	R                                         *result.Result
	Outcome                                   string
	Facts                                     []tile
	BillingLine                               []string
	Matchers                                  []matcherRow
	MatchersPassed, MatchersTotal, NotReached int
	Termination, Usage, Billing               string
	Timings                                   []result.TurnTiming
	Runtime                                   []result.RuntimeFacts
	Evidence                                  []linkView
	Notes                                     []result.CandidateNote
	// Transcripts are the runs' trajectories shown in the card (transcript.go);
	// when transcriptDir is set they are read from that campaign directory when the
	// card is rendered (Shown) instead.
	Transcripts   []Transcript
	transcriptDir string
	// load, when set, reads the card's result whole for its details (Full).
	load func() (*result.Result, error)
	// prep, when set, holds the details a prefetch worker prepared (prefetchCards).
	prep *cardPrep
}

// Shown returns the card's transcripts: Transcripts, or those of its result's runs read
// from transcriptDir now (LoadTranscripts for one result).
func (cv *cardView) Shown() []Transcript {
	if cv.transcriptDir == "" || cv.R == nil {
		return cv.Transcripts
	}
	return transcriptsOf(cv.R, loadResultTranscripts(cv.transcriptDir, cv.R))
}

type matcherRow struct{ State, Class, Kind, Expected, Observed, Detail string }

type linkView struct{ Href, Label string }

type historyView struct {
	Present          bool
	Latest, Green    string
	Charts           []chartView
	Caption          string
	SuiteCharts      []suiteChartsView
	Rows             []campaignRow
	SuiteIDs         []string
	NoCompleteCharts bool
}

type suiteChartsView struct {
	SuiteID, Caption string
	Charts           []chartView
}

type campaignRow struct {
	ID, Time, Status, StatusClass, Counts, Tokens, Cost, Time2, Search, Suites string
	Partial, Current                                                           bool
}

func buildView(c *result.Campaign, cat *catalog.Catalog, hist *result.History) *dashView {
	sum := sha256.Sum256([]byte(dashboardScript))
	v := &dashView{
		CSP:      "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; base-uri 'none'; form-action 'none'",
		Script:   template.JS(dashboardScript),
		Campaign: c,
		State:    c.Selection(),
	}
	v.TotalTime = Duration(c.DurationMs)
	if !c.CleanupPassed {
		v.CleanupExpected = expectedCleanups(c.Results, plainID)
	}
	if c.Selected > 0 {
		v.PassPercent = fmt.Sprintf("%.0f%%", 100*float64(c.Passed)/float64(c.Selected))
	} else {
		v.PassPercent = "–"
	}
	a := c.Billing
	v.Tiles = []tile{
		{Label: "Input tokens", Value: UsageTokens(a.LLM.InputTokens, a.LLM), Note: fmt.Sprintf("%d/%d runs reported token usage", a.LLM.RunsWithTokenUsage, a.LLM.RunCount)},
		{Label: "Output tokens", Value: UsageTokens(a.LLM.OutputTokens, a.LLM)},
		{Label: "Cached input tokens", Value: UsageTokens(a.LLM.CachedInputTokens, a.LLM)},
		{Label: "Cache-write input tokens", Value: UsageTokens(a.LLM.CacheWriteInputTokens, a.LLM), Note: "written into the provider's prompt cache"},
		{Label: "LLM reported subtotal", Value: moneyOrWord(a.ReportedLLMCostUSD, string(a.LLM.CostStatus)), Note: fmt.Sprintf("%d/%d runs provider-priced · %s", a.LLM.RunsWithReportedCost, a.LLM.RunCount, a.LLM.CostStatus), Class: wordClass(a.ReportedLLMCostUSD)},
		{Label: "Runtime list estimate", Value: AggregateRuntimeText(a), Note: runtimeNote(a), Class: wordClass(a.EstimatedRuntimeCostUSD)},
		{Label: "Agent execution time", Value: Duration(a.AgentRunDurationMs)},
		{Label: "Sandbox lease time", Value: leaseText(a)},
		{Label: "Complete billing", Value: fmt.Sprintf("%d/%d", a.TestsWithCompleteBilling, a.TestCount), Note: "results with tokens, prices and runtime all known"},
	}
	notesByID := map[string][]result.CandidateNote{}
	for _, n := range c.Candidates {
		notesByID[n.ExecutionID] = append(notesByID[n.ExecutionID], n)
	}
	v.HasNotes = len(c.Candidates) > 0
	byID := map[string]*result.Result{}
	for i := range c.Results {
		byID[c.Results[i].ExecutionID] = &c.Results[i]
	}
	for _, s := range c.Suites {
		v.Suites = append(v.Suites, buildSuite(s, cat, byID, notesByID, suiteCleanupTile(s, c.Results)))
	}
	v.History = buildHistory(c, hist)
	v.Triage, v.Classes = buildTriage(c)
	addRepeats(v, c)
	addCellHistory(v, c, hist)
	return v
}

// addRepeats writes each repeated cell's pass rate, pass^k, pass@k and flakiness on
// its card.
func addRepeats(v *dashView, c *result.Campaign) {
	rp := map[string]result.Repeats{}
	for _, r := range c.Repeats {
		rp[r.ExecutionID] = r
	}
	if len(rp) == 0 {
		return
	}
	for si := range v.Suites {
		for ri := range v.Suites[si].Rows {
			for _, cell := range v.Suites[si].Rows[ri].Cells {
				for k := range cell {
					if r, ok := rp[cell[k].ExecutionID]; ok {
						cell[k].Repeats = repeatsText(r)
					}
				}
			}
		}
	}
}

// repeatsText is "repeats: 2/4 passed (50%) · pass^k no · pass@k yes · flaky".
func repeatsText(r result.Repeats) string {
	s := fmt.Sprintf("repeats: %d/%d passed (%.0f%%) · pass^k %s · pass@k %s", r.Passed, r.Repetitions,
		100*float64(r.Passed)/float64(max(r.Repetitions, 1)), yesNo(r.PassAll, "yes", "no"), yesNo(r.PassAny, "yes", "no"))
	if r.Flaky {
		s += " · flaky"
	}
	return s
}

// buildTriage lists the cells that need attention (see dashView.Triage: failed, then
// inconclusive; neither a known failure nor a cell not run here, which have their own
// counts and cards) and the failure classes present.
func buildTriage(c *result.Campaign) ([]triageView, []string) {
	var out []triageView
	var classes []string
	for i := range c.Results {
		if fc := string(c.Results[i].FailureClass); fc != "" && !slices.Contains(classes, fc) {
			classes = append(classes, fc)
		}
	}
	slices.Sort(classes)
	for _, want := range []verdict.Verdict{verdict.Failed, verdict.Inconclusive} {
		for i := range c.Results {
			r := &c.Results[i]
			if st := result.StateOf(r); st.Counts() != want || st == result.StateKnownFailure || st == result.StateNotRunHere {
				continue // a known failure and a cell not run here have their own counts and cards
			}
			tv := triageView{Anchor: "execution-" + r.ExecutionID, ExecutionID: r.ExecutionID, Outcome: string(want), StateLabel: verdictText(r),
				Class: string(r.FailureClass), Reason: result.Clip(result.Clean(detailText(r), true), 400)}
			tv.Search = strings.ToLower(r.ExecutionID + " " + tv.Reason)
			for _, e := range r.Evidence {
				if href, ok := evidenceHref(e); ok {
					tv.Evidence = &linkView{Href: href, Label: evidenceDir(r)}
					break
				}
			}
			out = append(out, tv)
		}
	}
	return out, classes
}

func leaseText(a billing.Aggregate) string {
	if a.LeaseDurationMs == 0 && a.RuntimeCostStatus == billing.RuntimeNotMetered {
		return "not metered"
	}
	return Duration(a.LeaseDurationMs)
}

func runtimeNote(a billing.Aggregate) string {
	parts := []string{}
	for _, k := range []string{"estimated", "not_metered", "unpriced", "unavailable"} {
		if n := a.RuntimeCostStatuses[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(k, "_", " ")))
		}
	}
	return strings.Join(parts, " · ")
}

// moneyOrWord shows a known amount in dollars and an unknown one as its status word
// (never $0).
func moneyOrWord(v *float64, word string) string {
	if v == nil {
		return strings.ReplaceAll(word, "_", " ")
	}
	return USD(*v)
}

func wordClass(v *float64) string {
	if v == nil {
		return "word"
	}
	return ""
}

// plainID is an execution id as it is (expectedCleanups for HTML, which the template
// escapes).
func plainID(id string) string { return id }

// suiteCleanupTile is a suite strip's cleanup tile: "passed"; or "not confirmed",
// marked bad unless the only cells of the suite whose cleanup was not confirmed are
// calibration cells that expected it (expectedCleanups over rs, the campaign's results,
// of this suite), which its note then names.
func suiteCleanupTile(s result.SuiteSummary, rs []result.Result) tile {
	if s.CleanupPassed {
		return tile{Label: "Cleanup", Value: "passed"}
	}
	var mine []result.Result
	for _, r := range rs {
		if r.SuiteID == s.SuiteID {
			mine = append(mine, r)
		}
	}
	if cells := expectedCleanups(mine, plainID); cells != "" {
		return tile{Label: "Cleanup", Value: "not confirmed", Note: "as expected by calibration cell(s) " + cells}
	}
	return tile{Label: "Cleanup", Value: "not confirmed", Class: "bad"}
}

// buildSuite is a suite's section; cleanup is its strip's cleanup tile (suiteCleanupTile).
func buildSuite(s result.SuiteSummary, cat *catalog.Catalog, byID map[string]*result.Result, notes map[string][]result.CandidateNote, cleanup tile) suiteView {
	sv := suiteView{ID: s.SuiteID, Label: s.Label, Hash: s.SuiteDefinitionHash, Anchor: "suite-" + s.SuiteID, Summary: s}
	a := s.Billing
	rate := "–"
	if s.Selected > 0 {
		rate = fmt.Sprintf("%.0f%%", 100*float64(s.Passed)/float64(s.Selected))
	}
	sv.Strip = []tile{
		{Label: "Pass rate", Value: rate, Note: fmt.Sprintf("%d passed · %d failed · %d inconclusive", s.Passed, s.Failed, s.Inconclusive)},
		{Label: "Tokens", Value: UsageTokens(a.LLM.TotalTokens, a.LLM), Note: string(a.LLM.CostStatus)},
		{Label: "Cost", Value: moneyOrWord(a.ObservedAndEstimatedCostUSD, "unavailable"), Note: "LLM " + aggregateLLMText(a) + " · runtime " + AggregateRuntimeText(a), Class: wordClass(a.ObservedAndEstimatedCostUSD)},
		{Label: "Agent / lease time", Value: Duration(a.AgentRunDurationMs) + " / " + leaseText(a)},
		{Label: "Executed", Value: fmt.Sprintf("%d/%d", s.Executed, s.Selected), Note: fmt.Sprintf("%d retries", s.Retries)},
		cleanup,
		{Label: "Selection", Value: yesNo(s.Complete, "complete", "partial"), Note: fmt.Sprintf("%d of %d cells", s.Selected, s.Expected)},
	}
	var profiles []*catalog.Profile
	var envs []*catalog.Environment
	var cases []*catalog.Case
	if cat != nil {
		if suite := cat.Suite(s.SuiteID); suite != nil {
			sv.Description = suite.Description
			profiles, envs, cases = suite.ResolvedProfiles(), uniqueEnvs(suite.ResolvedEnvironments()), suite.ResolvedCases()
		}
	}
	if profiles == nil {
		// Unknown suite: the grid comes from the results' ids.
		var ps, es, cs []string
		for id := range byID {
			su, p, e, c, _ := result.ParseExecutionID(id)
			if su != s.SuiteID {
				continue
			}
			ps, es, cs = addOnce(ps, p), addOnce(es, e), addOnce(cs, c)
		}
		slices.Sort(ps)
		slices.Sort(es)
		slices.Sort(cs)
		for _, p := range ps {
			profiles = append(profiles, &catalog.Profile{ID: p, SupportedEnvironments: es})
		}
		for _, e := range es {
			envs = append(envs, &catalog.Environment{ID: e})
		}
		for _, c := range cs {
			cases = append(cases, &catalog.Case{ID: c})
		}
	}
	for _, e := range envs {
		h := headView{Label: orID(e.Label, e.ID)}
		if e.Provider != "" {
			h.Sub = e.Provider + " · " + orID(e.ExpectedExecutionTarget.Kind, "?")
		}
		sv.Envs = append(sv.Envs, h)
	}
	for _, p := range profiles {
		row := rowView{Label: orID(p.Label, p.ID)}
		if p.Model != "" {
			row.Sub = p.Generation + " · " + p.Provider + " · " + p.Model
		}
		for _, e := range envs {
			var cards []cardView
			if slices.Contains(p.SupportedEnvironments, e.ID) {
				for _, cs := range cases {
					id := s.SuiteID + "." + p.ID + "." + e.ID + "." + cs.ID
					cards = append(cards, buildCard(id, cs, byID[id], notes[id]))
				}
			}
			row.Cells = append(row.Cells, cards)
		}
		sv.Rows = append(sv.Rows, row)
	}
	return sv
}

func uniqueEnvs(es []*catalog.Environment) []*catalog.Environment {
	var out []*catalog.Environment
	for _, e := range es {
		if !slices.ContainsFunc(out, func(o *catalog.Environment) bool { return o.ID == e.ID }) {
			out = append(out, e)
		}
	}
	return out
}

func addOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func orID(label, id string) string {
	if label != "" {
		return label
	}
	return id
}

func buildCard(id string, cs *catalog.Case, r *result.Result, notes []result.CandidateNote) cardView {
	cv := cardView{CaseID: cs.ID, CaseLabel: orID(cs.Label, cs.ID), ExecutionID: id, Anchor: "execution-" + id, Notes: notes}
	if r == nil {
		cv.State, cv.StateLabel = "not-selected", "not selected"
		return cv
	}
	cv.Selected, cv.R = true, r
	cv.Outcome = string(result.Outcome(r))
	cv.State, cv.StateLabel = cv.Outcome, cv.Outcome
	switch st := result.StateOf(r); {
	case r.NotRunHere != "": // no verdict: its own state, with the reason
		cv.Outcome, cv.State, cv.StateLabel = "not-run-here", "not-run-here", "not run here"
	case r.Synthetic:
		cv.State, cv.StateLabel = "missing", "missing"
	case st == result.StateKnownFailure:
		cv.Outcome, cv.State, cv.StateLabel = string(st), string(st), st.Words()
		cv.Expected = "known failure since " + r.KnownFailure.Since + ": " + r.KnownFailure.Reason
	case st == result.StateUnexpectedPass:
		cv.Outcome, cv.State, cv.StateLabel = string(verdict.Failed), string(verdict.Failed), "failed: "+st.Words()
		cv.Expected = "a known failure (" + r.KnownFailure.Source + ") that passed"
	}
	if r.ExpectedVerdict != "" {
		cv.Expected = "expects " + string(r.ExpectedVerdict)
	}
	cv.Class = string(r.FailureClass)
	if cv.Outcome != string(verdict.Passed) {
		cv.Reason = result.Clip(result.Clean(detailText(r), true), 240)
	}
	cv.Search = strings.ToLower(id + " " + cv.Reason)
	return cv
}

// Card is the card's HTML: the "card" template over the card with everything its
// details show (facts, billing, matchers, termination, timings, workspace, runtime
// facts, usage, evidence, transcripts), built when the card is rendered, so that the
// view of a whole campaign never holds every card's details at once. The page renders
// it where the card goes (text between elements), the context the template is escaped
// for when executed alone, so the bytes are those of the template called in place.
//
// A card the dashboard's prefetch prepared (prefetchCards) is handed over as rendered
// there.
func (cv *cardView) Card() (template.HTML, error) {
	if cv.prep != nil {
		if html, ok, err := cv.prep.take(cv); ok {
			return html, err
		}
	}
	full, err := cv.details()
	if err != nil {
		return "", err
	}
	return renderCard(full)
}

// renderCard executes the "card" template over cv (whose details are filled).
func renderCard(cv *cardView) (template.HTML, error) {
	var b strings.Builder
	if err := dashboardTmpl().ExecuteTemplate(&b, "card", cv); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil //nolint:gosec // the output of html/template, escaped there
}

// details is the card without the prefetch: the card with its result read whole and its
// details filled.
func (cv *cardView) details() (*cardView, error) {
	if cv.R == nil {
		return cv, nil
	}
	full := *cv
	full.prep = nil
	if cv.load != nil {
		r, err := cv.load()
		if err != nil {
			return nil, err
		}
		full.R, full.load = r, nil
	}
	full.addDetails()
	return &full, nil
}

// addDetails fills the card's details from its result.
func (cv *cardView) addDetails() {
	r := cv.R
	bl := result.BillingOf(r)
	cv.BillingLine = []string{
		tokensInOutWords(bl.LLM),
		UsageTokens(bl.LLM.CachedInputTokens, bl.LLM) + " cached",
		UsageTokens(bl.LLM.CacheWriteInputTokens, bl.LLM) + " cache-write",
		fmt.Sprintf("%d/%d runs priced", bl.LLM.RunsWithReportedCost, bl.LLM.RunCount),
		"LLM " + LLMCostText(bl.LLM),
		"runtime " + RuntimeCostText(bl.Runtime),
	}
	lease := "–"
	if bl.Runtime.LeaseDurationMs != nil {
		lease = Duration(*bl.Runtime.LeaseDurationMs)
	} else if bl.Runtime.CostStatus == billing.RuntimeNotMetered {
		lease = "not metered"
	}
	cv.Facts = []tile{
		{Label: "Verdict", Value: string(r.Verdict)},
		{Label: "Attempt", Value: fmt.Sprint(r.Attempt)},
		{Label: "Duration", Value: Duration(r.DurationMs)},
		{Label: "Agent time", Value: Duration(bl.Runtime.AgentRunDurationMs)},
		{Label: "Lease", Value: lease},
		{Label: "Runtime mode", Value: orID(r.RuntimeMode, "–")},
		{Label: "Provider", Value: orID(r.Provider, "–")},
		{Label: "Model", Value: orID(r.Model, "–")},
		{Label: "Cleanup", Value: string(r.Cleanup)},
	}
	cv.Error = result.Clean(r.Error, false)
	if r.FailureClass != "" {
		cv.Facts = append(cv.Facts, tile{Label: "Failure class", Value: string(r.FailureClass)})
	}
	if r.IssueIdentifier != "" {
		cv.Facts = append(cv.Facts, tile{Label: "Issue", Value: result.Clean(r.IssueIdentifier, true)})
	}
	for _, m := range r.MatcherResults {
		row := matcherRow{State: "passed", Class: "ok", Kind: m.Kind, Detail: result.Clean(m.Detail, false)}
		cv.MatchersTotal++
		switch {
		case m.NotReached:
			row.State, row.Class = "not reached", "nr"
			cv.NotReached++
		case !m.Passed:
			row.State, row.Class = "failed", "bad"
		default:
			cv.MatchersPassed++
		}
		if m.Expected != nil {
			row.Expected = compactJSON(m.Expected, 1200)
		}
		if m.Observed != nil {
			row.Observed = compactJSON(m.Observed, 1200)
		}
		cv.Matchers = append(cv.Matchers, row)
	}
	if len(r.Termination) > 0 {
		cv.Termination = indentJSON(r.Termination)
	}
	cv.Timings = r.TurnTimings
	cv.Workspace = workspaceDiffView(r)
	if ws := r.WorkspaceSource; ws != nil {
		cv.WorkspaceSource = result.Clean(fmt.Sprintf("%s %s (%s)", ws.Kind, ws.Ref, ws.Digest), true)
	}
	cv.Runtime = r.RuntimeFacts
	if r.Usage != nil {
		cv.Usage = prettyJSON(r.Usage)
	}
	cv.Billing = prettyJSON(bl)
	for _, e := range r.Evidence {
		if href, ok := evidenceHref(e); ok {
			cv.Evidence = append(cv.Evidence, linkView{Href: href, Label: evidenceLabel(e)})
		}
	}
}

// evidenceLabel is the link text of an evidence file: its path, prefixed with what it
// is for the files a reader looks for first (a CLI's event stream, the scripted model's
// request log, the flow log, API snapshots).
func evidenceLabel(rel string) string {
	base := path.Base(rel)
	what := ""
	switch {
	case base == "events.jsonl":
		what = "agent CLI event stream"
	case base == "model-requests.jsonl":
		what = "scripted model request log"
	case base == "trajectory.json":
		what = "ATIF trajectory"
	case base == "flow.log":
		what = "flow log"
	case base == "evidence-manifest.json":
		what = "evidence manifest"
	case strings.HasPrefix(rel, "snapshots/"):
		what = "API snapshot"
	}
	if what == "" {
		return rel
	}
	return what + ": " + rel
}

// evidenceHref builds a relative link from cleaned, URL-escaped path segments; anything
// that is not a safe relative path (absolute, "..", a scheme) gives no link.
func evidenceHref(p string) (string, bool) {
	if !result.SafeRelPath(p) || strings.Contains(p, ":") {
		return "", false
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/"), true
}

func prettyJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return result.Clip(strings.TrimSuffix(buf.String(), "\n"), 20000)
}

func indentJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return result.Clip(buf.String(), 20000)
}

// tokensInOutWords is "<input> in / <output> out", or "unavailable" when no run reported
// token usage.
func tokensInOutWords(u billing.LLMUsage) string {
	if u.RunsWithTokenUsage == 0 {
		return "unavailable"
	}
	return fmt.Sprintf("%s in / %s out", Tokens(u.InputTokens), Tokens(u.OutputTokens))
}

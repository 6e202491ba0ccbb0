package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/verdict"
)

// HistoryFile is the history's name at the results root.
const HistoryFile = "history.json"

// History is history.json at the results root (schema agentproof.history/v1): every campaign's summary, newest first, with pointers to
// the latest and the latest green campaign overall and per suite. UpdatedAt is the
// newest campaign's generatedAt (never the wall clock).
//
// A campaign is green when it is not partial and nothing failed or was inconclusive; a
// suite is green in a campaign when it is complete (the whole matrix, matching
// fingerprints) and nothing in it failed or was inconclusive.
type History struct {
	Schema                string            `json:"schema"`
	UpdatedAt             string            `json:"updatedAt"`
	LatestCampaignID      *string           `json:"latestCampaignId"`
	LatestGreenCampaignID *string           `json:"latestGreenCampaignId"`
	LatestBySuite         map[string]string `json:"latestBySuite"`
	LatestGreenBySuite    map[string]string `json:"latestGreenBySuite"`
	Campaigns             []HistoryCampaign `json:"campaigns"`
	// Trimmed says what Trim left out (nil: nothing yet).
	Trimmed *HistoryTrim `json:"trimmed,omitempty"`
}

// HistoryTrim is what a bounded history left out: Keep, the campaigns kept per suite
// definition; Dropped, how many campaigns were left out, and Stripped, how many are
// kept without their executions (latest green baselines outside the window), both
// counted as of the last Trim; Through, the generatedAt of the newest campaign left
// out or stripped (a campaign not newer than it may have lost its regression
// baseline from the history: Assemble then keeps the baselines its campaign.json
// recorded).
type HistoryTrim struct {
	Keep     int    `json:"keep"`
	Dropped  int    `json:"dropped"`
	Stripped int    `json:"stripped"`
	Through  string `json:"through"`
}

// HistoryCampaign is one campaign in the history: its counts (the campaign's Counts,
// known failures and unexpected passes included), fingerprint (sorted
// "suiteId:hash" joined by "|"), billing aggregate, suites and one entry per cell.
type HistoryCampaign struct {
	CampaignID  string `json:"campaignId"`
	GeneratedAt string `json:"generatedAt"`
	Partial     bool   `json:"partial"`
	Counts
	DurationMs  int64              `json:"durationMs"`
	Fingerprint string             `json:"fingerprint"`
	Billing     billing.Aggregate  `json:"billing"`
	Suites      []SuiteSummary     `json:"suites"`
	Executions  []HistoryExecution `json:"executions"`
	// RegradeOf is the campaign a regrade graded again (Campaign.RegradeOf), "" for a
	// campaign that ran: a regrade is not in its source's history (Upto), so it is
	// never its source's baseline.
	RegradeOf string `json:"regradeOf,omitempty"`
}

// HistoryExecution is one cell of a history campaign: ids, verdict, what it counted as
// (outcome), duration (ms), attempt, cleanup and, with repeats, its pass rate and
// flakiness. Billing, a cell's billing summary, is no longer written (the campaign's
// and the suites' aggregates are): an older history's is read and kept.
type HistoryExecution struct {
	ExecutionID   string          `json:"executionId"`
	SuiteID       string          `json:"suiteId"`
	ProfileID     string          `json:"profileId"`
	EnvironmentID string          `json:"environmentId"`
	CaseID        string          `json:"caseId"`
	Provider      string          `json:"provider"`
	Model         string          `json:"model"`
	Verdict       verdict.Verdict `json:"verdict"`
	Outcome       verdict.Verdict `json:"outcome"`
	// State is set for a cell of the baseline of known failures that ended as a known
	// failure or an unexpected pass (StateOf), "" otherwise.
	State      CellState        `json:"state,omitempty"`
	DurationMs int64            `json:"durationMs"`
	Attempt    int              `json:"attempt"`
	Cleanup    CleanupStatus    `json:"cleanup"`
	Billing    *billing.Summary `json:"billing,omitempty"`
	// Repetitions, PassedRepetitions and Flaky are set for a cell run with --repeat:
	// how many repetitions it had, how many counted as passed, and whether they
	// disagreed (Repeats), so flakiness per cell is kept over campaigns.
	Repetitions       int  `json:"repetitions,omitempty"`
	PassedRepetitions int  `json:"passedRepetitions,omitempty"`
	Flaky             bool `json:"flaky,omitempty"`
	// NotRunHere is set for a cell the campaign's machine could not run (its outcome
	// is empty).
	NotRunHere bool `json:"notRunHere,omitempty"`
}

// Green reports whether the campaign is complete with nothing failed or inconclusive
// (a known failure is neither: it is counted apart).
func (h *HistoryCampaign) Green() bool { return !h.Partial && h.Failed == 0 && h.Inconclusive == 0 }

func (s *SuiteSummary) green() bool { return s.Complete && s.Failed == 0 && s.Inconclusive == 0 }

// Entry converts a campaign to its history entry.
func (c *Campaign) Entry() HistoryCampaign {
	h := HistoryCampaign{
		CampaignID: c.CampaignID, GeneratedAt: c.GeneratedAt, Partial: c.Partial,
		Counts:     c.Counts,
		DurationMs: c.DurationMs, Fingerprint: c.Fingerprint, Billing: c.Billing,
		Suites: c.Suites, Executions: make([]HistoryExecution, 0, len(c.Results)),
	}
	if c.RegradeOf != nil {
		h.RegradeOf = c.RegradeOf.CampaignID
	}
	repeats := map[string]Repeats{}
	for _, rp := range c.Repeats {
		repeats[rp.ExecutionID] = rp
	}
	for i := range c.Results {
		r := &c.Results[i]
		e := HistoryExecution{
			ExecutionID: r.ExecutionID, SuiteID: r.SuiteID, ProfileID: r.ProfileID,
			EnvironmentID: r.EnvironmentID, CaseID: r.CaseID, Provider: r.Provider, Model: r.Model,
			Verdict: r.Verdict, Outcome: Outcome(r), State: baselineState(r), DurationMs: r.DurationMs, Attempt: r.Attempt,
			Cleanup: r.Cleanup, NotRunHere: r.NotRunHere != "",
		}
		if rp, ok := repeats[r.ExecutionID]; ok {
			e.Repetitions, e.PassedRepetitions, e.Flaky = rp.Repetitions, rp.Passed, rp.Flaky
		}
		h.Executions = append(h.Executions, e)
	}
	return h
}

// ReadHistory reads history.json at path. A missing file is an empty history; a file
// with another schema tag is replaced by an empty history and reported in
// the returned warning. A file that is not JSON, or a v1 file that does not decode
// strictly, is an error: history is never silently thrown away.
func ReadHistory(path string) (*History, string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return emptyHistory(), "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading history: %w", err)
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, "", fmt.Errorf("history %s is not JSON (move it away to start a new history): %w", path, err)
	}
	if probe.Schema != HistorySchema {
		return emptyHistory(), fmt.Sprintf("history %s has schema %q, not %q: starting a new history", path, probe.Schema, HistorySchema), nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var h History
	if err := dec.Decode(&h); err != nil {
		return nil, "", &ValidationError{Label: path, Problems: []string{err.Error()}}
	}
	var problems []string
	seen := map[string]bool{}
	for i, c := range h.Campaigns {
		if !validCampaignID(c.CampaignID) {
			problems = append(problems, fmt.Sprintf("campaigns[%d].campaignId: %q is not a campaign id", i, c.CampaignID))
		}
		if seen[c.CampaignID] {
			problems = append(problems, fmt.Sprintf("campaigns[%d].campaignId: %q appears twice", i, c.CampaignID))
		}
		seen[c.CampaignID] = true
	}
	if len(problems) > 0 {
		return nil, "", &ValidationError{Label: path, Problems: problems}
	}
	return &h, "", nil
}

func emptyHistory() *History {
	return &History{Schema: HistorySchema, LatestBySuite: map[string]string{}, LatestGreenBySuite: map[string]string{}, Campaigns: []HistoryCampaign{}}
}

// Merge returns h with entry added: an older entry with the same campaign id
// is dropped, campaigns are sorted by generatedAt descending (then campaign id), and the
// pointers are recomputed. h is not modified.
func (h *History) Merge(entry HistoryCampaign) *History {
	out := emptyHistory()
	out.Campaigns = append(out.Campaigns, entry)
	for _, c := range h.Campaigns {
		if c.CampaignID != entry.CampaignID {
			out.Campaigns = append(out.Campaigns, c)
		}
	}
	slices.SortStableFunc(out.Campaigns, func(a, b HistoryCampaign) int {
		if c := strings.Compare(b.GeneratedAt, a.GeneratedAt); c != 0 {
			return c
		}
		return strings.Compare(a.CampaignID, b.CampaignID)
	})
	out.repoint()
	return out
}

// DefaultHistoryKeep is how many campaigns history.json keeps per suite definition by
// default: the default catalog run daily keeps four weeks, under 5 MB
// (report.TestDefaultHistorySize holds it; report.BenchmarkReportHistory measures it).
const DefaultHistoryKeep = 28

// Trim returns h bounded to the newest keep campaigns of every suite definition (suite
// id and definition hash), and what the regression checks of those campaigns need:
//
//   - a campaign among the newest keep campaigns that ran one of its suite
//     definitions is kept whole (the dashboard's trends and per-cell strips, shard
//     weights);
//   - the latest green campaign of a suite definition, not newer than a campaign kept
//     whole (the baseline of its regression check, docs/regressions.md), is kept
//     without its executions when it is outside every window: its suites, which the
//     check reads, stay, and its cells are read from its campaign.json;
//   - every other campaign is left out.
//
// The newest campaign is always kept. keep < 1 keeps everything. The pointers are
// recomputed; Trimmed records keep, the counts and the newest campaign left out or
// stripped. h is not modified.
func (h *History) Trim(keep int) *History {
	out := emptyHistory()
	if keep < 1 {
		out.Campaigns = slices.Clone(h.Campaigns)
		out.Trimmed = h.Trimmed
		out.repoint()
		return out
	}
	whole := map[int]bool{}
	seen := map[string]int{} // suite definition → campaigns kept whole so far
	for i := range h.Campaigns {
		for _, s := range h.Campaigns[i].Suites {
			if d := s.SuiteID + ":" + s.SuiteDefinitionHash; seen[d] < keep {
				seen[d]++
				whole[i] = true
			}
		}
	}
	whole[0] = len(h.Campaigns) > 0
	baseline := baselinesOf(h.Campaigns, whole)
	t := &HistoryTrim{Keep: keep}
	if h.Trimmed != nil {
		t.Dropped, t.Through = h.Trimmed.Dropped, h.Trimmed.Through
	}
	for i, c := range h.Campaigns {
		switch {
		case whole[i]:
			out.Campaigns = append(out.Campaigns, c)
			continue
		case baseline[i]:
			c.Executions = []HistoryExecution{}
			out.Campaigns = append(out.Campaigns, c)
			t.Stripped++
		default:
			t.Dropped++
		}
		if c.GeneratedAt > t.Through {
			t.Through = c.GeneratedAt
		}
	}
	if t.Dropped > 0 || t.Stripped > 0 {
		out.Trimmed = t
	}
	out.repoint()
	return out
}

// baselinesOf marks, in campaigns (newest first), the latest green campaign of every
// suite definition of every campaign marked in whole, among the campaigns older than
// it: one pass from the oldest, remembering the latest green campaign of each suite
// definition so far.
func baselinesOf(campaigns []HistoryCampaign, whole map[int]bool) map[int]bool {
	marked := map[int]bool{}
	latestGreen := map[string]int{} // suite definition → index of its latest green campaign so far
	for i := len(campaigns) - 1; i >= 0; i-- {
		suites := campaigns[i].Suites
		if whole[i] {
			for _, s := range suites {
				if g, ok := latestGreen[s.SuiteID+":"+s.SuiteDefinitionHash]; ok {
					marked[g] = true
				}
			}
		}
		for j := range suites {
			if suites[j].green() {
				latestGreen[suites[j].SuiteID+":"+suites[j].SuiteDefinitionHash] = i
			}
		}
	}
	return marked
}

// repoint recomputes UpdatedAt and the latest / latest-green pointers.
func (h *History) repoint() {
	h.LatestCampaignID, h.LatestGreenCampaignID, h.UpdatedAt = nil, nil, ""
	h.LatestBySuite, h.LatestGreenBySuite = map[string]string{}, map[string]string{}
	for i := range h.Campaigns {
		c := &h.Campaigns[i]
		if h.LatestCampaignID == nil {
			id := c.CampaignID
			h.LatestCampaignID = &id
			h.UpdatedAt = c.GeneratedAt
		}
		if h.LatestGreenCampaignID == nil && c.Green() {
			id := c.CampaignID
			h.LatestGreenCampaignID = &id
		}
		for j := range c.Suites {
			s := &c.Suites[j]
			if _, ok := h.LatestBySuite[s.SuiteID]; !ok {
				h.LatestBySuite[s.SuiteID] = c.CampaignID
			}
			if _, ok := h.LatestGreenBySuite[s.SuiteID]; !ok && s.green() {
				h.LatestGreenBySuite[s.SuiteID] = c.CampaignID
			}
		}
	}
}

// Upto returns the history as it was when the campaign with the given generatedAt and id
// was the newest: the campaigns not newer than it, pointers recomputed. The dashboard of
// a campaign shows this view, so regenerating an older campaign's dashboard after newer
// campaigns ran reproduces it byte for byte. A regrade of the campaign is not in it:
// it has the campaign's times (it records none of its own) but came after it.
func (h *History) Upto(generatedAt, id string) *History {
	out := emptyHistory()
	for _, c := range h.Campaigns {
		if c.RegradeOf == id {
			continue
		}
		if c.GeneratedAt < generatedAt || (c.GeneratedAt == generatedAt && c.CampaignID >= id) {
			out.Campaigns = append(out.Campaigns, c)
		}
	}
	out.repoint()
	return out
}

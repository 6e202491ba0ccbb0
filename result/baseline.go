package result

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentproof/agentproof/verdict"
)

// Baseline is the regression check of one suite of a campaign against its latest
// green campaign (docs/regressions.md): the newest earlier campaign of the history in
// which the same suite, with the same definition hash, was green (complete: the whole
// matrix with matching fingerprints; nothing failed or inconclusive). Its cells are
// compared with this campaign's cells of the suite by Compare, the one classification
// `agentproof compare` uses. CampaignID is "" when no such campaign exists, or when
// its campaign.json could not be read (Note says which); Regressed lists the cells
// that passed there and fail here (Compare's Regressed), Counts every change.
type Baseline struct {
	SuiteID             string         `json:"suiteId"`
	SuiteDefinitionHash string         `json:"suiteDefinitionHash"`
	CampaignID          string         `json:"campaignId,omitempty"`
	Note                string         `json:"note,omitempty"`
	Counts              map[Change]int `json:"counts,omitempty"`
	Regressed           []CellChange   `json:"regressed"`
}

// Regressions counts the regressed cells over every suite's baseline.
func (c *Campaign) Regressions() int {
	n := 0
	for _, b := range c.Baselines {
		n += len(b.Regressed)
	}
	return n
}

// RegressedSince returns the latest green campaign id against which the cell id
// regressed, and whether it did.
func (c *Campaign) RegressedSince(id string) (string, bool) {
	for _, b := range c.Baselines {
		for _, cc := range b.Regressed {
			if cc.ExecutionID == id {
				return b.CampaignID, true
			}
		}
	}
	return "", false
}

// baselines computes c's Baseline per suite (in c's suite order) from hist, the
// history before c is merged into it: only campaigns not newer than c count (the view
// History.Upto gives, so regenerating an older campaign reproduces its check), c
// itself never does. read loads a campaign document by id (campaign.json under the
// results root); a campaign it cannot read leaves the suite unchecked, saying so.
func baselines(c *Campaign, hist *History, read func(id string) (*Campaign, error)) []Baseline {
	var earlier []HistoryCampaign
	if hist != nil {
		for _, hc := range hist.Upto(c.GeneratedAt, c.CampaignID).Campaigns {
			if hc.CampaignID != c.CampaignID {
				earlier = append(earlier, hc) // newest first
			}
		}
	}
	loaded := map[string]*Campaign{}
	failed := map[string]error{}
	out := make([]Baseline, 0, len(c.Suites))
	for _, s := range c.Suites {
		b := Baseline{SuiteID: s.SuiteID, SuiteDefinitionHash: s.SuiteDefinitionHash, Regressed: []CellChange{}}
		green := ""
		for _, hc := range earlier {
			for j := range hc.Suites {
				if hs := &hc.Suites[j]; hs.SuiteID == s.SuiteID && hs.SuiteDefinitionHash == s.SuiteDefinitionHash && hs.green() {
					green = hc.CampaignID
				}
			}
			if green != "" {
				break
			}
		}
		if green == "" {
			b.Note = "no earlier green campaign of this suite definition"
			out = append(out, b)
			continue
		}
		base, ok := loaded[green]
		if !ok && failed[green] == nil {
			var err error
			if base, err = read(green); err != nil {
				failed[green] = err
			} else {
				loaded[green] = base
			}
		}
		if base == nil {
			b.Note = fmt.Sprintf("latest green campaign %s could not be read (%s): regressions not checked", green, Clean(failed[green].Error(), true))
			out = append(out, b)
			continue
		}
		b.CampaignID = green
		cmpn := Compare(suiteOnly(base, s.SuiteID), suiteOnly(c, s.SuiteID))
		b.Counts = cmpn.Counts
		for _, cc := range cmpn.Cells {
			if cc.Change == Regressed {
				b.Regressed = append(b.Regressed, cc)
			}
		}
		out = append(out, b)
	}
	return out
}

// suiteOnly is c with only the results of suite sid (Compare reads nothing else).
func suiteOnly(c *Campaign, sid string) *Campaign {
	out := &Campaign{CampaignID: c.CampaignID}
	for i := range c.Results {
		if c.Results[i].SuiteID == sid {
			out.Results = append(out.Results, c.Results[i])
		}
	}
	return out
}

// campaignReader reads campaign documents under root by campaign id.
func campaignReader(root string) func(id string) (*Campaign, error) {
	return func(id string) (*Campaign, error) {
		if !validCampaignID(id) {
			return nil, fmt.Errorf("campaign id %q is not valid", Clip(id, 80))
		}
		return readBaselineCampaign(filepath.Join(root, id, CampaignFile))
	}
}

// baselineDoc is what a regression check reads of an earlier campaign.json: each
// result's identity and what its outcome and reason are made of (Outcome, reasonOf).
// The other fields of the results are parsed but not kept, so a green campaign of
// many cells is not held whole while a new one is reported.
type baselineDoc struct {
	Schema     string `json:"schema"`
	CampaignID string `json:"campaignId"`
	Results    []struct {
		ExecutionID         string               `json:"executionId"`
		SuiteID             string               `json:"suiteId"`
		SuiteDefinitionHash string               `json:"suiteDefinitionHash"`
		Verdict             verdict.Verdict      `json:"verdict"`
		ExpectedVerdict     verdict.Verdict      `json:"expectedVerdict"`
		FailureClass        verdict.FailureClass `json:"failureClass"`
		Error               string               `json:"error"`
		Cleanup             CleanupStatus        `json:"cleanup"`
		Synthetic           bool                 `json:"synthetic"`
	} `json:"results"`
}

// readBaselineCampaign is ReadCampaign keeping, of each result, only what Compare reads
// (baselineDoc). Errors as ReadCampaign's; a wrong type in a field it does not keep is
// not one.
func readBaselineCampaign(path string) (*Campaign, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var d baselineDoc
	if err := json.NewDecoder(bufio.NewReaderSize(f, streamBuffer)).Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: not a campaign document: %w", path, err)
	}
	if d.Schema != CampaignSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, d.Schema, CampaignSchema)
	}
	c := &Campaign{Schema: d.Schema, CampaignID: d.CampaignID, Results: make([]Result, len(d.Results))}
	for i, r := range d.Results {
		c.Results[i] = Result{ExecutionID: r.ExecutionID, SuiteID: r.SuiteID, SuiteDefinitionHash: r.SuiteDefinitionHash,
			Verdict: r.Verdict, ExpectedVerdict: r.ExpectedVerdict, FailureClass: r.FailureClass, Error: r.Error,
			Cleanup: r.Cleanup, Synthetic: r.Synthetic}
	}
	return c, nil
}

package result

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/redact"
)

// CampaignOptions says which campaign Assemble reads: where its results are, with which
// catalog, selection and options, and the history it joins.
type CampaignOptions struct {
	// ResultsRoot is the results directory: campaigns live in ResultsRoot/<campaign>/.
	ResultsRoot string
	// CampaignID names the campaign directory (see ValidCampaignID).
	CampaignID string
	// Catalog is the reporting catalog (full matrix, labels, fingerprints); nil reports
	// every suite as unknown (partial).
	Catalog *catalog.Catalog
	// ExpectedIDs is the selection. When nil, the `expected` list of an existing
	// campaign.json is used, and failing that the ids of the results found.
	ExpectedIDs []string
	// HistoryPath is history.json (read, and written back by the caller with the
	// campaign merged in); "" means ResultsRoot/history.json.
	HistoryPath string
	// InconclusiveAsFailure makes JUnit count inconclusive cells as failures and the
	// exit code 1 instead of 3. When nil, an existing campaign.json's choice is kept
	// (default false), so regeneration reproduces the same files.
	InconclusiveAsFailure *bool
	// Repeat is the campaign's repetitions per cell (`run --repeat`). 0 keeps an
	// existing campaign.json's, else the largest repeat a result records (1: none).
	Repeat int
	// Provenance, when non-nil, is the producing binary and host (its CLIs are
	// replaced by those the results record); nil keeps an existing campaign.json's
	// (so regeneration reproduces it), else the campaign has none.
	Provenance *Provenance
	// CatalogSources, when non-nil, is where Catalog came from (recorded in
	// campaign.json); nil keeps an existing campaign.json's.
	CatalogSources *CatalogSources
	// Interruption, when non-nil, records that the run was interrupted (campaign.json
	// "interruption"); nil with ExpectedIDs nil keeps an existing campaign.json's, so
	// that regeneration reproduces it; nil with ExpectedIDs set (a run that finished,
	// such as a completed --resume) records none.
	Interruption *Interruption
	// Secrets, when non-nil, sanitises every result before anything is rendered (exact
	// values and secret shapes; package redact).
	Secrets *redact.Set
	// NotRunHere maps the expected cells that did not run because the machine could
	// not provide their environment to why ("needs root for cgroup limits"): each
	// such cell without a result gets a result saying so (Result.NotRunHere), counted
	// in Campaign.NotRun. nil with ExpectedIDs nil keeps an existing campaign.json's,
	// so that regeneration reproduces it.
	NotRunHere map[string]string
	// RegradeOf, when non-nil, marks the campaign a regrade of another
	// (Campaign.RegradeOf); nil keeps an existing campaign.json's.
	RegradeOf *RegradeOf
	// HistoryKeep bounds history.json: the campaigns kept per suite definition
	// (History.Trim); 0 means DefaultHistoryKeep, a negative value keeps every one.
	HistoryKeep int
}

// Assembly is a campaign assembled from its stored results (Assemble): the campaign
// document, the history with the campaign merged in (HistoryPath is where it is
// kept), the campaign directory, the execution ids found but not expected (sorted),
// and warnings (for example a replaced history with another schema). The campaign's
// Results are each chosen result as the keep function of Assemble left it; Full reads
// one whole again.
type Assembly struct {
	Campaign    *Campaign
	History     *History
	HistoryPath string
	CampaignDir string
	Unexpected  []string
	Warnings    []string
	reader      *resultReader
}

// Full returns the campaign's result i whole (see resultReader.full): read again from
// its result.json and sanitised as Assemble chose it; a synthetic result as it is.
// Errors: the file no longer decodes or holds another attempt than the one chosen.
func (a *Assembly) Full(i int) (*Result, error) { return a.reader.full(i) }

// Assemble reads every result.json of the campaign, chooses the best attempt per
// expected cell (synthetic results for cells without one), computes the campaign
// document, its regression check against the latest green campaigns and the history
// with it merged in. It writes nothing. The outcome depends only on the stored
// results, the catalog, the expected ids and the prior history and campaign.json, so
// assembling again gives the same values. keep, when non-nil, is called with every
// valid result (sanitised) and its attempt directory as it is read, to cut it down to
// what the caller reads of Campaign.Results, so that memory does not grow with whole
// results; the results are read several at a time, so keep must be safe for
// concurrent use (it is called once per result, never twice with the same one).
//
// Errors: a usage problem (invalid campaign id or expected ids, unreadable directory,
// a corrupt campaign.json or history), wrapped with context.
func Assemble(opts CampaignOptions, keep func(r *Result, dir string)) (*Assembly, error) {
	if !validCampaignID(opts.CampaignID) {
		return nil, fmt.Errorf("campaign id %q must match [A-Za-z0-9][A-Za-z0-9._-]{0,199}", opts.CampaignID)
	}
	dir := filepath.Join(opts.ResultsRoot, opts.CampaignID)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("campaign directory %s: %w", dir, errOr(err, errors.New("not a directory")))
	}
	c, rr, unexpected, err := chooseCampaign(opts, dir, keep)
	if err != nil {
		return nil, err
	}
	histPath := opts.HistoryPath
	if histPath == "" {
		histPath = filepath.Join(opts.ResultsRoot, HistoryFile)
	}
	hist, warn, err := ReadHistory(histPath)
	if err != nil {
		return nil, err
	}
	a := &Assembly{Campaign: c, HistoryPath: histPath, CampaignDir: dir, Unexpected: unexpected, reader: rr}
	if warn != "" {
		a.Warnings = append(a.Warnings, warn)
	}
	// A campaign the bounded history no longer covers keeps the regression check its
	// campaign.json recorded (the baselines it was checked against may be gone).
	if t := hist.Trimmed; t == nil || c.GeneratedAt > t.Through || c.Baselines == nil {
		c.Baselines = baselines(c, hist, campaignReader(opts.ResultsRoot))
	}
	bound := opts.HistoryKeep
	if bound == 0 {
		bound = DefaultHistoryKeep
	}
	a.History = hist.Merge(c.Entry()).Trim(bound)
	return a, nil
}

// chooseCampaign loads the campaign's candidates (keep applied to each valid one),
// chooses a result per expected cell and builds the campaign document with what it
// keeps of an earlier campaign.json; it returns the document, the reader of its whole
// results and the unexpected execution ids.
func chooseCampaign(opts CampaignOptions, dir string, keep func(*Result, string)) (*Campaign, *resultReader, []string, error) {
	cands, err := loadCandidates(dir, func(c *Candidate) {
		if c.Valid() {
			if opts.Secrets != nil {
				SanitizeResult(opts.Secrets, c.Result)
			}
			if keep != nil {
				keep(c.Result, c.Dir)
			}
		}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	prior, err := readPriorCampaign(filepath.Join(dir, CampaignFile))
	if err != nil {
		return nil, nil, nil, err
	}
	expected, err := expectedIDs(opts.ExpectedIDs, prior, cands)
	if err != nil {
		return nil, nil, nil, err
	}
	repeat := campaignRepeat(opts.Repeat, prior, cands)
	results, notes, unexpected, repeats, sources := chooseRepeated(opts.Catalog, opts.CampaignID, expected, cands, repeat)
	notRun := opts.NotRunHere
	if notRun == nil && opts.ExpectedIDs == nil && prior != nil {
		notRun = prior.NotRunHere
	}
	markNotRunHere(results, notRun)
	sanitizeChosen(opts.Secrets, results, sources, notes)
	c := BuildCampaign(opts.CampaignID, opts.Catalog, expected, results, notes, inconclusiveAsFailure(opts.InconclusiveAsFailure, prior))
	keepPrior(c, opts, prior)
	if prior != nil {
		c.Baselines = prior.Baselines // provisional: Assemble recomputes them unless the history no longer covers c
	}
	if repeat > 1 {
		c.Repeat, c.Repeats = repeat, repeats
		for _, r := range repeats {
			if r.Flaky {
				c.Flaky++
			}
		}
	}
	return c, &resultReader{dir: dir, secrets: opts.Secrets, results: results, sources: sources}, unexpected, nil
}

// markNotRunHere makes the synthetic result of every cell in notRun a result of a cell
// not run here: no verdict, no failure class, the reason in NotRunHere and its error.
// A cell that has a result keeps it (a later run on a machine that could run it).
func markNotRunHere(results []Result, notRun map[string]string) {
	for i := range results {
		r := &results[i]
		if why := notRun[r.ExecutionID]; r.Synthetic && why != "" {
			r.NotRunHere, r.Verdict, r.FailureClass, r.Error = why, "", "", why
		}
	}
}

// expectedIDs is the campaign's selection, sorted and unique: the given ids, else an
// earlier campaign.json's, else the valid execution ids of the candidates. Error: an
// id that is not an execution id (a *ValidationError).
func expectedIDs(given []string, prior *priorCampaign, cands []Candidate) ([]string, error) {
	expected := given
	if expected == nil && prior != nil {
		expected = prior.Expected
	}
	if expected == nil {
		for _, c := range cands {
			if c.Result != nil && !slices.Contains(expected, c.Result.ExecutionID) {
				if _, _, _, _, ok := ParseExecutionID(c.Result.ExecutionID); ok {
					expected = append(expected, c.Result.ExecutionID)
				}
			}
		}
	}
	expected = slices.Compact(slices.Sorted(slices.Values(expected)))
	if expected == nil {
		expected = []string{}
	}
	var bad []string
	for _, id := range expected {
		if _, _, _, _, ok := ParseExecutionID(id); !ok {
			bad = append(bad, fmt.Sprintf("%q", Clip(id, 80)))
		}
	}
	if len(bad) > 0 {
		return nil, &ValidationError{Label: "expected ids", Problems: bad}
	}
	return expected, nil
}

// inconclusiveAsFailure is the given choice, else an earlier campaign.json's, else
// false.
func inconclusiveAsFailure(given *bool, prior *priorCampaign) bool {
	if given != nil {
		return *given
	}
	return prior != nil && prior.InconclusiveAsFailure
}

// campaignRepeat is the given repetitions per cell, else an earlier campaign.json's,
// else the largest repeat a candidate records (0 or 1: none).
func campaignRepeat(given int, prior *priorCampaign, cands []Candidate) int {
	repeat := given
	if repeat == 0 && prior != nil {
		repeat = prior.Repeat
	}
	if repeat == 0 {
		for _, c := range cands {
			if c.Result != nil {
				repeat = max(repeat, c.Result.Repeat)
			}
		}
	}
	return repeat
}

// sanitizeChosen redacts the synthetic results (the others were sanitised as they
// were read) and the candidate notes' problems with s; nothing when s is nil.
func sanitizeChosen(s *redact.Set, results []Result, sources []string, notes []CandidateNote) {
	if s == nil {
		return
	}
	for i := range results {
		if sources[i] == "" {
			SanitizeResult(s, &results[i])
		}
	}
	for i := range notes {
		for j, p := range notes[i].Problems {
			notes[i].Problems[j] = s.RedactText(p)
		}
	}
}

// keepPrior sets c's provenance, catalog sources and interruption: the given ones,
// else an earlier campaign.json's (the interruption only when no selection was given:
// a run that finished records none), so that regeneration reproduces them. The
// provenance's CLIs are those c's results record.
func keepPrior(c *Campaign, opts CampaignOptions, prior *priorCampaign) {
	prov := opts.Provenance
	if prov == nil && prior != nil {
		prov = prior.Provenance
	}
	if prov != nil {
		p := *prov
		p.CLIs = cliProvenance(c.Results)
		c.Provenance = &p
	}
	c.Catalog = opts.CatalogSources
	if c.Catalog == nil && prior != nil {
		c.Catalog = prior.Catalog
	}
	c.Interruption = opts.Interruption
	if c.Interruption == nil && opts.ExpectedIDs == nil && prior != nil {
		c.Interruption = prior.Interruption
	}
	c.RegradeOf = opts.RegradeOf
	if c.RegradeOf == nil && prior != nil {
		c.RegradeOf = prior.RegradeOf
	}
}

func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// resultReader reads a campaign's chosen results whole again, one at a time.
type resultReader struct {
	dir     string
	secrets *redact.Set
	results []Result // the summaries
	sources []string // per result, its attempt directory ("": synthetic, kept whole)
}

// full returns result i whole: read again from its result.json, validated, its paths
// made relative to the campaign directory and sanitised, as Assemble chose it. A file
// that no longer decodes, or holds another attempt than the one chosen, is an error.
func (rr *resultReader) full(i int) (*Result, error) {
	sum := &rr.results[i]
	if rr.sources[i] == "" {
		return sum, nil
	}
	dir := rr.sources[i]
	p := filepath.Join(rr.dir, filepath.FromSlash(dir), ResultFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s again: %w", p, err)
	}
	if len(b) > maxResultBytes {
		return nil, fmt.Errorf("%s changed while the report was written", p)
	}
	r, err := DecodeResult(dir+"/"+ResultFile, b)
	if err != nil {
		return nil, fmt.Errorf("%s changed while the report was written: %w", p, err)
	}
	if r.ExecutionID != sum.ExecutionID || r.Attempt != sum.Attempt || r.FinishedAt != sum.FinishedAt || r.Repetition != sum.Repetition {
		return nil, fmt.Errorf("%s changed while the report was written", p)
	}
	r.Evidence = prefixEvidence(dir, r.Evidence)
	r.Trajectories = prefixTrajectories(dir, r.Trajectories)
	if rr.secrets != nil {
		SanitizeResult(rr.secrets, r)
	}
	return r, nil
}

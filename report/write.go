package report

import (
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
)

// Files Generate writes at the campaign root besides campaign.json (result.CampaignFile)
// and, at the results root, history.json (result.HistoryFile).
const (
	SummaryFile   = "summary.md"
	JUnitFile     = "junit.xml"
	DashboardFile = "dashboard.html"
	IndexFile     = "index.html"
)

// Generated is what Generate wrote: the campaign, the merged history, the campaign
// directory, the execution ids found but not expected, and warnings (for example a
// replaced history with another schema). The campaign's counts are campaign.json's; its
// Results are each chosen result's summary (the fields the counts, summary.md and
// junit.xml read; see summaryResult), not the whole results campaign.json holds.
type Generated struct {
	Campaign    *result.Campaign
	History     *result.History
	CampaignDir string
	Unexpected  []string
	Warnings    []string
}

// Generate assembles the campaign from its stored results (Assemble: the best attempt
// per expected cell, synthetic results for cells without one, the regression check,
// the merged history) and writes campaign.json, summary.md, junit.xml, dashboard.html
// and the identical index.html at the campaign root and the merged history.json at
// opts.HistoryPath. The output depends only on the stored results, the catalog, the
// expected ids and the prior history, so running it again reproduces every file byte
// for byte. Every file is written atomically. Memory does not grow with whole results:
// each is kept as its summary (summaryResult) and read whole again, one at a time,
// while campaign.json and the dashboard are written, and every file is guarded as it
// is written (GuardedWriter).
//
// Errors: Assemble's, or a write failure, wrapped with context.
func Generate(opts result.CampaignOptions) (*Generated, error) {
	a, err := result.Assemble(opts, summaryResult)
	if err != nil {
		return nil, err
	}
	g := &Generated{Campaign: a.Campaign, History: a.History, CampaignDir: a.CampaignDir, Unexpected: a.Unexpected, Warnings: a.Warnings}
	warnings, err := writeStaged(campaignFiles(a, opts.Catalog), result.Guard{Secrets: opts.Secrets})
	g.Warnings = append(g.Warnings, warnings...)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// reportFile is one file Generate writes to path: rendered straight into its guarded
// write (render), so that no document of the campaign is held whole; made whole in
// memory (whole), guarded as Guard.Write guards it; or, with neither, a copy of the
// dashboard staged before it.
type reportFile struct {
	path   string
	render func(io.Writer) error
	whole  func() ([]byte, error)
	// dashboard marks dashboard.html, whose staged file the copy after it reads.
	dashboard bool
}

// campaignFiles lists the files of an assembled campaign in the order they are
// staged: campaign.json, summary.md, junit.xml, ctrf.json, dashboard.html, index.html
// (its copy) and history.json.
func campaignFiles(a *result.Assembly, cat *catalog.Catalog) []reportFile {
	c, dir := a.Campaign, a.CampaignDir
	upto := a.History.Upto(c.GeneratedAt, c.CampaignID)
	plain := func(f func(*result.Campaign) []byte) func() ([]byte, error) {
		return func() ([]byte, error) { return f(c), nil }
	}
	return []reportFile{
		{path: filepath.Join(dir, result.CampaignFile), render: func(w io.Writer) error { return result.WriteCampaign(w, c, a.Full) }},
		{path: filepath.Join(dir, SummaryFile), whole: plain(Summary)},
		{path: filepath.Join(dir, JUnitFile), whole: plain(JUnit)},
		{path: filepath.Join(dir, CTRFFile), whole: plain(CTRF)},
		{path: filepath.Join(dir, DashboardFile), render: func(w io.Writer) error { return writeDashboard(w, c, cat, upto, dir, a.Full) }, dashboard: true},
		{path: filepath.Join(dir, IndexFile)},
		{path: a.HistoryPath, whole: func() ([]byte, error) { return result.EncodeHistory(a.History) }},
	}
}

// stagedFile is the outcome of staging one reportFile.
type stagedFile struct {
	gf  result.GuardedFile
	st  atomicfile.Staged
	err error
}

// writeStaged stages every file through guard, each on its own goroutine (they only
// read the campaign; the dashboard's copy waits for the dashboard), and puts them all
// in place together after one sync (atomicfile.CommitStaged): a crash leaves each
// file old or new, never torn. It returns a warning per leak redacted before writing,
// in the files' order. Error: the first failure in that order; no file is then put in
// place.
func writeStaged(files []reportFile, guard result.Guard) ([]string, error) {
	out := make([]stagedFile, len(files))
	dashboard := -1
	for i, f := range files {
		if f.dashboard {
			dashboard = i
		}
	}
	var wg sync.WaitGroup
	for i, f := range files {
		if f.render == nil && f.whole == nil {
			continue // the copy, staged once the dashboard is
		}
		wg.Go(func() { out[i] = stageFile(f, guard) })
	}
	wg.Wait()
	for i, f := range files {
		if f.render != nil || f.whole != nil {
			continue
		}
		if dashboard < 0 || out[dashboard].err != nil {
			out[i].err = fmt.Errorf("staging %s: no dashboard to copy", f.path)
			continue
		}
		// the same bytes as dashboard.html, already guarded: its leaks are this file's
		d := out[dashboard].gf
		out[i].gf, out[i].st, out[i].err = guard.StageCopy(f.path, out[dashboard].st, d, true)
		out[i].gf.Leaks = d.Leaks
	}
	var warnings []string
	var staged []atomicfile.Staged
	var first error
	for i, f := range files {
		for _, l := range out[i].gf.Leaks {
			warnings = append(warnings, fmt.Sprintf("secret leak in %s (%s): redacted before writing", filepath.Base(f.path), l))
		}
		if out[i].err != nil && first == nil {
			first = out[i].err
		}
		if out[i].err == nil {
			staged = append(staged, out[i].st)
		}
		if first != nil {
			break
		}
	}
	if first != nil {
		for i := range out {
			if out[i].err == nil {
				atomicfile.DiscardStaged([]atomicfile.Staged{out[i].st})
			}
		}
		return warnings, first
	}
	return warnings, atomicfile.CommitStaged(staged)
}

// stageFile stages one rendered or whole file through guard.
func stageFile(f reportFile, guard result.Guard) stagedFile {
	var s stagedFile
	if f.render != nil {
		s.gf, s.st, s.err = guard.StageRender(f.path, f.render, true)
		return s
	}
	data, err := f.whole()
	if err != nil {
		s.err = err
		return s
	}
	s.gf, s.st, s.err = guard.StageWrite(f.path, data, true)
	return s
}

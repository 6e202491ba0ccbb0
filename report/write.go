package report

import (
	"fmt"
	"io"
	"path/filepath"

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
	files, err := campaignFiles(a, opts.Catalog)
	if err != nil {
		return nil, err
	}
	warnings, err := writeStaged(files, result.Guard{Secrets: opts.Secrets})
	g.Warnings = append(g.Warnings, warnings...)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// reportFile is one file Generate writes to path: rendered straight into its guarded
// write (render), so that no document of the campaign is held whole; made whole in
// memory (whole: data), guarded as Guard.Write guards it; or, with neither, a copy of
// the dashboard written before it.
type reportFile struct {
	path   string
	render func(io.Writer) error
	data   []byte
	whole  bool
	// dashboard marks dashboard.html, whose staged file the copy after it reads.
	dashboard bool
}

// campaignFiles lists the files of an assembled campaign in the order they are
// staged: campaign.json, summary.md, junit.xml, dashboard.html, index.html (its copy)
// and history.json. Error: the history does not encode.
func campaignFiles(a *result.Assembly, cat *catalog.Catalog) ([]reportFile, error) {
	c, dir := a.Campaign, a.CampaignDir
	histJSON, err := result.EncodeHistory(a.History)
	if err != nil {
		return nil, err
	}
	upto := a.History.Upto(c.GeneratedAt, c.CampaignID)
	return []reportFile{
		{path: filepath.Join(dir, result.CampaignFile), render: func(w io.Writer) error { return result.WriteCampaign(w, c, a.Full) }},
		{path: filepath.Join(dir, SummaryFile), data: Summary(c), whole: true},
		{path: filepath.Join(dir, JUnitFile), data: JUnit(c), whole: true},
		{path: filepath.Join(dir, CTRFFile), data: CTRF(c), whole: true},
		{path: filepath.Join(dir, DashboardFile), render: func(w io.Writer) error { return writeDashboard(w, c, cat, upto, dir, a.Full) }, dashboard: true},
		{path: filepath.Join(dir, IndexFile)},
		{path: a.HistoryPath, data: histJSON, whole: true},
	}, nil
}

// writeStaged stages every file through guard and puts them all in place together
// after one sync (atomicfile.CommitStaged): a crash leaves each file old or new, never torn. It
// returns a warning per leak redacted before writing. Error: the first failure; no
// file is then put in place.
func writeStaged(files []reportFile, guard result.Guard) ([]string, error) {
	var warnings []string
	var dashFile result.GuardedFile
	var dash atomicfile.Staged
	staged := make([]atomicfile.Staged, 0, len(files))
	for _, f := range files {
		var gf result.GuardedFile
		var st atomicfile.Staged
		var err error
		switch {
		case f.whole:
			gf, st, err = guard.StageWrite(f.path, f.data, true)
		case f.render == nil:
			// the same bytes as dashboard.html, already guarded: its leaks are this file's
			gf, st, err = guard.StageCopy(f.path, dash, dashFile, true)
			gf.Leaks = dashFile.Leaks
		default:
			gf, st, err = guard.StageRender(f.path, f.render, true)
		}
		if f.dashboard {
			dashFile, dash = gf, st
		}
		for _, l := range gf.Leaks {
			warnings = append(warnings, fmt.Sprintf("secret leak in %s (%s): redacted before writing", filepath.Base(f.path), l))
		}
		if err != nil {
			atomicfile.DiscardStaged(staged)
			return warnings, err
		}
		staged = append(staged, st)
	}
	return warnings, atomicfile.CommitStaged(staged)
}

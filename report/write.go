package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/redact"
)

// Files written at the campaign root and the results root (DESIGN.md "Files a campaign
// writes").
const (
	CampaignFile  = "campaign.json"
	SummaryFile   = "summary.md"
	JUnitFile     = "junit.xml"
	DashboardFile = "dashboard.html"
	IndexFile     = "index.html"
	HistoryFile   = "history.json"
)

// Options says what Generate reads and writes.
type Options struct {
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
	// HistoryPath is history.json; "" means ResultsRoot/history.json.
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
}

// Generated is what Generate wrote: the campaign, the merged history, the campaign
// directory, the execution ids found but not expected, and warnings (for example a
// replaced history with another schema). The campaign's counts are campaign.json's; its
// Results are each chosen result's summary (the fields the counts, summary.md and
// junit.xml read; see summaryResult), not the whole results campaign.json holds.
type Generated struct {
	Campaign    *Campaign
	History     *History
	CampaignDir string
	Unexpected  []string
	Warnings    []string
}

// Generate reads every result.json of the campaign, chooses the best attempt per
// expected cell (synthetic results for cells without one), and writes campaign.json,
// summary.md, junit.xml, dashboard.html and the identical index.html at the campaign
// root and the merged history.json at the results root. The output depends only on
// the stored results, the catalog, the expected ids and the prior history, so running
// it again reproduces every file byte for byte. Every file is written atomically.
// Memory does not grow with whole results: each is kept as its summary and read whole
// again, one at a time, while campaign.json and the dashboard are written, and every
// file is guarded as it is written (GuardedWriter).
//
// Errors: a usage problem (invalid campaign id, unreadable directory, a corrupt
// history) or a write failure, wrapped with context.
func Generate(opts Options) (*Generated, error) {
	if !validCampaignID(opts.CampaignID) {
		return nil, fmt.Errorf("campaign id %q must match [A-Za-z0-9][A-Za-z0-9._-]{0,199}", opts.CampaignID)
	}
	dir := filepath.Join(opts.ResultsRoot, opts.CampaignID)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("campaign directory %s: %w", dir, errOr(err, errors.New("not a directory")))
	}
	cands, err := loadCandidates(dir, func(c *Candidate) {
		if c.Valid() {
			if opts.Secrets != nil {
				SanitizeResult(opts.Secrets, c.Result)
			}
			summaryResult(c.Result, c.Dir)
		}
	})
	if err != nil {
		return nil, err
	}
	prior, err := readPriorCampaign(filepath.Join(dir, CampaignFile))
	if err != nil {
		return nil, err
	}
	expected := opts.ExpectedIDs
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
			bad = append(bad, fmt.Sprintf("%q", clip(id, 80)))
		}
	}
	if len(bad) > 0 {
		return nil, &ValidationError{Label: "expected ids", Problems: bad}
	}
	asFailure := false
	if opts.InconclusiveAsFailure != nil {
		asFailure = *opts.InconclusiveAsFailure
	} else if prior != nil {
		asFailure = prior.InconclusiveAsFailure
	}
	repeat := opts.Repeat
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
	results, notes, unexpected, repeats, sources := chooseRepeated(opts.Catalog, opts.CampaignID, expected, cands, repeat)
	cands = nil
	if opts.Secrets != nil {
		for i := range results {
			if sources[i] == "" { // synthetic; the others were sanitised as they were read
				SanitizeResult(opts.Secrets, &results[i])
			}
		}
		for i := range notes {
			for j, p := range notes[i].Problems {
				notes[i].Problems[j] = opts.Secrets.RedactText(p)
			}
		}
	}
	c := buildCampaign(opts.CampaignID, opts.Catalog, expected, results, notes, asFailure)
	rr := &resultReader{dir: dir, secrets: opts.Secrets, results: results, sources: sources}
	prov := opts.Provenance
	if prov == nil && prior != nil {
		prov = prior.Provenance
	}
	if prov != nil {
		p := *prov
		p.CLIs = cliProvenance(results)
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
	if repeat > 1 {
		c.Repeat, c.Repeats = repeat, repeats
		for _, r := range repeats {
			if r.Flaky {
				c.Flaky++
			}
		}
	}

	histPath := opts.HistoryPath
	if histPath == "" {
		histPath = filepath.Join(opts.ResultsRoot, HistoryFile)
	}
	hist, warn, err := ReadHistory(histPath)
	if err != nil {
		return nil, err
	}
	g := &Generated{Campaign: c, CampaignDir: dir, Unexpected: unexpected}
	if warn != "" {
		g.Warnings = append(g.Warnings, warn)
	}
	c.Baselines = baselines(c, hist, campaignReader(opts.ResultsRoot))
	g.History = hist.Merge(c.Entry())

	histJSON, err := encodeJSON(g.History)
	if err != nil {
		return nil, err
	}
	// Every file is rendered straight into its guarded write (GuardedWriter), so that
	// no document of the campaign is held whole; index.html is a copy of dashboard.html.
	dashPath := filepath.Join(dir, DashboardFile)
	upto := g.History.Upto(c.GeneratedAt, c.CampaignID)
	// A file made whole in memory (whole) is guarded as Guard.Write guards it.
	files := []struct {
		path   string
		render func(io.Writer) error
		data   []byte
		whole  bool
	}{
		{path: filepath.Join(dir, CampaignFile), render: func(w io.Writer) error { return writeCampaignJSON(w, c, rr.full) }},
		{path: filepath.Join(dir, SummaryFile), data: Summary(c), whole: true},
		{path: filepath.Join(dir, JUnitFile), data: JUnit(c), whole: true},
		{path: dashPath, render: func(w io.Writer) error { return writeDashboard(w, c, opts.Catalog, upto, dir, rr.full) }},
		{path: filepath.Join(dir, IndexFile)},
		{path: histPath, data: histJSON, whole: true},
	}
	// Each file is staged and all are put in place together after one sync
	// (CommitStaged): a crash leaves each file old or new, never torn.
	guard := Guard{Secrets: opts.Secrets}
	var dashLeaks []redact.Leak
	var dash StagedFile
	staged := make([]StagedFile, 0, len(files))
	for _, f := range files {
		var gf GuardedFile
		var st StagedFile
		var err error
		switch {
		case f.whole:
			gf, st, err = guard.stageWrite(f.path, f.data, true)
		case f.render == nil:
			// the same bytes as dashboard.html, already guarded: its leaks are this file's
			gf, st, err = guard.stageCopy(f.path, dash.tmp, true)
			gf.Leaks = slices.Concat(dashLeaks, gf.Leaks)
		default:
			gf, st, err = guard.stageGuarded(f.path, f.render, true)
		}
		if f.path == dashPath {
			dashLeaks, dash = gf.Leaks, st
		}
		for _, l := range gf.Leaks {
			g.Warnings = append(g.Warnings, fmt.Sprintf("secret leak in %s (%s): redacted before writing", filepath.Base(f.path), l))
		}
		if err != nil {
			DiscardStaged(staged)
			return nil, err
		}
		staged = append(staged, st)
	}
	if err := CommitStaged(staged); err != nil {
		return nil, err
	}
	return g, nil
}

func errOr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// priorCampaign is what Generate keeps of an existing campaign.json (the fields of
// Campaign of the same names; its results are not kept).
type priorCampaign struct {
	Schema                string          `json:"schema"`
	Expected              []string        `json:"expected"`
	InconclusiveAsFailure bool            `json:"inconclusiveAsFailure"`
	Repeat                int             `json:"repeat"`
	Provenance            *Provenance     `json:"provenance"`
	Catalog               *CatalogSources `json:"catalog"`
	Interruption          *Interruption   `json:"interruption"`
}

// readPriorCampaign reads an existing campaign.json for its expected ids and options;
// nil when there is none. A file that is not a campaign document is an error (it would
// be overwritten).
func readPriorCampaign(path string) (*priorCampaign, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	// Decoded from the stream into the fields Generate keeps, so that the earlier
	// results are parsed but never held.
	var c priorCampaign
	dec := json.NewDecoder(bufio.NewReaderSize(f, streamBuffer))
	err = dec.Decode(&c)
	if err == nil {
		if _, end := dec.Token(); !errors.Is(end, io.EOF) {
			err = errors.New("data after the document")
		}
	}
	if err != nil || c.Schema != CampaignSchema {
		return nil, fmt.Errorf("%s exists but is not an %s document (move it away to regenerate): %v", path, CampaignSchema, err)
	}
	return &c, nil
}

// SanitizeResult redacts every free-text and raw JSON field of r in place with s (exact
// values and secret shapes): error, issue identifier, usage, matcher details, expected
// and observed values, the workspace diff's paths, link targets and texts, and the
// termination summary (withheld when it cannot be
// sanitised).
func SanitizeResult(s *redact.Set, r *Result) {
	r.Error = s.RedactText(r.Error)
	r.IssueIdentifier = s.RedactText(r.IssueIdentifier)
	r.Usage = s.SanitizeJSON(r.Usage)
	for i := range r.MatcherResults {
		m := &r.MatcherResults[i]
		m.Detail = s.RedactText(m.Detail)
		m.Expected = s.SanitizeJSON(m.Expected)
		m.Observed = s.SanitizeJSON(m.Observed)
	}
	for i := range r.RuntimeFacts {
		rf := &r.RuntimeFacts[i]
		rf.Binary = s.RedactText(rf.Binary)
		for j := range rf.Argv {
			rf.Argv[j] = s.RedactText(rf.Argv[j])
		}
		for j := range rf.Problems {
			rf.Problems[j] = s.RedactText(rf.Problems[j])
		}
	}
	for i := range r.WorkspaceDiff {
		for j := range r.WorkspaceDiff[i].Changes {
			fc := &r.WorkspaceDiff[i].Changes[j]
			fc.Path, fc.BeforeTarget, fc.AfterTarget, fc.Note = s.RedactText(fc.Path), s.RedactText(fc.BeforeTarget), s.RedactText(fc.AfterTarget), s.RedactText(fc.Note)
			for _, t := range []**string{&fc.Before, &fc.After} {
				if *t != nil {
					v := s.RedactText(**t)
					*t = &v
				}
			}
		}
		r.WorkspaceDiff[i].Note = s.RedactText(r.WorkspaceDiff[i].Note)
	}
	if len(r.Termination) > 0 {
		if b, err := s.SanitizeJSONBytes("termination", r.Termination); err == nil {
			r.Termination = bytes.TrimSpace(b)
		} else {
			r.Termination = json.RawMessage(`{"redacted":"termination summary withheld: it could not be sanitised"}`)
		}
	}
}

// writeCampaignJSON writes campaign.json, the bytes encodeJSON(c) gives with every
// result i replaced by full(i), without encoding the whole document at once: the
// document without its results, then each result on its own, indented as it is inside
// the document.
func writeCampaignJSON(w io.Writer, c *Campaign, full func(i int) (*Result, error)) error {
	head := *c
	head.Results = []Result{}
	b, err := encodeJSON(&head)
	if err != nil {
		return err
	}
	// A newline is never inside a JSON string, so this is the top-level key.
	marker := []byte("\n  \"results\": []")
	i := bytes.Index(b, marker)
	if i < 0 {
		return errors.New("encoding campaign.json: no results key in the document")
	}
	if len(c.Results) == 0 {
		_, err := w.Write(b)
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("    ", "  ")
	if _, err := w.Write(b[:i+len(marker)-1]); err != nil {
		return err
	}
	for k := range c.Results {
		buf.Reset()
		r, err := full(k)
		if err != nil {
			return err
		}
		buf.WriteString("\n    ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encoding JSON: %w", err)
		}
		buf.Truncate(buf.Len() - 1) // the encoder's newline
		if k < len(c.Results)-1 {
			buf.WriteByte(',')
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\n  ]"); err != nil {
		return err
	}
	_, err = w.Write(b[i+len(marker):])
	return err
}

// encodeJSON encodes v with two-space indentation, without HTML escaping, ending in a
// newline. encoding/json orders struct fields by declaration and map keys by sort, so
// the bytes are deterministic.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// EncodeResult encodes a result as result.json is written (two-space indentation, no
// HTML escaping, final newline).
func EncodeResult(r *Result) ([]byte, error) { return encodeJSON(r) }

// WriteFileAtomic writes data to path through a temporary file in the same directory
// (created 0644), fsyncs it, renames it over path and fsyncs the directory, so a reader
// sees either the old or the new file, never a torn one. The directory is created when
// missing.
func WriteFileAtomic(path string, data []byte) error { return writeFile(path, data, true) }

// WriteFileReplace is WriteFileAtomic without the fsyncs: a reader, and a process
// killed at any moment, still see the old or the complete new file (the rename is
// atomic; the page cache outlives the process), but an operating-system crash may
// lose the file or leave it empty until the caller makes the file system durable
// (SyncFilesystem). The directory is created when missing.
func WriteFileReplace(path string, data []byte) error { return writeFile(path, data, false) }

// writeFile is WriteFileAtomic, fsyncing only when durable.
func writeFile(path string, data []byte, durable bool) error {
	f, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	return commitTempWith(f, path, durable)
}

// writeTemp writes data to a new temporary file of an atomic write of path (createTemp)
// and returns it open; on an error nothing is left.
func writeTemp(path string, data []byte) (*os.File, error) {
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return f, nil
}

// closeStaged makes a staged temporary file (written, open) 0644 and closes it; on an
// error it is removed.
func closeStaged(f *os.File, path string) error {
	err := f.Chmod(0o644)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("closing %s: %w", path, err)
	}
	return nil
}

// SyncFilesystem makes everything written to the file system that holds dir durable
// (syncfs(2): every dirty file, directory and rename on it, then the device's cache
// flush), for example the files an attempt wrote with WriteFileReplace before the
// result that refers to them is written with WriteFileAtomic. Error: dir cannot be
// opened, or the sync failed.
func SyncFilesystem(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing the file system of %s: %w", dir, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("syncing the file system of %s: %w", dir, err)
	}
	return nil
}

// CommitStaged puts staged files (GuardedWriter.Stage) in place, in order: one sync of
// the file system they are on (SyncFilesystem, once per file system) makes their
// content durable, then each is renamed over its path and each directory is fsynced
// once. A reader, a killed process and an operating-system crash see each path's old
// file or its complete new one, as with WriteFileAtomic, for one sync instead of two
// fsyncs per file. Error: the first failure; the files not yet renamed are then
// removed (DiscardStaged).
func CommitStaged(files []StagedFile) (err error) {
	done := 0
	defer func() {
		if err != nil {
			DiscardStaged(files[done:])
		}
	}()
	var dirs []string
	synced := map[uint64]bool{}
	for _, f := range files {
		dir := filepath.Dir(f.Path)
		if slices.Contains(dirs, dir) {
			continue
		}
		dirs = append(dirs, dir)
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			return fmt.Errorf("syncing %s: %w", f.Path, err)
		}
		if !synced[st.Dev] {
			synced[st.Dev] = true
			if err := SyncFilesystem(dir); err != nil {
				return err
			}
		}
	}
	for _, f := range files {
		if err := os.Rename(f.tmp, f.Path); err != nil {
			return fmt.Errorf("renaming into %s: %w", f.Path, err)
		}
		done++
	}
	for _, dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			return fmt.Errorf("syncing %s: %w", dir, err)
		}
		err = d.Sync()
		_ = d.Close()
		if err != nil {
			return fmt.Errorf("syncing %s: %w", dir, err)
		}
	}
	return nil
}

// DiscardStaged removes the temporary files of staged files that will not be committed.
func DiscardStaged(files []StagedFile) {
	for _, f := range files {
		if f.f != nil {
			_ = f.f.Close()
		}
		_ = os.Remove(f.tmp)
	}
}

// createTemp creates the temporary file of an atomic write of path in path's directory
// (created when missing).
func createTemp(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	pattern := "." + filepath.Base(path) + ".tmp-*"
	f, err := os.CreateTemp(dir, pattern)
	if errors.Is(err, fs.ErrNotExist) {
		// The directory is made only when it is missing (most writes go into one
		// that exists: no stat of it first).
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		f, err = os.CreateTemp(dir, pattern)
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return f, nil
}

// commitTemp finishes an atomic write: f (from createTemp, written) is made 0644,
// fsynced, closed and renamed over path, and the directory fsynced. On any error f is
// removed.
func commitTemp(f *os.File, path string) error { return commitTempWith(f, path, true) }

// commitTempWith is commitTemp, fsyncing the file and the directory only when durable.
func commitTempWith(f *os.File, path string, durable bool) error {
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("syncing %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming into %s: %w", path, err)
	}
	ok = true
	if !durable {
		return nil
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

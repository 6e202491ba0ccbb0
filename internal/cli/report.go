package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/report"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/shard"
	"github.com/agentproof/agentproof/verdict"
)

// reportFlags are the options shared by `report` and `report merge`.
type reportFlags struct {
	results   string
	campaign  string
	history   string
	catalog   *catalogSource
	asFailure bool
	// keep is --history-keep: campaigns history.json keeps per suite definition (0:
	// every one).
	keep   int
	loaded map[string]*catalog.Catalog
}

func (f *reportFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.results, "results", "agentproof-results", "results root `directory`: campaigns live in <results>/<campaign>/, history in <results>/history.json")
	fl.StringVar(&f.history, "history", "", "history `file` to merge into (default <results>/history.json)")
	fl.BoolVar(&f.asFailure, "inconclusive-as-failure", false, "count inconclusive cells as failures in junit.xml and the exit code (default: keep the campaign's earlier choice, else skipped / exit 3)")
	historyKeepFlag(fl, &f.keep)
	f.catalog = catalogFlag(cmd)
}

// options builds the result.CampaignOptions of one campaign; the
// inconclusive-as-failure choice is passed only when the flag was given, so
// regeneration keeps the stored choice. The
// catalog is the one the campaign recorded (campaign.json, else plan.json) unless
// --catalog or --with-default is given (campaignCatalog).
func (f *reportFlags) options(a *app, cmd *cobra.Command, campaign string) (result.CampaignOptions, error) {
	if !result.ValidCampaignID(campaign) {
		return result.CampaignOptions{}, usageErrorf("--campaign %q must be a letter or digit followed by at most 199 letters, digits, '.', '_' or '-'", campaign)
	}
	c, err := f.campaignCatalog(a, cmd, campaign)
	if err != nil {
		return result.CampaignOptions{}, err
	}
	keep, err := historyKeep(f.keep)
	if err != nil {
		return result.CampaignOptions{}, err
	}
	o := result.CampaignOptions{ResultsRoot: f.results, CampaignID: campaign, Catalog: c, HistoryPath: f.history, HistoryKeep: keep}
	if cmd.Flags().Changed("inconclusive-as-failure") {
		v := f.asFailure
		o.InconclusiveAsFailure = &v
	}
	return o, nil
}

// recordedCatalog reads the catalog sources a campaign recorded: campaign.json's, else
// plan.json's; nil when neither records one (or neither exists).
func recordedCatalog(dir string) *result.CatalogSources {
	for _, name := range []string{result.CampaignFile, campaign.PlanFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var doc struct {
			Catalog *result.CatalogSources `json:"catalog"`
		}
		if json.Unmarshal(b, &doc) == nil && doc.Catalog != nil {
			return doc.Catalog
		}
	}
	return nil
}

// campaignCatalog is the catalog to report campaign id with. Without --catalog and
// --with-default it is the catalog the campaign recorded it was run with (said on
// stderr when it is not the default one); a recorded catalog that cannot be loaded is
// a usage error naming it (regenerating with another catalog would report its suites
// unknown and the campaign partial). With the flags, their catalog; a warning says when
// the campaign recorded another one. Loaded catalogs are cached per sources.
func (f *reportFlags) campaignCatalog(a *app, cmd *cobra.Command, id string) (*catalog.Catalog, error) {
	explicit := cmd.Flags().Changed("catalog") || cmd.Flags().Changed("with-default")
	src := *f.catalog
	rec := recordedCatalog(filepath.Join(f.results, id))
	if rec != nil && !explicit && !rec.IsDefault() {
		src = sourceOf(rec)
		fmt.Fprintf(a.stderr, "agentproof: campaign %s: using the catalog it was run with (%s)\n", id, src.describe())
	}
	// Said once the catalog loaded: an invalid one is refused without it.
	warnOther := func() {
		if rec == nil || !explicit {
			return
		}
		if want := sourceOf(rec); want.describe() != mustRecord(src) {
			fmt.Fprintf(a.stderr, "agentproof: warning: campaign %s was run with %s; regenerating it with %s (suites this catalog lacks or defines differently are reported partial)\n", id, want.describe(), src.describe())
		}
	}
	key := src.describe()
	if c, ok := f.loaded[key]; ok {
		warnOther()
		return c, nil
	}
	c, err := loadCatalog(src)
	if err != nil && rec != nil && !explicit && !rec.IsDefault() {
		return nil, usageErrorf("campaign %s was run with %s (recorded in its campaign.json or plan.json), which cannot be loaded now: %v; pass --catalog to report it with another catalog", id, src.describe(), err)
	}
	if err != nil {
		return nil, err
	}
	warnOther()
	// The container environments' images are pinned as run pins them (the image built
	// on this machine, reused): the suite definitions then match the results' own, and
	// the campaign is not reported partial for an unpinned image. Where the image cannot
	// be pinned here, those suites differ and are reported partial, as said above.
	pinImages(cmd.Context(), c, c.Cells)
	if f.loaded == nil {
		f.loaded = map[string]*catalog.Catalog{}
	}
	f.loaded[key] = c
	return c, nil
}

// warnUnknownSuites says, on stderr, which suites of c the reporting catalog does not
// know (they are reported partial): the campaign was likely run with another
// --catalog.
func warnUnknownSuites(a *app, cat *catalog.Catalog, c *result.Campaign) {
	var unknown []string
	for _, s := range c.Suites {
		if cat == nil || cat.Suite(s.SuiteID) == nil {
			unknown = append(unknown, s.SuiteID)
		}
	}
	if len(unknown) > 0 {
		fmt.Fprintf(a.stderr, "agentproof: warning: campaign %s: suite(s) %s are not in the catalog used to report it, so they are reported partial; pass the --catalog the campaign was run with\n", c.CampaignID, strings.Join(unknown, ", "))
	}
}

// mustRecord is src as recorded and described again (absolute paths), for comparing
// with a recorded catalog; src itself when it has no absolute form.
func mustRecord(src catalogSource) string {
	r, err := src.record()
	if err != nil {
		return src.describe()
	}
	return sourceOf(r).describe()
}

func newReportCmd(a *app) *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Regenerate campaign.json, summary.md, junit.xml, the dashboard and history.json from stored results",
		Long:  reportLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A directory with nothing to report and no lock file (no run, report or
			// merge ever wrote there) is refused as it is: no lock file is left in it.
			if _, err := f.campaignIDs(); err != nil {
				if _, serr := os.Stat(filepath.Join(f.results, ResultsLockFile)); serr != nil {
					return err
				}
			}
			unlock, err := lockResults(f.results, false)
			if err != nil {
				return err
			}
			defer unlock()
			ids, err := f.campaignIDs()
			if err != nil {
				return err
			}
			worst := ExitOK
			for _, id := range ids {
				o, err := f.options(a, cmd, id)
				if err != nil {
					return err
				}
				g, err := report.Generate(o)
				if err != nil {
					return reportError(err)
				}
				warnUnknownSuites(a, o.Catalog, g.Campaign)
				worst = verdict.Worst(worst, g.Campaign.ExitCode())
				printGenerated(a, g)
				appendStepSummary(a, g)
			}
			if worst != ExitOK {
				return withExit(worst, nil)
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&f.campaign, "campaign", "", "campaign `id` to regenerate (default: every campaign under --results)")
	cmd.AddCommand(newReportMergeCmd(a))
	return cmd
}

// campaignIDs are the campaigns report regenerates: --campaign (which must exist under
// --results) or every campaign under --results. Errors: usage errors naming what is
// missing (campaignExists, campaignDirs).
func (f *reportFlags) campaignIDs() ([]string, error) {
	if f.campaign != "" {
		if err := campaignExists(f.results, f.campaign); err != nil {
			return nil, err
		}
		return []string{f.campaign}, nil
	}
	return campaignDirs(f.results)
}

// reportLong is the help of 'agentproof report'.
const reportLong = `Regenerate a campaign's report from its stored result.json files, without running
anything: campaign.json, summary.md, junit.xml, ctrf.json, dashboard.html and an identical
index.html at <results>/<campaign>/, and history.json at the results root (or
--history). For every expected cell the best attempt is chosen (a valid result first,
then the latest finishedAt, then the higher attempt); an expected cell without a
valid result gets a synthetic inconclusive result (permanent_infrastructure).

For each campaign it prints the line 'agentproof run' ends with ("Campaign <id>:
<passed>/<selected> passed, <failed> failed, <inconclusive> inconclusive", then
", <n> known failure(s)", ", <n> not run here (partial)" when there are any),
followed by the state of the selection in parentheses (complete, subset of the
catalog, cut short, interrupted) unless the line says it already, and the dashboard.

The catalog supplies the grids, labels, fingerprints and the completeness of each
suite. Without --catalog and --with-default, each campaign is reported with the
catalog it was run with (recorded in its campaign.json and plan.json; a recorded
catalog that cannot be loaded any more is an error, exit 2); campaigns that recorded
none use the embedded catalog, with a warning naming any suite it does not know.
With --catalog, that catalog is used (a warning says when the campaign recorded
another one).

The expected cells are the campaign.json "expected" list written by 'agentproof run';
without a campaign.json, the cells that have results. Without --campaign every
campaign directory under --results is regenerated. The output depends only on the
stored results, the catalog and the history, so regenerating reproduces the files
byte for byte.

junit.xml reports inconclusive cells as skipped with their reason; with
--inconclusive-as-failure they are failures (type "inconclusive") and the exit code
is 1 instead of 3. The choice is stored in campaign.json and kept on regeneration.
ctrf.json (the Common Test Report Format) lists the same cells: inconclusive and
missing cells have status "other" (or "failed" with --inconclusive-as-failure).

When $GITHUB_STEP_SUMMARY is set (GitHub Actions), each campaign's summary.md is
appended to it, so the job's summary page shows the failures first.

The results directory is locked (<results>/.agentproof-results.lock) while the report
is written; when an 'agentproof run' or another report holds it, report exits 2 at
once instead of waiting.

Exit codes: 0 every cell passed (calibration cells: met their expectation; a known
failure does not fail it), 1 a cell failed, 3 nothing failed but a cell was
inconclusive, 4 partial: every cell that ran passed but some selected cells were not
run here (this machine could not provide their environment), 2 bad flags, unreadable
input or a results directory in use, 70 internal error (a bug in agentproof).`

func newReportMergeCmd(a *app) *cobra.Command {
	var f reportFlags
	var m mergeFlags
	cmd := &cobra.Command{
		Use:   "merge (--plan FILE | --expected-ids FILE) DIR...",
		Short: "Merge the shards that separate machines ran into one campaign and report it",
		Long: `Merge the attempt directories that separate machines produced (one CI job or
Kubernetes pod per shard of 'agentproof list --shards N', or per cell of 'agentproof
list --matrix-json') into
<results>/<campaign>/<suite>/<profile>/<environment>/<case>/attempt-<n>/, then report
the campaign as 'agentproof report' does. merge is the only writer of the combined
campaign: a campaign directory that 'agentproof run' wrote (it holds plan.json) is
refused, exit 2.

Each DIR may be a results root, a campaign directory or an attempt directory: every
result.json below it in a directory named attempt-<n> is an attempt. An attempt already present with identical
result.json is skipped (merging twice changes nothing: every file is byte-identical);
a different attempt with the same number (a rerun) is kept beside it as
attempt-<n>-<digest>, and the best attempt is chosen. Symbolic links are not copied.

--plan names the shard plan the shards ran (the file of 'agentproof list --shards
N'); its cells are the expected cells, and it is kept as shards.json in the campaign.
--expected-ids names the selection instead: the JSON printed by 'agentproof list
--matrix-json', a JSON array of ids, or one id per line. A shard run (a campaign
directory whose plan.json records 'run --shard') of another plan than --plan's, or,
without --plan, shard runs of two different plans, are refused (exit 2, naming the
directories and the plans' fingerprints).

Expected cells with no result get a synthetic inconclusive result, and merge names
them on stderr (with --plan, by shard: a shard that left nothing is named as such);
the exit code is then never 0 (3, or 1 when a cell failed or with
--inconclusive-as-failure). The campaign id is --campaign, or the one campaign id all
merged results name. The results directory (--results) is locked while merging and
reporting, as for 'agentproof report': when it is in use, merge exits 2.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("report merge needs at least one DIR to merge (see 'agentproof report merge --help')")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, dirs []string) error {
			return a.reportMerge(cmd, &f, m, dirs)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&f.campaign, "campaign", "", "campaign `id` to merge into (default: the one campaign id the results name)")
	cmd.Flags().StringVar(&m.idsFile, "expected-ids", "", "`file` with the expected execution ids (list --matrix-json output, a JSON array, or one per line)")
	cmd.Flags().StringVar(&m.planFile, "plan", "", "shard plan `file` the shards ran (list --shards N output): its cells are the expected cells")
	return cmd
}

// mergeFlags are the selection flags of `report merge`.
type mergeFlags struct {
	idsFile  string
	planFile string
}

// expected reads the expected cells: --plan's (with the plan) or --expected-ids'.
// Exactly one of them must be given; every problem is a usage error.
func (m mergeFlags) expected() ([]string, *shard.Plan, error) {
	switch {
	case m.idsFile != "" && m.planFile != "":
		return nil, nil, usageErrorf("--plan and --expected-ids are exclusive: the plan names the expected cells")
	case m.planFile != "":
		b, err := os.ReadFile(m.planFile)
		if err != nil {
			return nil, nil, usageErrorf("reading --plan: %v", err)
		}
		p, err := shard.Decode(m.planFile, b)
		if err != nil {
			return nil, nil, &UsageError{Err: err}
		}
		return p.AllIDs(), p, nil
	case m.idsFile == "":
		return nil, nil, usageErrorf("report merge needs --plan FILE (the output of 'agentproof list --shards N') or --expected-ids FILE (the output of 'agentproof list --matrix-json', a JSON array or one id per line)")
	}
	b, err := os.ReadFile(m.idsFile)
	if err != nil {
		return nil, nil, &UsageError{Err: fmt.Errorf("reading --expected-ids: %w", err)}
	}
	ids, err := result.ParseExpectedIDs(m.idsFile, b)
	if err != nil {
		return nil, nil, &UsageError{Err: err}
	}
	return ids, nil, nil
}

// reportMerge is the body of `report merge`.
func (a *app) reportMerge(cmd *cobra.Command, f *reportFlags, m mergeFlags, dirs []string) error {
	ids, plan, err := m.expected()
	if err != nil {
		return err
	}
	runs, err := shard.FindRuns(dirs, campaign.PlanFile)
	if err != nil {
		return &UsageError{Err: err}
	}
	want := ""
	if plan != nil {
		want = plan.Fingerprint
	}
	if foreign := shard.Foreign(runs, want); len(foreign) > 0 {
		return usageErrorf("the merge sources hold shards of different plans: %s", strings.Join(foreign, "; "))
	}
	unlock, err := lockResults(f.results, true)
	if err != nil {
		return err
	}
	defer unlock()
	claim := func(dir string) error { return claimMergeTarget(dir, plan) }
	// The report's commit syncs the file system before it puts the campaign's files in
	// place, which makes the merged results durable too: the merge leaves its last
	// sync to it (and to mergeDurable when the report fails).
	merged, err := result.Merge(result.MergeOptions{Sources: dirs, ResultsRoot: f.results, CampaignID: f.campaign, Claim: claim, SyncLater: true})
	var ue *UsageError
	switch {
	case errors.As(err, &ue):
		return err
	case errors.Is(err, result.ErrMergeCampaign):
		return &UsageError{Err: err}
	case err != nil:
		return reportError(err)
	}
	for _, w := range merged.Warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
	dir := filepath.Join(f.results, merged.CampaignID)
	fmt.Fprintf(a.stdout, "Merged %d attempt(s) into %s (%d already present)\n", len(merged.Copied), dir, len(merged.Skipped))
	g, err := a.generateMerged(cmd, f, merged.CampaignID, ids, shardsNotRunHere(runs))
	if err != nil {
		return mergeDurable(dir, err)
	}
	printGenerated(a, g)
	missing := reportGaps(a, g.Campaign, plan, runs)
	code := g.Campaign.ExitCode()
	if missing > 0 && code == ExitOK {
		code = ExitInconclusive
	}
	if code != ExitOK {
		return withExit(code, nil)
	}
	return nil
}

// mergeDurable is the error of a merge whose report failed (err): the report's commit,
// which would have made the merged results durable, did not happen, so the campaign
// directory dir's file system is synced here. A failed sync is returned with err.
func mergeDurable(dir string, err error) error {
	if serr := atomicfile.SyncFilesystem(dir); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// claimMergeTarget makes sure merge is the only writer of the campaign directory dir:
// one that `agentproof run` wrote (it holds plan.json) is refused, as is one merged
// from another shard plan; with a plan, the plan is kept there as shards.json.
func claimMergeTarget(dir string, plan *shard.Plan) error {
	if _, err := os.Stat(filepath.Join(dir, campaign.PlanFile)); err == nil {
		return usageErrorf("%s was written by 'agentproof run' (it holds %s): merge into a campaign of its own (another --results or --campaign)", dir, campaign.PlanFile)
	}
	path := filepath.Join(dir, shardsFile)
	if old, err := os.ReadFile(path); err == nil {
		p, err := shard.Decode(path, old)
		if err != nil {
			return &UsageError{Err: err}
		}
		if plan == nil || p.Fingerprint != plan.Fingerprint {
			return usageErrorf("%s was merged from shard plan %s: merge only shards of that plan into it (--plan with that file)", dir, p.Fingerprint)
		}
		return nil
	}
	if plan == nil {
		return nil
	}
	var b bytes.Buffer
	if err := plan.Encode(&b); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b.Bytes(), result.FileMode, atomicfile.MakeDirs())
}

// shardsNotRunHere gathers the cells the shard runs did not run because their machine
// could not provide the cells' environment (each run's campaign.json "notRunHere"),
// by execution id, so that the merged campaign reports them not run here with their
// reason rather than missing; nil when none. A run whose campaign.json cannot be read
// contributes nothing (its cells are then missing, as reportGaps says).
func shardsNotRunHere(runs []shard.Run) map[string]string {
	var out map[string]string
	for _, r := range runs {
		c, err := result.ReadCampaign(filepath.Join(r.Dir, result.CampaignFile))
		if err != nil {
			continue
		}
		for id, why := range c.NotRunHere {
			if out == nil {
				out = map[string]string{}
			}
			out[id] = why
		}
	}
	return out
}

// shardsFile is the shard plan a merged campaign keeps at its root.
const shardsFile = "shards.json"

// generateMerged reports the merged campaign id with the expected cells ids,
// recording the catalog it is reported with when the campaign has none recorded; the
// cells of notRun (execution id → reason) are reported not run here.
func (a *app) generateMerged(cmd *cobra.Command, f *reportFlags, id string, ids []string, notRun map[string]string) (*report.Generated, error) {
	o, err := f.options(a, cmd, id)
	if err != nil {
		return nil, err
	}
	o.ExpectedIDs, o.NotRunHere = ids, notRun
	if recordedCatalog(filepath.Join(f.results, id)) == nil {
		// The merge creates the campaign: record the catalog it is reported with.
		if o.CatalogSources, err = f.catalog.record(); err != nil {
			return nil, err
		}
	}
	g, err := report.Generate(o)
	if err != nil {
		return nil, reportError(err)
	}
	return g, nil
}

// reportGaps names, on stderr, the expected cells of c without a result: with a plan,
// by shard (a shard that left no run at all is said to have not reported), else one
// line each. It returns how many cells are missing.
func reportGaps(a *app, c *result.Campaign, plan *shard.Plan, runs []shard.Run) int {
	have := map[string]bool{}
	var missing []string
	for i := range c.Results {
		switch r := &c.Results[i]; {
		case !r.Synthetic, r.NotRunHere != "": // a cell not run here is reported, not missing
			have[r.ExecutionID] = true
		default:
			missing = append(missing, r.ExecutionID)
		}
	}
	if plan == nil {
		for _, id := range missing {
			fmt.Fprintf(a.stderr, "agentproof: missing: %s has no result (inconclusive)\n", id)
		}
		return len(missing)
	}
	n := 0
	for _, g := range plan.Gaps(runs, have) {
		n += len(g.Missing)
		what := "reported"
		if g.NoRun {
			what = "did not report (no shard run of it was found)"
		}
		fmt.Fprintf(a.stderr, "agentproof: shard %d/%d %s: %d of its cell(s) have no result (inconclusive): %s\n",
			g.Index, plan.Count, what, len(g.Missing), strings.Join(g.Missing, ", "))
	}
	return n
}

// campaignDirs lists the campaign directories under root (sorted): directories with a
// valid campaign id holding a campaign.json or at least one result.json.
func campaignDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usageErrorf("no results directory %s: run a campaign first ('agentproof run --all' writes one there), or name the one it wrote with --results", root)
	}
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("reading --results: %w", err)}
	}
	var ids []string
	for _, e := range entries {
		if !e.IsDir() || !result.ValidCampaignID(e.Name()) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		found := false
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (d.Name() == result.ResultFile || p == filepath.Join(dir, result.CampaignFile)) {
				found = true
				return fs.SkipAll
			}
			return nil
		})
		if found {
			ids = append(ids, e.Name())
		}
	}
	if len(ids) == 0 {
		return nil, usageErrorf("no campaign with results under %s (name one with --campaign)", root)
	}
	slices.Sort(ids)
	return ids, nil
}

// campaignExists checks that results holds the campaign directory id; when it does
// not, the usage error names the closest campaign id (catalog.Suggest) and the newest
// campaigns that do exist (at most maxListedCampaigns, by modification time).
func campaignExists(results, id string) error {
	if st, err := os.Stat(filepath.Join(results, id)); err == nil && st.IsDir() {
		return nil
	}
	known, _ := campaignDirs(results)
	if len(known) == 0 {
		return usageErrorf("no campaign %q under %s: it holds no campaign with results (check --results)", id, results)
	}
	msg := fmt.Sprintf("no campaign %q under %s", id, results)
	if s := catalog.Suggest(id, known); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	mtime := map[string]int64{}
	for _, k := range known {
		if st, err := os.Stat(filepath.Join(results, k)); err == nil {
			mtime[k] = st.ModTime().UnixNano()
		}
	}
	newest := slices.Clone(known)
	slices.SortStableFunc(newest, func(a, b string) int { return cmp.Compare(mtime[b], mtime[a]) })
	listed := newest[:min(len(newest), maxListedCampaigns)]
	msg += "; campaigns there, newest first: " + strings.Join(listed, ", ")
	if more := len(newest) - len(listed); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	return usageErrorf("%s", msg)
}

// maxListedCampaigns bounds the campaigns a "no such campaign" error lists.
const maxListedCampaigns = 5

// reportError maps invalid input (bad documents, missing directories) to usage errors.
func reportError(err error) error {
	var ve *result.ValidationError
	if errors.As(err, &ve) || errors.Is(err, fs.ErrNotExist) {
		return &UsageError{Err: err}
	}
	return err
}

// EnvStepSummary is the file GitHub Actions shows as a job's summary page: when set,
// `run` and `report` append each campaign's summary.md to it.
const EnvStepSummary = "GITHUB_STEP_SUMMARY"

// appendStepSummary appends the campaign's summary.md (as written, already guarded
// against secrets) to $GITHUB_STEP_SUMMARY when that is set. A failure is a warning on
// stderr: the job summary is a convenience, the campaign's files are the record.
func appendStepSummary(a *app, g *report.Generated) {
	path := os.Getenv(EnvStepSummary)
	if path == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(g.CampaignDir, report.SummaryFile))
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, err = f.Write(append(b, '\n'))
			err = errors.Join(err, f.Close())
		}
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: appending summary.md to $%s: %v\n", EnvStepSummary, err)
	}
}

func printGenerated(a *app, g *report.Generated) {
	c := g.Campaign
	fmt.Fprintln(a.stdout, c.Line())
	fmt.Fprintf(a.stdout, "  %s\n", filepath.Join(g.CampaignDir, report.DashboardFile))
	for _, id := range g.Unexpected {
		fmt.Fprintf(a.stderr, "warning: result for %s is not in the expected cells; left out\n", id)
	}
	for _, w := range g.Warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
}

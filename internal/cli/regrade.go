package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/attempt"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/providers"
	"github.com/agentproof/agentproof/report"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/worker"
)

// regradeOptions are the flags of `agentproof regrade`.
type regradeOptions struct {
	results    string
	campaignID string
	asJSON     bool
	agentsDir  string
	catalog    *catalogSource
}

func newRegradeCmd(a *app) *cobra.Command {
	var o regradeOptions
	cmd := &cobra.Command{
		Use:   "regrade <campaign>",
		Short: "Grade a stored campaign's evidence again with the catalog's current matchers and verifiers, into a new campaign",
		Long:  strings.TrimSpace(regradeLong),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s takes one campaign id (the campaign to grade again), got %d argument(s) (see '%s --help')", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.regrade(cmd, args[0], o)
		},
	}
	o.catalog = catalogFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&o.results, "results", defaultResults, "results `directory` holding the campaign; the regrade is written there too")
	f.StringVar(&o.campaignID, "campaign", "", "`id` of the new campaign (default <campaign>-regrade-<12 hex digits of the new definition's fingerprint>)")
	f.BoolVar(&o.asJSON, "json", false, "print the regrade as JSON (schema agentproof.regrade/v1) instead of the text lines")
	f.StringVar(&o.agentsDir, "agents-dir", "", "agent CLI cache whose pinned binaries' digests the runtime metadata check expects (default $AGENTPROOF_AGENTS_DIR, else the user cache directory's agentproof/agents; nothing is installed)")
	return cmd
}

// regradeLong is the help text of `agentproof regrade`.
const regradeLong = `
Grade the stored evidence of <campaign> (under --results) again with the catalog's
current matchers and verifiers, into a NEW campaign: the source campaign's files are
only read, never written. Use it after changing a matcher or a verifier, to see what
the new definition says of evidence you already have, without running any agent.

  agentproof run --catalog my-catalog --suite my-suite --campaign c1
  # edit a matcher or a verify step in my-catalog
  agentproof regrade c1 --catalog my-catalog

Every attempt of the source is graded again by the grade stage of 'run' (the same
matchers, compiled from the current catalog and rendered with the attempt's own
nonce) over the observation the attempt kept (grading.json). A case with a verifier
runs its current verify steps again against a fresh copy of the final workspace the
attempt kept (workspace-final.json), in the same isolation as in a run: a process tree
of its own, an explicit environment with a fresh HOME, no network unless the step
declares it, its own deadline. A verifier of a sandbox or container environment runs
again in a lease of that environment set up as 'run' sets it up (the final workspace
restored into it, its cleanup confirmed). What the matchers cannot change (a leak, a cleanup
failure, a harness fault, a missed deadline, a tampered verifier, a flow contract
violation) stays as the source attempt recorded it.

When the stored evidence lacks a fact a matcher reads, that matcher is not reached
and the cell is inconclusive, naming what is missing (never passed, never failed): a
file matcher of a case without a verifier (its files were not kept), a final
workspace over its bound (run --final-workspace-bytes), an attempt made before
agentproof kept grading.json. A verifier of a sandbox or container environment this
machine cannot provide (what 'agentproof environments probe' reports) is not run here:
its command matchers are inconclusive, with the reason.

The new campaign is <results>/<id>/ (--campaign, default
<campaign>-regrade-<12 hex digits of the new fingerprint>), with campaign.json,
summary.md, junit.xml, ctrf.json and the dashboard like a run's, and history.json at
the results root. campaign.json's "regradeOf" names the source campaign and its
fingerprint, and "fingerprint" is the definition that graded it; each result.json's
"regradeOf" names the source attempt and its verdict there. Timestamps and durations
are the source attempts' (a regrade records no time of its own: verify.json's
durations are 0), so regrading the same evidence with the same catalog gives the same
bytes. An existing campaign of that id is refused (exit 2).

The last line is "Regrade <id> of <campaign>: <passed>/<selected> passed, <failed>
failed, <inconclusive> inconclusive", with run's known failures and cells not run
here after it when there are any. --json prints instead one object: schema,
campaignId, regradeOf {campaignId, fingerprint}, fingerprint, campaignDir, selected,
passed, failed, inconclusive, notRun, and cells [{executionId, attempt, before, after,
reason}] (before: the source attempt's verdict).

Exit codes (those of 'run'): 0 all passed, 1 any failed, 3 none failed but some
inconclusive, 4 partial, 2 usage or configuration error (an unknown campaign, a bad
flag, an invalid catalog, an existing --campaign, a results directory in use), 70
internal error, 130 interrupted (SIGINT or SIGTERM: the verifier running is stopped
and its lease destroyed; the new campaign's directory is left incomplete, without
campaign.json: remove it and regrade again).`

// regradeCell is one attempt of a regrade as --json prints it.
type regradeCell struct {
	ExecutionID string          `json:"executionId"`
	Attempt     string          `json:"attempt"`
	Before      verdict.Verdict `json:"before"`
	After       verdict.Verdict `json:"after"`
	Reason      string          `json:"reason,omitempty"`
}

// regrade is the body of `agentproof regrade`.
func (a *app) regrade(cmd *cobra.Command, srcID string, o regradeOptions) error {
	if !result.ValidCampaignID(srcID) {
		return usageErrorf("campaign %q must be a letter or digit followed by at most 199 letters, digits, '.', '_' or '-'", srcID)
	}
	unlock, err := lockResults(o.results, false)
	if err != nil {
		return err
	}
	defer unlock()
	srcDir := filepath.Join(o.results, srcID)
	src, err := result.ReadCampaign(filepath.Join(srcDir, result.CampaignFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return usageErrorf("campaign %s: no %s under --results %s (is the campaign id right? 'agentproof report --results %s' writes it for a campaign that has results)", srcID, filepath.Join(srcDir, result.CampaignFile), o.results, o.results)
		}
		return &UsageError{Err: err}
	}
	cat, srcs, err := a.regradeCatalog(cmd, srcDir, o)
	if err != nil {
		return err
	}
	// The container images are pinned as run and report pin them (the image built
	// on this machine, reused), so that an unchanged suite keeps its definition.
	unpinned := pinImages(cmd.Context(), cat, sourceCells(cat, src))
	fp := regradeFingerprint(cat, src)
	id := o.campaignID
	if id == "" {
		sum := sha256.Sum256([]byte(fp))
		id = srcID[:min(len(srcID), 180)] + "-regrade-" + hex.EncodeToString(sum[:])[:12]
	}
	if !result.ValidCampaignID(id) {
		return usageErrorf("--campaign %q must be a letter or digit followed by at most 199 letters, digits, '.', '_' or '-'", id)
	}
	if _, err := os.Stat(filepath.Join(o.results, id)); err == nil {
		return usageErrorf("--campaign: campaign %s already exists under --results %s (a regrade never writes into an existing campaign; name another with --campaign)", id, o.results)
	}
	// A verifier run again runs the catalog's commands over the agent's files: this
	// process is hardened as run's is (nobody of the same user reads its memory or
	// environment) and reaps what the steps orphan.
	if err := markNonDumpable(); err != nil {
		return withExit(ExitInternal, fmt.Errorf("%w; %s", err, bugNote))
	}
	if _, err := worker.BecomeSubreaper(); err != nil {
		fmt.Fprintf(a.stderr, "agentproof: %v\n", err)
	}
	// An interrupt stops the verifier running and destroys its lease (confirmed
	// cleanup) before the regrade ends, unfinished (regradeAttempts).
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cells, err := a.regradeAttempts(ctx, cat, srcDir, srcID, id, o, unpinned)
	if err != nil {
		return err
	}
	v := readVersion()
	asFailure := src.InconclusiveAsFailure
	g, err := report.Generate(result.CampaignOptions{ResultsRoot: o.results, CampaignID: id, Catalog: cat, ExpectedIDs: src.Expected,
		Repeat: src.Repeat, InconclusiveAsFailure: &asFailure, NotRunHere: src.NotRunHere, CatalogSources: srcs,
		Provenance: &result.Provenance{Version: v.Version, Revision: v.Revision, Modified: v.Modified, Go: v.Go, OS: runtime.GOOS, Arch: runtime.GOARCH},
		RegradeOf:  &result.RegradeOf{CampaignID: srcID, Fingerprint: src.Fingerprint}})
	if err != nil {
		return withExit(ExitInternal, fmt.Errorf("writing the regrade's campaign report: %w; %s", err, bugNote))
	}
	return withExit(g.Campaign.ExitCode(), printRegrade(a, g, srcID, cells, o.asJSON))
}

// regradeCatalog is the catalog to grade with: --catalog/--with-default when given,
// else the catalog the source campaign recorded it was run with (its current
// content), else the embedded default; and its sources as campaign.json records them.
func (a *app) regradeCatalog(cmd *cobra.Command, srcDir string, o regradeOptions) (*catalog.Catalog, *result.CatalogSources, error) {
	src := *o.catalog
	explicit := cmd.Flags().Changed("catalog") || cmd.Flags().Changed("with-default")
	if rec := recordedCatalog(srcDir); rec != nil && !explicit && !rec.IsDefault() {
		src = sourceOf(rec)
		fmt.Fprintf(a.stderr, "agentproof: grading with the catalog the campaign was run with, as it is now (%s)\n", src.describe())
	}
	c, err := loadCatalog(src)
	if err != nil {
		return nil, nil, err
	}
	rec, err := src.record()
	if err != nil {
		return nil, nil, &UsageError{Err: err}
	}
	return c, rec, nil
}

// regradeFingerprint is the fingerprint of the definitions that grade the source's
// suites (campaign.json's rule: "<suite>:<definition hash>" sorted, joined by "|"; a
// suite the catalog lacks keeps its source hash).
func regradeFingerprint(cat *catalog.Catalog, src *result.Campaign) string {
	var prints []string
	for _, s := range src.Suites {
		h := s.SuiteDefinitionHash
		if cs := cat.Suite(s.SuiteID); cs != nil {
			h = cs.Fingerprint
		}
		prints = append(prints, s.SuiteID+":"+h)
	}
	slices.Sort(prints)
	return strings.Join(prints, "|")
}

// regradeAttempts grades every valid stored attempt of the source again into the new
// campaign id, and returns what each became. When ctx ends (an interrupt) it stops:
// the attempt being graded is not written, and the error (exit 130) says the new
// campaign's directory is incomplete.
func (a *app) regradeAttempts(ctx context.Context, cat *catalog.Catalog, srcDir, srcID, id string, o regradeOptions, unpinned map[string]string) ([]regradeCell, error) {
	cands, err := result.LoadCandidates(srcDir)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locating the agentproof executable: %w", err)
	}
	x := &attempt.LocalExecutor{ResultsRoot: o.results, Executable: exe, CLIs: locatePinned(cat, o.agentsDir)}
	defer x.Close()
	if x.LeaseNotRunHere, err = leasedVerifiers(ctx, cat, cands, unpinned); err != nil {
		return nil, err
	}
	var out []regradeCell
	for _, c := range cands {
		if !c.Valid() {
			fmt.Fprintf(a.stderr, "agentproof: %s/%s: not graded again: its result.json is not valid (%s)\n", srcID, c.Dir, strings.Join(c.Problems, "; "))
			continue
		}
		dir := filepath.Join(id, filepath.FromSlash(c.Dir))
		ev := campaign.NewEvidence(filepath.Join(o.results, dir))
		var rg attempt.Regraded
		cell := cat.Cell(c.Result.ExecutionID)
		if cell == nil {
			rg.Judgement = verdict.Judgement{Verdict: verdict.Inconclusive, FailureClass: verdict.PermanentInfrastructure,
				Reason: "regrade: the catalog has no cell " + c.Result.ExecutionID}
		} else {
			rg = x.Regrade(ctx, cell, id, dir, filepath.Join(srcDir, filepath.FromSlash(c.Dir)), ev)
		}
		if ctx.Err() != nil {
			return nil, withExit(ExitInterrupted, fmt.Errorf("regrade %s interrupted: %s is incomplete (no campaign.json; the verifier running was stopped and its lease destroyed): remove it and regrade again",
				id, filepath.Join(o.results, id)))
		}
		res := regradedResult(c, cell, rg, srcID, id, ev)
		if err := campaign.WriteRegraded(res, ev); err != nil {
			return nil, withExit(ExitInternal, fmt.Errorf("writing a regraded result: %w; %s", err, bugNote))
		}
		out = append(out, regradeCell{ExecutionID: res.ExecutionID, Attempt: c.Dir, Before: c.Result.Verdict, After: res.Verdict, Reason: res.Error})
	}
	return out, nil
}

// sourceCells is the catalog's cells of the suites the source campaign ran.
func sourceCells(cat *catalog.Catalog, src *result.Campaign) []*catalog.Cell {
	var out []*catalog.Cell
	for _, c := range cat.Cells {
		if slices.ContainsFunc(src.Suites, func(s result.SuiteSummary) bool { return s.SuiteID == c.Suite.ID }) {
			out = append(out, c)
		}
	}
	return out
}

// leasedVerifiers probes, before any verifier runs again, the leased providers
// (sandbox, container) of the cells to regrade whose current case has a verifier,
// as run probes them: it returns each cell this machine cannot provide the
// environment of, with the reason (the probe's, or why its image could not be
// pinned: unpinned), so that its verifier is reported not run here.
func leasedVerifiers(ctx context.Context, cat *catalog.Catalog, cands []result.Candidate, unpinned map[string]string) (map[string]string, error) {
	var cells []*catalog.Cell
	for _, c := range cands {
		cell := cat.Cell(c.Result.ExecutionID)
		if c.Valid() && cell != nil && cell.Case.Verify != nil && environment.ProviderName(cell.Environment.Provider).Leased() && !slices.Contains(cells, cell) {
			cells = append(cells, cell)
		}
	}
	if len(cells) == 0 {
		return nil, nil
	}
	return notRunHere(ctx, cells, catalog.Selector{}, providers.All(), unpinned)
}

// regradedResult is the source attempt's result with the regrade's verdict, matcher
// outcomes, evidence and mark; its identity, times and facts are the source's.
func regradedResult(c result.Candidate, cell *catalog.Cell, rg attempt.Regraded, srcID, id string, ev *campaign.Evidence) *result.Result {
	res := *c.Result
	res.CampaignID = id
	res.Verdict, res.FailureClass, res.Error = rg.Judgement.Verdict, rg.Judgement.FailureClass, ""
	if rg.Judgement.Verdict != verdict.Passed {
		res.Error = rg.Judgement.Reason
	}
	res.MatcherResults = campaign.MatcherResults(rg.Matchers)
	res.Evidence = ev.Files()
	res.RegradeOf = &result.RegradeOf{CampaignID: srcID, Fingerprint: c.Result.SuiteDefinitionHash, Attempt: c.Dir, Verdict: c.Result.Verdict}
	if cell != nil {
		res.SuiteDefinitionHash, res.ExpectedVerdict, res.KnownFailure = cell.Suite.Fingerprint, cell.ExpectedVerdict, nil
		if k := cell.KnownFailure; k != nil {
			res.KnownFailure = &result.KnownFailure{Reason: k.Reason, Expected: k.Expected, Since: k.Since, Source: k.Source}
		}
	}
	return &res
}

// locatePinned is the pinned install of every agent CLI the catalog's profiles run,
// found in the agents cache (nothing is installed: a CLI missing there is expected
// by its pinned version only).
func locatePinned(cat *catalog.Catalog, dir string) map[string]attempt.PinnedCLI {
	dir, _ = agentsCacheDir(dir) // none: every CLI is located as not installed
	out := map[string]attempt.PinnedCLI{}
	for _, cell := range cat.Cells {
		name, ok := cell.Profile.Driver.Package()
		if _, done := out[name]; !ok || done {
			continue
		}
		c, ok := clis.Lookup(name)
		if !ok {
			continue
		}
		out[name] = attempt.PinnedCLI{Version: c.Version}
		if in, err := clis.Locate(dir, c, clis.HostPlatform()); err == nil && dir != "" {
			out[name] = pinOf(in)
		}
	}
	return out
}

// printRegrade prints the regrade's text lines, or its JSON document.
func printRegrade(a *app, g *report.Generated, srcID string, cells []regradeCell, asJSON bool) error {
	c := g.Campaign
	if !asJSON {
		for _, w := range g.Warnings {
			fmt.Fprintf(a.stderr, "agentproof: %s\n", w)
		}
		fmt.Fprintf(a.stdout, "  %s\n", filepath.Join(g.CampaignDir, report.DashboardFile))
		// run's campaign line (result.Counts.Line: known failures, cells not run here),
		// saying which campaign it graded again.
		counts := strings.TrimPrefix(c.Counts.Line(c.CampaignID), "Campaign "+c.CampaignID+":")
		fmt.Fprintf(a.stdout, "Regrade %s of %s:%s\n", c.CampaignID, srcID, counts)
		return nil
	}
	if cells == nil {
		cells = []regradeCell{}
	}
	doc := struct {
		Schema       string            `json:"schema"`
		CampaignID   string            `json:"campaignId"`
		RegradeOf    *result.RegradeOf `json:"regradeOf"`
		Fingerprint  string            `json:"fingerprint"`
		CampaignDir  string            `json:"campaignDir"`
		Selected     int               `json:"selected"`
		Passed       int               `json:"passed"`
		Failed       int               `json:"failed"`
		Inconclusive int               `json:"inconclusive"`
		NotRun       int               `json:"notRun"`
		Cells        []regradeCell     `json:"cells"`
	}{"agentproof.regrade/v1", c.CampaignID, c.RegradeOf, c.Fingerprint, g.CampaignDir, c.Selected, c.Passed, c.Failed, c.Inconclusive, c.NotRun, cells}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

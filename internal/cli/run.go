package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/attempt"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/report"
	"github.com/agentproof/agentproof/worker"
)

// runOptions are the flags of `agentproof run`.
type runOptions struct {
	sel         catalog.Selector
	results     string
	campaignID  string
	maxParallel int
	maxRetries  int
	seed        int64
	progress    string
	canary      bool
	live        bool
	agentsDir   string
}

func newRunCmd(a *app) *cobra.Command {
	var o runOptions
	var dir *catalogSource
	cmd := &cobra.Command{
		Use:   "run [selectors]",
		Short: "Run the selected cells as a campaign: isolated attempts, graded, with results",
		Long: strings.TrimSpace(`
Run the selected cells of the catalog as a campaign. Every attempt gets a private
temp root, its own 'agentproof serve' child on a loopback port with its own SQLite
file, fixtures created through the board API (company, secrets, local environment,
agent, task), the case's flow played as the human through the same API, matchers
evaluated against what the API and the workspace show, a teardown, a leak scan and
a verdict: passed, failed or inconclusive.

Selectors are those of 'agentproof list' (--all, --id, --suite, --group, --profile,
--environment, --case); an empty or unknown selection exits 2 before anything starts.
A cell needing a credential reads its value from the environment variable of the
same name (for example OPENAI_API_KEY); the value reaches the instance only as a
secret.

Every attempt also stores a fresh random canary secret (APF_ATTEMPT_CANARY) and hands
it to its agent. After each attempt the closed instance home and the workspace are
scanned for every secret value (credentials, the canary, the instance's own board
token, master key and run-token key); every file written into the results passes one
guard: only allowlisted kinds (.json .jsonl .log .txt .md .png, and .xml/.html agentproof
renders itself), scanned, sanitised, scanned again. A secret found anywhere fails the
cell with class secret_leak, whatever else happened; the report names the file, never
the value. Each attempt lists its files, sizes, SHA-256 and leaks in
evidence-manifest.json.

--canary also injects fake secrets of every known shape (sk-ant-..., sk-...,
sk-proj-..., OPENROUTER_API_KEY=..., Bearer ..., a JWT, a PEM private key block) as
credentials APF_CANARY_*: they reach each agent only through secret references,
never argv. Use it to prove the leak detection end to end:

  agentproof run --suite grader-calibration --canary

The leaky agent (and, with --canary, the wrong agent) leak them (a comment, a
workspace file, stdout, an error message, a run result); those cells must end failed
with secret_leak, which is what the suite expects, so the campaign passes. Then no
canary value may appear anywhere under the results directory.

Before it starts, run removes the attempt temp roots (agentproof-attempt-* under the
temp directory; they hold key files) that a killed run left behind: roots whose
owner record no live process holds locked. It says how many on stderr. run and its
serve children are child subreapers: orphaned descendants are re-parented to them
and reaped, also when run is PID 1 of a PID namespace.

A campaign directory that already holds results is refused (exit 2). The results
directory is locked (flock on <results>/.agentproof-results.lock) while the campaign
writes; a second run, report or report merge into the same results directory does not
wait: it exits 2 at once, naming the directory (use another --results, or wait for the
first to finish). The default campaign id ends in 8 random hex digits, so two runs
started at the same moment never share a campaign directory.
Results: <results>/<campaign>/<suite>/<profile>/<environment>/<case>/attempt-<n>/
(result.json, evidence-manifest.json, snapshots/, workspace-manifest.json, logs/),
then campaign.json, summary.md, junit.xml and dashboard.html in <results>/<campaign>/
and history.json in <results>/. The last line is
"Campaign <id>: <passed>/<selected> passed, <failed> failed, <inconclusive> inconclusive".

Cells of real agent CLIs (drivers exec:codex, exec:opencode, exec:claude) run the
pinned CLI's native binary from the agents cache (--agents-dir, default
$AGENTPROOF_AGENTS_DIR or the user cache directory's agentproof/agents). A pinned
CLI missing from the cache is installed with npm before any cell starts, with
progress on stderr; without npm the run stops with exit 2 naming
'agentproof agents install'. By default each attempt of such a cell talks to its own
scripted model on 127.0.0.1 (offline, no credential); --live uses the profile's live
provider instead, with the profile's credential read from the environment and
stored as a secret.

Ctrl-C or SIGTERM stops scheduling, stops running agents and servers, tears down,
writes what finished (the campaign is partial: the last line adds ", <n> not run
(partial)" and the campaign report covers only the cells that finished) and exits 130.
Exit codes: 0 all passed, 1 any failed, 3 none failed but some inconclusive,
2 usage or configuration error, 70 internal error (a bug in agentproof, or a result
or the campaign report could not be written), 130 interrupted.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd, *dir, o)
		},
	}
	dir = catalogFlag(cmd)
	selectorFlags(cmd, &o.sel)
	f := cmd.Flags()
	f.StringVar(&o.results, "results", "agentproof-results", "results directory")
	f.StringVar(&o.campaignID, "campaign", "", "campaign id (default local-<UTC timestamp>-<8 random hex digits>; sanitised to [A-Za-z0-9_.-])")
	f.IntVar(&o.maxParallel, "max-parallel", 0, "attempts running at once (default: the number of CPUs)")
	f.IntVar(&o.maxRetries, "max-automatic-retries", 1, "automatic retries after a transient or provider-variance failure: 0 or 1")
	f.Int64Var(&o.seed, "seed", 0, "seed for deterministic nonces (default: random nonces)")
	f.StringVar(&o.progress, "progress", "auto", "progress display: auto, tty, plain or none")
	f.BoolVar(&o.canary, "canary", false, "inject fake secrets of every known shape as credentials (APF_CANARY_*) to prove leaks are caught")
	f.BoolVar(&o.live, "live", false, "run agent CLI cells against their profile's live provider instead of the scripted model (needs the profile's credential)")
	f.StringVar(&o.agentsDir, "agents-dir", "", "agent CLI cache (default $AGENTPROOF_AGENTS_DIR, else the user cache directory's agentproof/agents)")
	return cmd
}

// run is the body of `agentproof run`.
func (a *app) run(cmd *cobra.Command, dir catalogSource, o runOptions) error {
	mode, err := campaign.ParseProgressMode(o.progress)
	if err != nil {
		return &UsageError{Err: err}
	}
	c, err := loadCatalog(dir)
	if err != nil {
		return err
	}
	opts := campaign.Options{CampaignID: o.campaignID, MaxParallel: o.maxParallel, MaxAutomaticRetries: o.maxRetries}
	if cmd.Flags().Changed("seed") {
		seed := o.seed
		opts.Seed = &seed
	}
	if cmd.Flags().Changed("max-parallel") && o.maxParallel == 0 {
		return usageErrorf("--max-parallel must be a positive integer, not 0")
	}
	plan, err := campaign.NewPlan(c, trimSelector(o.sel), opts)
	if err != nil {
		var se *catalog.SelectionError
		var oe *campaign.OptionsError
		if errors.As(err, &se) || errors.As(err, &oe) {
			return &UsageError{Err: err}
		}
		return fmt.Errorf("planning the campaign: %w", err)
	}
	// Before anything starts or is written: the agent CLIs the cells need.
	binaries, err := a.ensureCLIs(cmd, plan.Cells, o)
	if err != nil {
		return err
	}
	root, err := filepath.Abs(o.results)
	if err != nil {
		return usageErrorf("--results: %v", err)
	}
	unlock, err := lockResults(root, true) // held until the campaign's files are written
	if err != nil {
		return err
	}
	defer unlock()
	campaignDir := filepath.Join(root, plan.CampaignID)
	if entries, err := os.ReadDir(campaignDir); err == nil && len(entries) > 0 {
		return usageErrorf("campaign directory %s already holds results; choose another --campaign or remove it", campaignDir)
	}
	if err := os.MkdirAll(campaignDir, 0o755); err != nil {
		return usageErrorf("--results: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating the agentproof executable: %w", err)
	}
	becomeSubreaper(a)
	sweepStaleRoots(a)
	// Said first, so that the campaign line stays the last line of the output.
	fmt.Fprintf(a.stderr, "Results: %s\n", campaignDir)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	exec := &attempt.LocalExecutor{ResultsRoot: root, Executable: exe, Credential: os.LookupEnv, CLIs: binaries, Live: o.live}
	// The campaign files are guarded with every credential value the cells load and,
	// with --canary, the canaries (each attempt guards its own files with its own set).
	secrets := redact.NewSet()
	for _, cell := range plan.Cells {
		for _, name := range cell.RequiredCredentials {
			if v, ok := os.LookupEnv(name); ok {
				secrets = secrets.WithCredentials(v)
			}
		}
	}
	if o.canary {
		exec.Canaries = campaign.Canaries(plan.CampaignID)
		secrets = secrets.With(campaign.CanaryValues(plan.CampaignID)...)
	}
	display := campaign.NewDisplay(mode, a.stdout)
	defer display.Close()
	// The scheduler writes each attempt's result.json as it ends; the display only
	// renders progress.
	sched := &campaign.Scheduler{Executor: exec, ResultsRoot: root, Observe: display.Observe}
	sum := sched.Run(ctx, plan)
	interrupted := ctx.Err() != nil
	stop()

	// The campaign's cells: the selection, or, when it did not finish, the cells that
	// did. campaign.json is then partial by spec §7.4's own rule (a suite lacks cells),
	// and `agentproof report` regenerates it unchanged from its expected list.
	ids := make([]string, 0, len(plan.Cells))
	for _, cr := range sum.Cells {
		if !sum.Partial || cr.Status == campaign.CellFinished {
			ids = append(ids, cr.Cell.ID)
		}
	}
	g, genErr := report.Generate(report.Options{ResultsRoot: root, CampaignID: plan.CampaignID, Catalog: c, ExpectedIDs: ids, Secrets: secrets})
	for _, w := range sum.WriteErrors {
		fmt.Fprintf(a.stderr, "agentproof: writing a result: %s\n", w)
	}
	if genErr != nil {
		fmt.Fprintf(a.stderr, "agentproof: generating the campaign report: %v\n", genErr)
	} else {
		for _, w := range g.Warnings {
			fmt.Fprintf(a.stderr, "agentproof: %s\n", w)
		}
	}
	switch {
	case interrupted:
		return withExit(ExitInterrupted, nil)
	case genErr != nil || len(sum.WriteErrors) > 0:
		return withExit(ExitInternal, errors.New("the campaign's results are incomplete: agentproof could not write them (see above); "+bugNote))
	}
	return withExit(g.Campaign.ExitCode(), nil)
}

// sweepStaleRoots removes the attempt temp roots (they hold key files) that a killed
// agentproof run left under the temp directory and no live process owns
// (worker.SweepStaleRoots), and says so in one stderr line.
func sweepStaleRoots(a *app) {
	n, err := worker.SweepStaleRoots("")
	if n > 0 {
		fmt.Fprintf(a.stderr, "agentproof: removed %d stale attempt temp root(s) under %s that no live run owns\n", n, os.TempDir())
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "agentproof: sweeping stale attempt temp roots: %v\n", err)
	}
}

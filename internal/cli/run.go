package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/attempt"
	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/providers"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/report"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/tracing"
	"github.com/agentproof/agentproof/verdict"
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
	repeat      int
	resume      string
	rerunFailed string
	// newDefinition lets --resume/--rerun-failed start a new definition of a suite
	// that changed since the campaign started.
	newDefinition bool
	instances     attempt.InstanceMode
	stateDir      string
	shards        shardFlags
	otlp          string
	// historyKeep is --history-keep: campaigns history.json keeps per suite
	// definition (0: every one).
	historyKeep int
	// finalBytes is --final-workspace-bytes: the bound of the final workspace a case
	// with a verifier keeps as evidence (0: the default).
	finalBytes int64
}

func newRunCmd(a *app) *cobra.Command {
	var o runOptions
	var dir *catalogSource
	cmd := &cobra.Command{
		Use:   "run [selectors]",
		Short: "Run the selected cells as a campaign: isolated attempts, graded, with results",
		Long:  strings.TrimSpace(runLong),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd, *dir, o)
		},
	}
	dir = catalogFlag(cmd)
	selectorFlags(cmd, &o.sel)
	f := cmd.Flags()
	f.StringVar(&o.results, "results", defaultResults, "results directory")
	f.StringVar(&o.campaignID, "campaign", "", "campaign id (default local-<UTC timestamp>-<8 random hex digits>; sanitised to [A-Za-z0-9_.-])")
	f.IntVar(&o.maxParallel, "max-parallel", 0, "attempts running at once (default: the number of CPUs)")
	f.IntVar(&o.maxRetries, "max-automatic-retries", 1, "automatic retries after a transient or provider-variance failure: 0 or 1")
	f.Int64Var(&o.seed, "seed", 0, "seed for deterministic nonces (default: random nonces)")
	f.StringVar(&o.progress, "progress", "auto", "progress display: auto, tty, plain or none")
	f.BoolVar(&o.canary, "canary", false, "inject fake secrets of every known shape as credentials (APF_CANARY_*) to prove leaks are caught")
	f.BoolVar(&o.live, "live", false, "run agent CLI cells against their profile's live provider instead of the scripted model (needs the profile's credential)")
	f.IntVar(&o.repeat, "repeat", 1, "run every selected cell N times, each repetition an independent attempt (pass rate, pass^k, pass@k, flaky in the report)")
	f.StringVar(&o.resume, "resume", "", "continue the campaign `id` under --results: run its selected cells (and repetitions) that have no result, keep the rest")
	f.StringVar(&o.rerunFailed, "rerun-failed", "", "run the cells of the campaign `id` under --results that did not pass (known failures aside) again, as new attempts of the same campaign")
	f.BoolVar(&o.newDefinition, "new-definition", false, "with --resume or --rerun-failed: a suite whose definition changed since the campaign started starts its new definition in the campaign (every cell of it runs again) instead of being refused")
	instance := f.VarPF(instanceFlag{&o.instances}, "instance", "", "where each attempt's control-plane instance runs: in-process (inside this process, except cells whose flow restarts or kills a process, hostile and sandbox cells, which get a serve child) or child (an agentproof serve child process for every attempt)")
	instance.DefValue = string(attempt.InstanceInProcess)
	o.instances = attempt.InstanceInProcess
	f.StringVar(&o.agentsDir, "agents-dir", "", "agent CLI cache (default $AGENTPROOF_AGENTS_DIR, else the user cache directory's agentproof/agents)")
	o.shards.add(f)
	historyKeepFlag(f, &o.historyKeep)
	f.StringVar(&o.otlp, "otlp-endpoint", "", "export every attempt as an OpenTelemetry trace (GenAI semantic conventions) to this OTLP/HTTP `URL`, e.g. http://127.0.0.1:4318 (default: no export)")
	f.StringVar(&o.stateDir, "state-dir", "", "where each attempt's instance home is made: its database, keys and run records and its agents' HOMEs (default /dev/shm when it is a tmpfs with at least 512 MiB free, so that none of it reaches a disk; else inside the attempt's temp root)")
	f.Int64Var(&o.finalBytes, "final-workspace-bytes", attempt.DefaultFinalWorkspaceBytes, "bound, in bytes, of the file content of the final workspace a case with a verifier keeps as evidence for 'agentproof regrade' (a case's verify finalWorkspaceBytes wins; over it: kept truncated, and a regrade of its verifier is inconclusive naming the bound)")
	wantFlag(cmd, "max-parallel", "a whole number ≥ 1")
	wantFlag(cmd, "final-workspace-bytes", "a whole number of bytes ≥ 1")
	wantFlag(cmd, "max-automatic-retries", "0 or 1")
	wantFlag(cmd, "repeat", fmt.Sprintf("a whole number from 1 to %d", campaign.MaxRepeat))
	wantFlag(cmd, "seed", "a whole number (64-bit)")
	return cmd
}

// runLong is the help text of `agentproof run`.
const runLong = `
Run the selected cells of the catalog as a campaign. Every attempt gets a private
temp root, its own control-plane instance on a loopback port with its own SQLite
file and keys, fixtures created through the board API (company, secrets, local environment,
agent, task), the case's flow played as the human through the same API, matchers
evaluated against what the API and the workspace show, a teardown, a leak scan and
a verdict: passed, failed or inconclusive.

Selectors are those of 'agentproof list' (--all, --id, --suite, --group, --profile,
--environment, --case); an empty or unknown selection exits 2 before anything starts.
A cell needing a credential reads its value from the environment variable of the
same name (for example OPENAI_API_KEY); the value reaches the instance only as a
secret. Before anything starts, run takes every credential the catalog declares out
of its own environment (it re-executes itself without them, the values handed over
a memory file) and makes itself non-dumpable, so that an agent of the same user can
read neither its /proc/<pid>/environ nor its memory; an agent gets only what its
profile declares (docs/secrets.md "Threat model": an agent running as root can read
any process; only the sandbox environment contains it).

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

Each attempt's instance home (its database, keys and run records, and its agents'
HOMEs) is made in a root of its own on a memory file system, so that none of it
reaches a disk: /dev/shm when it is a tmpfs with at least 512 MiB free; --state-dir
chooses another directory. The workspace stays in the attempt's temp root, and so does
the home of an acp:codex cell when the state directory is under /dev (its command
sandbox mounts a fresh /dev; docs/processes.md).

Before it starts, run removes the attempt temp roots (agentproof-attempt-* under the
temp directory and the state directory; they hold key files) that a killed run left
behind: roots whose owner record no live process holds locked. It says how many on
stderr. run and its serve children are child subreapers: orphaned descendants are
re-parented to them and reaped, also when run is PID 1 of a PID namespace.

--instance says where each attempt's instance runs (docs/ARCHITECTURE.md
"Control-plane instances"). in-process (the default) runs it inside run: its own
home, SQLite file, listener, keys and heartbeat runner, nothing shared with another
attempt's, one process start less per cell; cells whose flow restarts or kills the
server or the agent (server_crash_retry, crash_retry, lost_acknowledgement,
instruction_persistence, a restart before an answer), hostile and sandbox cells and
cases with serverProcess: true still get an 'agentproof serve' child.
--instance child gives every attempt an 'agentproof serve' child process (its own
address space and process group). flow.log says which.

A campaign directory that already holds results is refused (exit 2). The results
directory is locked (flock on <results>/.agentproof-results.lock) while the campaign
writes; a second run, report or report merge into the same results directory does not
wait: it exits 2 at once, naming the directory (use another --results, or wait for the
first to finish). The default campaign id ends in 8 random hex digits, so two runs
started at the same moment never share a campaign directory.
Results: <results>/<campaign>/<suite>/<profile>/<environment>/<case>/attempt-<n>/
(result.json, evidence-manifest.json, snapshots/, workspace-manifest.json, logs/),
then campaign.json, summary.md, junit.xml, ctrf.json and dashboard.html in <results>/<campaign>/
and history.json in <results>/ (summary.md is also appended to $GITHUB_STEP_SUMMARY
when that is set). The last line is
"Campaign <id>: <passed>/<selected> passed, <failed> failed, <inconclusive> inconclusive",
followed by ", <n> known failure(s)", ", <n> not run here (partial)" when there are any.

Cells of real agent CLIs (drivers exec:<cli> such as exec:codex and exec:opencode,
acp:<cli> such as acp:codex over the Agent Client Protocol, rpc:pi, app:codex and app:claude; 'agentproof
agents --help' lists every pinned CLI) run the pinned CLI's native binary from the
agents cache (--agents-dir, default $AGENTPROOF_AGENTS_DIR or the user cache
directory's agentproof/agents). A pinned CLI missing from the cache is installed
with npm before any cell starts, with progress on stderr; without npm the run stops
with exit 2 naming 'agentproof agents install'. By default each attempt of such a
cell talks to its own scripted model on 127.0.0.1 (offline, no credential); --live
uses the profile's live provider instead, with the profile's credential read from
the environment and stored as a secret; a --live campaign whose cells need a
credential that is not set is refused before anything starts (exit 2, naming the
variable and the cells).

--repeat N runs every selected cell N times (repetitions 1..N, each its own series of
fresh isolated attempts, kept under <case>/repeat-<k>/attempt-<n>/). A cell passes only
when every repetition passed (pass^k); it fails when any repetition failed, else it is
inconclusive when any was; it is flaky when its repetitions disagree. Flaky has no
exit code of its own: a flaky cell with a failed repetition exits 1, one whose other
repetitions passed and one was inconclusive exits 3. The last line then counts cells
and ends with " (N repetitions each, <k> flaky)"; summary.md, campaign.json and the
dashboard show each cell's pass rate, pass^k, pass@k and its repetitions.

--resume <campaign> continues a campaign that was interrupted or killed: it reads the
selection, repetitions and seed from <results>/<campaign>/plan.json (written before
the first attempt), keeps every stored result, and runs the cells (repetitions) that
have none, including those killed mid-attempt (their evidence stays; the new attempt
gets the next attempt number). --rerun-failed <campaign> runs the cells whose result
does not count as passed again, as new attempts (a known failure, which the campaign
does not count as failed, is left as it is); the report then chooses the newest
attempt of each cell and campaign.json lists both under "candidates". Neither takes
selectors or --campaign; both refuse (exit 2) a campaign without plan.json, one whose
plan.json was edited, or one whose suites changed definition since it started — a
definition covers what grades (matchers, prompts, flows, reference scripts, drivers
…), and the refusal names the first field that changed. With --new-definition such a
suite starts its new definition in the campaign instead (a boundary recorded in
plan.json): every cell of it runs again and no result of the old definition is kept.

--shard i/N runs shard i of a shard plan (docs/sharding.md): the plan file of
'agentproof list --shards N' given with --plan (refused, exit 2, when a suite's
definition or a cell differs from the catalog's, naming them, or when N is not the
plan's shard count), or the plan 'list --shards N' makes of the selectors and
--weights. The same plan always gives the same shards. --fingerprint <hex> (the
plan's fingerprint, or its first 12 or more digits, as 'list --shards N' prints it)
refuses (exit 2) a shard whose plan has another: without --plan, a machine with
another catalog, selection or history would otherwise run a shard of another plan.
plan.json records the shard and the plan's fingerprint, and 'agentproof report
merge' refuses shards of two different plans.

--otlp-endpoint URL exports every attempt, once the report is written, as an
OpenTelemetry trace over OTLP/HTTP with the GenAI semantic conventions
(docs/tracing.md): the attempt, an invoke_agent span per run of the agent, a chat span
per model call with its token usage and an execute_tool span per tool call, from the
attempt's ATIF trajectories. Off by default; a failed export is a warning.

Ctrl-C or SIGTERM stops scheduling, stops running agents and servers, tears down,
writes what finished (the campaign was interrupted: the last line adds ", <n> not
finished (interrupted: <s> stopped mid-attempt, <m> never started)", the line before
it is the 'agentproof run --resume' command that continues it, and the campaign report
covers only the cells that finished and says so) and exits 130.
A cell whose environment this machine cannot provide (the sandbox without bubblewrap
or, without root, without unprivileged user namespaces or with a declared limit a normal
user's sandbox cannot enforce here; the container without root or podman) is not run
here, never run without a limit: the campaign runs everything else, says so on a
progress line ("not run here <cell>: <reason>"), in its last line (", N not run here
(partial)"), in summary.md, junit.xml (skipped, with the reason) and the dashboard, and
is partial. A selection that names such an environment (--environment) or cell (--id)
exits 2 before anything starts instead. 'agentproof environments probe' says what this
machine gives and how to get the rest.

Exit codes: 0 all passed, 1 any failed, 3 none failed but some inconclusive, 4 partial
(every cell that ran passed, but some selected cells were not run here: not a
failure, never a pass of those cells), 2 usage or configuration error, 70 internal
error (a bug in agentproof, or a result or the campaign report could not be written),
130 interrupted.`

// defaultResults is the default --results directory.
const defaultResults = "agentproof-results"

// run is the body of `agentproof run`: it starts the campaign (startRun), plans it,
// opens its directory, runs its attempts and writes its report (finishCampaign).
func (a *app) run(cmd *cobra.Command, dir catalogSource, o runOptions) error {
	mode, err := campaign.ParseProgressMode(o.progress)
	if err != nil {
		return &UsageError{Err: err}
	}
	st, err := a.startRun(cmd, dir, &o)
	if err != nil {
		return err
	}
	plan, binaries, unlock, err := a.planRun(cmd, st.catalog, st.root, o, st.opts)
	if err != nil {
		return err
	}
	defer unlock()
	if st.digest != nil && !launchesSelf(plan.Cells) {
		st.digest.Cancel() // no attempt needs it: its core is theirs
	}
	if plan.Resumed() && len(plan.Units) == 0 {
		nothingToRun(a, o, plan, filepath.Join(st.root, plan.CampaignID))
		return nil
	}
	campaignDir, err := createCampaignDir(st.dir, st.root, plan)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating the agentproof executable: %w", err)
	}
	sweepStaleRoots(a, "")
	if o.stateDir != "" && o.stateDir != os.TempDir() {
		sweepStaleRoots(a, o.stateDir)
	}
	// Said first, so that the campaign line stays the last line of the output.
	fmt.Fprintf(a.stderr, "Results: %s\n", campaignDir)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	exec := &attempt.LocalExecutor{ResultsRoot: st.root, Executable: exe, Credential: a.creds.lookup, CLIs: binaries, Live: o.live,
		InProcess: inProcessServe(exe), Instances: o.instances, StateDir: o.stateDir, ExecutableDigest: st.digest,
		FinalWorkspaceBytes: o.finalBytes}
	defer func() {
		if err := exec.Close(); err != nil {
			fmt.Fprintf(a.stderr, "agentproof: removing the attempts' shared files: %v\n", err)
		}
	}()
	if o.canary {
		exec.Canaries = campaign.Canaries(plan.CampaignID)
	}
	// Should this process be killed, the sentry sweeps what its attempts' agents left.
	if exec.Sentry, err = worker.StartSentry(exe); err != nil {
		fmt.Fprintf(a.stderr, "agentproof: warning: %v: a killed run may leave its agents' descendants behind\n", err)
	}
	defer exec.Sentry.Close()
	exec.Secrets = campaignSecrets(st.catalog, a.creds, exec.Canaries)
	display := campaign.NewDisplay(mode, a.stdout)
	defer display.Close()
	// The scheduler writes each attempt's result.json as it ends; the display only
	// renders progress.
	// The finished event is held back until the report is written, so that the display
	// can end with what the report found (Summary.Notes) just before the campaign line.
	var finished *campaign.Event
	observe := func(e campaign.Event) {
		if e.Kind == campaign.EventCampaignFinished {
			finished = &e
			return
		}
		display.Observe(e)
	}
	sched := &campaign.Scheduler{Executor: exec, ResultsRoot: st.root, Observe: observe}
	sum := sched.Run(ctx, plan)
	interrupted := ctx.Err() != nil
	stop()
	// The report is guarded with every credential and canary of the campaign; each
	// attempt guarded its own files with those and every instance's keys.
	return a.finishCampaign(campaignEnd{catalog: st.catalog, root: st.root, plan: plan, sum: sum, secrets: exec.Secrets, interrupted: interrupted,
		finished: finished, display: display}, o)
}

// runStart is what startRun returns: the catalog, the campaign options and the
// absolute results root, and the digest of the binary being made (nil when it could
// not be located).
type runStart struct {
	dir     catalogSource
	catalog *catalog.Catalog
	opts    campaign.Options
	root    string
	digest  *attempt.Digest
}

// startRun does what `run` does before it plans: it makes this process non-dumpable,
// takes the declared credentials out of its environment (takeCredentials: possibly
// by re-executing it), becomes the attempts' subreaper and starts the digest of its
// binary while the catalog loads, and checks the flags (o.stateDir becomes the state
// directory to use). Errors: a usage error (exit 2), or the process could not be
// hardened (exit 70).
func (a *app) startRun(cmd *cobra.Command, dir catalogSource, o *runOptions) (runStart, error) {
	var st runStart
	if err := markNonDumpable(); err != nil {
		return st, withExit(ExitInternal, fmt.Errorf("%w; %s", err, bugNote))
	}
	handed, ok, err := readHandedCredentials()
	if err != nil {
		return st, err
	}
	a.creds, a.handed = handed, ok
	if o.stateDir, err = stateDir(cmd, o.stateDir); err != nil {
		return st, err
	}
	// Becoming the subreaper of the attempts' orphans starts a child to check that the
	// Go runtime tells its own children apart (worker.BecomeSubreaper): done while the
	// catalog loads, and waited for before planning, which may start processes.
	subreaper := make(chan error, 1)
	go func() {
		_, err := worker.BecomeSubreaper()
		subreaper <- err
	}()
	waitSubreaper := sync.OnceValue(func() error { return <-subreaper })
	// The binary's digest (every fixture and built-in agent is this binary) is made
	// while the catalog loads and the campaign is planned.
	if self, err := os.Executable(); err == nil {
		st.digest = attempt.StartDigest(self)
	}
	if o.instances != attempt.InstanceChild {
		setRunGOGC() // before the catalog loads: it is most of a small campaign's allocations
	}
	st.dir = a.continuedCatalog(cmd, dir, *o)
	if st.catalog, err = loadCatalog(st.dir); err != nil {
		return st, err
	}
	if !a.handed {
		if a.creds, err = a.takeCredentials(declaredCredentials(st.catalog), func() { _ = waitSubreaper() }); err != nil {
			return st, withExit(ExitInternal, fmt.Errorf("%w; %s", err, bugNote))
		}
	}
	if st.opts, err = runCampaignOptions(cmd, *o); err != nil {
		return st, err
	}
	if st.root, err = filepath.Abs(o.results); err != nil {
		return st, usageErrorf("--results: %v", err)
	}
	if err := waitSubreaper(); err != nil {
		fmt.Fprintf(a.stderr, "agentproof: %v\n", err)
	}
	return st, nil
}

// runCampaignOptions are the campaign options of o's flags. Error: a usage error
// naming the flag.
func runCampaignOptions(cmd *cobra.Command, o runOptions) (campaign.Options, error) {
	opts := campaign.Options{CampaignID: o.campaignID, MaxParallel: o.maxParallel, MaxAutomaticRetries: o.maxRetries, Repeat: o.repeat, NewDefinition: o.newDefinition}
	if o.newDefinition && o.resume == "" && o.rerunFailed == "" {
		return opts, usageErrorf("--new-definition continues a stored campaign: give it with --resume or --rerun-failed")
	}
	if cmd.Flags().Changed("seed") {
		seed := o.seed
		opts.Seed = &seed
	}
	if cmd.Flags().Changed("max-parallel") && o.maxParallel == 0 {
		return opts, usageErrorf("invalid value \"0\" for --max-parallel: want a whole number ≥ 1")
	}
	if o.finalBytes < 1 {
		return opts, usageErrorf("invalid value \"%d\" for --final-workspace-bytes: want a whole number of bytes ≥ 1", o.finalBytes)
	}
	if o.repeat < 1 || o.repeat > campaign.MaxRepeat {
		return opts, usageErrorf("--repeat must be between 1 and %d, not %d", campaign.MaxRepeat, o.repeat)
	}
	if _, err := historyKeep(o.historyKeep); err != nil {
		return opts, err
	}
	return opts, nil
}

// createCampaignDir records the catalog of a new campaign and creates its directory with
// plan.json (before the first attempt, so that a killed campaign can be resumed); a
// resumed campaign's directory is there already. It returns the directory. Errors: a
// campaign directory that holds results already (exit 2), plan.json not written
// (exit 70).
func createCampaignDir(dir catalogSource, root string, plan *campaign.Plan) (string, error) {
	campaignDir := filepath.Join(root, plan.CampaignID)
	if plan.Resumed() {
		return campaignDir, nil
	}
	var err error
	if plan.CatalogSources, err = dir.record(); err != nil {
		return "", err
	}
	if entries, err := os.ReadDir(campaignDir); err == nil && len(entries) > 0 {
		return "", usageErrorf("campaign directory %s already holds results; choose another --campaign, remove it, or continue it with --resume %s", campaignDir, plan.CampaignID)
	}
	if err := os.MkdirAll(campaignDir, 0o755); err != nil {
		return "", usageErrorf("--results: %v", err)
	}
	if err := campaign.WritePlanRecord(root, plan); err != nil {
		return "", withExit(ExitInternal, fmt.Errorf("%w; %s", err, bugNote))
	}
	return campaignDir, nil
}

// campaignEnd is what finishCampaign reports on: the campaign's plan and summary,
// every secret it held, whether it was interrupted, and its held-back finished event.
type campaignEnd struct {
	catalog     *catalog.Catalog
	root        string
	plan        *campaign.Plan
	sum         *campaign.Summary
	secrets     *redact.Set
	interrupted bool
	finished    *campaign.Event
	display     *campaign.Display
}

// finishCampaign writes the campaign's report, shows the held-back finished event with
// what the report found, and returns the campaign's exit code.
func (a *app) finishCampaign(e campaignEnd, o runOptions) error {
	plan, sum := e.plan, e.sum
	// The campaign's cells: the selection, or, when it did not finish, the cells that
	// did. campaign.json is then partial by its own rule (a suite lacks cells), and
	// `agentproof report` regenerates it unchanged from its expected list.
	ids := append(slices.Clone(sum.Finished), sum.NotRunIDs...)
	if !sum.Partial {
		ids = make([]string, 0, len(plan.Cells))
		for _, cell := range plan.Cells {
			ids = append(ids, cell.ID)
		}
	}
	v := readVersion()
	prov := &result.Provenance{Version: v.Version, Revision: v.Revision, Modified: v.Modified, Go: v.Go, OS: runtime.GOOS, Arch: runtime.GOARCH}
	var interruption *result.Interruption
	resume := resumeCommand(plan, o.results, o.maxParallel)
	stopped, never := sum.Unfinished()
	unfinished := sum.Partial && stopped+never > 0
	if unfinished {
		interruption = &result.Interruption{Selected: sum.Selected, Stopped: stopped, NeverStarted: never, Resume: resume}
	}
	reportGC(sum.Executed)
	g, genErr := report.Generate(result.CampaignOptions{ResultsRoot: e.root, CampaignID: plan.CampaignID, Catalog: e.catalog, ExpectedIDs: ids, Secrets: e.secrets, Repeat: plan.Repeat, Provenance: prov, CatalogSources: plan.CatalogSources, Interruption: interruption, NotRunHere: plan.NotRunReasons(), HistoryKeep: keepOf(o.historyKeep)})
	for _, w := range sum.WriteErrors {
		fmt.Fprintf(a.stderr, "agentproof: writing a result: %s\n", w)
	}
	if genErr != nil {
		fmt.Fprintf(a.stderr, "agentproof: generating the campaign report: %v\n", genErr)
	} else {
		for _, w := range g.Warnings {
			fmt.Fprintf(a.stderr, "agentproof: %s\n", w)
		}
		appendStepSummary(a, g)
		a.exportTraces(o.otlp, g)
	}
	if e.finished != nil {
		if genErr == nil {
			e.finished.Summary.Notes = append(laterPassNotes(g.Campaign), notRunNotes(plan)...)
			e.finished.Summary.Notes = append(e.finished.Summary.Notes, reportNote(g.CampaignDir))
		}
		if unfinished {
			e.finished.Summary.Notes = append(e.finished.Summary.Notes, "Continue it with: "+resume)
		} else if genErr == nil && !e.interrupted && g.Campaign.Failed+g.Campaign.Inconclusive > 0 {
			e.finished.Summary.Notes = append(e.finished.Summary.Notes, "Run the cells that did not pass again with: "+rerunCommand(plan, o.results, o.maxParallel))
		}
		e.display.Observe(*e.finished)
	}
	switch {
	case e.interrupted:
		return withExit(ExitInterrupted, nil)
	case genErr != nil || len(sum.WriteErrors) > 0:
		return withExit(ExitInternal, errors.New("the campaign's results are incomplete: agentproof could not write them (see above); "+bugNote))
	}
	return withExit(g.Campaign.ExitCode(), nil)
}

// launchesSelf reports whether an attempt of one of cells may launch the agentproof
// executable itself: a fixture program or a built-in agent, an exec command of the
// profile's own (it may be this binary), or a flow whose further agents are the
// harness's (a manager, a chat's worker). Only a campaign of real agent CLIs answers
// false; its attempts never wait for the binary's digest.
func launchesSelf(cells []*catalog.Cell) bool {
	for _, c := range cells {
		d, flow := c.Profile.Driver, flowOf(c.Case)
		if d.IsZero() || d.RunsAgentproof() || d.Kind == driver.KindExec || flow.Manager || flow.Chat {
			return true
		}
	}
	return false
}

// flowOf is the flow registry's entry of cs's flow, the zero Flow for none.
func flowOf(cs *catalog.Case) flows.Flow {
	f, _ := flows.Lookup(cs.Flow)
	return f
}

// reportNote is the line that says where a finished campaign's report is (the
// dashboard, with summary.md beside it), after the notes on its cells and before the
// command that continues it or runs its failures again, which stays just above the
// campaign line.
func reportNote(campaignDir string) string {
	return fmt.Sprintf("Report: %s (%s beside it)", filepath.Join(campaignDir, report.DashboardFile), report.SummaryFile)
}

// laterPassNotes are the lines that name the cells of c that passed only after an
// earlier attempt did not (result.Campaign.LaterPasses), at most maxLaterPassNotes
// of them and then how many more summary.md names; none when there is none.
func laterPassNotes(c *result.Campaign) []string {
	later := c.LaterPasses()
	if len(later) == 0 {
		return nil
	}
	notes := []string{fmt.Sprintf("%d cell(s) passed only after an earlier attempt did not:", len(later))}
	for i, lp := range later {
		if i == maxLaterPassNotes {
			notes = append(notes, fmt.Sprintf("  ... and %d more (see summary.md)", len(later)-i))
			break
		}
		name := lp.ExecutionID
		if c.Repeat > 1 {
			name = fmt.Sprintf("%s (repetition %d)", name, lp.Repetition)
		}
		notes = append(notes, "  "+name+": "+lp.Words())
	}
	return notes
}

// notRunNotes are the lines that say which selected cells plan did not run here and
// why, one per reason with its count and environments, and where to learn more; none
// when every selected cell ran.
func notRunNotes(plan *campaign.Plan) []string {
	if len(plan.NotRunHere) == 0 {
		return nil
	}
	var reasons []string
	count, envs := map[string]int{}, map[string][]string{}
	for _, n := range plan.NotRunHere {
		if count[n.Reason] == 0 {
			reasons = append(reasons, n.Reason)
		}
		count[n.Reason]++
		if !slices.Contains(envs[n.Reason], n.Cell.Environment.ID) {
			envs[n.Reason] = append(envs[n.Reason], n.Cell.Environment.ID)
		}
	}
	notes := []string{fmt.Sprintf("%d selected cell(s) were not run here: this machine cannot provide their environment (a partial campaign: exit %d when everything that ran passed; summary.md lists them):", len(plan.NotRunHere), verdict.ExitPartial)}
	for _, r := range reasons {
		notes = append(notes, fmt.Sprintf("  %d cell(s) of %s: %s", count[r], strings.Join(envs[r], ", "), r))
	}
	return append(notes, "  '"+result.ProbeCommand+"' says what this machine gives and how to get the rest.")
}

// maxLaterPassNotes bounds the later passes the terminal names (summary.md names all).
const maxLaterPassNotes = 20

// resumeCommand is the command line that continues plan's campaign: `agentproof run
// --resume <id>`, with the --catalog paths (and --with-default) it was run with and
// --results unless it is the default, each argument shell-quoted when it needs it.
func resumeCommand(plan *campaign.Plan, results string, maxParallel int) string {
	return continueCommand("--resume", plan, results, maxParallel)
}

// rerunCommand is resumeCommand for `agentproof run --rerun-failed <id>`: the command
// line that runs the cells of plan's campaign that did not pass again.
func rerunCommand(plan *campaign.Plan, results string, maxParallel int) string {
	return continueCommand("--rerun-failed", plan, results, maxParallel)
}

// continueCommand is the command line `agentproof run <flag> <id>` for plan's
// campaign, with what resumeCommand adds.
func continueCommand(flag string, plan *campaign.Plan, results string, maxParallel int) string {
	args := []string{programName(), "run", flag, plan.CampaignID}
	if src := plan.CatalogSources; !src.IsDefault() {
		for _, p := range src.Paths {
			args = append(args, "--catalog", p)
		}
		if src.Default {
			args = append(args, "--with-default")
		}
	}
	if results != defaultResults {
		args = append(args, "--results", results)
	}
	if maxParallel > 0 {
		args = append(args, "--max-parallel", strconv.Itoa(maxParallel))
	}
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

// programName is how the user ran agentproof, for a command line to paste: the
// path they typed when it has a directory (./agentproof), else "agentproof" (found
// on PATH).
func programName() string {
	if len(os.Args) > 0 && strings.ContainsRune(os.Args[0], '/') && !strings.Contains(os.Args[0], "go-build") && !strings.HasSuffix(os.Args[0], ".test") {
		return os.Args[0]
	}
	return "agentproof"
}

// continuedCatalog is the catalog of a --resume or --rerun-failed run: without
// --catalog and --with-default, the one the campaign recorded it was run with (its
// plan.json, said on stderr when it is not the default); with them, theirs (a warning
// says when the campaign recorded another). Any other run, or a campaign that
// recorded none, keeps dir.
func (a *app) continuedCatalog(cmd *cobra.Command, dir catalogSource, o runOptions) catalogSource {
	id := o.resume
	if id == "" {
		id = o.rerunFailed
	}
	if id == "" {
		return dir
	}
	rec := recordedCatalog(filepath.Join(o.results, id))
	if rec == nil {
		return dir
	}
	want := sourceOf(rec)
	if !cmd.Flags().Changed("catalog") && !cmd.Flags().Changed("with-default") {
		if !rec.IsDefault() && !a.handed { // a re-executed run said it already
			fmt.Fprintf(a.stderr, "agentproof: campaign %s: using the catalog it was run with (%s)\n", id, want.describe())
		}
		return want
	}
	if got, err := dir.record(); err == nil && sourceOf(got).describe() != want.describe() && !a.handed {
		fmt.Fprintf(a.stderr, "agentproof: warning: campaign %s was run with %s; continuing it with %s\n", id, want.describe(), dir.describe())
	}
	return dir
}

// shellQuote quotes s for a POSIX shell when it holds anything but letters, digits
// and -_./=:,+@%.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// notRunHere probes, before anything starts, each leased provider (sandbox,
// container; provs, the registry's providers with their defaults in a run) that a cell
// to run is in an environment of (for real: a trial sandbox, the cgroup controllers, a
// tmpfs; the container engine and a trial container). When this machine cannot run
// one, its cells are not run here: it returns each one's id with the reason
// (ProbeReport.NotRunReason), so that the campaign runs everything else and reports
// them apart; a container environment whose image could not be pinned (unpinned: the
// environment's id → why, pinImages) is not run here either, nor an environment that
// declares a resource limit the provider cannot enforce on this machine
// (ProbeReport.UnenforcedReason: a normal user's sandbox on cgroup v1, for example),
// which would otherwise run without it. A selection that names
// such an environment (--environment) or cell (--id) is a configuration error instead
// (exit 2, nothing started), naming every missing requirement, the environments and
// what to do.
func notRunHere(ctx context.Context, cells []*catalog.Cell, sel catalog.Selector, provs []environment.Provider, unpinned map[string]string) (map[string]string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	out := map[string]string{}
	for _, p := range provs {
		if !p.Name().Leased() {
			continue
		}
		var envs []string
		for _, c := range cells {
			if environment.ProviderName(c.Environment.Provider) == p.Name() && !slices.Contains(envs, c.Environment.ID) {
				envs = append(envs, c.Environment.ID)
			}
		}
		if len(envs) == 0 {
			continue
		}
		r := p.Probe(ctx)
		why := r.NotRunReason()
		for _, c := range cells {
			if !slices.Contains(envs, c.Environment.ID) {
				continue
			}
			reason := why
			if r.Available {
				reason = unpinned[c.Environment.ID]
			}
			if r.Available && reason == "" {
				reason = r.UnenforcedReason(attempt.ShapeOf(c.Environment.Resources).Declared())
			}
			if reason == "" {
				continue
			}
			if slices.Contains(sel.Environments, c.Environment.ID) || slices.Contains(sel.IDs, c.ID) {
				return nil, notRunSelected(p.Name(), envs, r, reason)
			}
			out[c.ID] = reason
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// nothingRunsHere is the configuration error of a new, unsharded selection none of
// whose cells this machine can run (notRun: each cell's id → why): a campaign of
// nothing but cells not run here would prove nothing, so nothing starts (exit 2). A
// shard or a resumed campaign is part of a larger plan and records its cells as not
// run here instead. It names each reason with its environments.
func nothingRunsHere(cells []*catalog.Cell, notRun map[string]string) error {
	envsOf := map[string][]string{}
	var reasons []string
	for _, c := range cells {
		why := notRun[c.ID]
		if !slices.Contains(reasons, why) {
			reasons = append(reasons, why)
		}
		if !slices.Contains(envsOf[why], c.Environment.ID) {
			envsOf[why] = append(envsOf[why], c.Environment.ID)
		}
	}
	var parts []string
	for _, why := range reasons {
		parts = append(parts, fmt.Sprintf("environment %s: %s", strings.Join(envsOf[why], ", "), why))
	}
	return usageErrorf("none of the %d selected cell(s) can run on this machine, so nothing was started: %s "+
		"(`agentproof environments probe` says what this machine gives and how to get the rest; select cells of other environments to run them)",
		len(cells), strings.Join(parts, "; "))
}

// notRunSelected is the configuration error of a selection that names cells of
// provider's environments this machine cannot run.
func notRunSelected(provider environment.ProviderName, envs []string, r environment.ProbeReport, why string) error {
	// The reason, then what the probe found missing where that says more (an available
	// provider whose declared limits are not enforced here has nothing missing).
	detail := why
	if missing := strings.Join(r.Missing(), "; "); !r.Available && missing != "" && missing != why {
		detail = why + ": " + missing
	}
	return usageErrorf("the selected cells of environment %s need the %s provider, which this machine cannot run: %s "+
		"(`agentproof environments probe` says what this machine gives and how to get the rest; or deselect those environments: without --environment "+
		"or --id naming them, their cells are reported not run here and everything else runs)",
		strings.Join(envs, ", "), provider, detail)
}

// planRun plans the campaign, checks what its cells need before anything starts or is
// written (--live credentials, the agent CLIs: prepare) and takes the results root's
// lock (held until the campaign's files are written; the caller calls unlock): a new
// campaign from the selectors, or with --resume / --rerun-failed the rest of a stored
// one (campaign.ResumePlan, read under the lock). Every planning problem is a
// *UsageError.
func (a *app) planRun(cmd *cobra.Command, c *catalog.Catalog, root string, o runOptions, opts campaign.Options) (*campaign.Plan, map[string]attempt.PinnedCLI, func(), error) {
	mode, id := campaign.ResumeMode(0), ""
	switch {
	case o.resume != "" && o.rerunFailed != "":
		return nil, nil, nil, usageErrorf("--resume and --rerun-failed are exclusive")
	case o.resume != "":
		mode, id = campaign.Resume, o.resume
	case o.rerunFailed != "":
		mode, id = campaign.RerunFailed, o.rerunFailed
	}
	if mode == 0 {
		sel, ref, err := shardSelection(c, o.sel, o.shards)
		if err != nil {
			return nil, nil, nil, err
		}
		if cells, err := c.Select(trimSelector(sel)); err == nil {
			a.unpinned = pinImages(cmd.Context(), c, cells)
		}
		plan, err := campaign.NewPlan(c, trimSelector(sel), opts)
		if err != nil {
			return nil, nil, nil, planError(err)
		}
		plan.Shard = ref
		binaries, err := a.prepare(cmd, plan, o)
		if err != nil {
			return nil, nil, nil, err
		}
		unlock, err := lockResults(root, true)
		if err != nil {
			return nil, nil, nil, err
		}
		return plan, binaries, unlock, nil
	}
	flag := map[campaign.ResumeMode]string{campaign.Resume: "--resume", campaign.RerunFailed: "--rerun-failed"}[mode]
	if !trimSelector(o.sel).IsEmpty() || o.campaignID != "" || o.shards != (shardFlags{}) {
		return nil, nil, nil, usageErrorf("%s takes the selection, the shard and the campaign id of the stored campaign: give no selector, no --shard, --plan or --weights and no --campaign", flag)
	}
	if cmd.Flags().Changed("repeat") {
		opts.Repeat = o.repeat
	} else {
		opts.Repeat = 0
	}
	if !result.ValidCampaignID(id) {
		return nil, nil, nil, usageErrorf("%s %q must be a letter or digit followed by at most 199 letters, digits, '.', '_' or '-'", flag, id)
	}
	if err := campaignExists(root, id); err != nil {
		return nil, nil, nil, usageErrorf("%s %s: %w", flag, id, err) // names the closest id and the campaigns there
	}
	unlock, err := lockResults(root, false)
	if err != nil {
		return nil, nil, nil, err
	}
	opts.CampaignID = id
	a.unpinned = pinImages(cmd.Context(), c, c.Cells)
	plan, err := campaign.ResumePlan(c, root, mode, opts)
	if err != nil {
		unlock()
		return nil, nil, nil, planError(err)
	}
	if err := a.recordBoundaries(root, plan, flag); err != nil {
		unlock()
		return nil, nil, nil, err
	}
	binaries, err := a.prepare(cmd, plan, o)
	if err != nil {
		unlock()
		return nil, nil, nil, err
	}
	if len(plan.Units) > 0 {
		what := fmt.Sprintf("%d of its %d cell(s)", len(plan.Units), len(plan.Cells))
		if plan.Repeat > 1 {
			what = fmt.Sprintf("%d repetition(s) of its %d cell(s)", len(plan.Units), len(plan.Cells))
		}
		fmt.Fprintf(a.stderr, "agentproof: %s %s: keeping %d stored result(s), running %s\n", flag, id, len(plan.Kept), what)
	}
	return plan, binaries, unlock, nil
}

// nothingToRun says, on stdout, that a resumed campaign has nothing to run: with
// --resume every repetition has a result (the campaign is complete), with
// --rerun-failed every one counted as passed or is a known failure. Nothing is written; the exit code is 0.
func nothingToRun(a *app, o runOptions, plan *campaign.Plan, dir string) {
	n := len(plan.Kept)
	if o.resume != "" {
		if notRun := len(plan.NotRunHere); notRun > 0 {
			fmt.Fprintf(a.stdout, "Campaign %s has nothing left to run here: each of its %d cell(s) this machine can run has a result for every repetition (%d stored), and the other %d cannot run here (this machine cannot provide their environment; '%s' says why), so --resume has nothing to run. Its report: %s\n",
				plan.CampaignID, len(plan.Cells)-notRun, n, notRun, result.ProbeCommand, filepath.Join(dir, report.SummaryFile))
			return
		}
		fmt.Fprintf(a.stdout, "Campaign %s is complete: each of its %d cell(s) has a result for every repetition (%d stored), so --resume has nothing to run. Its report: %s\n",
			plan.CampaignID, len(plan.Cells), n, filepath.Join(dir, report.SummaryFile))
		return
	}
	known := 0
	for _, k := range plan.Kept {
		if k.Counted != verdict.Passed {
			known++ // kept by --rerun-failed without passing: a known failure
		}
	}
	if known > 0 {
		fmt.Fprintf(a.stdout, "Campaign %s: none of its %d cell(s) failed (%d stored result(s): %d passed, %d known failure(s), which --rerun-failed leaves as they are), so --rerun-failed has nothing to run. Its report: %s\n",
			plan.CampaignID, len(plan.Cells), n, n-known, known, filepath.Join(dir, report.SummaryFile))
		return
	}
	fmt.Fprintf(a.stdout, "Campaign %s: every one of its %d cell(s) passed (%d stored result(s)), so --rerun-failed has nothing to run. Its report: %s\n",
		plan.CampaignID, len(plan.Cells), n, filepath.Join(dir, report.SummaryFile))
}

// prepare checks, before anything starts, what the cells to run need: with --live the
// live providers' credentials (livePreflight), the environments this machine can
// provide (notRunHere: the cells of the others are taken out of plan's units, not run
// here), then the agent CLIs of the cells that will run (installed when missing:
// ensureCLIs). It returns the CLIs' binaries.
func (a *app) prepare(cmd *cobra.Command, plan *campaign.Plan, o runOptions) (map[string]attempt.PinnedCLI, error) {
	if o.live {
		if err := livePreflight(plan.UnitCells(), a.creds.lookup); err != nil {
			return nil, err
		}
	}
	notRun, err := notRunHere(cmd.Context(), plan.UnitCells(), o.sel, providers.All(), a.unpinned)
	if err != nil {
		return nil, err
	}
	if cells := plan.UnitCells(); len(cells) > 0 && len(notRun) == len(cells) && o.shards.shard == "" && o.resume == "" && o.rerunFailed == "" {
		return nil, nothingRunsHere(cells, notRun)
	}
	plan.SetNotRunHere(notRun)
	return a.ensureCLIs(cmd, plan.UnitCells(), o)
}

// livePreflight refuses a --live campaign whose cells need a live provider credential
// that the environment lacks (unset or empty), before anything starts: a *UsageError
// naming every missing variable with the cells that need it.
func livePreflight(cells []*catalog.Cell, lookup func(string) (string, bool)) error {
	need := map[string][]string{}
	var names []string
	for _, cell := range cells {
		name := attempt.LiveCredential(cell)
		if name == "" {
			continue
		}
		if v, ok := lookup(name); ok && v != "" {
			continue
		}
		if _, seen := need[name]; !seen {
			names = append(names, name)
		}
		need[name] = append(need[name], cell.ID)
	}
	if len(names) == 0 {
		return nil
	}
	var problems []string
	for _, n := range names {
		problems = append(problems, fmt.Sprintf("%s is not set, and %d --live cell(s) need it: %s", n, len(need[n]), strings.Join(need[n], ", ")))
	}
	return usageErrorf("--live: %s (set the variable, or run without --live against the scripted model)", strings.Join(problems, "; "))
}

// recordBoundaries rewrites the plan.json of a resumed campaign whose plan started new
// suite definitions (--new-definition), saying so on stderr; nothing when it started
// none. Error: plan.json not written (exit 70).
func (a *app) recordBoundaries(root string, plan *campaign.Plan, flag string) error {
	renewed := false
	for _, b := range plan.Boundaries {
		if plan.StartedBoundary(b) {
			renewed = true
			fmt.Fprintf(a.stderr, "agentproof: %s --new-definition: suite %s starts a new definition (%s); every cell of it runs again\n", flag, b.SuiteID, b.Change)
		}
	}
	if !renewed {
		return nil
	}
	if err := campaign.WritePlanRecord(root, plan); err != nil {
		return withExit(ExitInternal, fmt.Errorf("%w; %s", err, bugNote))
	}
	return nil
}

// planError maps a planning error: selection, option and resume problems are usage
// errors (exit 2); anything else is agentproof's own.
func planError(err error) error {
	var se *catalog.SelectionError
	var oe *campaign.OptionsError
	var re *campaign.ResumeError
	if errors.As(err, &se) || errors.As(err, &oe) || errors.As(err, &re) {
		return &UsageError{Err: err}
	}
	return fmt.Errorf("planning the campaign: %w", err)
}

// sweepStaleRoots removes the attempt temp roots (they hold key files) that a killed
// agentproof run left under dir ("" for the temp directory) and no live process owns
// (worker.SweepStaleRoots), and says so in one stderr line.
func sweepStaleRoots(a *app, dir string) {
	n, err := worker.SweepStaleRoots(dir)
	if n > 0 {
		fmt.Fprintf(a.stderr, "agentproof: removed %d stale attempt temp root(s) under %s that no live run owns\n", n, cmp.Or(dir, os.TempDir()))
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "agentproof: sweeping stale attempt temp roots: %v\n", err)
	}
}

// minStateFree is the free space a memory file system needs to hold the attempts'
// instance homes by default (bytes): a few MB each, an agent CLI's HOME a few tens.
const minStateFree = 512 << 20

// stateDir is the directory of the attempts' instance homes (LocalExecutor.StateDir):
// --state-dir when given (an existing directory this process can write; exit 2
// otherwise, naming the flag), else a memory file system with room
// (worker.MemoryDir), else "" (each home inside its attempt's temp root).
func stateDir(cmd *cobra.Command, flag string) (string, error) {
	if !cmd.Flags().Changed("state-dir") {
		return worker.MemoryDir(minStateFree), nil
	}
	abs, err := filepath.Abs(flag)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(abs); err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err == nil {
		err = syscall.Access(abs, 2|1 /* W_OK|X_OK */)
	}
	if err != nil {
		return "", usageErrorf("--state-dir %s: %v (give an existing directory this user can write)", flag, err)
	}
	return abs, nil
}

// instanceFlag is --instance: one of attempt.InstanceModes.
type instanceFlag struct{ m *attempt.InstanceMode }

func (f instanceFlag) String() string {
	if f.m == nil {
		return ""
	}
	return string(*f.m)
}

func (f instanceFlag) Set(v string) error {
	for _, m := range attempt.InstanceModes {
		if string(m) == v {
			*f.m = m
			return nil
		}
	}
	return fmt.Errorf("must be %s or %s, not %q", attempt.InstanceInProcess, attempt.InstanceChild, v)
}

func (instanceFlag) Type() string { return "mode" }

// runGCPercent is the GOGC of a `run` process whose attempts' instances run in it
// (--instance in-process): those instances allocate for their requests, their
// store and their runner in this heap, and GOGC 200 took about 9% of a fixture
// cell's CPU for about 5 MB of peak RSS (docs/performance.md, "The in-process
// control-plane instance").
const runGCPercent = 200

// setRunGOGC sets runGCPercent, unless GOGC is set in the environment (the user's
// choice wins).
func setRunGOGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(runGCPercent)
	}
}

// reportGC prepares `run` for its report, once the attempts are done: unless GOGC is
// set, the report runs at the default GOGC (100), and after at least
// reportGCAttempts executed cells (executed) the attempts' garbage goes back to the
// operating system first, so that the peak memory of a campaign is the larger of its
// attempts' and its report's, not their sum (docs/performance.md "Memory of run in
// N"). A smaller campaign's heap is small, and the forced collection would be most of
// its report's time.
func reportGC(executed int) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(100)
	}
	if executed >= reportGCAttempts {
		debug.FreeOSMemory()
	}
}

// reportGCAttempts is the number of executed cells from which reportGC returns the
// attempts' garbage to the operating system.
const reportGCAttempts = 64

// exportTraces exports the campaign's attempts as OpenTelemetry traces to endpoint
// ("" : nothing), saying on stderr how many were sent; a failed export is a warning:
// the campaign's files are the record.
func (a *app) exportTraces(endpoint string, g *report.Generated) {
	if endpoint == "" {
		return
	}
	n, err := tracing.Export(context.Background(), endpoint, g.CampaignDir, g.Campaign)
	fmt.Fprintf(a.stderr, "agentproof: exported %d attempt trace(s) to %s (OpenTelemetry semantic conventions %s)\n", n, endpoint, tracing.SemconvVersion)
	if err != nil {
		fmt.Fprintf(a.stderr, "agentproof: warning: exporting traces: %v\n", err)
	}
}

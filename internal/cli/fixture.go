package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/assurance"
	"github.com/agentproof/agentproof/evidence"
	"github.com/agentproof/agentproof/worker"
	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/verdict"
)

func newFixtureCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fixture",
		Short: "Run the built-in fixture programs through the local fixture worker",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newFixtureRunCmd(a), newFixtureManifestCmd(a))
	return cmd
}

// fixtureRunOutput is what `fixture run --json` prints: one object.
type fixtureRunOutput struct {
	Status      string                     `json:"status"`
	EvidenceID  *string                    `json:"evidenceId"`
	Termination *worker.TerminationSummary `json:"termination"`
	Assurance   *assurance.Result          `json:"assurance"`
	Message     string                     `json:"message,omitempty"`
}

func newFixtureRunCmd(a *app) *cobra.Command {
	var o fixtureRunOptions
	cmd := &cobra.Command{
		Use:   "run <pass|fail|hang|noisy>",
		Short: "Run one fixture as a real bounded child process and classify its evidence",
		Long:  strings.TrimSpace(fixtureRunLong),
		Example: `  agentproof fixture run pass
  agentproof fixture run hang --timeout 500ms --json
  agentproof fixture run noisy --max-output 1MiB
  agentproof fixture run pass --guarded --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s takes exactly one fixture name (%s), got %d arguments", cmd.CommandPath(), strings.Join(worker.Fixtures(), ", "), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.fixtureRun(cmd, args[0], &o)
		},
	}
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Second, "stop the fixture after this long (SIGTERM, then SIGKILL)")
	cmd.Flags().StringVar(&o.maxOutput, "max-output", "64KiB", "combined stdout+stderr budget (bytes, or with B, KiB, MiB suffix; at most 64MiB)")
	cmd.Flags().StringVar(&o.evidenceDir, "evidence-dir", "", "absolute evidence store directory (default <user cache dir>/agentproof/evidence)")
	cmd.Flags().StringVar(&o.workspaceRoot, "workspace-root", "", "absolute directory for the private working directory (default the system temp dir)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object {status, evidenceId, termination, assurance}")
	cmd.Flags().BoolVar(&o.guarded, "guarded", false, "run on the guarded path: attempt fence, admission gate, pinned execution manifest")
	cmd.Flags().StringVar(&o.gopts.fenceDir, "fence-dir", "", "with --guarded: absolute dedicated fence directory to use (provisioned when empty or missing)")
	cmd.Flags().StringVar(&o.gopts.digest, "execution-digest", "", "with --guarded: pin this execution digest instead of the current manifest's")
	return cmd
}

// fixtureRunLong is the help of 'agentproof fixture run'.
const fixtureRunLong = `
Run one built-in fixture program (pass, fail, hang or noisy) as a real, bounded child
process through the local fixture worker: explicit environment, no shell, a private
working directory, its own process group, a timeout (SIGTERM, then SIGKILL) and a
combined stdout+stderr budget. The evidence is stored in a content-addressed store and
classified by assurance.

With --guarded the run takes the guarded path: an Attempt fence (provisioned in a
temporary directory, or the one in --fence-dir) is held by this process, a workspace is
provisioned for it, the current execution manifest is pinned (or --execution-digest),
and the child's admission gate must take the fence before any fixture code runs. A gate
refusal (the fence held by another process), a death before admission or malformed
control records are collector errors: Inconclusive, never a pass. A program that no
longer matches the pinned digest is not started (drift).

Prints the termination summary, the evidence id and the assurance class. Exit codes:
0 Verified, 1 Failed, 3 Inconclusive (also drift and lost ownership), 2 usage or setup
error, 70 internal error (a bug in agentproof), 130 interrupted.`

// fixtureRunOptions are the flags of 'agentproof fixture run'.
type fixtureRunOptions struct {
	timeout       time.Duration
	maxOutput     string
	evidenceDir   string
	workspaceRoot string
	asJSON        bool
	guarded       bool
	gopts         guardedOptions
}

// check lists the problems of fixture and o's flags (each naming its flag) and returns
// the output budget in bytes. An empty --evidence-dir becomes the default under the
// user cache directory.
func (o *fixtureRunOptions) check(fixture string) (budget int64, problems []string) {
	if !worker.IsFixture(fixture) {
		problems = append(problems, fmt.Sprintf("unknown fixture %q: want one of %s", fixture, strings.Join(worker.Fixtures(), ", ")))
	}
	if o.timeout <= 0 || o.timeout.Milliseconds() > worker.MaxTimeoutMS || o.timeout%time.Millisecond != 0 {
		problems = append(problems, fmt.Sprintf("--timeout %v must be a whole number of milliseconds between 1ms and %v", o.timeout, time.Duration(worker.MaxTimeoutMS)*time.Millisecond))
	}
	budget, err := parseByteSize(o.maxOutput)
	if err != nil {
		problems = append(problems, "--max-output: "+err.Error())
	} else if budget < 1 || budget > worker.MaxOutputBytes {
		problems = append(problems, fmt.Sprintf("--max-output %s must be between 1 byte and 64MiB", o.maxOutput))
	}
	if o.evidenceDir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			problems = append(problems, fmt.Sprintf("no default evidence directory (%v): pass --evidence-dir", err))
		} else {
			o.evidenceDir = filepath.Join(cache, "agentproof", "evidence")
		}
	}
	if !o.guarded && (o.gopts.fenceDir != "" || o.gopts.digest != "") {
		problems = append(problems, "--fence-dir and --execution-digest need --guarded")
	}
	if o.gopts.digest != "" && !executionDigestPattern().MatchString(o.gopts.digest) {
		problems = append(problems, fmt.Sprintf("--execution-digest %q must be sha256: and 64 lower-case hex characters", o.gopts.digest))
	}
	for flag, p := range map[string]string{"--evidence-dir": o.evidenceDir, "--workspace-root": o.workspaceRoot, "--fence-dir": o.gopts.fenceDir} {
		if p == "" {
			continue
		}
		if strings.ContainsRune(p, 0) {
			problems = append(problems, flag+" must not contain NUL bytes")
		} else if !filepath.IsAbs(p) {
			problems = append(problems, fmt.Sprintf("%s %q must be an absolute path", flag, p))
		}
	}
	return budget, problems
}

// fixtureRun runs fixture as 'agentproof fixture run' with o: bad flags are one usage
// error (exit 2) listing every problem; the run takes the guarded path with --guarded.
func (a *app) fixtureRun(cmd *cobra.Command, fixture string, o *fixtureRunOptions) error {
	budget, problems := o.check(fixture)
	if len(problems) > 0 {
		return usageErrorf("%s", strings.Join(problems, "; "))
	}
	store, err := evidence.Open(o.evidenceDir)
	if err != nil {
		return usageErrorf("evidence store: %v", err)
	}
	w, err := worker.New(worker.Options{Store: store, WorkspaceRoot: o.workspaceRoot})
	if err != nil {
		return usageErrorf("%v", err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.guarded {
		return runGuardedFixture(a, ctx, w, store, worker.Request{
			Fixture: fixture, TimeoutMs: o.timeout.Milliseconds(), MaxOutputBytes: budget,
		}, o.workspaceRoot, o.gopts, o.asJSON)
	}
	res, err := w.Run(ctx, worker.Request{
		Fixture: fixture,
		Pins: evidence.Pins{
			Collector:   evidence.LocalFixtureCollector,
			Environment: runtime.Version() + "/" + runtime.GOOS + "-" + runtime.GOARCH,
		},
		Check:          "fixture-run." + fixture,
		TimeoutMs:      o.timeout.Milliseconds(),
		MaxOutputBytes: budget,
	})
	if err != nil {
		return usageErrorf("%v", err)
	}
	return reportFixtureRun(a, ctx, fixture, store.Dir(), res, o.asJSON)
}

func reportFixtureRun(a *app, ctx context.Context, fixture, storeDir string, res worker.Result, asJSON bool) error {
	out, code := fixtureRunOutcome(res)
	if ctx.Err() != nil && code != ExitUsage {
		code = ExitInterrupted
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		if err := enc.Encode(out); err != nil {
			return err
		}
		return withExit(code, nil)
	}
	if res.Status == worker.StatusNotStarted {
		return withExit(code, fmt.Errorf("fixture %s not started: %s", fixture, out.Message))
	}
	if _, err := fmt.Fprint(a.stdout, fixtureRunText(fixture, storeDir, res, out)); err != nil {
		return err
	}
	return withExit(code, nil)
}

// fixtureRunOutcome is what a fixture run's result prints and the exit code it gives:
// an observed run's assurance verdict (0 passed, 1 failed, 3 inconclusive), an
// inconclusive one for evidence that could not be stored or a lost ownership, and for
// a run that never started 130 when it was aborted, 3 for drift or lost ownership and
// 2 otherwise.
func fixtureRunOutcome(res worker.Result) (fixtureRunOutput, verdict.ExitCode) {
	out := fixtureRunOutput{Status: res.Status, Termination: res.Termination, Message: res.Message}
	code := ExitInconclusive
	switch res.Status {
	case worker.StatusObserved:
		id := res.EvidenceID
		out.EvidenceID = &id
		r := assurance.Classify(*res.Metadata)
		out.Assurance = &r
		code = r.Verdict.ExitCode()
	case worker.StatusStorageFailed:
		r := assurance.InconclusiveBecause("evidence could not be stored: " + res.Message)
		out.Assurance = &r
	case worker.StatusOwnershipLost:
		if res.EvidenceID != "" {
			id := res.EvidenceID
			out.EvidenceID = &id
		}
		r := assurance.InconclusiveBecause(res.Message)
		out.Assurance = &r
	case worker.StatusNotStarted:
		out.Message = res.Reason + ": " + res.Message
		switch res.Reason {
		case worker.ReasonAborted:
			code = ExitInterrupted
		case worker.ReasonDrift, worker.ReasonOwnershipLost:
			// Nothing ran, so nothing can be judged: the pinned program or the ownership
			// was not there to run it under.
			code = ExitInconclusive
		default:
			code = ExitUsage
		}
	}
	return out, code
}

// fixtureRunText is the human form of a fixture run that started: how it ended, its
// limits, its workspace, its evidence and its assurance name with the reason.
func fixtureRunText(fixture, storeDir string, res worker.Result, out fixtureRunOutput) string {
	t := res.Termination
	var b strings.Builder
	ended := "did not confirm an exit"
	switch {
	case t.ExitCode != nil:
		ended = fmt.Sprintf("exited with code %d", *t.ExitCode)
	case t.Signal != nil:
		ended = "was killed by " + *t.Signal
	}
	fmt.Fprintf(&b, "fixture %s %s after %d ms (pid %d)\n", fixture, ended, t.DurationMs, t.PID)
	signals := "none"
	if len(t.SignalsSent) > 0 {
		signals = strings.Join(t.SignalsSent, ", ")
	}
	fmt.Fprintf(&b, "  timed out: %s   output exceeded: %s   aborted: %s   signals sent: %s\n",
		yesNo(t.TimedOut), yesNo(t.OutputExceeded), yesNo(t.Aborted), signals)
	fmt.Fprintf(&b, "  output: %d bytes received, %d kept   exited: %s   stdio closed: %s\n",
		t.OutputBytes, t.CapturedBytes, yesNo(t.Exited), yesNo(t.StdioClosed))
	if t.Workspace.State == evidence.WorkspaceRemoved {
		b.WriteString("  workspace: removed\n")
	} else {
		fmt.Fprintf(&b, "  workspace: quarantined at %s (%s)\n", t.Workspace.Path, t.Workspace.Reason)
	}
	if res.Metadata != nil && res.Metadata.Observation.CollectorError != nil {
		fmt.Fprintf(&b, "  collector error: %s\n", *res.Metadata.Observation.CollectorError)
	}
	if out.EvidenceID != nil {
		fmt.Fprintf(&b, "evidence: %s (in %s)\n", *out.EvidenceID, storeDir)
	} else {
		fmt.Fprintf(&b, "evidence: not stored (%s)\n", res.Message)
	}
	fmt.Fprintf(&b, "assurance: %s — %s\n", out.Assurance.Class(), out.Assurance.Reason)
	return b.String()
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

var executionDigestPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })

var byteSizePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,12})\s*(B|KiB|MiB)?$`) })

// parseByteSize parses a byte count: digits with an optional B, KiB or MiB suffix.
func parseByteSize(s string) (int64, error) {
	m := byteSizePattern().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a byte size (want e.g. 65536, 64KiB or 1MiB)", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	switch m[2] {
	case "KiB":
		n <<= 10
	case "MiB":
		n <<= 20
	}
	return n, nil
}

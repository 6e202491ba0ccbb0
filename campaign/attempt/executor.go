package attempt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/controlplane/store"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/worker"
)

// LocalExecutor is the real campaign.Executor (docs/ARCHITECTURE.md "Stages"): every
// attempt runs the stages provision → fixtures → flow → observe → grade → teardown,
// each returning a value, and Judge makes the verdict of those values. Evidence lands
// in ResultsRoot/plan.Dir.
//
// A LocalExecutor is safe for concurrent use: attempts share only its configuration.
type LocalExecutor struct {
	// ResultsRoot is the results directory (evidence goes to ResultsRoot/plan.Dir).
	ResultsRoot string
	// Executable is the absolute path of the agentproof binary started as `serve`.
	Executable string
	// TempDir is where attempt roots are created ("" means os.TempDir()).
	TempDir string
	// ExecutableDigest, when set, is Executable's digest being made since the command
	// started (StartDigest), which every attempt's instance gets as a known digest,
	// the first one included; nil: the second attempt makes it with the template.
	ExecutableDigest *Digest
	// StateDir is where each attempt's instance home is created, in a claimed root of
	// its own beside the attempt root (the control plane's database, keys and run
	// records, and its agents' HOMEs and logs): a memory file system keeps them off
	// the disk (worker.MemoryDir; `run --state-dir`). "" keeps the home inside the
	// attempt root. The shared template database lives there too.
	StateDir string
	// Credential returns the value of a catalog credential (for example from the run
	// command's environment); nil means none is available. A cell needing a credential
	// without a value ends inconclusive (permanent_infrastructure), never failed.
	Credential func(name string) (string, bool)
	// PollInterval is how often the flow looks at the API while waiting for a state
	// (default 25 ms).
	PollInterval time.Duration
	// KeepRoot keeps the attempt's temp root (for debugging); cleanup is then not
	// confirmed and the attempt fails with cleanup_failure, so keep it off in campaigns.
	KeepRoot bool
	// Canaries are fake credentials of every secret shape (campaign.Canaries) that
	// every attempt stores as secrets of its instance and hands to its agent through
	// secret references, beside the attempt canary (`agentproof run --canary`). Any of
	// them found in the closed instance home, the workspace, the agent's output or the
	// evidence fails the attempt with secret_leak.
	Canaries []campaign.Canary
	// CLIs maps a real agent CLI's name (codex, opencode, claude, kilo, qwen, copilot) to its pinned
	// install (package agent/clis); a CLI cell whose CLI is missing ends inconclusive
	// (permanent_infrastructure).
	CLIs map[string]PinnedCLI
	// Live runs CLI cells against their profile's live provider (driverConfig live, its
	// credential stored as a secret) instead of a scripted model per attempt.
	Live bool
	// InProcess starts a control-plane instance inside this process (nil: every
	// attempt's instance is a serve child of Executable). With it, Instances chooses:
	// InstanceInProcess (or "") runs the instance of every attempt that allows it in
	// this process and the others as serve children, InstanceChild every one as a
	// serve child (docs/ARCHITECTURE.md "Control-plane instances").
	InProcess InProcessStart
	Instances InstanceMode
	// Secrets are the secrets the campaign holds before any attempt (every declared
	// credential present when it started, whichever cell loads it, and its canaries):
	// every attempt's scans and evidence are guarded with them besides its own (nil:
	// none). The secrets of the attempts running beside one (their canaries and their
	// instances' keys) are added as they are made (heldSecrets).
	Secrets *redact.Set

	// FinalWorkspaceBytes bounds the file content of the final workspace an attempt
	// whose case has a verifier keeps as evidence (workspace.FinalFile; 0:
	// workspace.DefaultFinalMaxBytes; `run --final-workspace-bytes`).
	FinalWorkspaceBytes int64

	// LeaseNotRunHere maps the id of a cell in a leased environment (sandbox,
	// container) to why this machine cannot provide that environment (the provider's
	// probe, an image that could not be pinned): a regrade reports its verifier not run
	// here with that reason instead of setting up a lease (Regrade).
	LeaseNotRunHere map[string]string

	// GitCache is where git workspace sources are cloned ("" means agentproof/git in
	// the user's cache directory).
	GitCache string
	// netns makes the network namespaces of verifier steps (probed once).
	netns netns

	// Sentry, when set, is told the process marker of every attempt while it runs, so
	// that the agents' descendants are swept should this process be killed
	// (worker.Sentry).
	Sentry *worker.Sentry

	// held are the secrets of the attempts running now (heldSecrets).
	held heldSecrets

	// shared is what every attempt's serve child is given, made in the background
	// once (serveFlags); sharedOnce starts making it, sharedDone is closed when it
	// is made.
	sharedOnce  sync.Once
	sharedDone  chan struct{}
	sharedCalls atomic.Int64
	digest      atomic.Pointer[string] // --known-digest's value
	template    atomic.Pointer[string] // --template-db's value
	sharedRoot  string                 // where the template lives (removed by Close)
	sharedLock  *worker.RootClaim
}

// sharedWait bounds how long an attempt waits for the shared serve flags.
const sharedWait = 5 * time.Second

// serveFlags returns the serve flags every attempt's instance gets. The first call
// (the campaign's first attempt) makes nothing shared: it gets the pinned CLIs' known
// digests and ExecutableDigest (made since `run` started), and its instance migrates
// its own database, so that a one-cell campaign does no work for attempts that never
// come. The second call makes the shared flags, once; it and every later call wait
// for them (at most sharedWait, then they get those made so far):
//
//   - --known-digest with the SHA-256 of Executable (the fixture and built-in agents'
//     binary), hashed once per campaign instead of once per serve child (50 ms of
//     CPU for a 40 MB binary). When the binary cannot be hashed, each child hashes
//     it itself and records why it could not.
//   - --template-db with a pre-migrated SQLite template (store.WriteSQLiteTemplate)
//     in a claimed root of its own below TempDir (swept like an attempt root when
//     this process is killed; removed by Close), which each child copies into its
//     new home, checked against the template's schema and digest, instead of
//     migrating a new database. When it cannot be made, each child migrates.
func (x *LocalExecutor) serveFlags() []string {
	flags, _ := x.sharedFlags(true)
	return flags
}

// sharedFlags returns serveFlags' flags. With waitDigest false (an in-process
// instance), a digest of Executable that `run` is still making is not waited for:
// it is left out of the flags and returned as a function that waits for it (bounded,
// sharedWait) for the instance's runner to call when it launches that binary
// (heartbeat.Config.ExecutableDigest), so that an attempt whose agent is another
// binary (a Codex cell) never waits for it. late is nil when the flags carry it.
func (x *LocalExecutor) sharedFlags(waitDigest bool) (flags []string, late func() (api.KnownDigest, bool)) {
	if x.sharedCalls.Add(1) > 1 {
		x.makeShared()
		// Every attempt but the first waits for them (bounded): with several attempts
		// at once, children that each hashed the binary would cost more than the
		// wait.
		t := time.NewTimer(sharedWait)
		select {
		case <-x.sharedDone:
		case <-t.C:
		}
		t.Stop()
	}
	switch g := x.ExecutableDigest; {
	case g == nil:
		if d := x.digest.Load(); d != nil {
			flags = append(flags, "--known-digest", *d)
		}
	case !waitDigest && !g.Made():
		late = func() (api.KnownDigest, bool) { return g.Wait(sharedWait) }
	default:
		if d, ok := g.Wait(sharedWait); ok {
			flags = append(flags, "--known-digest", d.String())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(x.CLIs)) {
		if k := x.CLIs[name].Known; k != nil {
			flags = append(flags, "--known-digest", k.String())
		}
	}
	if t := x.template.Load(); t != nil {
		flags = append(flags, "--template-db", *t)
	}
	return flags, late
}

// makeShared starts making the shared flags' digest and template in the background,
// once; sharedDone is closed when they are made.
func (x *LocalExecutor) makeShared() {
	x.sharedOnce.Do(func() {
		x.sharedDone = make(chan struct{})
		if x.Executable == "" {
			close(x.sharedDone)
			return
		}
		root, err := os.MkdirTemp(cmp.Or(x.StateDir, x.TempDir), worker.AttemptRootPrefix+"shared-")
		if err == nil {
			if x.sharedLock, err = worker.ClaimAttemptRoot(root); err != nil {
				_ = os.RemoveAll(root)
			} else {
				x.sharedRoot = root
			}
		}
		var wg sync.WaitGroup
		if x.sharedRoot != "" {
			wg.Go(func() {
				if t, err := store.WriteSQLiteTemplate(context.Background(), x.sharedRoot); err == nil {
					v := t.String()
					x.template.Store(&v)
				}
			})
		}
		if x.ExecutableDigest == nil {
			wg.Go(func() {
				if d, err := api.HashExecutable(x.Executable); err == nil {
					v := d.String()
					x.digest.Store(&v)
				}
			})
		}
		go func() { wg.Wait(); close(x.sharedDone) }()
	})
}

// Digest is the SHA-256 of an executable being made in the background (StartDigest).
type Digest struct {
	done   chan struct{}
	cancel context.CancelFunc
	d      api.KnownDigest
	err    error
}

// StartDigest starts hashing the executable at path (api.HashExecutable) in the
// background: `run` starts it before it loads the catalog, so that the campaign's first
// attempt finds it made rather than hashing the binary itself on its critical path.
func StartDigest(path string) *Digest {
	ctx, cancel := context.WithCancel(context.Background())
	g := &Digest{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(g.done)
		g.d, g.err = api.HashExecutableContext(ctx, path)
	}()
	return g
}

// Cancel stops the hashing when no attempt will launch the executable (a campaign of
// real agent CLIs only), so that it does not take a core from the attempts: Wait then
// reports false, and an attempt that launches the executable after all hashes it
// itself (heartbeat.Config.ExecutableDigest). A digest already made stays made.
func (g *Digest) Cancel() { g.cancel() }

// Made reports whether hashing has ended (Wait then returns at once).
func (g *Digest) Made() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// Wait returns the digest once made, false when hashing failed or took longer than d.
func (g *Digest) Wait(d time.Duration) (api.KnownDigest, bool) {
	if g.Made() { // a made digest wins over an expired timer (select picks at random)
		return g.d, g.err == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.done:
		return g.d, g.err == nil
	case <-t.C:
		return api.KnownDigest{}, false
	}
}

// Close removes what the attempts shared (the template's root) once it is made.
// Call it after the last attempt ended. Error: the root could not be removed.
func (x *LocalExecutor) Close() error {
	x.sharedOnce.Do(func() {}) // nothing was started: nothing to remove
	if x.sharedDone != nil {
		<-x.sharedDone
	}
	if x.sharedRoot == "" {
		return nil
	}
	err := os.RemoveAll(x.sharedRoot)
	if rerr := x.sharedLock.Release(); err == nil {
		err = rerr
	}
	return err
}

// PinnedCLI is the pinned install of an agent CLI: the absolute path of its native
// binary, the pinned version and the binary's SHA-256 recorded when it was installed
// ("" when unknown), and for a CLI whose entry point is a JavaScript file (Binary) the
// absolute path of the Node.js binary that runs it (Node; "" for a native binary). The
// profile's runtime metadata check compares what the runner recorded launching against
// them. Known is the digest with the file version the install hashed
// (clis.Installed.BinaryFile; nil when not recorded): every instance gets it as a
// known digest, so that a launch of that same file version records it instead of
// hashing the binary again in every attempt (a Codex binary is 300 MB).
type PinnedCLI struct {
	Binary  string
	Version string
	SHA256  string
	Node    string
	Known   *api.KnownDigest
}

// Compile-time check.
var _ campaign.Executor = (*LocalExecutor)(nil)

// errAttemptDeadline is the cause of an attempt context whose deadline passed.
var errAttemptDeadline = errors.New("attempt deadline")

// teardownTimeout bounds observation and teardown of one attempt after its flow (both
// run even when the attempt was cancelled or its deadline passed).
const teardownTimeout = 15 * time.Second

// Stages are the values the stages of one attempt returned, in stage order, and what
// Judge makes the verdict of. A stage that did not run is its zero value.
type Stages struct {
	// Pace says who sets the agent's pace (see Pace): it decides who a missed
	// deadline, a hang or a flood is blamed on.
	Pace        Pace
	Provisioned Provisioned
	Fixtures    Fixtures
	Flow        FlowOutcome
	Observation Observation
	// Verification is the verify stage's (the case's verifier commands).
	Verification Verification
	Grades       Grades
	Teardown     Teardown
	// Panic is a harness fault for a stage that panicked (a bug), or nil.
	Panic *verdict.Fault
	// Interrupted is true when the attempt's context was cancelled before it ended.
	Interrupted bool
}

// secrets is the attempt's most complete secret set so far.
func (s *Stages) secrets() *redact.Set {
	switch {
	case s.Teardown.Secrets != nil:
		return s.Teardown.Secrets
	case s.Fixtures.Secrets != nil:
		return s.Fixtures.Secrets
	case s.Provisioned.Secrets != nil:
		return s.Provisioned.Secrets
	}
	return redact.NewSet()
}

// attempt is what one ExecuteAttempt shares between its stages: the plan, the
// evidence writer (safe for concurrent use) and the flow log (what the harness did,
// written to logs/flow.log at teardown). Stages never write into it beyond those two
// sinks.
type attempt struct {
	plan campaign.AttemptPlan
	ev   *campaign.Evidence
	log  *flowLog
}

// flowLog records what the harness did, as the human, with times.
type flowLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *flowLog) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, time.Now().UTC().Format(time.RFC3339Nano)+" "+fmt.Sprintf(format, args...))
}

func (l *flowLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return strings.Join(l.lines, "\n") + "\n"
}

// ExecuteAttempt implements campaign.Executor: it runs the stages, tears down whatever
// they left (also after a panic, which is a harness fault), and judges.
func (x *LocalExecutor) ExecuteAttempt(ctx context.Context, plan campaign.AttemptPlan) campaign.Outcome {
	a := &attempt{plan: plan, ev: campaign.NewEvidence(filepath.Join(x.ResultsRoot, plan.Dir)), log: &flowLog{}}
	s := &Stages{Pace: PaceOf(plan.Cell.Profile, x.Live)}
	x.runStages(ctx, a, s)
	s.Teardown = x.teardown(ctx, a, s)
	x.held.release(s.Provisioned.held)
	if m := s.Provisioned.Marker; m != "" {
		_ = x.Sentry.Done(m) // teardown swept it
	}
	s.Interrupted = ctx.Err() != nil
	pre := Prejudge(s)
	writeGrading(a, s, pre, x.Live)
	return campaign.Outcome{
		Judgement:        pre.With(s.Grades.Matchers),
		Interrupted:      s.Interrupted,
		CleanupConfirmed: s.Teardown.Confirmed,
		Facts:            facts(s),
		Evidence:         a.ev,
		Secrets:          s.secrets(),
	}
}

// runStages runs provision, fixtures, flow, observe and grade, each only when the
// stage before it left something to work on, under the attempt's deadline (observe
// and grade have their own bound, so that a slow attempt's evidence is still kept). A
// panic stops the stages and is recorded as a harness fault.
func (x *LocalExecutor) runStages(ctx context.Context, a *attempt, s *Stages) {
	defer func() {
		if r := recover(); r != nil {
			s.Panic = verdict.HarnessFault(fmt.Errorf("harness panic: %v", r), false)
		}
	}()
	actx, cancel := context.WithTimeoutCause(ctx, a.plan.AttemptTimeout, errAttemptDeadline)
	defer cancel()
	s.Provisioned = x.provision(actx, a)
	if s.Provisioned.Fault != nil {
		return
	}
	s.Fixtures = x.setupFixtures(actx, a, &s.Provisioned)
	if s.Fixtures.Fault != nil || s.Fixtures.TaskID == "" {
		return
	}
	s.Flow = x.playFlow(actx, a, &s.Provisioned, &s.Fixtures)
	octx, ocancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer ocancel()
	s.Observation = x.observe(octx, a, &s.Provisioned, &s.Fixtures, &s.Flow)
	if s.Observation.Match == nil {
		return
	}
	// The verifier runs after the agent's last turn, on its own deadlines (an
	// interruption of the campaign stops it: ctx), before grading.
	s.Verification = x.verify(ctx, a, &s.Provisioned, s.secrets())
	obs := *s.Observation.Match
	obs.Verifiers, obs.HasVerifiers = s.Verification.Steps, s.Verification.Ran
	s.Grades = grade(a.plan, &obs, x.expectations(a.plan))
}

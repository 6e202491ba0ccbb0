// Package heartbeat is the heartbeat runner of the control-plane server
// (docs/ARCHITECTURE.md "Data flow", "Observed facts"): it turns scheduled wakes into
// bounded agent runs and records what it launched.
//
// For every company whose lifecycle is running, the runner takes the scheduled wakes in
// due order (DueAt, then schedule order; the control plane's fixture clock is not wall
// time, so DueAt orders wakes and does not delay them). A wake is the runner's when its actor's
// adapterConfig names a driver (AgentConfig) and the actor's environment is local. For
// such a wake it opens (atomically checks out) the run "hb-<company>-<wakeId>" with the
// wake, mints the run token, resolves the secret references of the agent's and the
// environment's env into values that exist only in the child's environment, and
// launches the agent's driver (package agent) through worker.Supervise in the workspace:
// one process per run (lifecycle per_turn), bounded time and output, explicit
// environment, no shell, its own process group. When the process exits and the run is
// still running, the runner completes it: cancelled after a Stop, otherwise with the
// driver's verdict (failed for every agent that talks to the API; a fixture program's
// clean exit is succeeded). Every run leaves a durable Record (api.HeartbeatRun):
// termination summary, redacted bounded stdout/stderr as evidence, times, usage, and
// the launch facts (api.LaunchFacts, launch.go): the driver, the binary's path,
// SHA-256 and version, the argv shape, the runtime mode, the environment and target,
// the pid and its start time.
//
// Delivery is durable without a second source of truth: the run id is derived from
// the wake id, so a wake is delivered exactly when the control plane holds its run (the
// open_run journal entry), and wakes that can never run (obsolete, refused checkout)
// are noted in files. Concurrency is bounded (Config.MaxConcurrent) and a company runs
// at most one run at a time.
//
// Restart: records are written before the checkout and before the launch. A record
// found "opening" or "launching" at start-up means the server stopped while the run's
// process may have been running. Its process cannot be running any more (the worker
// starts children with Pdeathsig SIGKILL and in their own process group; a
// server killed with SIGKILL takes them down with it), and the runner cannot know how far
// the agent got, so it never relaunches it: its home is saved from its baseline and the
// run is completed as interrupted with the reason "orphaned" (State RunOrphaned); Retry
// (Runner.Retry, board operation retry_run) starts a new run bound to it (retryOf).
//
// Agent homes (home.go, docs/files.md): every run but a fixture program's gets
// AGENT_HOME, materialised from the control plane's managed files before the launch and
// saved (a receipt; conflicts kept, never overwritten) after it. Stop and Retry take an
// Idempotency-Key, remembered with their response. A record
// "opening" whose run does not exist was never checked out: its wake is simply taken
// again.
//
// Stop (the correlated Stop of a native run) is Runner.Cancel: the intent is decided
// (DecideStop) and written into the run's record under the run's lock before the
// process's context is cancelled, which makes worker.Supervise send SIGTERM to the
// process group and SIGKILL after worker.TerminateGrace.
package heartbeat

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentproof/agentproof/workspace/watch"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/providers"
	"github.com/agentproof/agentproof/loginfile"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
)

// Company is one company's control plane as the runner uses it;
// controlplane/store.Company implements it.
type Company interface {
	Snapshot(ctx context.Context) (controlplane.State, error)
	OpenFixtureRun(ctx context.Context, in controlplane.OpenInput) (controlplane.RunContext, error)
	AppendEvent(ctx context.Context, event json.RawMessage) (controlplane.Receipt, error)
	CompleteRun(ctx context.Context, input json.RawMessage) error
	// ApplyBoard applies a board operation (the Retry route).
	ApplyBoard(ctx context.Context, op controlplane.BoardOp) (controlplane.BoardResult, error)
	// ApplyCommand applies a semantic command as a run (a Pi run's native questions,
	// pi_question.go).
	ApplyCommand(ctx context.Context, env controlplane.CommandEnvelope) (controlplane.CommandResult, error)
	// PutBlob, Blob, HasBlob and SaveHome keep agent homes (home.go).
	PutBlob(ctx context.Context, in controlplane.BlobPut) (controlplane.BlobRef, error)
	Blob(ctx context.Context, sha256 string) ([]byte, error)
	HasBlob(ctx context.Context, sha256 string) (int64, bool, error)
	SaveHome(ctx context.Context, in controlplane.HomeSave) (controlplane.HomeReceipt, error)
}

// versioned is a Company whose state has a version (store.Company.Version): an
// unchanged version means an unchanged state, so the runner need not look at a company
// again whose state it found nothing to take in (scan).
type versioned interface{ Version() int64 }

// stateReader is a Company whose state can be read in place (store.Company.Read): the
// runner first checks there for a wake it could take before it copies the state.
type stateReader interface {
	Read(ctx context.Context, read func(st *controlplane.State)) error
}

// Host is what the runner needs from the server: the companies, run tokens, secret
// resolution (values in process only) and the agent API's URL of a company.
type Host interface {
	// Companies lists the instance's company ids in creation order.
	Companies() []string
	// Company returns company id, false when it does not exist.
	Company(id string) (Company, bool)
	// MintAgentToken returns the bearer token of run for actor in company.
	MintAgentToken(company, actor, run string) string
	// ResolveSecret returns the value ref points to; errors never contain the value.
	ResolveSecret(ctx context.Context, company string, ref api.SecretRef) (string, error)
	// AgentAPIURL is the base URL of company's agent routes
	// (http://host:port/api/companies/<company>).
	AgentAPIURL(company string) string
}

// Config configures a Runner.
//
//   - Dir: where records and evidence live (created 0700), normally <home>/heartbeat.
//   - Home: the instance home; default workspaces are Home/workspaces/<company> and
//     agent state directories Home/agents/<company>/<actor>.
//   - Executable: absolute path of the agentproof binary the built-in and fixture
//     drivers run.
//   - MaxConcurrent: runs in flight at once over all companies (default 4).
//   - PollInterval: how often due wakes are looked for without a Kick (default 200 ms).
//   - Now: wall clock for record times (default time.Now).
//   - ProcessMarker: an extra process marker (worker.NewMarker) every agent process
//     carries besides its run's own, for example the attempt's, so that the caller
//     can sweep escaped descendants with worker.SweepMarked after the server is gone
//     ("" for none).
//   - KnownDigests: SHA-256 digests of executable file versions the caller observed
//     (api.KnownDigest); a launch of a matching file version that needs no version
//     probe records that digest instead of hashing the file again.
//   - ExecutableDigest: the digest of Executable when the caller was still making it
//     as the runner started (nil: none): consulted only for a launch of Executable
//     whose file version matches none of KnownDigests, so that a run of another
//     binary (an agent CLI) never waits for it. It may block; the caller bounds it
//     (false: no digest, the file is hashed).
//   - OnChange: called (without blocking; nil for none) after every update of a
//     record the board sees, so that the server can wake its change waits.
//   - Ephemeral: the instance home is thrown away with its instance (an attempt's
//     home, server.Options.Ephemeral): records, logs and materialised agent-home files
//     are written atomically but not fsynced (atomicfile.NoSync).
type Config struct {
	Dir              string
	Home             string
	Executable       string
	MaxConcurrent    int
	PollInterval     time.Duration
	Now              func() time.Time
	ProcessMarker    string
	KnownDigests     []api.KnownDigest
	ExecutableDigest func() (api.KnownDigest, bool)
	OnChange         func()
	Ephemeral        bool
	// PiTools are the semantic tools a session protocol registers in the agent itself
	// (an rpc:pi run's extension proxies them to `agentproof mcp`; package mcp's Tools,
	// supplied by the command that serves: this package cannot import mcp). Empty: Pi
	// runs get no semantic tools.
	PiTools []agent.PiTool
}

// Runner is the heartbeat runner. Create it with New, start it with Start, stop it
// with Shutdown before the store closes.
type Runner struct {
	host Host
	cfg  Config
	rec  records

	mu       sync.Mutex
	runs     map[string]*Record     // run id → record (copies handed out)
	order    []string               // run ids in the order they were taken
	locks    map[string]*sync.Mutex // run id → the run's lock
	live     map[string]context.CancelFunc
	busy     map[string]bool              // company → a run in flight
	idle     map[string]int64             // company → the state version at which scan last found nothing to take
	skipped  map[string]map[string]string // company → wake id → reason
	inflight int
	bins     binaries // launched executables' facts, per file version

	warm     map[string]*warmSession // company/actor → its warm session (warm.go); guarded by mu
	steering map[string]*liveTurn    // run id → its running turn that can be steered (steer.go); guarded by mu

	pmu       sync.Mutex                // guards perms and permOrder (permission.go)
	perms     map[string]*permission    // permission id → permission interaction
	permOrder []string                  // permission ids in the order they were asked
	wmu       sync.Mutex                // guards watching
	watching  map[string]*watch.Watcher // run id → the workspace watcher of its running turn (session.go)

	kick     chan struct{}
	base     context.Context
	stopBase context.CancelFunc
	loopDone chan struct{}
	wg       sync.WaitGroup
	started  bool
}

// New loads the records in cfg.Dir and returns a runner that is not started yet.
// Errors: missing Dir/Home/Executable, unreadable records.
func New(host Host, cfg Config) (*Runner, error) {
	var p []string
	if cfg.Dir == "" || !filepath.IsAbs(cfg.Dir) {
		p = append(p, "an absolute records directory is required")
	}
	if cfg.Home == "" || !filepath.IsAbs(cfg.Home) {
		p = append(p, "an absolute instance home is required")
	}
	if !filepath.IsAbs(cfg.Executable) {
		p = append(p, "the absolute path of the agentproof executable is required")
	}
	if cfg.ProcessMarker != "" && !worker.ValidMarker(cfg.ProcessMarker) {
		p = append(p, "the process marker must be a marker token (8-64 of [a-z0-9-])")
	}
	if len(p) > 0 {
		return nil, fmt.Errorf("heartbeat: %v", p)
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 4
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 200 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("heartbeat: creating %s: %w", cfg.Dir, err)
	}
	r := &Runner{host: host, cfg: cfg, rec: records{dir: cfg.Dir, ephemeral: cfg.Ephemeral}, runs: map[string]*Record{}, locks: map[string]*sync.Mutex{},
		live: map[string]context.CancelFunc{}, busy: map[string]bool{}, idle: map[string]int64{}, kick: make(chan struct{}, 1), loopDone: make(chan struct{}),
		perms: map[string]*permission{}, watching: map[string]*watch.Watcher{}, warm: map[string]*warmSession{}, steering: map[string]*liveTurn{}}
	all, err := r.rec.loadAll()
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(all, func(a, b *Record) int { return cmp.Compare(a.WakeObservedAt, b.WakeObservedAt) })
	for _, rec := range all {
		r.runs[rec.RunID] = rec
		r.order = append(r.order, rec.RunID)
	}
	if r.skipped, err = r.rec.loadSkipped(); err != nil {
		return nil, err
	}
	if err := r.loadPermissions(r.order); err != nil {
		return nil, err
	}
	return r, nil
}

// RunID is the id of the run that carries wake wakeID of company.
func RunID(company, wakeID string) string { return "hb-" + company + "-" + wakeID }

// Start recovers the runs a previous server left open (see the package doc) and starts
// taking wakes. Errors: recovery could not read or complete a run.
func (r *Runner) Start(ctx context.Context) error {
	if err := r.recover(ctx); err != nil {
		return err
	}
	r.base, r.stopBase = context.WithCancel(context.Background())
	r.started = true
	go r.loop()
	r.Kick()
	return nil
}

// Kick makes the runner look for due wakes now (the server calls it after every
// state-changing request).
func (r *Runner) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Shutdown stops taking wakes, stops every running agent process (SIGTERM, then
// SIGKILL), waits until their runs are completed and recorded and then retires every
// warm session (warm.go), or until ctx ends.
func (r *Runner) Shutdown(ctx context.Context) error {
	if !r.started {
		return nil
	}
	r.stopBase()
	<-r.loopDone
	done := make(chan struct{})
	go func() { r.wg.Wait(); r.retireAllWarm(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("heartbeat: runs still finishing at shutdown: %w", ctx.Err())
	}
}

func (r *Runner) loop() {
	defer close(r.loopDone)
	t := time.NewTicker(r.cfg.PollInterval)
	defer t.Stop()
	for {
		r.scan(r.base)
		select {
		case <-r.base.Done():
			return
		case <-r.kick:
		case <-t.C:
		}
	}
}

func (r *Runner) now() string { return stamp(r.cfg.Now()) }

// stamp formats a wall-clock time for records: RFC 3339 UTC with microseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// Run returns a copy of run id's record.
func (r *Runner) Run(id string) (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.runs[id]
	if !ok {
		return Record{}, false
	}
	return cloneRecord(rec), true
}

// Runs returns copies of company's records in the order their wakes were taken.
func (r *Runner) Runs(company string) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Record{}
	for _, id := range r.order {
		if rec := r.runs[id]; rec.CompanyID == company {
			out = append(out, cloneRecord(rec))
		}
	}
	return out
}

func cloneRecord(rec *Record) Record {
	c := *rec
	c.Evidence = slices.Clone(rec.Evidence)
	c.Usage = slices.Clone(rec.Usage)
	if rec.Termination != nil {
		t := *rec.Termination
		t.SignalsSent = slices.Clone(t.SignalsSent)
		t.EscapedProcesses = slices.Clone(t.EscapedProcesses)
		if t.EventStreamComplete != nil {
			complete := *t.EventStreamComplete
			t.EventStreamComplete = &complete
		}
		c.Termination = &t
	}
	if rec.Cancellation != nil {
		in := *rec.Cancellation
		c.Cancellation = &in
	}
	c.IdempotentStops = slices.Clone(rec.IdempotentStops)
	if rec.Launch != nil {
		l := *rec.Launch
		l.Argv, l.Problems = slices.Clone(l.Argv), slices.Clone(l.Problems)
		c.Launch = &l
	}
	return c
}

// put stores rec durably, then in memory. The caller holds the run's lock.
func (r *Runner) put(rec *Record) error {
	r.normalize(rec)
	if err := r.rec.save(rec); err != nil {
		return err
	}
	r.remember(rec)
	return nil
}

func (r *Runner) normalize(rec *Record) {
	if rec.Evidence == nil {
		rec.Evidence = []api.EvidenceRef{}
	}
	if len(rec.Usage) == 0 {
		rec.Usage = json.RawMessage("null")
	}
}

// remember keeps rec in memory only: a state the board may see but a restart need not
// (a restart derives it from the control plane, see recover). The caller holds the
// run's lock.
func (r *Runner) remember(rec *Record) {
	r.normalize(rec)
	c := cloneRecord(rec)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.runs[rec.RunID]; !ok {
		r.order = append(r.order, rec.RunID)
	}
	r.runs[rec.RunID] = &c
	if r.cfg.OnChange != nil {
		r.cfg.OnChange()
	}
}

func (r *Runner) runLock(id string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.locks[id]
	if l == nil {
		l = &sync.Mutex{}
		r.locks[id] = l
	}
	return l
}

// job is one wake the runner takes.
type job struct {
	company string
	c       Company
	wake    controlplane.ScheduledWake
	state   controlplane.State // snapshot the wake was picked from
	actor   *controlplane.Actor
	task    *controlplane.Task
	env     *controlplane.Environment
	cfg     api.AdapterConfig
	cfgErr  error
	resume  bool
	retryOf string // the run a retry wake retries
	runID   string
	seenAt  string
}

// scan takes due wakes while capacity lasts.
func (r *Runner) scan(ctx context.Context) {
	for _, id := range r.host.Companies() {
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		full, busy := r.inflight >= r.cfg.MaxConcurrent, r.busy[id]
		r.mu.Unlock()
		if full {
			return
		}
		if busy {
			continue
		}
		c, ok := r.host.Company(id)
		if !ok {
			continue
		}
		// A company whose state has not changed since a look found nothing to take
		// has nothing now either (what pick reads beyond the state, the skipped wakes,
		// only grows): no snapshot. The version is read before the snapshot, so the
		// one remembered is never newer than the state looked at.
		v, hasVersion := c.(versioned)
		var ver int64
		if hasVersion {
			ver = v.Version()
			r.mu.Lock()
			idle, seen := r.idle[id]
			r.mu.Unlock()
			if seen && idle == ver {
				continue
			}
		}
		var j job
		ok = r.mayTake(ctx, id, c)
		if ok {
			st, err := c.Snapshot(ctx)
			if err != nil {
				continue
			}
			ok = false
			if st.Lifecycle == controlplane.LifecycleRunning {
				j, ok = r.pick(ctx, id, c, st)
			}
		}
		if !ok {
			if hasVersion {
				r.mu.Lock()
				r.idle[id] = ver
				r.mu.Unlock()
			}
			continue
		}
		r.mu.Lock()
		r.busy[id] = true
		r.inflight++
		r.mu.Unlock()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.execute(ctx, j)
			r.mu.Lock()
			delete(r.busy, id)
			r.inflight--
			r.mu.Unlock()
			r.Kick()
		}()
	}
}

// mayTake reports whether company may have a wake to take: it is running and has a
// scheduled wake without a run that was not skipped. pick takes a wake only among
// those, so a false answer spares the copy of the state pick needs. It reads the
// state in place when c allows (stateReader); otherwise, or when the read fails, it
// answers true (pick decides).
func (r *Runner) mayTake(ctx context.Context, company string, c Company) bool {
	rd, ok := c.(stateReader)
	if !ok {
		return true
	}
	r.mu.Lock()
	skipped := maps.Clone(r.skipped[company])
	r.mu.Unlock()
	may := false
	err := rd.Read(ctx, func(st *controlplane.State) {
		if st.Lifecycle != controlplane.LifecycleRunning {
			return
		}
		for _, w := range st.Wakes {
			if w.Status != controlplane.WakeScheduled || skipped[w.ID] != "" {
				continue
			}
			runID := RunID(company, w.ID)
			if !slices.ContainsFunc(st.Runs, func(run *controlplane.Run) bool { return run.ID == runID }) {
				may = true
				return
			}
		}
	})
	return err != nil || may
}

// pick returns the first due wake of company the runner should take now.
func (r *Runner) pick(ctx context.Context, company string, c Company, st controlplane.State) (job, bool) {
	runs := map[string]bool{}
	for _, run := range st.Runs {
		runs[run.ID] = true
	}
	actors := map[string]*controlplane.Actor{}
	for _, a := range st.Actors {
		actors[a.ID] = a
	}
	tasks := map[string]*controlplane.Task{}
	for _, t := range st.Tasks {
		tasks[t.ID] = t
	}
	wakes := slices.Clone(st.Wakes)
	slices.SortStableFunc(wakes, func(a, b *controlplane.ScheduledWake) int { return cmp.Compare(a.DueAt, b.DueAt) })
	r.mu.Lock()
	skipped := maps.Clone(r.skipped[company])
	r.mu.Unlock()
	for _, w := range wakes {
		runID := RunID(company, w.ID)
		if w.Status != controlplane.WakeScheduled || runs[runID] || skipped[w.ID] != "" {
			continue
		}
		a := actors[w.ActorID]
		if a == nil {
			continue
		}
		cfg, mine, cfgErr := parseAgentConfig(a.AdapterConfig)
		if !mine {
			continue
		}
		env := environmentOf(st, cfg.EnvironmentID)
		if env == nil || !runnerEnvironment(env) {
			continue // not a local or sandbox agent: another runner's wake
		}
		t := tasks[w.TaskID]
		if t == nil {
			r.skipWake(company, w.ID, "the wake's task does not exist")
			continue
		}
		if t.CheckoutRunID != nil {
			continue // checked out by a run in flight: the wake waits
		}
		resume := false
		if t.Status.Terminal() {
			if w.Reason != controlplane.WakeIssueCommented {
				r.skipWake(company, w.ID, fmt.Sprintf("the task is %s and the wake (%s) is not a follow-up", t.Status, w.Reason))
				continue
			}
			resume = true
		}
		if a.Status != controlplane.ActorActive {
			r.skipWake(company, w.ID, "the agent is "+string(a.Status))
			continue
		}
		var retryOf string
		if w.Reason == controlplane.WakeRetry {
			var p struct {
				RetryOf string `json:"retryOf"`
			}
			_ = json.Unmarshal(w.Payload, &p)
			retryOf = p.RetryOf
		}
		return job{company: company, c: c, wake: *w, state: st, actor: a, task: t, env: env, cfg: cfg, cfgErr: cfgErr,
			resume: resume, retryOf: retryOf, runID: runID, seenAt: r.now()}, true
	}
	return job{}, false
}

// environmentOf returns the environment id, or the company's local one for "".
func environmentOf(st controlplane.State, id string) *controlplane.Environment {
	for _, e := range st.Environments {
		if (id == "" && e.Kind == controlplane.LocalEnvironment) || (id != "" && e.ID == id) {
			return e
		}
	}
	return nil
}

func (r *Runner) skipWake(company, wakeID, reason string) {
	_ = r.rec.skip(skippedWake{CompanyID: company, WakeID: wakeID, Reason: reason, At: r.now()})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.skipped[company] == nil {
		r.skipped[company] = map[string]string{}
	}
	r.skipped[company][wakeID] = reason
}

// launch is what execute prepared for the process: the driver, the agent's own spec
// (agentSpec, what the launch facts describe) and the spec worker.Supervise runs
// (spec: the same for a local agent; for a sandbox lease the provider's bubblewrap,
// whose Settle gives back the agent's own outcome, in leased).
type launch struct {
	driver    agent.Driver
	agentSpec worker.Spec
	spec      worker.Spec
	leased    environment.Launched
	secrets   *redact.Set
	stateDir  string
	home      *homeBaseline // the materialised AGENT_HOME; nil for a fixture program
}

// execute carries one wake through open, launch, supervision and completion.
func (r *Runner) execute(ctx context.Context, j job) {
	lock := r.runLock(j.runID)
	lock.Lock()
	rec := &Record{Schema: api.HeartbeatRunSchema, RunID: j.runID, CompanyID: j.company, ActorID: j.actor.ID, TaskID: j.task.ID,
		WakeID: j.wake.ID, WakeReason: j.wake.Reason, Driver: j.cfg.Driver, State: api.RunOpening, WakeObservedAt: j.seenAt}
	r.remember(rec)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.mu.Lock()
	r.live[j.runID] = cancel
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.live, j.runID)
		r.mu.Unlock()
	}()
	in := controlplane.OpenInput{
		Identity:    controlplane.Identity{RunID: j.runID, SessionID: "session-" + j.runID, CompanyID: j.state.Company.ID, IssueID: j.task.ID, AgentID: j.actor.ID},
		BackendKind: "agentproof-runner", SourceInstanceID: "agentproof-runner",
		Wake: &controlplane.Wake{Reason: j.wake.Reason, Payload: j.wake.Payload}, Resume: j.resume, RetryOf: j.retryOf,
	}
	rc, err := j.c.OpenFixtureRun(context.WithoutCancel(ctx), in)
	if err != nil {
		rec.State, rec.Reason = api.RunNotOpened, "checkout refused: "+err.Error()
		if controlplane.CodeOf(err) != "" && !controlplane.IsRetryable(err) {
			r.skipWake(j.company, j.wake.ID, rec.Reason)
		}
		_ = r.put(rec)
		lock.Unlock()
		return
	}
	rec.OpenedAt, rec.Status = r.now(), controlplane.RunRunning
	if j.cfg.Driver.SessionLayer() {
		r.executeSession(ctx, runCtx, j, rc, rec, lock) // unlocks lock
		return
	}
	r.executeProcess(ctx, runCtx, j, rc, rec, lock) // unlocks lock
}

// executeProcess carries an opened run of a one-process-per-run driver (every driver
// but the session drivers) through launch, supervision and completion. lock (the run's,
// held on entry) is released while the process runs, so that Stop can reserve its
// intent, and held again to complete the run.
func (r *Runner) executeProcess(ctx, runCtx context.Context, j job, rc controlplane.RunContext, rec *Record, lock *sync.Mutex) {
	l, prepErr := r.prepare(ctx, j, rc, rec)
	if prepErr != nil {
		o := worker.Outcome{SpawnError: prepErr}
		r.finish(j.c, rec, o, agent.Report{Summary: "not started: " + prepErr.Error(), RunStatus: controlplane.RunFailed}, nil, nil)
		lock.Unlock()
		return
	}
	rec.State = api.RunLaunching
	r.remember(rec)
	lock.Unlock() // Stop may now reserve its intent and cancel runCtx

	facts, observed := r.launchFacts(j, l.agentSpec, l.secrets)
	startedAt := r.watchStart(j.runID, &l.spec, facts)
	o, err := worker.Supervise(runCtx, l.spec)
	endedAt := r.cfg.Now()
	if err != nil {
		o = worker.Outcome{SpawnError: err}
	}
	var settled *environment.Settled
	if l.leased != nil {
		st := l.leased.Settle(o) // the agent's own exit, the limits it hit
		settled, o = &st, st.Outcome
	}
	observed() // the binary's digest and version (bounded), before taking the run's lock
	lock.Lock()
	defer lock.Unlock()
	if l.home != nil {
		r.recordSave(context.WithoutCancel(ctx), j.c, rec, *l.home)
	}
	r.joinStop(rec)
	if o.Started {
		rec.ProcessStartedAt = stamp(*startedAt)
		rec.ProcessEndedAt = stamp(endedAt)
		rec.Launch = facts
	}
	report := l.driver.Report(o)
	if !o.Started && report.Summary == "" {
		report.Summary = agent.Summarize(o)
	}
	if _, isCLI := j.cfg.Driver.CLI(); isCLI && report.Presentation == nil {
		// A real CLI presents through the MCP server, which records the presented
		// comment in the agent's state directory (see agent.ReadPresentation).
		if p, err := agent.ReadPresentation(l.stateDir, rec.RunID); err == nil && p != nil {
			report.Presentation = &agent.Presentation{CommentID: p.CommentID, Text: p.Text}
		} else if err != nil {
			report.Summary += "; presentation record unreadable: " + err.Error()
		}
	}
	r.finish(j.c, rec, o, report, l.secrets, settled)
}

// joinStop copies into rec what Stop wrote into the run's record meanwhile (the
// cancellation intent, the idempotent Stop requests). The caller holds the run's lock.
func (r *Runner) joinStop(rec *Record) {
	if cur, ok := r.Run(rec.RunID); ok {
		if cur.Cancellation != nil {
			rec.Cancellation = cur.Cancellation
		}
		rec.IdempotentStops = cur.IdempotentStops
	}
}

// watchStart sets spec's start hooks: BeforeStart notes when the process starts,
// AfterStart its pid and start time (into facts). Both show in the run's in-memory
// record at once (no I/O in the launch window), so that a human can positively
// identify the running process; the durable record gets them when the process ends.
// The returned time is the start, once the process started.
func (r *Runner) watchStart(runID string, spec *worker.Spec, facts *api.LaunchFacts) *time.Time {
	spec.AfterStart = func(pid int) {
		facts.PID = pid
		ticks, err := procStartTicks(pid)
		if err != nil {
			facts.Problems = append(facts.Problems, "the process start time could not be read: "+err.Error())
		}
		facts.ProcessStartTicks = ticks
		r.mu.Lock()
		if cur := r.runs[runID]; cur != nil && cur.Launch == nil {
			cur.Launch = &api.LaunchFacts{PID: pid, ProcessStartTicks: ticks}
		}
		r.mu.Unlock()
	}
	startedAt := new(time.Time)
	spec.BeforeStart = func() error {
		*startedAt = r.cfg.Now()
		r.mu.Lock()
		if cur := r.runs[runID]; cur != nil {
			cur.ProcessStartedAt = stamp(*startedAt)
		}
		r.mu.Unlock()
		return nil
	}
	return startedAt
}

// prepare resolves the driver, workspace, state directory, AGENT_HOME and secrets and
// builds the process spec. Its errors never contain a secret value.
func (r *Runner) prepare(ctx context.Context, j job, rc controlplane.RunContext, rec *Record) (launch, error) {
	env, secrets, lease, err := r.prepareEnv(ctx, j, rec)
	if err != nil {
		return launch{}, err
	}
	var dc api.DriverConfig
	if j.cfg.DriverConfig != nil {
		dc = *j.cfg.DriverConfig
	}
	d, err := agent.New(j.cfg.Driver, dc)
	if err != nil {
		return launch{}, err
	}
	stateDir := env.StateDir
	_, fixture := j.cfg.Driver.Fixture()
	var home *homeBaseline
	if !fixture { // a fixture program's environment is fixed (worker.ChildEnvironment): no AGENT_HOME
		dir := r.HomeDir(j.company, j.actor.ID)
		if lease != nil { // nothing of the server home is bound into a sandbox or container
			if dir, err = leaseDiskDir(lease, "home-"+j.actor.ID); err != nil {
				return launch{}, fmt.Errorf("creating AGENT_HOME on lease %s: %w", lease.ID, err)
			}
		}
		b, err := r.materialise(ctx, j.c, j.actor.ID, dir)
		if err != nil {
			return launch{}, fmt.Errorf("materialising AGENT_HOME: %w", err)
		}
		if err := r.rec.putBaseline(j.runID, b); err != nil {
			return launch{}, fmt.Errorf("recording the AGENT_HOME baseline: %w", err)
		}
		home = &b
		rec.AgentHome = b.Dir
		env.AgentHome = home.Dir
	}
	spec, err := d.Launch(rc, env)
	if err != nil {
		return launch{}, err
	}
	if !fixture {
		// Escaped descendants are found by this marker and killed at teardown.
		spec.Marker = worker.NewMarker()
		if r.cfg.ProcessMarker != "" {
			spec.ExtraMarkers = []string{r.cfg.ProcessMarker}
		}
	}
	l := launch{driver: d, agentSpec: spec, spec: spec, secrets: secrets, stateDir: stateDir, home: home}
	if lease != nil {
		if l.leased, err = launchLeased(ctx, lease, j.cfg.Driver, spec, stateDir, env.AgentHome); err != nil {
			return launch{}, err
		}
		l.spec = l.leased.Spec()
	}
	return l, nil
}

// prepareEnv resolves what every driver's launch needs: the environment's lease (nil
// unless the environment is a sandbox), the workspace (created; also set in rec), the
// agent's state directory (on the lease disk under a sandbox), the run token and the
// resolved secrets (the RunEnv, without AGENT_HOME), and the secret set to redact (the
// token and every resolved secret). Its errors never contain a secret value.
func (r *Runner) prepareEnv(ctx context.Context, j job, rec *Record) (agent.RunEnv, *redact.Set, *environment.Lease, error) {
	if j.cfgErr != nil {
		return agent.RunEnv{}, nil, nil, j.cfgErr
	}
	var envCfg environmentConfig
	if len(j.env.Config) > 0 {
		if err := json.Unmarshal(j.env.Config, &envCfg); err != nil {
			return agent.RunEnv{}, nil, nil, fmt.Errorf("environment %s config: %w", j.env.ID, err)
		}
	}
	var dc api.DriverConfig
	if j.cfg.DriverConfig != nil {
		dc = *j.cfg.DriverConfig
	}
	var lease *environment.Lease
	var err error
	if environment.ProviderName(j.env.Kind).Leased() {
		if lease, err = environment.ReadLeaseFile(envCfg.Lease); err != nil {
			return agent.RunEnv{}, nil, nil, fmt.Errorf("environment %s: %w", j.env.ID, err)
		}
	}
	workspace, err := r.runWorkspace(j, envCfg, lease)
	if err != nil {
		return agent.RunEnv{}, nil, nil, err
	}
	rec.Workspace = workspace
	stateDir := filepath.Join(r.cfg.Home, "agents", j.company, j.actor.ID)
	if lease != nil {
		// Nothing of the server home is bound into a sandbox: the agent's state lives on
		// the lease's disk, under its cap (docs/environments.md "Where a lease lives").
		if stateDir, err = leaseDiskDir(lease, "agent-"+j.actor.ID); err != nil {
			return agent.RunEnv{}, nil, nil, fmt.Errorf("creating the agent state directory on lease %s: %w", lease.ID, err)
		}
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return agent.RunEnv{}, nil, nil, fmt.Errorf("creating the agent state directory: %w", err)
	}
	envVars, err := envValues(envCfg.EnvVars, "envVars")
	if err != nil {
		return agent.RunEnv{}, nil, nil, fmt.Errorf("environment %s envVars: %w", j.env.ID, err)
	}
	vars := map[string]api.EnvValue{}
	maps.Copy(vars, envVars) // later sources win: agent over environment
	maps.Copy(vars, j.cfg.Env)
	maps.Copy(vars, dc.Env)
	token := r.host.MintAgentToken(j.company, j.actor.ID, j.runID)
	secrets := redact.NewSet(token)
	resolved := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		v := vars[name]
		if v.Ref == nil {
			resolved[name] = v.Value
			continue
		}
		val, err := r.host.ResolveSecret(ctx, j.company, *v.Ref)
		if err != nil {
			return agent.RunEnv{}, nil, nil, fmt.Errorf("resolving the secret of %s: %w", name, err)
		}
		resolved[name] = val
		secrets = secrets.With(val)
	}
	var home string
	if j.cfg.LoginHome {
		if home, err = r.loginHome(j, lease); err != nil {
			return agent.RunEnv{}, nil, nil, err
		}
	}
	return agent.RunEnv{Executable: r.cfg.Executable, Workspace: workspace, APIURL: r.host.AgentAPIURL(j.company),
		RunID: j.runID, RunToken: token, StateDir: stateDir, Secrets: resolved, AdapterConfig: j.cfg.Builtin, ServerHome: r.cfg.Home, Home: home}, secrets, lease, nil
}

// runWorkspace is the run's workspace, created (mode 0700): the adapter's cwd, else the
// environment's workspace, else the lease's, else the company's directory under the
// server home. Errors: a relative path; the directory cannot be created.
func (r *Runner) runWorkspace(j job, envCfg environmentConfig, lease *environment.Lease) (string, error) {
	workspace := j.cfg.Cwd
	if workspace == "" {
		workspace = envCfg.Workspace
	}
	if workspace == "" && lease != nil {
		workspace = lease.Workspace
	}
	if workspace == "" {
		workspace = filepath.Join(r.cfg.Home, "workspaces", j.company)
	}
	if !filepath.IsAbs(workspace) {
		return "", fmt.Errorf("workspace %q must be an absolute path", workspace)
	}
	if err := os.MkdirAll(workspace, 0o700); err != nil {
		return "", fmt.Errorf("creating the workspace: %w", err)
	}
	return workspace, nil
}

// loginHome is the HOME of an agent whose adapter configuration sets loginHome: the
// company-scoped HOME a login file was seeded into (loginfile.CompanyHome of the
// instance home), which must be a directory of mode 0700 and no symbolic link. Only an
// exec agent in a local environment takes one (a sandbox binds nothing of the instance
// home; the other drivers keep a HOME of their own). docs/secrets.md "Login files".
func (r *Runner) loginHome(j job, lease *environment.Lease) (string, error) {
	if j.cfg.Driver.Kind != driver.KindExec {
		return "", fmt.Errorf("adapterConfig loginHome: driver %s does not launch with a login HOME (exec only)", j.cfg.Driver)
	}
	if lease != nil {
		return "", fmt.Errorf("adapterConfig loginHome: environment %s is a %s, which binds nothing of the instance home", j.env.ID, lease.Provider)
	}
	home, err := loginfile.CompanyHome(r.cfg.Home, j.company)
	if err != nil {
		return "", fmt.Errorf("adapterConfig loginHome: %w", err)
	}
	fi, err := os.Lstat(home)
	switch {
	case err != nil:
		return "", fmt.Errorf("adapterConfig loginHome: the company's login HOME %s: %w", home, err)
	case fi.Mode()&os.ModeSymlink != 0:
		return "", fmt.Errorf("adapterConfig loginHome: the company's login HOME %s is a symbolic link", home)
	case !fi.IsDir() || fi.Mode().Perm() != 0o700:
		return "", fmt.Errorf("adapterConfig loginHome: the company's login HOME %s is not a directory of mode 0700 (%s)", home, fi.Mode())
	}
	return home, nil
}

// runnerEnvironment reports whether the runner launches agents of control-plane
// environment e: the instance's local environment, or a sandbox environment whose
// config names the campaign's lease file.
func runnerEnvironment(e *controlplane.Environment) bool {
	return e.Kind == controlplane.LocalEnvironment || environment.ProviderName(e.Kind).Leased()
}

// leaseDisk is the lease disk of lease's provider (environment.LeaseDisk).
func leaseDisk(lease *environment.Lease) (environment.LeaseDisk, error) {
	p, ok := providers.Get(lease.Provider)
	if !ok {
		return nil, fmt.Errorf("lease %s: no environment provider %q", lease.ID, lease.Provider)
	}
	d, ok := p.(environment.LeaseDisk)
	if !ok {
		return nil, fmt.Errorf("lease %s: provider %s has no lease disk", lease.ID, lease.Provider)
	}
	return d, nil
}

// leaseDiskDir is a directory name on lease's disk, owned by its agent user.
func leaseDiskDir(lease *environment.Lease, name string) (string, error) {
	d, err := leaseDisk(lease)
	if err != nil {
		return "", err
	}
	return d.DiskDir(lease, name)
}

// launchLeased prepares spec inside lease through its provider: the agent's state
// directory (on the lease disk, given to the sandbox user after the driver wrote its
// files there) as a writable bind and, for a real CLI, its install's node_modules
// read-only (the install directory itself is closed to the sandbox user). Errors:
// the provider is unknown, the state directory cannot be handed over, Launch refused
// the request (naming why).
func launchLeased(ctx context.Context, lease *environment.Lease, d driver.Name, spec worker.Spec, stateDir, agentHome string) (environment.Launched, error) {
	p, ok := providers.Get(lease.Provider)
	if !ok {
		return nil, fmt.Errorf("lease %s: no environment provider %q", lease.ID, lease.Provider)
	}
	disk, err := leaseDisk(lease)
	if err != nil {
		return nil, err
	}
	if err := disk.Own(lease, stateDir); err != nil {
		return nil, fmt.Errorf("lease %s: handing the agent state directory to the %s user: %w", lease.ID, lease.Provider, err)
	}
	req := environment.LaunchRequest{Spec: spec, Binds: []environment.Bind{{Path: stateDir, Write: true}}}
	if agentHome != "" { // the materialised AGENT_HOME, saved by the runner after the run
		if err := disk.Own(lease, agentHome); err != nil {
			return nil, fmt.Errorf("lease %s: handing AGENT_HOME to the %s user: %w", lease.ID, lease.Provider, err)
		}
		req.Binds = append(req.Binds, environment.Bind{Path: agentHome, Write: true})
	}
	if _, isCLI := d.CLI(); isCLI {
		if nm, ok := nodeModules(spec.Path); ok {
			req.ReadOnly = append(req.ReadOnly, nm)
		}
	}
	if _, real := d.Package(); real && (d.Kind == driver.KindACP || d.Kind == driver.KindApp || d.Kind == driver.KindRPC) {
		// A real session agent (ACP, app-server, Pi's RPC): its native binary, or the
		// entry script Node.js runs (argv[1]), ships under its install's node_modules.
		for _, p := range append([]string{spec.Path}, spec.Args[1:min(2, len(spec.Args))]...) {
			if nm, ok := nodeModules(p); ok && !slices.Contains(req.ReadOnly, nm) {
				req.ReadOnly = append(req.ReadOnly, nm)
			}
		}
	}
	x, err := p.Launch(ctx, lease, req)
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", lease.ID, err)
	}
	return x, nil
}

// nodeModules is the outermost node_modules directory on binary's path (a pinned CLI's
// native binary ships in an npm package under <install>/node_modules), false when the
// path has none.
func nodeModules(binary string) (string, bool) {
	const elem = string(filepath.Separator) + "node_modules"
	i := strings.Index(binary+string(filepath.Separator), elem+string(filepath.Separator))
	if i < 0 {
		return "", false
	}
	return binary[:i+len(elem)], true
}

// recordSave saves the run's home (saveHome) and notes the receipt, or why there is
// none, in its record. The caller holds the run's lock.
func (r *Runner) recordSave(ctx context.Context, c Company, rec *Record, base homeBaseline) {
	rc, err := r.saveHome(ctx, c, rec.RunID, base)
	if err != nil {
		rec.HomeSaveError = clip(err.Error(), 2000)
		return
	}
	rec.HomeReceiptID = rc.ID
}

// finish completes the run when the agent left it running (first: that is what the
// board observes), then stores the redacted evidence and the final record. The caller
// holds the run's lock. settled is the environment provider's account of a leased
// launch (nil for a local one): its limits, problems and facts join the termination.
func (r *Runner) finish(c Company, rec *Record, o worker.Outcome, report agent.Report, secrets *redact.Set, settled *environment.Settled) {
	if secrets == nil {
		secrets = redact.NewSet()
	}
	printed := 0
	if secrets.FindExact([]byte(report.Summary)) >= 0 {
		printed++
	}
	for _, ev := range report.Transcript {
		if secrets.FindExact(ev.Body) >= 0 {
			printed++
		}
	}
	rec.Termination = &api.Termination{Summary: secrets.RedactText(report.Summary), SecretsRedacted: printed, Started: o.Started, PID: o.PID, ExitCode: o.ExitCode,
		Signal: o.Signal, TimedOut: o.TimedOut, OutputExceeded: o.OutputExceeded, Aborted: o.Aborted,
		SignalsSent: append([]string{}, o.SignalsSent...), DurationMs: o.Duration.Milliseconds(), OutputBytes: o.OutputBytes,
		CollectorError: o.CollectorError, EventStreamComplete: report.EventStreamComplete, StoppedAfterResult: o.StoppedAfterResult}
	if settled != nil {
		rec.Termination.EnvironmentProblems = slices.Clone(settled.Problems)
		rec.Termination.Environment = settled.Facts
		for _, h := range settled.Limits {
			rec.Termination.Limits = append(rec.Termination.Limits, api.LimitHit{Resource: string(h.Resource), Limit: h.Limit, Events: h.Events, Detail: h.Detail})
		}
	}
	for _, e := range o.Escaped {
		rec.Termination.EscapedProcesses = append(rec.Termination.EscapedProcesses,
			api.EscapedProcess{PID: e.PID, Command: secrets.RedactText(e.Command), Killed: e.Killed})
	}
	status := report.RunStatus
	summary := rec.Termination.Summary
	if rec.Cancellation != nil {
		status = controlplane.RunCancelled
		summary = fmt.Sprintf("stopped by %s (%s); %s", rec.Cancellation.Actor, rec.Cancellation.IntentID, summary)
	}
	if status == "" {
		status = controlplane.RunFailed
	}
	silent := rec.Driver.Silent()
	var result json.RawMessage
	if p := report.Presentation; p != nil && p.CommentID != "" && status != controlplane.RunCancelled {
		// The run's message to the human is the comment the agent presented.
		result, _ = json.Marshal(map[string]any{"presentationDecision": map[string]string{"commentId": p.CommentID}})
	}
	leftOpen := report.LeftOpen != "" && rec.Cancellation == nil
	if leftOpen {
		summary = report.LeftOpen + "; " + summary
	}
	final, closed, err := completeIfRunning(context.Background(), c, rec.RunID, status, summary, silent, result)
	if closed && leftOpen {
		rec.Termination.Summary = summary // the agent left its run open: say so and what to call
		rec.Termination.LeftOpen = true
	}
	rec.FinishedAt = r.now() // the run is terminal from here on
	if err != nil {
		rec.Reason = "completing the run failed: " + err.Error()
	}
	if len(report.Usage) > 0 {
		rec.Usage = slices.Clone(report.Usage)
	}
	// Evidence files are independent: write them concurrently (each is fsynced).
	refs := make([]*api.EvidenceRef, len(report.Transcript))
	var wg sync.WaitGroup
	for i, ev := range report.Transcript {
		wg.Go(func() {
			body := []byte(secrets.RedactText(string(ev.Body)))
			if ref, err := r.rec.putEvidence(rec.RunID, ev.Name, ev.MediaType, body); err == nil {
				refs[i] = &ref
			}
		})
	}
	wg.Wait()
	for _, ref := range refs {
		if ref != nil {
			rec.Evidence = append(rec.Evidence, *ref)
		}
	}
	rec.Status = final
	rec.State = api.RunFinished
	_ = r.put(rec)
}

// completeIfRunning completes runID natively with status and summary when it is still
// running (appending its run.completed event first) and returns its status afterwards
// and whether it completed the run (false: the run had ended already, or an error).
// With silent set (an agent that never talks to the API: nop, the fixture programs) it
// appends run.completed with sequence 1 without reading the state first; otherwise,
// or when that append is refused, it reads the run from a snapshot (an agent that
// completed its own run must not meet a denied append in the decision log).
func completeIfRunning(ctx context.Context, c Company, runID string, status controlplane.RunStatus, summary string, silent bool, result json.RawMessage) (controlplane.RunStatus, bool, error) {
	complete := func() (controlplane.RunStatus, bool, error) {
		in, _ := json.Marshal(controlplane.NativeRunResult{RunID: runID, Status: status, Summary: clip(summary, 2000)})
		if len(result) > 0 {
			// The native completion carries the run's result beside its status, so
			// controlplane.State.RunMessage finds result.presentationDecision.
			in, _ = json.Marshal(struct {
				controlplane.NativeRunResult
				Result json.RawMessage `json:"result"`
			}{controlplane.NativeRunResult{RunID: runID, Status: status, Summary: clip(summary, 2000)}, result})
		}
		if err := c.CompleteRun(ctx, in); err != nil {
			return "", false, err
		}
		return status, true, nil // a native completion sets exactly this status
	}
	ev, _ := json.Marshal(controlplane.NativeEvent{EventID: runID + ":completed", RunID: runID, Sequence: 1, Type: "run.completed"})
	if silent {
		if _, err := c.AppendEvent(ctx, ev); err == nil {
			return complete()
		}
	}
	st, err := c.Snapshot(ctx)
	if err != nil {
		return "", false, err
	}
	run := findRun(st, runID)
	if run == nil {
		return "", false, &controlplane.Error{Code: controlplane.CodeRunMissing, Message: "run " + runID + " does not exist"}
	}
	if run.Status != controlplane.RunRunning {
		return run.Status, false, nil
	}
	native, completed := int64(0), false
	for _, raw := range run.Events {
		var h struct {
			SourceEventID *string `json:"sourceEventId"`
			Type          string  `json:"type"`
		}
		_ = json.Unmarshal(raw, &h)
		if h.SourceEventID == nil {
			native++
			completed = completed || h.Type == "run.completed"
		}
	}
	if !completed {
		ev, _ := json.Marshal(controlplane.NativeEvent{EventID: runID + ":completed", RunID: runID, Sequence: native + 1, Type: "run.completed"})
		if _, err := c.AppendEvent(ctx, ev); err != nil {
			return run.Status, false, fmt.Errorf("appending run.completed: %w", err)
		}
	}
	return complete()
}

func findRun(st controlplane.State, id string) *controlplane.Run {
	for _, run := range st.Runs {
		if run.ID == id {
			return run
		}
	}
	return nil
}

// recover completes the runs a previous server left open (see the package doc): every
// running run of the control plane whose id carries the runner's prefix and that has
// no finished record is an orphan; records left opening or launching whose run does
// not exist were never checked out.
func (r *Runner) recover(ctx context.Context) error {
	const reason = "orphaned: the server stopped while this run's agent process was starting or running; " +
		"the process died with the server and the run is not relaunched; it is interrupted (Retry starts a new run)"
	var errs []error
	for company, c := range r.companies() {
		st, err := c.Snapshot(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		prefix := RunID(company, "")
		for _, run := range st.Runs {
			wakeID, ours := strings.CutPrefix(run.ID, prefix)
			if !ours || run.Status != controlplane.RunRunning {
				continue
			}
			rec, known := r.Run(run.ID)
			if !known {
				rec = Record{Schema: api.HeartbeatRunSchema, RunID: run.ID, CompanyID: company, ActorID: run.ActorID, TaskID: run.TaskID,
					WakeID: wakeID, WakeReason: run.Wake.Reason, WakeObservedAt: r.now()}
			}
			if st.Lifecycle != controlplane.LifecycleRunning {
				errs = append(errs, fmt.Errorf("heartbeat: cannot complete orphaned run %s: company %s is %s", run.ID, company, st.Lifecycle))
				continue
			}
			if base, ok, err := r.rec.baseline(run.ID); err != nil {
				rec.HomeSaveError = err.Error()
			} else if ok && rec.HomeReceiptID == "" {
				r.recordSave(ctx, c, &rec, base)
			}
			status, _, err := completeIfRunning(ctx, c, run.ID, controlplane.RunInterrupted, reason, false, nil)
			if err != nil {
				errs = append(errs, fmt.Errorf("heartbeat: completing orphaned run %s: %w", run.ID, err))
				continue
			}
			rec.State, rec.Reason, rec.Status, rec.FinishedAt = api.RunOrphaned, reason, status, r.now()
			errs = append(errs, r.put(&rec))
		}
		for _, rec := range r.Runs(company) {
			if (rec.State == api.RunOpening || rec.State == api.RunLaunching) && findRun(st, rec.RunID) == nil {
				rec.State, rec.Reason = api.RunNotOpened, "the server stopped before the checkout; the wake is taken again"
				errs = append(errs, r.put(&rec))
			}
		}
	}
	return errors.Join(errs...)
}

// Cancel is the Stop API (the correlated Stop of a native run) for runID, called by
// board actor req.Actor with req.RequestID as sent. Under the run's lock it decides
// (DecideStop), writes a reserved intent into the run's record, and only then cancels
// the process (SIGTERM to its group, SIGKILL after worker.TerminateGrace); a running run
// without a process of this runner is completed as cancelled at once. A request with an
// idempotency key is remembered with its response in the same record write; a replay
// of the key with the same body answers that response again, with another body it is
// idempotency_conflict. Errors (*controlplane.Error): cancellation_request_id_invalid
// (400), run_missing (404), cancellation_conflict and idempotency_conflict (409); store
// errors.
func (r *Runner) Cancel(ctx context.Context, runID string, req StopRequest) (api.CancelRunResponse, error) {
	id, err := ParseRequestID(req.RequestID)
	if err != nil {
		return api.CancelRunResponse{}, err
	}
	req.RequestID = id
	company, c, _, err := r.locate(ctx, runID)
	if err != nil {
		return api.CancelRunResponse{}, err
	}
	lock := r.runLock(runID)
	lock.Lock()
	defer lock.Unlock()
	// Re-read under the lock: the run may have finished meanwhile.
	st, err := c.Snapshot(ctx)
	if err != nil {
		return api.CancelRunResponse{}, err
	}
	run := findRun(st, runID)
	if run == nil {
		return api.CancelRunResponse{}, &controlplane.Error{Code: controlplane.CodeRunMissing, Message: "run " + runID + " does not exist"}
	}
	rec, known := r.Run(runID)
	if !known {
		rec = Record{Schema: api.HeartbeatRunSchema, RunID: runID, CompanyID: company, ActorID: run.ActorID, TaskID: run.TaskID,
			State: api.RunFinished, Status: run.Status, WakeReason: run.Wake.Reason, WakeObservedAt: r.now()}
	}
	if resp, replayed, err := replayedStop(rec, req); replayed {
		return resp, err
	}
	remember := func(resp api.CancelRunResponse) { rememberStop(&rec, req, resp) }
	verdict, intent, err := DecideStop(run.Status != controlplane.RunRunning, rec.Cancellation, req, func() string { return uuid.NewString() })
	if err != nil {
		return api.CancelRunResponse{}, err
	}
	if verdict == StopJoin {
		resp := api.CancelRunResponse{RunID: runID, Disposition: api.CancelJoined, Intent: intent, Status: run.Status}
		if req.IdempotencyKey != "" {
			remember(resp)
			if err := r.put(&rec); err != nil {
				return api.CancelRunResponse{}, fmt.Errorf("heartbeat: recording the Stop: %w", err)
			}
		}
		return resp, nil
	}
	intent.RequestedAt = r.now()
	rec.Cancellation = &intent
	resp := api.CancelRunResponse{RunID: runID, Disposition: api.CancelReserved, Intent: intent, Status: run.Status}
	remember(resp)
	if err := r.put(&rec); err != nil {
		return api.CancelRunResponse{}, fmt.Errorf("heartbeat: reserving the Stop intent: %w", err)
	}
	r.mu.Lock()
	cancel := r.live[runID]
	r.mu.Unlock()
	// A permission still pending is closed now, before the agent hears of the Stop: a
	// later answer gets 409 (the session layer answers the agent "cancelled").
	r.closeRunPermissions(runID, fmt.Sprintf("the run was stopped by %s (%s) while the permission was pending", intent.Actor, intent.IntentID))
	if cancel != nil {
		// The process group gets SIGTERM, then SIGKILL after the grace period; an ACP
		// session gets session/cancel and must end its turn "cancelled".
		cancel()
		return resp, nil
	}
	summary := fmt.Sprintf("stopped by %s (%s); no agent process of this server was running", intent.Actor, intent.IntentID)
	status, _, err := completeIfRunning(ctx, c, runID, controlplane.RunCancelled, summary, false, nil)
	if err != nil {
		return api.CancelRunResponse{}, err
	}
	rec.Status, rec.FinishedAt = status, r.now()
	if rec.State == api.RunOpening || rec.State == api.RunLaunching {
		rec.State = api.RunFinished
	}
	resp.Status = status
	remember(resp)
	_ = r.put(&rec)
	return resp, nil
}

// replayedStop answers a Stop whose idempotency key rec already holds: the response
// remembered with it when the request body is the same (replayed true), else an
// idempotency_conflict error. replayed is false for a request without a key or with a
// new one.
func replayedStop(rec Record, req StopRequest) (resp api.CancelRunResponse, replayed bool, err error) {
	if req.IdempotencyKey == "" {
		return api.CancelRunResponse{}, false, nil
	}
	i := slices.IndexFunc(rec.IdempotentStops, func(s api.IdempotentStop) bool { return s.Key == req.IdempotencyKey })
	if i < 0 {
		return api.CancelRunResponse{}, false, nil
	}
	if rec.IdempotentStops[i].RequestSHA256 != req.RequestSHA256 {
		return api.CancelRunResponse{}, true, &controlplane.Error{Code: controlplane.CodeIdempotencyConflict,
			Message: "this Idempotency-Key was used for a different Stop request of run " + rec.RunID}
	}
	return rec.IdempotentStops[i].Response, true, nil
}

// rememberStop records resp as the response of req's idempotency key in rec (nothing
// for a request without a key; a later response of the same key replaces it).
func rememberStop(rec *Record, req StopRequest, resp api.CancelRunResponse) {
	if req.IdempotencyKey == "" {
		return
	}
	i := slices.IndexFunc(rec.IdempotentStops, func(s api.IdempotentStop) bool { return s.Key == req.IdempotencyKey })
	if i < 0 {
		rec.IdempotentStops = append(rec.IdempotentStops, api.IdempotentStop{Key: req.IdempotencyKey, RequestSHA256: req.RequestSHA256, Response: resp})
	} else {
		rec.IdempotentStops[i].Response = resp
	}
}

// Retry is the Retry button for runID (board operation retry_run on its company, with
// the idempotency key key): the run must be failed or interrupted and not retried yet.
// The response names the retry wake and the run this runner opens for it (bound to
// runID by retryOf). Errors (*controlplane.Error): run_missing (404), run_not_retryable,
// run_already_retried, checkout_conflict, idempotency_conflict (409), actor_not_active.
func (r *Runner) Retry(ctx context.Context, runID, key string) (api.RetryRunResponse, error) {
	company, c, _, err := r.locate(ctx, runID)
	if err != nil {
		return api.RetryRunResponse{}, err
	}
	in, _ := json.Marshal(map[string]string{"runId": runID})
	res, err := c.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardRetryRun, Input: in, IdempotencyKey: key})
	if err != nil {
		return api.RetryRunResponse{}, err
	}
	r.Kick()
	return api.RetryRunResponse{RunID: runID, WakeID: res.ID, RetryRunID: RunID(company, res.ID), StateRevision: res.StateRevision}, nil
}

// companies yields the instance's companies in creation order, by id (a company
// listed but gone by the time it is looked up is passed over).
func (r *Runner) companies() iter.Seq2[string, Company] {
	return func(yield func(string, Company) bool) {
		for _, id := range r.host.Companies() {
			if c, ok := r.host.Company(id); ok && !yield(id, c) {
				return
			}
		}
	}
}

// locate finds the company holding runID: the record's company, else every company.
func (r *Runner) locate(ctx context.Context, runID string) (string, Company, *controlplane.Run, error) {
	if rec, ok := r.Run(runID); ok {
		if c, ok := r.host.Company(rec.CompanyID); ok {
			return rec.CompanyID, c, nil, nil
		}
	}
	for id, c := range r.companies() {
		st, err := c.Snapshot(ctx)
		if err != nil {
			return "", nil, nil, err
		}
		if run := findRun(st, runID); run != nil {
			return id, c, run, nil
		}
	}
	return "", nil, nil, &controlplane.Error{Code: controlplane.CodeRunMissing, Message: "run " + runID + " does not exist"}
}

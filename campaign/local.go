package campaign

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/report"
	"github.com/agentproof/agentproof/worker"
)

// CanarySecretKey is the credential key of the canary secret every attempt stores in
// its instance and hands to its agent through a secret reference: a fresh random value
// that must never appear in the closed instance home, the workspace or the evidence
// (the leak scan looks for it with every credential value).
const CanarySecretKey = "APF_ATTEMPT_CANARY"

// teardownTimeout bounds the teardown of one attempt after its flow (fixture teardowns
// through the API), which runs even when the attempt was cancelled.
const teardownTimeout = 15 * time.Second

// LocalExecutor is the real Executor (issue 9; DESIGN.md "The way data flows"): every
// attempt gets a private temp root holding its instance home, workspace and artifacts,
// its own `agentproof serve` child (Executable, explicit environment, loopback port,
// own SQLite file), fixtures set up through the board API by a Registry (company →
// secrets → environment → agent → task), the case's flow played as the human through
// the same API, an observation built from API snapshots and the workspace, the case's
// matchers evaluated with package match, a teardown in reverse, the server stopped
// (SIGTERM, SIGKILL after StopGrace), a leak scan of the closed home and the workspace,
// and the temp root removed. Evidence lands in ResultsRoot/plan.Dir.
//
// A LocalExecutor is safe for concurrent use: attempts share only its configuration.
type LocalExecutor struct {
	// ResultsRoot is the results directory (evidence goes to ResultsRoot/plan.Dir).
	ResultsRoot string
	// Executable is the absolute path of the agentproof binary started as `serve`.
	Executable string
	// TempDir is where attempt roots are created ("" means os.TempDir()).
	TempDir string
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
	// Canaries are fake credentials of every secret shape (see Canaries) that every
	// attempt stores as secrets of its instance and hands to its agent through secret
	// references, beside the attempt canary (`agentproof run --canary`; issue 11
	// "Canary mode"). Any of them found in the closed instance home, the workspace,
	// the agent's output or the evidence fails the attempt with secret_leak.
	Canaries []Canary
	// CLIBinaries maps a real agent CLI's name (codex, opencode, claude) to the absolute
	// path of its native binary (package agent/clis); a CLI cell whose CLI is missing
	// ends inconclusive (permanent_infrastructure).
	CLIBinaries map[string]string
	// Live runs CLI cells against their profile's live provider (driverConfig live, its
	// credential stored as a secret) instead of a scripted model per attempt.
	Live bool
}

// AttemptFacts are the facts of an attempt that result.json reports beside the verdict
// (spec §7.1): the task, the runs, the turns, the last process termination, usage and
// the evidence files written (relative to the attempt directory).
type AttemptFacts struct {
	IssueID         string
	IssueIdentifier string
	RunIDs          []string
	TurnTimings     []report.TurnTiming
	Termination     json.RawMessage
	Usage           any
	Evidence        []string
}

// attempt is the state of one ExecuteAttempt.
type attempt struct {
	x       *LocalExecutor
	plan    AttemptPlan
	root    string // private temp root
	home    string // instance home
	ws      string // workspace
	dir     string // evidence directory (absolute)
	srv     *serveChild
	cl      *client.Client
	co      *client.Company
	secrets *redact.Set
	fx      *Fixtures
	facts   AttemptFacts
	// turn bookkeeping
	submitted []time.Time
	// processDeadline names a run whose agent process timed out, or "".
	processDeadline string
	// flowLog records what the harness did, as the human, with times (logs/flow.log).
	flowLog []string
	// canary is the attempt's canary secret value (see CanarySecretKey).
	canary string
	// ev packages the evidence (allowlist, sanitiser, manifest).
	ev *evidenceWriter
	// graded is set once the case's matchers were evaluated (required evidence then
	// must exist).
	graded bool
	// printed names runs whose agent printed a secret (the runner redacted it).
	printed []string
	// model is the attempt's scripted model (CLI cells that are not live), or nil.
	model *modelServer
	// cliFailures describe CLI runs that ended failed with a non-zero exit.
	cliFailures []string
	// rootClaim is this process's owner record of root (released at cleanup).
	rootClaim *worker.RootClaim
}

// note adds a line to the flow log.
func (a *attempt) note(format string, args ...any) {
	a.flowLog = append(a.flowLog, time.Now().UTC().Format(time.RFC3339Nano)+" "+fmt.Sprintf(format, args...))
}

// ExecuteAttempt implements Executor (see the interface's contract).
func (x *LocalExecutor) ExecuteAttempt(ctx context.Context, plan AttemptPlan) (out AttemptOutcome) {
	a := &attempt{x: x, plan: plan, dir: filepath.Join(x.ResultsRoot, plan.Dir)}
	a.ev = newEvidenceWriter(a.dir)
	defer func() {
		if r := recover(); r != nil {
			out.Err = &ClassError{Class: PermanentInfrastructure, Err: fmt.Errorf("harness panic: %v", r)}
		}
		if ctx.Err() != nil {
			out.Interrupted = true
		}
		out.Facts = &a.facts
		out.secrets, out.evidence = a.secrets, a.ev
	}()
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return AttemptOutcome{Err: &ClassError{Class: PermanentInfrastructure, Err: fmt.Errorf("creating the attempt directory: %w", err)}, CleanupConfirmed: true}
	}
	root, err := os.MkdirTemp(x.TempDir, worker.AttemptRootPrefix)
	if err == nil { // the owner record worker.SweepStaleRoots honours
		if a.rootClaim, err = worker.ClaimAttemptRoot(root); err != nil {
			_ = os.RemoveAll(root)
		}
	}
	if err != nil {
		return AttemptOutcome{Err: &ClassError{Class: TransientInfrastructure, Err: fmt.Errorf("harness temp root create failed: %w", err)}, CleanupConfirmed: true}
	}
	a.root, a.home, a.ws = root, filepath.Join(root, "home"), filepath.Join(root, "workspace")
	for _, d := range []string{a.home, a.ws, filepath.Join(root, "tmp"), filepath.Join(root, "artifacts")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			out.Err = &ClassError{Class: TransientInfrastructure, Err: fmt.Errorf("harness temp root create failed: %w", err)}
			a.cleanup(ctx, &out)
			return out
		}
	}
	canary := make([]byte, 24)
	if _, err := rand.Read(canary); err != nil {
		out.Err = &ClassError{Class: TransientInfrastructure, Err: fmt.Errorf("harness canary: %w", err)}
		a.cleanup(ctx, &out)
		return out
	}
	a.canary = "apcanary-" + hex.EncodeToString(canary)
	a.secrets = redact.NewSet(a.canary)
	for _, c := range x.Canaries {
		a.secrets = a.secrets.WithCredentials(c.Value)
	}

	actx, cancel := context.WithTimeoutCause(ctx, plan.AttemptTimeout, errAttemptDeadline)
	defer cancel()
	a.run(actx, &out)
	if ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptDeadline) && out.DeadlineMissed == "" {
		out.DeadlineMissed = "attempt"
	}
	a.cleanup(ctx, &out)
	return out
}

var (
	errAttemptDeadline = errors.New("attempt deadline")
	errTurnDeadline    = errors.New("turn deadline")
)

// run starts the server, sets up fixtures, plays the flow and grades; cleanup follows.
func (a *attempt) run(ctx context.Context, out *AttemptOutcome) {
	srv, err := startServe(ctx, a.x.Executable, a.home, a.root)
	if err != nil {
		out.Err = a.classify(ctx, err)
		return
	}
	a.srv = srv
	a.note("server started on %s", srv.addr)
	// The instance's own generated secrets (board token, master key, run-token key)
	// must not reach the workspace, the evidence or any file of the home but their
	// own (spec §10.1).
	inst, err := instanceSecrets(a.home, srv.token)
	if err != nil {
		out.Err = &ClassError{Class: TransientInfrastructure, Err: fmt.Errorf("server start failed: %w", err)}
		return
	}
	a.secrets = a.secrets.With(inst...)
	if _, isCLI := IsCLIDriver(a.plan.Cell.Profile.Driver); isCLI && !a.x.Live {
		if err := a.startModel(); err != nil {
			out.Err = err
			return
		}
	}
	a.cl = clientFor(srv)
	reg := NewRegistry(a.secrets)
	for _, d := range a.definitions() {
		if err := reg.Register(d); err != nil {
			out.Err = &ClassError{Class: PermanentInfrastructure, Err: err}
			return
		}
	}
	fx, err := reg.SetupAll(ctx)
	a.fx = fx
	if err != nil {
		out.Err = a.classify(ctx, err)
		return
	}
	if rec, ok := fx.Record("task"); ok {
		a.facts.IssueID, a.facts.IssueIdentifier = rec.IDs["task"], rec.Metadata["identifier"]
	}
	flowErr := a.flow(ctx, fx)
	if flowErr != nil {
		switch {
		case errors.Is(context.Cause(ctx), errAttemptDeadline) && ctx.Err() != nil:
			out.DeadlineMissed = "attempt"
		case errors.Is(flowErr, errTurnDeadline):
			var te *turnDeadlineError
			if errors.As(flowErr, &te) {
				out.DeadlineMissed = fmt.Sprintf("turn %d", te.turn)
			} else {
				out.DeadlineMissed = "turn"
			}
		default:
			out.Err = a.classify(ctx, flowErr)
		}
	}
	// Observe with a context that survives the attempt deadline (the evidence of a slow
	// attempt is still worth keeping), bounded on its own.
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	obs, collectErr := a.observe(octx, fx)
	if collectErr != nil {
		out.CollectorError = a.secrets.RedactText(collectErr.Error())
	}
	if a.processDeadline != "" && out.DeadlineMissed == "" {
		out.DeadlineMissed = a.processDeadline
	}
	if out.Err == nil && len(a.cliFailures) > 0 {
		out.Err = cliFailureError(a.secrets.RedactText(strings.Join(a.cliFailures, "; ")))
	}
	if obs != nil {
		a.graded = true
		ms, err := match.CompileAll(a.plan.Case.Matchers)
		if err != nil {
			out.Err = &ClassError{Class: PermanentInfrastructure, Err: fmt.Errorf("compiling the case's matchers: %w", err)}
			return
		}
		out.Matchers = match.Evaluate(ms, obs)
	}
}

// classify returns err as the attempt error, redacted, keeping its class.
func (a *attempt) classify(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return &ClassError{Class: TransientInfrastructure, Err: err}
	}
	class := ClassifyError(err)
	msg := a.secrets.RedactText(err.Error())
	if class == SecretLeak {
		return &ClassError{Class: SecretLeak, Err: errors.New(msg)}
	}
	return &ClassError{Class: class, Err: errors.New(msg)}
}

// cleanup tears down the fixtures, stops the server, scans the closed home and the
// workspace for leaks, snapshots the workspace manifest and removes the temp root.
func (a *attempt) cleanup(ctx context.Context, out *AttemptOutcome) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	var problems []string
	if a.fx != nil {
		if err := a.fx.Teardown(tctx); err != nil {
			problems = append(problems, a.secrets.RedactText(err.Error()))
		}
		a.writeJSON("fixtures.json", a.fx.States())
	}
	if a.srv != nil {
		if err := a.srv.stop(); err != nil {
			problems = append(problems, err.Error())
		}
		a.writeBounded("logs/serve.stderr.log", a.srv.stderr.Bytes(), true)
	}
	if err := a.stopModel(); err != nil {
		problems = append(problems, err.Error())
	}
	if len(a.flowLog) > 0 {
		a.writeBounded("logs/flow.log", []byte(strings.Join(a.flowLog, "\n")+"\n"), true)
	}
	if a.root != "" {
		a.collectAgentLogs()
		if a.secrets != nil {
			for _, d := range []struct{ name, path string }{{"instance home", a.home}, {"workspace", a.ws}} {
				leaks, err := a.secrets.ScanTree(d.path, false)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					problems = append(problems, fmt.Sprintf("leak scan of the %s could not complete: %v", d.name, a.secrets.RedactText(err.Error())))
				}
				for _, l := range leaks {
					if d.path == a.home && ownSecretFile(a.home, l.Path) {
						continue // the board token's or master key's own file
					}
					out.Leaks = append(out.Leaks, fmt.Sprintf("secret leak in persisted %s state at %s: %s", d.name, l.Path, l.Leak.String()))
				}
			}
		}
		defer func() { _ = a.rootClaim.Release() }() // removed or kept: nobody's to sweep
		if !a.x.KeepRoot {
			if err := os.RemoveAll(a.root); err != nil {
				problems = append(problems, fmt.Sprintf("temp root could not be removed: %v", err))
			} else if _, err := os.Stat(a.root); !errors.Is(err, os.ErrNotExist) {
				problems = append(problems, "temp root still exists after removal")
			}
		} else {
			problems = append(problems, "temp root kept for debugging: "+a.root)
		}
	}
	for _, p := range a.printed {
		out.Leaks = append(out.Leaks, p)
	}
	if a.graded {
		if missing := a.ev.checkRequired(); len(missing) > 0 {
			msg := "missing required evidence: " + strings.Join(missing, ", ")
			if out.CollectorError != "" {
				msg = out.CollectorError + "; " + msg
			}
			out.CollectorError = msg
		}
	}
	out.Leaks = append(out.Leaks, a.ev.leakTexts()...)
	if a.dir != "" {
		a.evidenceLeakScan(out)
	}
	if len(problems) > 0 {
		out.CleanupProblem = strings.Join(problems, "; ")
		return
	}
	out.CleanupConfirmed = true
}

// evidenceLeakScan scans what the attempt wrote under its results directory.
func (a *attempt) evidenceLeakScan(out *AttemptOutcome) {
	if a.secrets == nil {
		return
	}
	leaks, err := a.secrets.ScanTree(a.dir, false)
	if err != nil {
		out.Leaks = append(out.Leaks, "evidence could not be scanned: "+a.secrets.RedactText(err.Error()))
		return
	}
	for _, l := range leaks {
		out.Leaks = append(out.Leaks, fmt.Sprintf("evidence %s: %s", l.Path, l.Leak.String()))
	}
}

// definitions returns the fixture graph of the cell: company → secrets → environment →
// agent → task (seed 000 "New Paperclip object fixtures"; spec §6).
func (a *attempt) definitions() []Definition {
	cell := a.plan.Cell
	rc := a.plan.Case
	return []Definition{
		{
			ID: "company",
			Setup: func(ctx context.Context, _ Resolved) (Record, error) {
				co, err := a.cl.CreateCompany(ctx, "agentproof "+cell.Case.ID, "APF")
				if err != nil {
					return Record{}, fmt.Errorf("creating the company: %w", err)
				}
				if err := co.Start(ctx); err != nil {
					return Record{}, fmt.Errorf("starting the company: %w", err)
				}
				a.co = co
				return Record{IDs: map[string]string{"company": co.ID()}, Metadata: map[string]string{"issuePrefix": "APF"}}, nil
			},
			Teardown: func(ctx context.Context, rec Record, _ Resolved) error {
				if err := a.cl.Company(rec.IDs["company"]).Stop(ctx); err != nil {
					var ce *controlplane.Error
					if errors.As(err, &ce) && strings.Contains(ce.Code, "lifecycle") {
						return nil // already stopped
					}
					return fmt.Errorf("stopping the company: %w", err)
				}
				return nil
			},
		},
		{
			ID:           "secrets",
			Dependencies: []string{"company"},
			Setup: func(ctx context.Context, _ Resolved) (Record, error) {
				rec := Record{IDs: map[string]string{}, Metadata: map[string]string{}}
				names := append([]string{CanarySecretKey}, cell.RequiredCredentials...)
				canaries := map[string]string{}
				for _, c := range a.x.Canaries {
					if !slices.Contains(names, c.Name) {
						names = append(names, c.Name)
					}
					canaries[c.Name] = c.Value
				}
				if lc := a.liveCredential(); lc != "" && !slices.Contains(names, lc) {
					names = append(names, lc)
				}
				var missing []string
				for _, name := range names {
					var value string
					if name == CanarySecretKey {
						value = a.canary
					} else if v, ok := canaries[name]; ok {
						value = v
					} else {
						v, ok := "", false
						if a.x.Credential != nil {
							v, ok = a.x.Credential(name)
						}
						if !ok || v == "" {
							missing = append(missing, name)
							continue
						}
						a.secrets = a.secrets.WithCredentials(v)
						value = v
					}
					ref, err := a.co.CreateSecret(ctx, api.CreateSecretRequest{Name: strings.ToLower(name), Key: name, Value: value})
					if err != nil {
						return Record{}, fmt.Errorf("storing secret %s: %w", name, err)
					}
					rec.IDs[name] = ref.SecretID
					rec.Metadata[name] = "secret_ref"
				}
				if len(missing) > 0 {
					return rec, &ClassError{Class: PermanentInfrastructure, Err: fmt.Errorf("missing credential %s", strings.Join(missing, ", "))}
				}
				return rec, nil
			},
		},
		{
			ID:           "environment",
			Dependencies: []string{"company"},
			Setup: func(ctx context.Context, _ Resolved) (Record, error) {
				if cell.Environment.Driver != "local" {
					return Record{}, &ClassError{Class: PermanentInfrastructure, Err: fmt.Errorf("environment driver %q is not supported by this executor (local only)", cell.Environment.Driver)}
				}
				st, err := a.co.Snapshot(ctx)
				if err != nil {
					return Record{}, fmt.Errorf("reading the company state: %w", err)
				}
				for _, e := range st.Environments {
					if e.Kind == controlplane.LocalEnvironment {
						return Record{IDs: map[string]string{"environment": e.ID}, Metadata: map[string]string{"kind": e.Kind, "catalogEnvironment": cell.Environment.ID}}, nil
					}
				}
				return Record{}, &ClassError{Class: PermanentInfrastructure, Err: errors.New("the instance has no local environment to discover")}
			},
		},
		{
			ID:           "agent",
			Dependencies: []string{"secrets", "environment"},
			Setup: func(ctx context.Context, res Resolved) (Record, error) {
				cfg, err := a.adapterConfig(res)
				if err != nil {
					return Record{}, &ClassError{Class: PermanentInfrastructure, Err: err}
				}
				r, err := a.co.CreateAgent(ctx, api.CreateAgentRequest{Name: "agentproof " + cell.Profile.ID, Role: "engineer", AdapterConfig: cfg})
				if err != nil {
					return Record{}, fmt.Errorf("creating the agent: %w", err)
				}
				return Record{IDs: map[string]string{"agent": r.ID}, Metadata: map[string]string{"driver": cell.Profile.Driver, "profile": cell.Profile.ID}}, nil
			},
		},
		{
			ID:           "task",
			Dependencies: []string{"agent"},
			Setup: func(ctx context.Context, res Resolved) (Record, error) {
				title := rc.Title
				if title == "" {
					title = "agentproof " + cell.ID + " " + rc.Nonce
				}
				req := api.CreateIssueRequest{Title: title, AssigneeActorID: ptr(res["agent"].IDs["agent"])}
				if rc.Prompt != "" {
					req.Description = ptr(rc.Prompt)
				}
				if wm := cell.Case.WorkMode; wm != "" {
					req.WorkMode = &wm
				}
				a.submitted = append(a.submitted, time.Now())
				r, err := a.co.CreateIssue(ctx, req)
				if err != nil {
					return Record{}, fmt.Errorf("creating the task: %w", err)
				}
				meta := map[string]string{}
				if st, err := a.co.Snapshot(ctx); err == nil {
					if t := findTask(&st, r.ID); t != nil {
						meta["identifier"] = t.Identifier
					}
				}
				return Record{IDs: map[string]string{"task": r.ID}, Metadata: meta}, nil
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// adapterConfig is the agent's adapter configuration for the heartbeat runner: the
// profile's driver and driver configuration, the canary (and the profile's credential)
// as secret references in env, the workspace as cwd and, for reference and wrong, the
// rendered reference script (agent.BuiltinConfig, schema
// agentproof.builtin-agent-config/v1).
func (a *attempt) adapterConfig(res Resolved) (json.RawMessage, error) {
	p := a.plan.Cell.Profile
	env := map[string]any{}
	for name, id := range res["secrets"].IDs {
		env[name] = api.SecretRef{Type: api.SecretRefType, SecretID: id, Version: "latest"}
	}
	cfg := map[string]any{
		"driver":        p.Driver,
		"env":           env,
		"environmentId": res["environment"].IDs["environment"],
		"cwd":           a.ws,
		"lifecycleMode": "per_turn",
	}
	if len(p.DriverConfig) > 0 {
		dc := map[string]any{}
		for k, v := range p.DriverConfig {
			if k == "strategy" {
				continue // the wrong agent's strategy is the driver's own; not a driver option
			}
			dc[k] = v
		}
		if len(dc) > 0 {
			cfg["driverConfig"] = dc
		}
	}
	if name, isCLI := IsCLIDriver(p.Driver); isCLI {
		dc, _ := cfg["driverConfig"].(map[string]any)
		if dc == nil {
			dc = map[string]any{}
		}
		bin := a.x.CLIBinaries[name]
		if bin == "" {
			return nil, fmt.Errorf("agent CLI %s is not installed: no native binary for profile %s (run: agentproof agents install %s)", name, p.ID, name)
		}
		dc[agent.CLIKeyBinary] = bin
		delete(dc, agent.CLIKeyScript) // the executor's concern (ModelScripts)
		if a.x.Live {
			if _, ok := dc[agent.CLIKeyLive]; !ok {
				return nil, fmt.Errorf("profile %s has no live provider (driverConfig live) for --live", p.ID)
			}
		} else {
			delete(dc, agent.CLIKeyLive)
			dc[agent.CLIKeyModelBaseURL] = a.model.running.URL
		}
		cfg["driverConfig"] = dc
	}
	if p.Driver == "reference" || p.Driver == "wrong" || p.Driver == "leaky" {
		if a.plan.Case.Reference == nil {
			return nil, fmt.Errorf("case %s has no reference script for the %s agent", a.plan.Cell.Case.ID, p.Driver)
		}
		cfg["builtin"] = map[string]any{"schema": "agentproof.builtin-agent-config/v1", "nonce": a.plan.Nonce, "reference": a.plan.Case.Reference}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the adapter configuration: %w", err)
	}
	return b, nil
}

func findTask(st *controlplane.State, id string) *controlplane.Task {
	for _, t := range st.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// writeJSON writes v as indented JSON to the attempt directory through the evidence
// guard (sanitised, re-scanned, atomically) and records it as evidence. Errors are not
// returned beyond not recording the file: missing evidence shows as missing (and a
// required file missing makes the attempt inconclusive).
func (a *attempt) writeJSON(rel string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return
	}
	a.writeFile(rel, append(b, '\n'), true)
}

// writeBounded writes b (already bounded) through the evidence guard; ours says
// agentproof produced the content (see report.EvidenceKind).
func (a *attempt) writeBounded(rel string, b []byte, ours bool) {
	if len(b) == 0 {
		return
	}
	a.writeFile(rel, b, ours)
}

func (a *attempt) writeFile(rel string, b []byte, ours bool) {
	if !a.ev.write(a.secrets, rel, b, ours) {
		return
	}
	if !slices.Contains(a.facts.Evidence, rel) {
		a.facts.Evidence = append(a.facts.Evidence, rel)
	}
}

// maxAgentLog bounds each agent log copied into the attempt directory, in bytes.
const maxAgentLog = 256 << 10

// collectAgentLogs copies the heartbeat runner's bounded, redacted run evidence
// (stdout/stderr per run) from the closed instance home into logs/, each file cut to
// maxAgentLog bytes.
func (a *attempt) collectAgentLogs() {
	base := filepath.Join(a.home, "heartbeat")
	_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, ".log") && !strings.HasSuffix(rel, ".jsonl") && !strings.Contains(rel, "stdout") && !strings.Contains(rel, "stderr") {
			return nil
		}
		b, err := readBounded(p, maxAgentLog)
		if err != nil {
			return nil
		}
		a.writeBounded("logs/agent/"+rel, b, false)
		return nil
	})
}

// readBounded reads at most limit bytes of the file at path.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// Compile-time check.
var _ Executor = (*LocalExecutor)(nil)

// clientFor returns a board client of a serve child.
func clientFor(s *serveChild) *client.Client { return client.New(s.URL(), s.token, nil) }

// liveCredential is the credential of the profile's live provider when the campaign
// runs live, or "".
func (a *attempt) liveCredential() string {
	if !a.x.Live {
		return ""
	}
	if _, isCLI := IsCLIDriver(a.plan.Cell.Profile.Driver); !isCLI {
		return ""
	}
	live, _ := a.plan.Cell.Profile.DriverConfig[agent.CLIKeyLive].(map[string]any)
	c, _ := live["envVar"].(string)
	return c
}

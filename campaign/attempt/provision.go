package attempt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/worker"
	wsource "github.com/agentproof/agentproof/workspace/source"
)

// CanarySecretKey is the credential key of the canary secret every attempt stores in
// its instance and hands to its agent through a secret reference: a fresh random value
// that must never appear in the closed instance home, the workspace or the evidence
// (the leak scan looks for it with every credential value).
const CanarySecretKey = "APF_ATTEMPT_CANARY"

// Provisioned is what the provision stage returns: the attempt's private temp root
// (Root) with its instance home, workspace, tmp and artifacts directories, the running
// control-plane server, the scripted model (CLI cells run offline; nil otherwise), the
// attempt canary and the secret set so far (the campaign's secrets, the canary, the
// campaign's canaries, the instance's own board token, master key and run-token key). Fault is the harness
// fault that stopped provisioning, or nil; whatever was provisioned before it is in
// the value, for teardown.
type Provisioned struct {
	Root, Home, Workspace string
	// rootClaim is this process's owner record of Root (worker.SweepStaleRoots leaves
	// a claimed root alone); teardown releases it.
	rootClaim *worker.RootClaim
	// StateRoot is the claimed root that holds Home when the executor keeps instance
	// homes apart (LocalExecutor.StateDir; "" when Home is inside Root), and
	// stateClaim its owner record.
	StateRoot  string
	stateClaim *worker.RootClaim
	Instance   *instance
	Model      *modelServer
	Canary     string
	// ControllerCanary is the attempt's controller canary (ControllerCanaryKey), in
	// the serve child's environment and the secret set.
	ControllerCanary string
	// Hostile holds the targets of a hostile suite agent (nil for other cells).
	Hostile *hostileHold
	// Marker is the attempt's process marker (worker.NewMarker): the serve child
	// gives it to every agent process it launches (`serve --process-marker`), and
	// teardown kills whatever still carries it after the server stopped.
	Marker string
	// Lease is the sandbox lease of a sandbox cell and its bridge (nil for a local
	// cell); Workspace is then the lease's workspace, on the lease disk.
	Lease *leaseHold
	// Source is the workspace source the workspace was seeded from, as observed
	// (seedWorkspace; nil when the cell declares none).
	Source *wsource.Record
	// protected is the state of the verifier's protected paths before the agent
	// started (protectedState; nil when the case has no verifier).
	protected map[string]string
	// Secrets is the attempt's secret set so far: the campaign's (LocalExecutor.Secrets),
	// the attempt's canaries and its instance's keys, and those of the attempts
	// running beside it when it started; held is its entry among the campaign's
	// running attempts (heldSecrets).
	Secrets *redact.Set
	held    *heldEntry
	Fault   *verdict.Fault
}

// provision creates the temp root, draws the canary and the process marker, starts the
// serve child, for a CLI cell that is not live the scripted model, and for a sandbox
// cell its lease and the lease's bridge (provisionLease), and seeds the workspace from
// the cell's workspace source (seedWorkspace). Every failure is the harness's:
// transient for what may work in a fresh attempt (a directory, a process, a port),
// permanent for what will not (model scripts that cannot be derived).
func (x *LocalExecutor) provision(ctx context.Context, a *attempt) Provisioned {
	var p Provisioned
	if p.Fault = x.makeRoots(a, &p); p.Fault != nil {
		return p
	}
	if p.Fault = x.drawSecrets(a, &p); p.Fault != nil {
		return p
	}
	// The workspace is seeded before the scripted model starts: a session agent's
	// derived script reads a file the workspace holds before replacing it.
	leased := needsLease(a.plan.Cell.Environment)
	if !leased {
		if p.Fault = x.prepareWorkspace(ctx, a, &p); p.Fault != nil {
			return p
		}
	}
	if p.Fault = x.startServices(ctx, a, &p, !leased); p.Fault == nil && leased {
		p.Lease, p.Fault = x.provisionLease(ctx, a, &p)
		if p.Fault == nil {
			p.Fault = x.prepareWorkspace(ctx, a, &p)
		}
		if p.Fault == nil {
			p.Fault = x.startLeasedModel(a, &p)
		}
	}
	return p
}

// makeRoots creates the attempt's evidence directory and its temp root (claimed for
// worker.SweepStaleRoots) with home, workspace, tmp and artifacts, and for a driver
// whose instance home must live apart (stateDirFor) a claimed state root holding the
// home; it sets p's Root, Home, Workspace and StateRoot. Failures are the harness's
// (transient, but for the evidence directory).
func (x *LocalExecutor) makeRoots(a *attempt, p *Provisioned) *verdict.Fault {
	if err := os.MkdirAll(a.ev.Dir(), 0o755); err != nil {
		return verdict.HarnessFault(fmt.Errorf("creating the attempt directory: %w", err), false)
	}
	root, err := os.MkdirTemp(x.TempDir, worker.AttemptRootPrefix)
	if err == nil { // the owner record worker.SweepStaleRoots honours
		if p.rootClaim, err = worker.ClaimAttemptRoot(root); err != nil {
			_ = os.RemoveAll(root)
		}
	}
	if err != nil {
		return verdict.HarnessFault(fmt.Errorf("harness temp root create failed: %w", err), true)
	}
	p.Root, p.Home, p.Workspace = root, filepath.Join(root, "home"), filepath.Join(root, "workspace")
	stateDir, moved := stateDirFor(x.StateDir, a.plan.Cell.Profile.Driver)
	if moved {
		a.log.note("instance home inside the temp root, not in %s: the agent runs its commands in a bubblewrap sandbox that mounts a fresh /dev", x.StateDir)
	}
	if stateDir != "" {
		sr, err := os.MkdirTemp(stateDir, worker.AttemptRootPrefix)
		if err == nil {
			if p.stateClaim, err = worker.ClaimAttemptRoot(sr); err != nil {
				_ = os.RemoveAll(sr)
			}
		}
		if err != nil {
			return verdict.HarnessFault(fmt.Errorf("harness state root create failed: %w", err), true)
		}
		p.StateRoot, p.Home = sr, filepath.Join(sr, "home")
		a.log.note("instance home kept apart from the workspace, in %s", p.Home)
	}
	for _, d := range []string{p.Home, p.Workspace, filepath.Join(root, "tmp"), filepath.Join(root, "artifacts")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return verdict.HarnessFault(fmt.Errorf("harness temp root create failed: %w", err), true)
		}
	}
	return nil
}

// drawSecrets draws the attempt's canary and controller canary, gathers every secret
// the attempt's scans cover (the campaign's, its canaries' values, those other live
// attempts hold), draws the process marker the sentry watches, and for a hostile cell
// starts the hostile fixture with its own secret. Failures are the harness's
// (transient).
func (x *LocalExecutor) drawSecrets(a *attempt, p *Provisioned) *verdict.Fault {
	canary := make([]byte, 24)
	if _, err := rand.Read(canary); err != nil {
		return verdict.HarnessFault(fmt.Errorf("harness canary: %w", err), true)
	}
	p.Canary = "apcanary-" + hex.EncodeToString(canary)
	var err error
	if p.ControllerCanary, err = randomSecret("apcontroller-"); err != nil {
		return verdict.HarnessFault(fmt.Errorf("harness canary: %w", err), true)
	}
	p.Secrets = x.Secrets.With(p.Canary, p.ControllerCanary)
	for _, c := range x.Canaries {
		p.Secrets = p.Secrets.WithCredentials(c.Value)
	}
	p.held = x.held.hold(p.Canary, p.ControllerCanary)
	p.Secrets = x.held.withOthers(p.Secrets, p.held)
	p.Marker = worker.NewMarker()
	if err := x.Sentry.Watch(p.Marker); err != nil {
		a.log.note("the process sentry cannot watch this attempt: %v", err)
	}
	if isHostile(a.plan) {
		if p.Hostile, err = startHostile(p.Root); err != nil {
			return verdict.HarnessFault(err, true)
		}
		p.Secrets = p.Secrets.With(p.Hostile.secret)
		x.held.add(p.held, p.Hostile.secret)
	}
	return nil
}

// prepareWorkspace seeds the workspace from the cell's source (seedWorkspace) and, for
// a case with a verifier, takes the state of its protected paths before any agent
// exists (protectedState).
func (x *LocalExecutor) prepareWorkspace(ctx context.Context, a *attempt, p *Provisioned) *verdict.Fault {
	var fault *verdict.Fault
	if p.Source, fault = x.seedWorkspace(ctx, a, p.Workspace); fault != nil {
		return fault
	}
	if vf := a.plan.Cell.Case.Verify; vf != nil {
		var err error
		if p.protected, err = protectedState(p.Workspace, vf.Protect); err != nil {
			return verdict.HarnessFault(fmt.Errorf("verifier integrity: hashing the protected paths before the agent: %w", err), false)
		}
	}
	return nil
}

// startLeasedModel starts the scripted model of a sandbox cell once its lease exists
// (the model's scripts name the lease's workspace: a real ACP agent's write tool takes
// an absolute path) and points the lease's model endpoint at it.
func (x *LocalExecutor) startLeasedModel(a *attempt, p *Provisioned) *verdict.Fault {
	if started, fault := x.startScriptedModel(a, p); !started || fault != nil {
		return fault
	}
	if err := p.Lease.bridge.Retarget(endpointModel, strings.TrimPrefix(p.Model.running.URL, "http://")); err != nil {
		return verdict.HarnessFault(fmt.Errorf("pointing the lease's model endpoint at the scripted model: %w", err), true)
	}
	return nil
}

// startServices starts the serve child (adding the instance's own secrets to the set)
// and, with model, the scripted model of an offline CLI cell (a sandbox cell starts it
// after its lease: startLeasedModel).
func (x *LocalExecutor) startServices(ctx context.Context, a *attempt, p *Provisioned, model bool) *verdict.Fault {
	var in *instance
	var err error
	where := "a serve child"
	allowed, why := inProcessAllowed(a.plan)
	switch {
	case x.InProcess == nil || x.Instances == InstanceChild:
		in, err = startInstance(ctx, x.Executable, p.Home, p.Root, p.Marker, p.ControllerCanary, x.serveFlags())
	case !allowed:
		where += " (" + why + ")"
		in, err = startInstance(ctx, x.Executable, p.Home, p.Root, p.Marker, p.ControllerCanary, x.serveFlags())
	default:
		where = "in-process"
		flags, late := x.sharedFlags(false)
		in, err = startInstanceInProcess(ctx, x.InProcess, x.Executable, p.Home, p.Root, p.Marker, p.ControllerCanary, flags, late)
	}
	if err != nil {
		return verdict.HarnessFault(err, true)
	}
	p.Instance = in
	a.log.note("server started on %s, %s", in.addr(), where)
	// The instance's own generated secrets (board token, master key, run-token key)
	// must not reach the workspace, the evidence or any file of the home but their own:
	// they join the attempt's secret set, which the leak scans look for.
	inst, err := instanceSecrets(p.Home, in.token)
	if err != nil {
		return verdict.HarnessFault(fmt.Errorf("server start failed: %w", err), true)
	}
	p.Secrets = p.Secrets.With(inst...)
	x.held.add(p.held, inst...)
	if !model {
		return nil
	}
	_, fault := x.startScriptedModel(a, p)
	return fault
}

// startScriptedModel starts the scripted model of an offline cell of a pinned CLI
// (none for another driver or with --live) and keeps it in p.Model; started says
// whether it did.
func (x *LocalExecutor) startScriptedModel(a *attempt, p *Provisioned) (started bool, fault *verdict.Fault) {
	if _, pinned := a.plan.Cell.Profile.Driver.Package(); !pinned || x.Live {
		return false, nil
	}
	m, fault := startModel(a.plan, p.Root, p.Workspace, p.Secrets)
	if fault != nil {
		return false, fault
	}
	p.Model = m
	a.log.note("scripted model started on %s with %d run script(s)", m.running.URL, m.scripts)
	return true, nil
}

// stateDirFor is where the instance home of a cell whose profile has driver drv is
// made: stateDir (LocalExecutor.StateDir), but "" (inside the attempt's temp root; moved
// true) when stateDir is under /dev and the agent's command sandbox mounts a fresh /dev
// (driver.Name.HidesDev), which would hide the agent's state from its own commands.
func stateDirFor(stateDir string, drv driver.Name) (dir string, moved bool) {
	if !drv.HidesDev() || stateDir == "" {
		return stateDir, false
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil || (abs != "/dev" && !strings.HasPrefix(abs, "/dev/")) {
		return stateDir, false
	}
	return "", true
}

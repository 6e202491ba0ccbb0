package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/container"
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/verdict"
)

// Endpoint names of an attempt's lease allowlist (docs/environments.md "Network: the
// bridge"): the serve child's agent API and the scripted model.
const (
	endpointControlPlane = "cp"
	endpointModel        = "model"
	// modelPlaceholder is the model endpoint's address from the lease's setup until the
	// scripted model listens (startLeasedModel retargets it).
	modelPlaceholder = "127.0.0.1:9"
)

// leaseHold is the attempt's environment lease and what the campaign runs for it: a
// sandbox or container cell's lease (created in provision, after the serve child and the scripted
// model, so both addresses are known) and its bridge, which outlives a serve-child
// restart (docs/environments.md "Where a lease lives"). nil for a local cell.
type leaseHold struct {
	provider environment.Provider
	lease    *environment.Lease
	bridge   environment.Bridge
}

// needsLease reports whether env's cells run in a lease the campaign creates: the
// sandbox and container providers' (a local environment is today's instance-managed one).
func needsLease(env *catalog.Environment) bool {
	return environment.ProviderName(env.Provider).Leased()
}

// leaseProvider is the provider of a leased environment, with exe (the agentproof
// executable) as its init. Each provider is one per executable in this process: the
// container's, so that it sweeps the orphans of killed campaigns once (its first
// Setup) and inspects each image once; the sandbox's, so that it asks bubblewrap for
// its version once, not once per cell.
func leaseProvider(name environment.ProviderName, exe string) environment.Provider {
	if name == environment.ProviderContainer {
		p, _ := containerProviders.LoadOrStore(exe, container.New(container.Options{Executable: exe}))
		return p.(*container.Provider)
	}
	p, ok := sandboxProviders.Load(exe)
	if !ok {
		p, _ = sandboxProviders.LoadOrStore(exe, sandbox.New(sandbox.Options{Executable: exe}))
	}
	return p.(*sandbox.Provider)
}

// sandboxProviders holds the sandbox provider of each executable (leaseProvider).
var sandboxProviders sync.Map

// workdirOf is a container environment's config.workdir ("" for none).
func workdirOf(env *catalog.Environment) string {
	s, _ := env.Config["workdir"].(string)
	return s
}

// containerProviders holds the container provider of each executable (leaseProvider).
var containerProviders sync.Map

// imageOf is a container environment's config.image (pinned by digest at load or, for
// config.imageFrom, by the campaign's plan); "" for the other environments.
func imageOf(env *catalog.Environment) string {
	s, _ := env.Config["image"].(string)
	return s
}

// ShapeOf converts a catalog environment's resources (cores, GiB, GiB, count) into the
// environment providers' Shape (cores, bytes, bytes, count). nil resources give the
// zero Shape. It does not validate: catalog validation and Shape.Problems do.
func ShapeOf(r *catalog.Resources) environment.Shape {
	if r == nil {
		return environment.Shape{}
	}
	return environment.Shape{CPUCores: float64(r.CPU), MemoryBytes: int64(r.MemoryGiB) * environment.GiB,
		PIDs: int64(r.PIDs), DiskBytes: int64(r.DiskGiB) * environment.GiB}
}

// reuseLease is env's config.reuseLease (catalog validation made it a boolean).
func reuseLease(env *catalog.Environment) bool {
	b, _ := env.Config["reuseLease"].(bool)
	return b
}

// provisionLease creates the sandbox or container lease of the attempt under <root>/leases (outside
// the server home), with the pinned shape of the catalog environment and the
// allowlist {control plane, scripted model}, starts its bridge and makes the lease's
// workspace (on the lease disk, owned by the sandbox user) the attempt's workspace.
// Every failure is the harness's: a lease the environment refuses will not work in a fresh
// attempt (permanent), anything else may (transient).
func (x *LocalExecutor) provisionLease(ctx context.Context, a *attempt, p *Provisioned) (*leaseHold, *verdict.Fault) {
	env := a.plan.Cell.Environment
	root := filepath.Join(p.Root, "leases")
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, verdict.HarnessFault(fmt.Errorf("lease root: %w", err), true)
	}
	cp := p.Instance.addr()
	eps := []environment.Endpoint{{Name: endpointControlPlane, Kind: environment.EndpointControlPlane, Listen: cp, Dial: cp}}
	if _, pinned := a.plan.Cell.Profile.Driver.Package(); pinned && !x.Live {
		// The scripted model starts after the lease (its scripts name the lease's
		// workspace): the endpoint is retargeted at it before any launch
		// (startLeasedModel); until then it names a port nothing listens on.
		eps = append(eps, environment.Endpoint{Name: endpointModel, Kind: environment.EndpointModel, Listen: modelPlaceholder, Dial: modelPlaceholder})
	}
	prov := leaseProvider(environment.ProviderName(env.Provider), x.Executable)
	mounts, tmpfs, _ := catalog.ContainerMounts(env) // validated at load
	l, err := prov.Setup(ctx, environment.LeaseSpec{EnvironmentID: env.ID, ConfigurationKey: env.ConfigurationKey,
		Shape: ShapeOf(env.Resources), Reuse: reuseLease(env), Root: root, Endpoints: eps, Image: imageOf(env), Workdir: workdirOf(env),
		Owner: "campaign " + a.plan.CampaignID, WorkspaceMounts: mounts, Tmpfs: tmpfs})
	if err != nil {
		var se *environment.SpecError
		return nil, verdict.HarnessFault(fmt.Errorf("%s lease setup failed: %w", prov.Name(), err), !errors.As(err, &se))
	}
	h := &leaseHold{provider: prov, lease: l}
	bridged, ok := prov.(environment.Bridged)
	if !ok {
		_ = prov.Cleanup(context.Background(), l)
		return nil, verdict.HarnessFault(fmt.Errorf("provider %s has no bridge", prov.Name()), false)
	}
	if h.bridge, err = bridged.StartBridge(l); err != nil {
		rep := prov.Cleanup(context.Background(), l)
		if !rep.Confirmed {
			a.log.note("%s", rep.Reason())
		}
		return nil, verdict.HarnessFault(fmt.Errorf("%s bridge: %w", prov.Name(), err), true)
	}
	a.log.note("lease %s set up (%s, shape %+v, reuse %t), bridge to %s", l.ID, l.Provider, l.Shape, l.Reuse, cp)
	p.Workspace = l.Workspace
	return h, nil
}

// retarget points the lease's control-plane endpoint at a restarted serve child's
// address (the lease file follows, so the next launch listens on the new port).
func (h *leaseHold) retarget(addr string) error {
	if h == nil {
		return nil
	}
	return h.bridge.Retarget(endpointControlPlane, addr)
}

// environmentConfig is the control-plane environment's config for the lease: the
// path of its lease.json, which the serve child's heartbeat runner reads at every
// launch.
func (h *leaseHold) environmentConfig() json.RawMessage {
	b, _ := json.Marshal(map[string]string{"lease": h.lease.LeaseFile()})
	return b
}

// release closes the bridge and destroys the lease (environment.Provider.Cleanup),
// after observation and the workspace's leak scan; it returns the lease's record
// (launches: how many runs the heartbeat records show launched into it) and the
// cleanup problem when destruction was not confirmed (the report's Reason()).
func (h *leaseHold) release(ctx context.Context, runs []api.HeartbeatRun) (environment.LeaseRecord, string) {
	var problems []string
	if h.bridge != nil {
		if err := h.bridge.Close(); err != nil {
			problems = append(problems, "closing the lease's bridge: "+err.Error())
		}
	}
	rep := h.provider.Cleanup(ctx, h.lease)
	if !rep.Confirmed {
		problems = append(problems, rep.Reason())
	}
	launches := 0
	for _, r := range runs {
		if t := r.Termination; t != nil && t.Environment["lease"] == h.lease.ID {
			launches++
		}
	}
	return environment.NewLeaseRecord(h.lease, launches, &rep), strings.Join(problems, "; ")
}

// leaseRuntime is the runtime usage of a leased attempt (billing.Runtime through
// environment.Runtime): the runs' process windows and the lease records; a sandbox has
// no rate table, so it is unpriced (lease time and shape kept), never free.
func leaseRuntime(provider environment.ProviderName, records []environment.LeaseRecord, runs []api.HeartbeatRun) *billing.RuntimeUsage {
	var windows []billing.RunWindow
	for _, r := range runs {
		s, okS := parseRFC3339(r.ProcessStartedAt)
		e, okE := parseRFC3339(r.ProcessEndedAt)
		if okS && okE {
			windows = append(windows, billing.RunWindow{StartedAt: s, FinishedAt: e})
		}
	}
	rt := environment.Runtime(provider, records, windows, time.Now())
	return &rt
}

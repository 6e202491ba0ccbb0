package environment

import (
	"context"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/worker"
)

// ProviderName names a provider; it is the catalog environment's `provider` field.
type ProviderName string

// The providers agentproof implements.
const (
	// ProviderLocal runs the agent as the controller's own user, with only the worker's
	// bounds (explicit environment, process group, timeout); today's behaviour.
	ProviderLocal ProviderName = "local"
	// ProviderSandbox runs the agent inside a bubblewrap sandbox on this Linux machine:
	// its own mount, PID, IPC, UTS, user and network namespaces, cgroup limits and a
	// size-capped writable disk (package environment/sandbox).
	ProviderSandbox ProviderName = "sandbox"
	// ProviderContainer runs the agent in an OCI container of an image named by its
	// digest, through a container engine's CLI (podman): limits, no network but the
	// bridge, the workspace mounted (package environment/container).
	ProviderContainer ProviderName = "container"
)

// Leased reports whether a provider's environments run in a lease the campaign
// creates on this machine (sandbox and container; local is the instance's own).
func (n ProviderName) Leased() bool { return n == ProviderSandbox || n == ProviderContainer }

// Provider is one execution environment implementation; every provider implements the
// same setup/probe/cleanup contract. Implementations are safe
// for concurrent use; a Lease may be used from several processes (see ReadLeaseFile).
type Provider interface {
	// Name is the provider's catalog name.
	Name() ProviderName
	// Probe reports whether this machine can run the provider. It never fails: every
	// problem is a failed Check in the report.
	Probe(ctx context.Context) ProbeReport
	// Setup creates a lease for spec. Errors: a *SpecError for an invalid spec, wrapped
	// system errors otherwise; on error nothing of the lease remains.
	Setup(ctx context.Context, spec LeaseSpec) (*Lease, error)
	// Launch prepares one process of req inside lease. The returned Launched's Spec is
	// what worker.Supervise runs; its Settle must be called once Supervise returned
	// (also when it did not start anything). Errors: a *SpecError for a request the
	// lease cannot serve; nothing is started by Launch itself.
	Launch(ctx context.Context, lease *Lease, req LaunchRequest) (Launched, error)
	// Cleanup destroys lease (its processes first) and reports what it found and
	// whether destruction was confirmed. It is idempotent: cleaning a lease that is
	// already gone is confirmed with nothing found.
	Cleanup(ctx context.Context, lease *Lease) CleanupReport
}

// LeaseDisk is implemented by providers whose leases keep the agent's writable state
// besides the workspace on a lease disk (sandbox, container): the heartbeat runner puts
// an agent's state directory and AGENT_HOME there, never in the server home.
//
//   - DiskDir returns a directory name (one path element of [A-Za-z0-9._-], not a
//     reserved one) on l's disk, created owned by the lease's agent user.
//   - Own gives path (on the disk or in the workspace) and everything under it to the
//     lease's agent user.
type LeaseDisk interface {
	DiskDir(l *Lease, name string) (string, error)
	Own(l *Lease, path string) error
}

// Bridged is implemented by providers whose leases reach their endpoints only through
// a bridge the lease's owner serves (sandbox, container); StartBridge listens on every
// endpoint socket of l.
type Bridged interface {
	StartBridge(l *Lease) (Bridge, error)
}

// Bridge is the host side of a lease's network allowlist: Retarget points an endpoint
// at a new address (a restarted serve child), Close stops it (idempotent).
type Bridge interface {
	Retarget(name, dial string) error
	Close() error
}

// LaunchRequest is one agent process to start inside a lease.
//
//   - Spec: the process as the driver built it, with host paths (worker.Spec's rules).
//     Its Dir must be the lease's workspace or a path under a writable Bind.
//   - Binds: further host paths the process sees at the same path. A writable bind
//     must lie inside the lease's workspace or on the lease's disk (so that every
//     writable byte is under the lease's disk cap where the provider has one).
//   - ReadOnly: host paths (a CLI's install directory, a runtime) bound read-only at the
//     same path, besides the provider's system directories and Spec.Path.
type LaunchRequest struct {
	Spec     worker.Spec
	Binds    []Bind
	ReadOnly []string
}

// Bind is a host path visible inside the lease at the same absolute path.
//
// At, when set, is where the container provider mounts it instead (an absolute path
// inside: a task's tests at /tests, a writable /logs); the sandbox refuses it.
type Bind struct {
	Path  string `json:"path"`
	Write bool   `json:"write"`
	At    string `json:"at,omitempty"`
}

// Launched is one prepared process of a lease.
type Launched interface {
	// Spec is the process worker.Supervise must run (for the sandbox: bubblewrap, with
	// the Fork, Credential and Stop that stage its binds, drop to the sandbox user and
	// stop the agent through its init). BeforeStart and the bounds of the request's
	// Spec are kept; a launcher must honour Fork, Credential and Stop.
	Spec() worker.Spec
	// Settle is called once with what Supervise returned (the zero Outcome when it
	// returned an error). It returns the agent's own outcome, the limits the host saw it
	// hit and what could not be observed, and releases what the launch held
	// (per-launch scratch space, the status pipe).
	Settle(o worker.Outcome) Settled
}

// Settled is the host's account of one launch.
//
//   - Outcome: the worker's outcome with ExitCode/Signal replaced by the agent's own
//     exit as the sandbox's init observed it (the worker sees only the wrapper's).
//   - Limits: resource limits the host observed the launch hit (an OOM kill, refused
//     forks, a full disk); each names its limit, so a verdict can blame the candidate
//     with the limit named.
//   - Problems: what could not be observed (no exit report from init, unreadable
//     counters); non-empty means the account is incomplete.
//   - Facts: provider facts of the launch ("bwrap": "0.8.0", "uid": "65534", …) for
//     the run's observed facts.
type Settled struct {
	Outcome  worker.Outcome    `json:"-"`
	Limits   []LimitHit        `json:"limits,omitempty"`
	Problems []string          `json:"problems,omitempty"`
	Facts    map[string]string `json:"facts,omitempty"`
}

// Resource names a pinned resource of a Shape.
type Resource string

// The resources a Shape pins.
const (
	ResourceCPU    Resource = "cpu"
	ResourceMemory Resource = "memory"
	ResourcePIDs   Resource = "pids"
	ResourceDisk   Resource = "disk"
)

// LimitHit is one resource limit a launch was observed to hit: Limit is the pinned
// value (bytes for memory and disk, a count for pids), Events how many times the host
// counted it (OOM kills, refused forks; 1 for a full disk), Detail a sentence naming
// the limit ("memory limit 268435456 bytes: 1 OOM kill").
type LimitHit struct {
	Resource Resource `json:"resource"`
	Limit    int64    `json:"limit"`
	Events   int64    `json:"events"`
	Detail   string   `json:"detail"`
}

// ProbeReport is what a provider's Probe found. Available is true exactly when every
// check passed.
type ProbeReport struct {
	Provider  ProviderName `json:"provider"`
	Available bool         `json:"available"`
	Checks    []Check      `json:"checks"`
	// Limits says, per resource, whether the provider can enforce a declared limit on
	// it on this machine (absent: the provider enforces every declared limit or none
	// is its business). An environment declaring a limit this machine cannot enforce
	// is not run here (UnenforcedReason), never run without it.
	Limits []Limit `json:"limits,omitempty"`
}

// Limit is whether a provider can enforce a limit on Resource here: Detail says how
// (a cgroup v2 subtree, a tmpfs size) or why not and how to get it; Needs, for one
// that cannot be enforced, says why in a few words ("needs cgroup v2 delegation; this
// machine has cgroup v1"), the reason of the cells not run here.
type Limit struct {
	Resource Resource `json:"resource"`
	Enforced bool     `json:"enforced"`
	Detail   string   `json:"detail"`
	Needs    string   `json:"needs,omitempty"`
}

// UnenforcedReason is why an environment declaring limits on declared cannot run
// here: each declared resource whose Limit is not enforced, grouped by their Needs in
// resource order ("cpu, memory and pids limits need …; disk limit needs …"); "" when
// every declared limit is enforced (or r says nothing of it).
func (r ProbeReport) UnenforcedReason(declared []Resource) string {
	var needs []string
	by := map[string][]string{}
	for _, d := range declared {
		for _, l := range r.Limits {
			if l.Resource != d || l.Enforced {
				continue
			}
			if _, ok := by[l.Needs]; !ok {
				needs = append(needs, l.Needs)
			}
			by[l.Needs] = append(by[l.Needs], string(d))
		}
	}
	out := make([]string, 0, len(needs))
	for _, n := range needs {
		rs := by[n]
		if len(rs) == 1 {
			out = append(out, rs[0]+" limit "+n)
			continue
		}
		out = append(out, strings.Join(rs[:len(rs)-1], ", ")+" and "+rs[len(rs)-1]+" limits "+plural(n))
	}
	return strings.Join(out, "; ")
}

// plural turns the leading "needs" of a Limit's Needs into "need" (several limits).
func plural(needs string) string {
	if rest, ok := strings.CutPrefix(needs, "needs "); ok {
		return "need " + rest
	}
	return needs
}

// Check is one probed requirement: OK, and Detail saying what was found (a version, a
// path) or what is missing and how to get it. Needs, for a failed check, says in a
// few words what the machine lacks ("bubblewrap is not installed"), the reason given
// for the cells it cannot run (NotRunReason); "" for a passed check.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Needs  string `json:"needs,omitempty"`
}

// NotRunReason is why a machine whose probe found r cannot provide the provider: the
// distinct Needs of the failed checks in check order, joined by "; " (a failed check
// without Needs gives "name: detail"); "" when r is available.
func (r ProbeReport) NotRunReason() string {
	var out []string
	for _, c := range r.Checks {
		if c.OK {
			continue
		}
		why := c.Needs
		if why == "" {
			why = c.Name + ": " + c.Detail
		}
		if !slices.Contains(out, why) {
			out = append(out, why)
		}
	}
	return strings.Join(out, "; ")
}

// Missing returns "name: detail" of every failed check, in order.
func (r ProbeReport) Missing() []string {
	var out []string
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return out
}

// NewProbeReport builds a report for provider from checks; Available is derived.
func NewProbeReport(provider ProviderName, checks []Check) ProbeReport {
	r := ProbeReport{Provider: provider, Available: len(checks) > 0, Checks: checks}
	for _, c := range checks {
		r.Available = r.Available && c.OK
	}
	return r
}

// SpecError lists every problem of an invalid LeaseSpec, LaunchRequest or lease file;
// nothing was created.
type SpecError struct {
	What     string
	Problems []string
}

func (e *SpecError) Error() string {
	return "invalid " + e.What + ": " + strings.Join(e.Problems, "; ")
}

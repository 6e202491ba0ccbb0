// Package sandbox is the sandbox execution environment provider: every agent process
// runs inside a bubblewrap sandbox on this Linux machine (docs/environments.md is the
// design note; DEPENDENCIES-ADDED.md says why bubblewrap).
//
// A lease (Setup) is, on the host:
//
//   - a lease directory <root>/<lease id> (mode 0711) holding lease.json and
//     one directory per launch (launches/<n>/, which numbers it);
//   - a short socket directory /run/apf-<16 hex> (or under /tmp, /var/tmp, /dev/shm: the first writable) holding the bridge
//     sockets, whatever the depth of the root;
//   - the lease's disk: a tmpfs of the pinned disk size mounted at <lease dir>/disk,
//     owned by the sandbox user, holding HOME (home/), /tmp (tmp/), /dev/shm (shm/),
//     the workspace when the caller gives none (workspace/) and, when the lease is not
//     reused, per-launch copies of the first three (runs/<n>/);
//   - one cgroup per hierarchy (cgroup2 for membership and cgroup.kill; memory, pids
//     and cpu from cgroup2 when it has them, else from cgroup v1), named
//     agentproof-<lease id>, under the controller's own cgroup, with the pinned limits.
//
// A launch (Launch) is bwrap itself, forked by the supervisor from a thread of the
// launch's own that has staged the bind sources in a private mount namespace
// (worker.Spec.Fork), as the sandbox user; bwrap starts `agentproof sandbox-init`
// (RunInit) as PID 1 of new user, mount, PID, IPC, UTS, cgroup and network namespaces;
// init joins the lease's cgroups, brings the allowlisted endpoints in over the
// bridge, runs the agent, reaps orphans and exits with the agent. A stop signal goes
// to init, which forwards it to the agent (worker.Spec.Stop). One agentproof process
// starts per launch. Cleanup kills the lease's cgroups, unmounts its
// disk, removes its cgroups and directory, and confirms each.
//
// A controller that is not root runs the rootless sandbox instead where the kernel
// allows unprivileged user namespaces (rootless.go): the same sandbox as its own
// user, with only the declared limits it can enforce here, else no lease.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/environment/sandbox/initproc"
)

// Hidden commands of the agentproof binary the provider runs (internal/cli wires them).
const (
	// InitCommand is the sandbox's PID 1 (RunInit), run inside by bubblewrap.
	InitCommand = initproc.Command
)

// Paths inside the sandbox.
const (
	// Home is the sandbox user's home directory (its HOME should point here).
	Home = "/home/agent"
	// BridgeDir holds the bridge sockets inside the sandbox (read-only).
	BridgeDir = initproc.BridgeDir
	// Hostname is the sandbox's host name (its own UTS namespace).
	Hostname = "agentproof-sandbox"
)

// NobodyID is the default sandbox user and group id when the controller runs as root.
const NobodyID = 65534

// Options configures a Provider; the zero value means the defaults.
//
//   - Executable: the agentproof binary used as init (default
//     os.Executable()). It is bound read-only into every sandbox at its own path, so
//     `agentproof mcp` runs from it too.
//   - Bwrap: the bubblewrap binary (default: "bwrap" from PATH).
//   - UID, GID: the sandbox user when the controller runs as root (default 65534); a
//     non-root controller's sandbox runs as the controller's user.
//   - Now: the clock of lease times (default time.Now).
//   - NoCgroupKill: do not use cgroup.kill; kill with SIGKILL rounds instead (a test of
//     that path; machines without cgroup.kill use it anyway).
//   - KillWait: how long Cleanup waits for the cgroups to empty (default 5 s).
type Options struct {
	Executable   string
	Bwrap        string
	UID, GID     int
	Now          func() time.Time
	NoCgroupKill bool
	KillWait     time.Duration
}

// Provider is the sandbox provider. Create it with New.
type Provider struct {
	opt Options

	versionMu sync.Mutex
	version   string
}

// bwrapVersion is bwrapVersion of the provider's bwrap, run until it succeeds once per
// provider (a failure, a cancelled context's among them, is not kept: the next Setup
// asks again). Safe for concurrent use.
func (p *Provider) bwrapVersion(ctx context.Context) (string, error) {
	p.versionMu.Lock()
	defer p.versionMu.Unlock()
	if p.version != "" {
		return p.version, nil
	}
	v, err := bwrapVersion(ctx, p.opt.Bwrap)
	if err == nil {
		p.version = v
	}
	return v, err
}

var _ environment.Provider = (*Provider)(nil)

// New returns a sandbox provider with opt's defaults filled in. It does not probe:
// Setup fails with a clear error on a machine that cannot run it (see Probe).
func New(opt Options) *Provider {
	if opt.Executable == "" {
		if exe, err := os.Executable(); err == nil {
			opt.Executable = exe
		}
	}
	if opt.Bwrap == "" {
		if p, err := exec.LookPath("bwrap"); err == nil {
			opt.Bwrap = p
		}
	}
	if opt.Bwrap != "" && !filepath.IsAbs(opt.Bwrap) {
		if p, err := filepath.Abs(opt.Bwrap); err == nil {
			opt.Bwrap = p
		}
	}
	if os.Geteuid() == 0 {
		if opt.UID == 0 {
			opt.UID = NobodyID
		}
		if opt.GID == 0 {
			opt.GID = NobodyID
		}
	} else {
		opt.UID, opt.GID = os.Getuid(), os.Getgid()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.KillWait <= 0 {
		opt.KillWait = 5 * time.Second
	}
	return &Provider{opt: opt}
}

// Name is environment.ProviderSandbox.
func (p *Provider) Name() environment.ProviderName { return environment.ProviderSandbox }

// state is the sandbox part of a lease description (environment.Lease.State).
type state struct {
	UID          int          `json:"uid"`
	GID          int          `json:"gid"`
	Executable   string       `json:"executable"`
	Bwrap        string       `json:"bwrap"`
	BwrapVersion string       `json:"bwrapVersion"`
	Disk         string       `json:"disk"`
	Cgroups      leaseCgroups `json:"cgroups"`
	NoCgroupKill bool         `json:"noCgroupKill,omitempty"`
	// Rootless: the lease of a controller that is not root (rootless.go): its disk is
	// a plain directory, its launches bind their sources unstaged.
	Rootless bool `json:"rootless,omitempty"`
	// DiskMounted: the disk is a tmpfs of the shape's disk size (root, a declared
	// disk limit); otherwise a plain directory with no limit.
	DiskMounted bool `json:"diskMounted,omitempty"`
}

func leaseState(l *environment.Lease) (state, error) {
	var st state
	if err := hostlease.State(l, environment.ProviderSandbox, &st); err != nil {
		return st, err
	}
	var p []string
	if !filepath.IsAbs(st.Executable) || !filepath.IsAbs(st.Bwrap) {
		p = append(p, "executable and bwrap must be absolute paths")
	}
	p = append(p, hostlease.Problems(l, st.Disk)...)
	for _, c := range st.Cgroups {
		if filepath.Base(c.Path) != cgroupPrefix+l.ID {
			p = append(p, fmt.Sprintf("cgroup %q is not named for the lease", c.Path))
		}
	}
	if len(p) > 0 {
		return st, &environment.SpecError{What: "lease " + l.ID, Problems: p}
	}
	return st, nil
}

// Setup creates a sandbox lease (see the package doc). spec needs a lease root and a
// pinned shape or none (no declared limit). Errors: a *environment.SpecError for an
// invalid spec; a wrapped error naming what failed on the host (no cgroup controller,
// tmpfs refused) or, for a normal user, each declared limit this machine cannot
// enforce (rootless.go). On error, whatever was made is destroyed again.
func (p *Provider) Setup(ctx context.Context, spec environment.LeaseSpec) (*environment.Lease, error) {
	if probs := p.specProblems(spec); len(probs) > 0 {
		return nil, &environment.SpecError{What: "sandbox lease spec", Problems: probs}
	}
	if rootless() && !spec.Shape.IsZero() {
		sys, err := discoverCgroups()
		if why := unenforced(spec.Shape, rootlessLimits(sys, err)); why != "" {
			return nil, fmt.Errorf("sandbox lease: %s here (see `agentproof environments probe`); a declared limit is never dropped", why)
		}
	}
	version, err := p.bwrapVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("sandbox lease: %w", err)
	}
	l, err := hostlease.New(spec, environment.ProviderSandbox, p.opt.Now())
	if err != nil {
		return nil, err
	}
	st := state{UID: p.opt.UID, GID: p.opt.GID, Executable: p.opt.Executable, Bwrap: p.opt.Bwrap, BwrapVersion: version,
		Disk: filepath.Join(l.Dir, "disk"), NoCgroupKill: p.opt.NoCgroupKill, Rootless: rootless()}
	if err := hostlease.Build(ctx, l, spec.Endpoints, &st, func() error { return provision(l, &st, spec) }, p.Cleanup); err != nil {
		return nil, fmt.Errorf("sandbox lease: %w", err)
	}
	return l, nil
}

// specProblems lists what makes spec unusable for a sandbox lease: the spec's own
// problems, a shape that is neither pinned (cpuCores, memoryBytes, pids, diskBytes)
// nor zero (no declared limit: the agent gets the machine's own) or not valid, and a
// provider without the agentproof executable or bubblewrap.
func (p *Provider) specProblems(spec environment.LeaseSpec) []string {
	probs := spec.Problems(true)
	if !spec.Shape.IsZero() {
		probs = hostlease.SpecProblems(spec, environment.ProviderSandbox)
	}
	if !filepath.IsAbs(p.opt.Executable) {
		probs = append(probs, "the agentproof executable is unknown (Options.Executable)")
	}
	if p.opt.Bwrap == "" {
		probs = append(probs, "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
	}
	return probs
}

// provision makes lease l's resources on the host, recording them in st as it goes
// (so that Cleanup finds what was made): the lease's cgroups limited to spec's shape
// (root's always; a normal user's when the shape declares a cgroup limit, which Setup
// checked this machine enforces), the lease disk (as root with a declared disk limit a
// tmpfs of spec.Shape.DiskBytes owned by the sandbox user, else a plain directory)
// with its scratch directories, the launches directory, and the workspace (a new one
// on the disk, or spec's existing directory given to the sandbox user). Errors name
// the step that failed.
func provision(l *environment.Lease, st *state, spec environment.LeaseSpec) error {
	if !st.Rootless || spec.Shape.CPUCores > 0 || spec.Shape.MemoryBytes > 0 || spec.Shape.PIDs > 0 {
		sys, err := discoverCgroups()
		if err != nil {
			return err
		}
		if st.Cgroups, err = createCgroups(sys, l.ID, spec.Shape); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{st.Disk, 0o700}, {filepath.Join(l.Dir, "launches"), 0o700}} {
		if err := os.Mkdir(d.path, d.mode); err != nil {
			return err
		}
	}
	if !st.Rootless && spec.Shape.DiskBytes > 0 {
		if err := hostlease.MountDisk(st.Disk, spec.Shape.DiskBytes, st.UID, st.GID); err != nil {
			return err
		}
		st.DiskMounted = true
	}
	if err := hostlease.MakeScratch(st.Disk, st.UID, st.GID, scratchNames...); err != nil {
		return err
	}
	return hostlease.Workspace(l, spec.Workspace, st.Disk, st.UID, st.GID, "sandbox user")
}

// scratchNames are a launch's scratch directories: HOME, /tmp and /dev/shm.
var scratchNames = []string{"home", "tmp", "shm"}

// Cleanup destroys a sandbox lease and confirms it (see environment.Provider): it kills
// every process in the lease's cgroups and waits until they are empty, records what
// the disk held, unmounts the disk, removes the cgroups (rmdir succeeds only on empty
// ones) and the lease directory, then checks that no process, mount, cgroup or file
// of the lease remains. The caller's workspace (outside the lease directory) is kept.
// A bridge served by this process should be closed first (Bridge.Close).
func (p *Provider) Cleanup(_ context.Context, l *environment.Lease) (r environment.CleanupReport) {
	r = environment.CleanupReport{LeaseID: l.ID}
	defer func() { r.EndedAt = p.opt.Now().UTC() }() // a named result: the report returned carries it
	st, err := leaseState(l)
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
		return r
	}
	found, left, err := killCgroups(st.Cgroups, !st.NoCgroupKill, p.opt.KillWait)
	r.Found.Processes = found
	if err != nil {
		r.Errors = append(r.Errors, "listing the lease's processes: "+err.Error())
	}
	for _, pid := range left {
		r.Remaining.Processes = append(r.Remaining.Processes, environment.Process{PID: pid, Comm: comm(pid)})
	}
	hostlease.Unmount(l, st.Disk, p.opt.KillWait, &r)
	r.Found.Cgroups = existingCgroups(st.Cgroups)
	r.Remaining.Cgroups = removeCgroups(st.Cgroups, p.opt.KillWait)
	hostlease.RemoveDirs(l, &r)
	removeStageDir(l.SocketDir, &r)
	r.Confirmed = r.Remaining.Empty() && len(r.Errors) == 0
	return r
}

// stageDir is the lease's staging mount point beside its socket directory
// (<socket dir>-stage, mode 0700, root's): an empty directory on the host, on which
// each launch's fork thread mounts its own staging tmpfs in its private mount
// namespace (launched.fork).
func stageDir(socketDir string) string { return socketDir + "-stage" }

// removeStageDir removes the lease's staging mount point, which is empty on the host
// (never RemoveAll: anything in it is not ours to delete), recording what remains in r.
func removeStageDir(socketDir string, r *environment.CleanupReport) {
	d := stageDir(socketDir)
	if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.Errors = append(r.Errors, err.Error())
	}
	if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
		r.Remaining.Files = append(r.Remaining.Files, d)
		r.Remaining.FileCount++
	}
}

func existingCgroups(cs leaseCgroups) []string {
	var out []string
	for _, c := range cs {
		if exists(c.Path) {
			out = append(out, c.Path)
		}
	}
	return out
}

// DiskDir returns a directory on l's disk (under the disk cap), creating it owned by
// the sandbox user when it does not exist: the place for what must be writable inside
// and persist across a reused lease's launches besides the workspace (for example an
// agent's state directory, bound with environment.Bind{Write: true}). name is one
// path element of [A-Za-z0-9._-]. Errors: not a sandbox lease, a bad name, a
// filesystem error.
func DiskDir(l *environment.Lease, name string) (string, error) {
	st, err := leaseState(l)
	if err != nil {
		return "", err
	}
	return hostlease.DiskDir(st.Disk, name, st.UID, st.GID)
}

// Own gives path and everything under it (symbolic links themselves, never followed)
// to l's sandbox user, for files the host wrote for the agent (a CLI driver's
// configuration in the agent's state directory) that the agent must read and write.
// path must lie on the lease's disk or in its workspace. Errors: not a sandbox lease,
// a path elsewhere, a filesystem error.
func Own(l *environment.Lease, path string) error {
	st, err := leaseState(l)
	if err != nil {
		return err
	}
	return hostlease.Own(l, st.Disk, path, st.UID, st.GID, "sandbox own")
}

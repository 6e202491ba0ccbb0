// Package container is the container execution environment provider: every agent
// process runs in an OCI container of an image named by its digest, through a
// container engine's CLI: podman where it is installed, docker where it is not
// (FindEngine; docs/container.md is the design note).
//
// A lease (Setup) is, on the host:
//
//   - a lease directory <root>/<lease id> (mode 0711) holding lease.json and
//     per-launch generated files (launches/<n>/: /etc/hosts and /etc/resolv.conf);
//   - a short socket directory /run/apf-<16 hex> holding the bridge sockets (the
//     sandbox's bridge, package environment/sandbox);
//   - the lease's disk: a tmpfs of the pinned disk size at <lease dir>/disk, owned by
//     the container user, holding HOME, /tmp and, per launch when the lease is not
//     reused, their fresh copies (runs/<n>/), and the agent's state directories.
//
// A launch (Launch) is `podman run` (or `docker run`) of the lease's image with the pinned CPU, memory
// and pids limits, no network (`--network none`), no capability, a read-only root,
// as the container user, with the workspace, HOME, /tmp, the launch's binds and the
// agentproof executable (read-only, at its own path) mounted; its entry point is
// `agentproof sandbox-init`, PID 1 inside, which carries the allowlisted endpoints
// over the bridge sockets (mounted read-only) and reports the agent's exit on a
// descriptor podman passes through (--preserve-fds) or, with docker, which passes
// none, over a unix socket of a per-launch directory mounted read-only at InitDir
// that accepts init's connection only. Nothing else of the host is
// mounted: the harness's routes, keys and files are out of reach. Settle removes the
// launch's container and confirms it is gone; Cleanup removes every container
// labelled with the lease, unmounts the disk and removes the lease's directories,
// confirming each. Containers carry their lease's owner (pid and start time): the
// next Setup on the machine removes those whose owner is gone (Sweep).
package container

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/environment/sandbox"
)

// Paths inside a container.
const (
	// Home is the container user's HOME (on the lease disk).
	Home = "/home/agent"
	// BridgeDir holds the bridge sockets inside (read-only), where init looks for them.
	BridgeDir = sandbox.BridgeDir
)

// NobodyID is the container user and group id.
const NobodyID = 65534

// Options configures a Provider; the zero value means the defaults.
//
//   - Executable: the agentproof binary mounted read-only into every container as its
//     init (default os.Executable()); it must be statically linked, since the image
//     brings its own libraries or none.
//   - Engine: the container engine (default FindEngine()).
//   - Now: the clock of lease times (default time.Now).
//   - RemoveWait: how long Cleanup waits for the engine to remove a container
//     (default 30 s).
type Options struct {
	Executable string
	Engine     *Engine
	Now        func() time.Time
	RemoveWait time.Duration
}

// Provider is the container provider. Create it with New; one provider sweeps
// orphans once (its first Setup) and inspects each image once.
type Provider struct {
	opt    Options
	swept  sync.Once
	images sync.Map // image ref → Image, as the engine resolved it
}

var (
	_ environment.Provider  = (*Provider)(nil)
	_ environment.LeaseDisk = (*Provider)(nil)
	_ environment.Bridged   = (*Provider)(nil)
)

// New returns a container provider with opt's defaults filled in. It does not probe:
// Setup fails with a clear error on a machine that cannot run it (see Probe).
func New(opt Options) *Provider {
	if opt.Executable == "" {
		if exe, err := os.Executable(); err == nil {
			opt.Executable = exe
		}
	}
	if opt.Engine == nil {
		if e, ok := FindEngine(); ok {
			opt.Engine = &e
		}
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.RemoveWait <= 0 {
		opt.RemoveWait = 30 * time.Second
	}
	return &Provider{opt: opt}
}

// Name is environment.ProviderContainer.
func (p *Provider) Name() environment.ProviderName { return environment.ProviderContainer }

// state is the container part of a lease description (environment.Lease.State).
//
//   - Engine, EnginePath, Runtime, EngineVersion: the engine the lease's containers run on.
//   - ImageID: the engine's id of the lease's image (Lease.Image names it by digest).
//   - OwnerPID, OwnerStart: the process that set the lease up and its start time
//     (clock ticks after boot, /proc/<pid>/stat), labelled on every container so
//     that a later Sweep tells a live owner's container from an orphan.
type state struct {
	Engine        EngineName `json:"engine"`
	EnginePath    string     `json:"enginePath"`
	Runtime       string     `json:"runtime,omitempty"`
	EngineVersion string     `json:"engineVersion"`
	ImageID       string     `json:"imageId"`
	UID           int        `json:"uid"`
	GID           int        `json:"gid"`
	Executable    string     `json:"executable"`
	Disk          string     `json:"disk"`
	OwnerPID      int        `json:"ownerPid"`
	OwnerStart    string     `json:"ownerStart"`
	Owner         string     `json:"owner,omitempty"`
}

func (st state) engine() Engine {
	return Engine{Name: st.Engine, Path: st.EnginePath, Runtime: st.Runtime}
}

func leaseState(l *environment.Lease) (state, error) {
	var st state
	if err := hostlease.State(l, environment.ProviderContainer, &st); err != nil {
		return st, err
	}
	var p []string
	if !filepath.IsAbs(st.Executable) || !filepath.IsAbs(st.EnginePath) {
		p = append(p, "executable and engine must be absolute paths")
	}
	p = append(p, hostlease.Problems(l, st.Disk)...)
	if msg := ImageRefProblem(l.Image); msg != "" {
		p = append(p, msg)
	}
	if len(p) > 0 {
		return st, &environment.SpecError{What: "lease " + l.ID, Problems: p}
	}
	return st, nil
}

// DiskDir returns a directory on l's disk, created owned by the container user (see
// environment.LeaseDisk). name is one path element of [A-Za-z0-9._-], not a reserved
// one. Errors: not a container lease, a bad name, a filesystem error.
func (p *Provider) DiskDir(l *environment.Lease, name string) (string, error) {
	st, err := leaseState(l)
	if err != nil {
		return "", err
	}
	return hostlease.DiskDir(st.Disk, name, st.UID, st.GID)
}

// Own gives path and everything under it (links themselves) to l's container user;
// path must lie on the lease's disk or in its workspace.
func (p *Provider) Own(l *environment.Lease, path string) error {
	st, err := leaseState(l)
	if err != nil {
		return err
	}
	return hostlease.Own(l, st.Disk, path, st.UID, st.GID, "container own")
}

// StartBridge serves l's endpoints on its bridge sockets (the sandbox's bridge, the
// sockets given to the container user).
func (p *Provider) StartBridge(l *environment.Lease) (environment.Bridge, error) {
	st, err := leaseState(l)
	if err != nil {
		return nil, err
	}
	b, err := sandbox.StartBridgeAs(l, st.UID, st.GID)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Package hostlease makes and removes what a lease of a provider that runs on this
// machine (environment/sandbox, environment/container) holds on the host's file
// system, the same way for both:
//
//   - the lease directory <root>/<lease id> (mode 0711) holding lease.json (New, Make,
//     Build, Save; hostlease.go) and one directory per launch (NewLaunch, NewLaunchDir, launch.go);
//   - a short bridge socket directory /run/apf-<16 hex> (or under /tmp, /var/tmp,
//     /dev/shm: the first writable) holding the endpoints' sockets (MakeSocketDir,
//     socketdir.go), whatever the depth of the root;
//   - the lease's disk at <lease dir>/disk: a tmpfs of the pinned disk size owned by
//     the lease's agent user (MountDisk, disk.go; a rootless sandbox's is a plain
//     directory), with each launch's scratch space (Scratch, launch.go), the
//     directories the agent may keep there (DiskDir) and the workspace when the
//     caller gives none (Workspace; agentuser.go);
//   - its removal, confirmed: the disk unmounted (Unmount) and the lease and socket
//     directories removed (RemoveDirs; cleanup.go), what was found and what remains
//     recorded in the cleanup report.
//
// What differs between the providers (cgroups, containers, the launch itself) stays
// in their packages.
package hostlease

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentproof/agentproof/environment"
)

// New returns the description of a new lease of provider for spec: a fresh id, spec's
// environment, shape, reuse and live flag, started now (UTC), its directory
// <spec.Root>/<id> (not made yet: Make). Errors: no random id.
func New(spec environment.LeaseSpec, provider environment.ProviderName, now time.Time) (*environment.Lease, error) {
	id, err := environment.NewLeaseID()
	if err != nil {
		return nil, err
	}
	return &environment.Lease{Schema: environment.LeaseSchema, ID: id, Provider: provider,
		EnvironmentID: spec.EnvironmentID, ConfigurationKey: spec.ConfigurationKey, Shape: spec.Shape, Reuse: spec.Reuse,
		StartedAt: now.UTC(), Dir: filepath.Join(spec.Root, id), Live: spec.Live}, nil
}

// SpecProblems lists what makes spec unusable for a lease of provider on this host:
// the spec's own problems with a lease root required (environment.LeaseSpec.Problems),
// and a shape that is not pinned (cpuCores, memoryBytes, pids, diskBytes) or not valid.
func SpecProblems(spec environment.LeaseSpec, provider environment.ProviderName) []string {
	probs := spec.Problems(true)
	if !spec.Shape.Pinned() {
		return append(probs, fmt.Sprintf("the %s needs a pinned shape (cpuCores, memoryBytes, pids, diskBytes)", provider))
	}
	return append(probs, spec.Shape.Problems()...)
}

// Build makes lease l on the host: its directories and endpoint sockets (Make), then
// the provider's own resources (provision, which records what it makes in the state
// st points at), then lease.json with that state (Save). When provision or Save
// fails, cleanup (the provider's Cleanup) destroys whatever was made, with the state
// as far as it got, before the error returns; when Make fails nothing was made.
func Build(ctx context.Context, l *environment.Lease, eps []environment.Endpoint, st any, provision func() error,
	cleanup func(context.Context, *environment.Lease) environment.CleanupReport) error {
	if err := Make(l, eps); err != nil {
		return err
	}
	err := provision()
	if err == nil {
		err = Save(l, st)
	}
	if err != nil {
		l.State, _ = json.Marshal(st)
		_ = cleanup(context.WithoutCancel(ctx), l)
		return err
	}
	return nil
}

// State decodes l's provider state (Lease.State) into st, a pointer to the provider's
// state type, when l is a lease of provider. Errors: a *environment.SpecError for a
// lease of another provider or a state that does not decode.
func State(l *environment.Lease, provider environment.ProviderName, st any) error {
	if l == nil || l.Provider != provider {
		return &environment.SpecError{What: "lease", Problems: []string{"not a " + string(provider) + " lease"}}
	}
	if err := json.Unmarshal(l.State, st); err != nil {
		return &environment.SpecError{What: "lease " + l.ID, Problems: []string{string(provider) + " state: " + err.Error()}}
	}
	return nil
}

// Make creates l's lease directory (l.Dir, mode 0711) and a fresh socket directory
// (l.SocketDir), and sets l.Endpoints to eps, each with its socket in the socket
// directory. On error neither directory remains.
func Make(l *environment.Lease, eps []environment.Endpoint) error {
	if err := os.Mkdir(l.Dir, 0o711); err != nil {
		return err
	}
	dir, err := MakeSocketDir()
	if err != nil {
		_ = os.Remove(l.Dir)
		return err
	}
	l.SocketDir = dir
	for _, e := range eps {
		e.Socket = filepath.Join(dir, e.Name+".sock")
		if len(e.Socket) > MaxSocketPath { // cannot happen with a valid endpoint name; kept as the invariant
			_ = os.RemoveAll(dir)
			_ = os.Remove(l.Dir)
			return fmt.Errorf("bridge socket path %s is longer than %d bytes", e.Socket, MaxSocketPath)
		}
		l.Endpoints = append(l.Endpoints, e)
	}
	return nil
}

// Save records st as l's provider state (Lease.State, JSON) and writes l's lease file
// (environment.WriteLeaseFile).
func Save(l *environment.Lease, st any) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	l.State = data
	return environment.WriteLeaseFile(l)
}

// Problems lists what makes l's host paths other than this package gives them: a disk
// that is not <l.Dir>/disk, a socket directory not of MakeSocketDir's shape, an
// endpoint whose socket is not <socket dir>/<name>.sock. nil when there is none.
func Problems(l *environment.Lease, disk string) []string {
	var p []string
	if disk != filepath.Join(l.Dir, "disk") {
		p = append(p, fmt.Sprintf("disk %q is not the lease directory's disk", disk))
	}
	if !ValidSocketDir(l.SocketDir) {
		p = append(p, fmt.Sprintf("socket directory %q is not a lease socket directory (%s/%s<16 hex>)", l.SocketDir, strings.Join(socketBases, " or "), socketDirPrefix))
	}
	for i, e := range l.Endpoints {
		if e.Socket != filepath.Join(l.SocketDir, e.Name+".sock") {
			p = append(p, fmt.Sprintf("endpoints[%d].socket %q is not %s/%s.sock", i, e.Socket, l.SocketDir, e.Name))
		}
	}
	return p
}

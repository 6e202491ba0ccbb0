// Package local is the local execution environment provider (the local environment is
// managed by the instance): the agent runs as the controller's own user with
// only the worker's bounds (explicit environment, no shell, its own process group,
// timeout and output budget). It is today's behaviour behind the provider contract of
// package environment, so that local and sandbox cells run the same pipeline.
//
// It isolates nothing: the agent can read whatever the controller's user can, reach
// any address and write anywhere the user may. Its Cleanup says so in Unverified
// instead of claiming what it cannot check.
package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/worker"
)

// Provider is the local provider. The zero value is ready to use.
type Provider struct {
	// Now is the clock of lease times (default time.Now).
	Now func() time.Time
}

// New returns the local provider.
func New() *Provider { return &Provider{} }

var _ environment.Provider = (*Provider)(nil)

// Name is environment.ProviderLocal.
func (p *Provider) Name() environment.ProviderName { return environment.ProviderLocal }

func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now().UTC()
	}
	return time.Now().UTC()
}

// Probe always reports local available on a Unix-like system: it needs nothing but
// the worker.
func (p *Provider) Probe(context.Context) environment.ProbeReport {
	return environment.NewProbeReport(environment.ProviderLocal, []environment.Check{
		{Name: "os", OK: runtime.GOOS != "windows", Detail: runtime.GOOS + "/" + runtime.GOARCH + " (process groups, Pdeathsig on Linux)"},
		{Name: "isolation", OK: true, Detail: "none: the agent runs as " + userName() + " with the worker's bounds only"},
	})
}

func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return "user " + u
	}
	return fmt.Sprintf("uid %d", os.Getuid())
}

// Setup creates a local lease: an id and a start time; with spec.Root set, the lease
// directory and its lease.json (so that a serve child can read the lease like a
// sandbox one). Errors: a *environment.SpecError, or a filesystem error.
func (p *Provider) Setup(_ context.Context, spec environment.LeaseSpec) (*environment.Lease, error) {
	if probs := spec.Problems(false); len(probs) > 0 {
		return nil, &environment.SpecError{What: "lease spec", Problems: probs}
	}
	id, err := environment.NewLeaseID()
	if err != nil {
		return nil, err
	}
	l := &environment.Lease{Schema: environment.LeaseSchema, ID: id, Provider: environment.ProviderLocal,
		EnvironmentID: spec.EnvironmentID, ConfigurationKey: spec.ConfigurationKey, Reuse: spec.Reuse,
		StartedAt: p.now(), Workspace: spec.Workspace, Endpoints: spec.Endpoints, Live: spec.Live}
	if spec.Root != "" {
		l.Dir = filepath.Join(spec.Root, id)
		if err := os.Mkdir(l.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("local lease: %w", err)
		}
		if err := environment.WriteLeaseFile(l); err != nil {
			_ = os.RemoveAll(l.Dir)
			return nil, err
		}
	}
	return l, nil
}

// Launch returns req.Spec unchanged (local runs the process as it is); binds and
// read-only paths mean nothing without a mount namespace and are ignored.
func (p *Provider) Launch(_ context.Context, l *environment.Lease, req environment.LaunchRequest) (environment.Launched, error) {
	if l == nil || l.Provider != environment.ProviderLocal {
		return nil, &environment.SpecError{What: "launch request", Problems: []string{"the lease is not a local lease"}}
	}
	return launched{spec: req.Spec}, nil
}

type launched struct{ spec worker.Spec }

func (l launched) Spec() worker.Spec { return l.spec }

func (l launched) Settle(o worker.Outcome) environment.Settled {
	return environment.Settled{Outcome: o, Facts: map[string]string{"provider": string(environment.ProviderLocal)}}
}

// Unverified is what a local cleanup cannot check.
var Unverified = []string{
	"processes: local has no cgroup, so a descendant that left the worker's process group is not found here",
	"files: the agent could write wherever the controller's user can; only the lease directory is checked",
}

// Cleanup removes the lease directory (when it has one) and confirms it is gone.
func (p *Provider) Cleanup(_ context.Context, l *environment.Lease) environment.CleanupReport {
	r := environment.CleanupReport{LeaseID: l.ID, Unverified: Unverified}
	if l.Dir != "" {
		if _, err := os.Lstat(l.Dir); err == nil {
			r.Found.Files = []string{l.Dir}
			r.Found.FileCount = 1
		}
		if err := os.RemoveAll(l.Dir); err != nil {
			r.Errors = append(r.Errors, err.Error())
		}
		if _, err := os.Lstat(l.Dir); !errors.Is(err, os.ErrNotExist) {
			r.Remaining.Files = []string{l.Dir}
			r.Remaining.FileCount = 1
		}
	}
	r.Confirmed = r.Remaining.Empty() && len(r.Errors) == 0
	r.EndedAt = p.now()
	return r
}

package attempt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/verdict"
)

// unconfirmedProvider is an environment provider whose Cleanup cannot confirm the
// lease's destruction: a process survived (what a real sandbox reports when a
// process outlives the cgroup kill).
type unconfirmedProvider struct{ cleanups int }

func (p *unconfirmedProvider) Name() environment.ProviderName { return environment.ProviderSandbox }
func (p *unconfirmedProvider) Probe(context.Context) environment.ProbeReport {
	return environment.NewProbeReport(environment.ProviderSandbox, nil)
}
func (p *unconfirmedProvider) Setup(context.Context, environment.LeaseSpec) (*environment.Lease, error) {
	return nil, nil
}
func (p *unconfirmedProvider) Launch(context.Context, *environment.Lease, environment.LaunchRequest) (environment.Launched, error) {
	return nil, nil
}
func (p *unconfirmedProvider) Cleanup(_ context.Context, l *environment.Lease) environment.CleanupReport {
	p.cleanups++
	rem := environment.Inventory{Processes: []environment.Process{{PID: 4242, Comm: "sleeper"}}}
	return environment.CleanupReport{LeaseID: l.ID, Found: rem, Remaining: rem, EndedAt: time.Now()}
}

// TestTeardownUnconfirmedLeaseCleanup: a lease whose cleanup is not confirmed makes
// the teardown's cleanup unconfirmed, the cell fails with cleanup_failure and the
// reason names what remained (CleanupReport.Reason); the lease record says so too.
func TestTeardownUnconfirmedLeaseCleanup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prov := &unconfirmedProvider{}
	lease := &environment.Lease{Schema: environment.LeaseSchema, ID: "lease-0123456789abcdef", Provider: environment.ProviderSandbox,
		EnvironmentID: "sandbox", Shape: environment.Shape{CPUCores: 1, MemoryBytes: 1 << 30, PIDs: 128, DiskBytes: 1 << 30}, StartedAt: time.Now()}
	if err := os.MkdirAll(filepath.Join(dir, "results"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := &attempt{ev: campaign.NewEvidence(filepath.Join(dir, "results")), log: &flowLog{}}
	s := graded(PaceScripted, okMatcher)
	s.Teardown = Teardown{}
	s.Provisioned = Provisioned{Root: filepath.Join(dir, "root"), Home: filepath.Join(dir, "root", "home"), Workspace: filepath.Join(dir, "root", "workspace"),
		Lease: &leaseHold{provider: prov, lease: lease}}
	s.Observation.Runs = []api.HeartbeatRun{{RunID: "r-1", Termination: &api.Termination{Started: true, Environment: map[string]string{"lease": lease.ID}}}}
	x := &LocalExecutor{ResultsRoot: dir}
	s.Teardown = x.teardown(context.Background(), a, s)
	if prov.cleanups != 1 {
		t.Fatalf("Cleanup called %d times, want 1", prov.cleanups)
	}
	if s.Teardown.Confirmed {
		t.Fatalf("teardown confirmed despite the unconfirmed lease cleanup: %+v", s.Teardown)
	}
	j := Judge(s)
	if j.Verdict != verdict.Failed || j.FailureClass != verdict.CleanupFailure || !strings.Contains(j.Reason, "cleanup of "+lease.ID+" not confirmed: remaining 1 process(es): 4242 (sleeper)") {
		t.Errorf("judgement %+v", j)
	}
	if len(s.Teardown.Leases) != 1 {
		t.Fatalf("lease records %+v", s.Teardown.Leases)
	}
	rec := s.Teardown.Leases[0]
	if rec.CleanupConfirmed || rec.Remaining == nil || rec.Launches != 1 || rec.EndedAt == "" {
		t.Errorf("lease record %+v", rec)
	}
	f := facts(s)
	if len(f.Leases) != 1 || f.RuntimeUsage == nil || f.RuntimeUsage.CostStatus != billing.RuntimeUnpriced {
		t.Errorf("facts leases %+v runtime %+v: a sandbox lease with its shape is unpriced, never free", f.Leases, f.RuntimeUsage)
	}
}

// TestShapeOf: a catalog environment's resources (cores, GiB, GiB, count) become the
// providers' shape in cores and bytes; no resources give the zero shape; a shape
// without pids is not pinned.
func TestShapeOf(t *testing.T) {
	t.Parallel()
	s := ShapeOf(&catalog.Resources{CPU: 2, MemoryGiB: 4, DiskGiB: 10, PIDs: 512})
	if s != (environment.Shape{CPUCores: 2, MemoryBytes: 4 << 30, PIDs: 512, DiskBytes: 10 << 30}) || !s.Pinned() || s.Problems() != nil {
		t.Errorf("ShapeOf = %+v (%v)", s, s.Problems())
	}
	if !ShapeOf(nil).IsZero() || ShapeOf(nil).Pinned() {
		t.Error("nil resources must give the zero shape")
	}
	if ShapeOf(&catalog.Resources{CPU: 1, MemoryGiB: 1, DiskGiB: 1}).Pinned() {
		t.Error("a shape without pids is not pinned")
	}
}

// TestLeaseProviderOnePerExecutable: the sandbox and container providers are one per
// agentproof executable in the process (the sandbox asks bubblewrap for its version
// once, the container sweeps orphans once), another executable has its own.
func TestLeaseProviderOnePerExecutable(t *testing.T) {
	t.Parallel()
	for _, name := range []environment.ProviderName{environment.ProviderSandbox, environment.ProviderContainer} {
		a, b := leaseProvider(name, "/opt/a/agentproof"), leaseProvider(name, "/opt/a/agentproof")
		if a != b {
			t.Errorf("%s: two providers for one executable", name)
		}
		if c := leaseProvider(name, "/opt/c/agentproof"); c == a {
			t.Errorf("%s: one provider for two executables", name)
		}
	}
}

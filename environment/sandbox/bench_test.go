package sandbox

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/local"
	"github.com/agentproof/agentproof/worker"
)

// cpuTime is the user and system time of this process and its reaped children.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// BenchmarkAttempt is one attempt's environment overhead: Setup, Launch of a trivial
// process (/usr/bin/true) supervised by the worker, Settle and Cleanup, for local and
// for the sandbox, side by side in one run (the goal: the sandbox ≤ 10 ms of CPU and
// ≤ 50 ms of wall time over local; docs/environments.md has the figures). Run:
// go test -run '^$' -bench Attempt -count 10 ./environment/sandbox/
func BenchmarkAttempt(b *testing.B) {
	requireSandbox(b)
	// AGENTPROOF_BENCH_EXECUTABLE=<built agentproof> measures the production binary as
	// init (its start-up is heavier than this test binary's).
	for _, p := range []environment.Provider{local.New(), New(Options{Executable: os.Getenv("AGENTPROOF_BENCH_EXECUTABLE")})} {
		b.Run(string(p.Name()), func(b *testing.B) {
			root := leaseRoot(b)
			ctx := context.Background()
			cpu0 := cpuTime()
			for b.Loop() {
				l, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "bench", Root: root, Shape: smallShape, Workspace: ""})
				if err != nil {
					b.Fatal(err)
				}
				dir := l.Workspace
				if dir == "" {
					dir = root
				}
				x, err := p.Launch(ctx, l, environment.LaunchRequest{Spec: worker.Spec{Path: "/usr/bin/true", Args: []string{"true"},
					Dir: dir, Timeout: 30 * time.Second, MaxOutputBytes: 1 << 16, NullStdin: true}})
				if err != nil {
					b.Fatal(err)
				}
				o, err := worker.Supervise(ctx, x.Spec())
				if err != nil {
					b.Fatal(err)
				}
				s := x.Settle(o)
				if s.Outcome.ExitCode == nil || *s.Outcome.ExitCode != 0 || len(s.Problems) > 0 {
					b.Fatalf("true: %+v %v %s", s.Outcome, s.Problems, o.Output.Stderr())
				}
				if r := p.Cleanup(ctx, l); !r.Confirmed {
					b.Fatal(r.Reason())
				}
			}
			// CPU time (this process and its children, user+system) is the figure a
			// loaded shared machine distorts least; wall time is ns/op.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkSetupCleanup is the host side of a lease alone (cgroups with their limits,
// the disk's tmpfs, the lease file; then kill, unmount, rmdir, confirm), without any
// launch: what BenchmarkAttempt/sandbox spends outside the processes it starts.
func BenchmarkSetupCleanup(b *testing.B) {
	requireSandbox(b)
	p := New(Options{})
	root := leaseRoot(b)
	cpu0 := cpuTime()
	for b.Loop() {
		l, err := p.Setup(context.Background(), environment.LeaseSpec{EnvironmentID: "bench", Root: root, Shape: smallShape})
		if err != nil {
			b.Fatal(err)
		}
		if r := p.Cleanup(context.Background(), l); !r.Confirmed {
			b.Fatal(r.Reason())
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

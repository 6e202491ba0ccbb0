package container

import (
	"context"
	"os"
	"os/exec"
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
// process (/bin/true) supervised by the worker, Settle (the container removed and its
// removal confirmed) and Cleanup, for local and for the container provider side by
// side in one run (container: the engine picked here; container-docker: docker, when
// it answers beside podman); BenchmarkEngineFloor is the engine's own floor to compare
// it with. Run: go test -run '^$' -bench . -count 5 ./environment/container/
func BenchmarkAttempt(b *testing.B) {
	p := requireContainer(b)
	type bench struct {
		name  string
		prov  environment.Provider
		image string
	}
	benches := []bench{{"local", local.New(), ""}, {"container", p, fx.img.Ref}}
	if d, f, ok := dockerBeside(); ok {
		benches = append(benches, bench{"container-docker", d, f.img.Ref})
	}
	for _, bn := range benches {
		prov := bn.prov
		b.Run(bn.name, func(b *testing.B) {
			root := leaseRoot(b)
			ctx := context.Background()
			cpu0 := cpuTime()
			for b.Loop() {
				l, err := prov.Setup(ctx, environment.LeaseSpec{EnvironmentID: "bench", Root: root, Shape: smallShape, Image: bn.image})
				if err != nil {
					b.Fatal(err)
				}
				dir := l.Workspace
				if dir == "" {
					dir = root
				}
				x, err := prov.Launch(ctx, l, environment.LaunchRequest{Spec: worker.Spec{Path: "/bin/true", Args: []string{"true"},
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
				if r := prov.Cleanup(ctx, l); !r.Confirmed {
					b.Fatal(r.Reason())
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// dockerBeside is docker's provider and fixture when the engine picked here is podman
// and docker answers too (nothing is skipped when it does not).
func dockerBeside() (*Provider, *fixture, bool) {
	f := fixtures[EngineDocker]
	if fx == nil || fx.eng.Name == EngineDocker {
		return nil, nil, false
	}
	f.once.Do(func() { f.err = buildFixture(f, EngineDocker) })
	if f.err != nil {
		return nil, nil, false
	}
	eng := f.eng
	return New(Options{Executable: f.exe, Engine: &eng}), f, true
}

// BenchmarkEngineFloor is the engine's floor: a bare `podman run --rm` of /bin/true in
// the same image with the same runtime, limits, user and network, and nothing of the
// provider (no init, no bridge, no lease, no confirmation).
func BenchmarkEngineFloor(b *testing.B) {
	requireContainer(b)
	engineFloor(b, fx)
}

// BenchmarkEngineFloorDocker is BenchmarkEngineFloor of docker beside podman (skipped
// when docker does not answer).
func BenchmarkEngineFloorDocker(b *testing.B) {
	requireContainer(b)
	_, f, ok := dockerBeside()
	if !ok {
		b.Skip("docker does not answer beside podman here")
	}
	engineFloor(b, f)
}

func engineFloor(b *testing.B, fx *fixture) {
	image := fx.img.Ref
	if fx.eng.Name == EngineDocker {
		image = fx.img.ID
	}
	args := fx.eng.args("run", "--rm", "--network", "none", "--user", "65534:65534", "--memory", "100663296", "--pids-limit", "64",
		"--log-driver", "none")
	args = append(args, ulimits()...)
	args = append(args, image, "/bin/true")
	cpu0 := cpuTime()
	for b.Loop() {
		cmd := exec.Command(fx.eng.Path, args...)
		cmd.Env = engineEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkImage is what a cell pays for its image: "reuse" resolves the busybox image
// that is already built (what every cell and campaign after the first does: one
// inspect), "import" imports its root file system afresh under a new name (what the
// first one on a machine does), removed again after each.
func BenchmarkImage(b *testing.B) {
	requireContainer(b)
	ctx := context.Background()
	b.Run("reuse", func(b *testing.B) {
		for b.Loop() {
			img, err := fx.eng.BusyboxImage(ctx)
			if err != nil || img.Ref != fx.img.Ref {
				b.Fatalf("%v: %s, want %s", err, img.Ref, fx.img.Ref)
			}
		}
	})
	b.Run("import", func(b *testing.B) {
		archive, err := busyboxRootfs()
		if err != nil {
			b.Fatal(err)
		}
		tar := b.TempDir() + "/rootfs.tar"
		if err := os.WriteFile(tar, archive, 0o600); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			img, err := fx.eng.Import(ctx, tar, "localhost/agentproof-bench-import")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fx.eng.run(ctx, "rmi", "--force", img.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkNodeImage is what a campaign with Node.js container cells pays for its
// image before planning: "reuse" finds the Node.js image already built (hashing its
// root file system's archive from the host's node and libraries, about 100 MB, then
// one inspect: what every campaign after the first does), "build" writes the archive
// and imports it afresh under a new name (what the first one on a machine does),
// removed again after each.
func BenchmarkNodeImage(b *testing.B) {
	requireContainer(b)
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node is not installed")
	}
	ctx := context.Background()
	want, err := fx.eng.NodeImage(ctx, node)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("reuse", func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			img, err := fx.eng.NodeImage(ctx, node)
			if err != nil || img != want {
				b.Fatalf("%v: %v, want %v", err, img, want)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	})
	b.Run("build", func(b *testing.B) {
		files, err := nodeImageFiles(node)
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuTime()
		for b.Loop() {
			f, err := os.Create(b.TempDir() + "/rootfs.tar")
			if err != nil {
				b.Fatal(err)
			}
			err = writeNodeRootfs(f, files)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				b.Fatal(err)
			}
			_, err = fx.eng.Import(ctx, f.Name(), "localhost/agentproof-bench-nodejs")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fx.eng.run(ctx, "rmi", "localhost/agentproof-bench-nodejs"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	})
}

package container

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/worker"
)

// TestShortLaunchOutput: launches that print and exit at once (like a verifier step),
// several at a time, each in a lease of its own, while other goroutines end locked OS
// threads as the sandbox provider's launches do, each keep their whole stdout and
// stderr, exit 0 and see only descriptors 0–2 (and ls's own): no engine process dies
// of the parent-death signal of a thread that forked it and then ended. Not under
// -short: it runs 60 containers per engine (APC_OUTPUT_PARALLEL=N runs 10·N, N at a
// time, for a heavier load).
func TestShortLaunchOutput(t *testing.T) { forEngines(t, testShortLaunchOutput) }

func testShortLaunchOutput(t *testing.T, p *Provider, fx *fixture) {
	launches, parallel := 60, 6
	if n, err := strconv.Atoi(os.Getenv("APC_OUTPUT_PARALLEL")); err == nil {
		launches, parallel = 10*n, n
	}
	ctx := context.Background()
	img := fx.img.Ref
	stop := make(chan struct{})
	churned := endLockedThreads(stop)
	var mu sync.Mutex
	var lost []string
	var wg sync.WaitGroup
	for w := range parallel {
		wg.Add(1)
		go func() { // one lease each: launches in a lease come one at a time
			defer wg.Done()
			l, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "output", Shape: smallShape, Root: leaseRoot(t), Image: img})
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Cleanup(ctx, l)
			for i := w; i < launches; i += parallel {
				if msg := shortLaunch(ctx, p, l, i); msg != "" {
					mu.Lock()
					lost = append(lost, msg)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	t.Logf("%d launches, %d at a time, while %d threads ended locked", launches, parallel, <-churned)
	if len(lost) > 0 {
		t.Errorf("%d of %d launches lost output:\n%s", len(lost), launches, strings.Join(lost, "\n"))
	}
}

// shortLaunch runs one `echo; exit 0` launch and says what of its output is missing
// ("" when nothing is).
func shortLaunch(ctx context.Context, p *Provider, l *environment.Lease, i int) string {
	x, err := p.Launch(ctx, l, environment.LaunchRequest{Spec: worker.Spec{Path: "/bin/sh",
		Args: []string{"sh", "-c", "for i in 1 2 3 4; do x=$(sh -c \"echo $i\"); done; echo marker-out; ls /proc/self/fd; echo marker-err >&2; exit 0"},
		Env:  []string{"PATH=/bin"}, Dir: l.Workspace, Timeout: time.Minute, MaxOutputBytes: 1 << 16, NullStdin: true}})
	if err != nil {
		return err.Error()
	}
	o, err := worker.Supervise(ctx, x.Spec())
	if err != nil {
		return err.Error()
	}
	s := x.Settle(o)
	out, errOut := string(o.Output.Stdout()), string(o.Output.Stderr())
	if s.Outcome.ExitCode == nil || *s.Outcome.ExitCode != 0 || out != "marker-out\n0\n1\n2\n3\n" || !strings.Contains(errOut, "marker-err\n") {
		return fmt.Sprintf("launch %d: exit %v stdout %q stderr %q problems %v; the engine process: exit %v signal %q", i, fmtExit(s.Outcome.ExitCode), out, errOut, s.Problems, fmtExit(o.ExitCode), o.Signal)
	}
	return ""
}

func fmtExit(c *int) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprint(*c)
}

// endLockedThreads ends OS threads of this process until stop is closed, as the
// sandbox provider's launches do (a goroutine that locks its thread, forks from it in
// a private mount namespace and ends locked, so the runtime ends the thread), and
// then sends how many it ended.
func endLockedThreads(stop <-chan struct{}) <-chan int {
	n := make(chan int, 1)
	go func() {
		ended := 0
		for {
			select {
			case <-stop:
				n <- ended
				return
			case <-time.After(2 * time.Millisecond):
			}
			done := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				close(done) // returns locked: the runtime ends this thread
			}()
			<-done
			ended++
		}
	}()
	return n
}

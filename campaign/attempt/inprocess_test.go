package attempt

import (
	"context"
	"errors"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/worker"
)

// TestInProcessAllowed: the instance runs in-process only for cells that need no
// server process of their own — every flow that restarts or kills the server or the
// agent, a case that restarts the server before its answer, a hostile agent and a
// sandbox cell keep the serve child.
func TestInProcessAllowed(t *testing.T) {
	t.Parallel()
	local := &catalog.Environment{ID: "local", Driver: "local", Provider: "local"}
	sandbox := &catalog.Environment{ID: "sandbox", Driver: "sandbox", Provider: "sandbox"}
	fixture := &catalog.Profile{ID: "fixture-pass", Driver: driver.MustParse("fixture:pass")}
	hostile := &catalog.Profile{ID: "hostile", Driver: driver.MustParse("hostile:read-server")}
	plan := func(p *catalog.Profile, e *catalog.Environment, c *catalog.Case) campaign.AttemptPlan {
		return campaign.AttemptPlan{Cell: &catalog.Cell{Profile: p, Environment: e, Case: c}}
	}
	for _, tc := range []struct {
		name string
		plan campaign.AttemptPlan
		want bool
	}{
		{"process exit", plan(fixture, local, &catalog.Case{Flow: "process_exit"}), true},
		{"single turn", plan(fixture, local, &catalog.Case{Flow: "single_turn"}), true},
		{"question resume without a restart", plan(fixture, local, &catalog.Case{Flow: "question_resume_completion"}), true},
		{"question resume with a restart", plan(fixture, local, &catalog.Case{Flow: "question_resume_completion", RestartServerBeforeAnswer: true}), false},
		{"server crash retry", plan(fixture, local, &catalog.Case{Flow: "server_crash_retry"}), false},
		{"crash retry", plan(fixture, local, &catalog.Case{Flow: "crash_retry"}), false},
		{"lost acknowledgement", plan(fixture, local, &catalog.Case{Flow: "lost_acknowledgement"}), false},
		{"instruction persistence", plan(fixture, local, &catalog.Case{Flow: "instruction_persistence"}), false},
		{"hostile agent", plan(hostile, local, &catalog.Case{Flow: "single_turn"}), false},
		{"sandbox cell", plan(fixture, sandbox, &catalog.Case{Flow: "single_turn"}), false},
		{"a case that asks for a server process", plan(fixture, local, &catalog.Case{Flow: "single_turn", ServerProcess: true}), false},
		{"no case", plan(fixture, local, nil), false},
	} {
		got, why := inProcessAllowed(tc.plan)
		if got != tc.want || (!got && why == "") {
			t.Errorf("%s: inProcessAllowed = %v %q, want %v (and a reason when false)", tc.name, got, why, tc.want)
		}
	}
}

// fakeInProcess is an InProcessServer on a real loopback listener that writes the
// board token into its home as the server does, and counts its shutdowns.
type fakeInProcess struct {
	ln        net.Listener
	shutdowns atomic.Int32
}

func (f *fakeInProcess) Addr() string { return f.ln.Addr().String() }
func (f *fakeInProcess) Shutdown(context.Context) error {
	f.shutdowns.Add(1)
	return f.ln.Close()
}

func fakeStart(got *fakeInProcess, cfg *InProcessConfig) InProcessStart {
	return func(_ context.Context, c InProcessConfig) (InProcessServer, error) {
		*cfg = c
		if err := os.WriteFile(filepath.Join(c.Home, boardTokenFile), []byte("board-token-inprocess\n"), 0o600); err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		got.ln = ln
		_, _ = c.Log.Write([]byte("in-process log line\n"))
		return got, nil
	}
}

// TestInProcessInstanceRestartIsAChild: an in-process instance gets the attempt's
// marker and the shared flags' digest and template, its board token from its home;
// a restart stops it (once) and starts a serve child on the same home (a restart is a
// new process), keeping the in-process log as the earlier log; a crash of an
// in-process instance is refused (it cannot be killed without the campaign).
func TestInProcessInstanceRestartIsAChild(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	var fake fakeInProcess
	var cfg InProcessConfig
	marker := worker.NewMarker()
	digest := "1:2:3:4:5:" + strings.Repeat("ab", 32)
	in, err := startInstanceInProcess(context.Background(), fakeStart(&fake, &cfg), stubbornServe(t, root), home, root, marker, "", []string{"--known-digest", digest}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !in.inProcess() || in.pid() != 0 || in.token != "board-token-inprocess" || in.addr() != fake.Addr() {
		t.Fatalf("in-process instance: inProcess %v pid %d token %q addr %q", in.inProcess(), in.pid(), in.token, in.addr())
	}
	if cfg.Home != home || cfg.Marker != marker || len(cfg.KnownDigests) != 1 || cfg.KnownDigests[0].String() != digest {
		t.Errorf("config: %+v", cfg)
	}
	if err := in.crash(context.Background()); err == nil || fake.shutdowns.Load() != 0 {
		t.Errorf("crash of an in-process instance: %v (shutdowns %d), want refused", err, fake.shutdowns.Load())
	}
	if _, err := in.restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if in.inProcess() || in.child == nil || in.pid() == 0 || fake.shutdowns.Load() != 1 {
		t.Fatalf("after the restart: inProcess %v child %v shutdowns %d; want a serve child", in.inProcess(), in.child != nil, fake.shutdowns.Load())
	}
	if len(in.earlier) != 1 || !strings.Contains(string(in.earlier[0]), "in-process log line") {
		t.Errorf("earlier logs %q, want the in-process instance's", in.earlier)
	}
	in.child.grace = 100 * time.Millisecond
	if _, _, _, err := in.stop(); err != nil {
		t.Error(err)
	}
}

// TestInProcessStopTimesOut: an in-process instance that does not shut down within
// its grace is reported as killed (a harness note; its agents are the marker sweep's),
// not as an error; a shutdown that fails is an error.
func TestInProcessStopTimesOut(t *testing.T) {
	t.Parallel()
	ip := &inProcessChild{srv: blockingServer{}, log: &boundedBuffer{max: 16}}
	timedOut, err := ip.stopWithin(50 * time.Millisecond)
	if !timedOut || err != nil {
		t.Errorf("stop of a server that never shuts down: timedOut %v err %v; want timed out, no error", timedOut, err)
	}
	ip = &inProcessChild{srv: failingServer{}, log: &boundedBuffer{max: 16}}
	if timedOut, err := ip.stopWithin(time.Second); timedOut || err == nil {
		t.Errorf("stop of a server whose shutdown fails: timedOut %v err %v; want an error", timedOut, err)
	}
}

type blockingServer struct{}

func (blockingServer) Addr() string { return "127.0.0.1:9" }
func (blockingServer) Shutdown(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

type failingServer struct{}

func (failingServer) Addr() string                   { return "127.0.0.1:9" }
func (failingServer) Shutdown(context.Context) error { return errors.New("store close failed") }

// TestSharedFlagsLateDigest: an in-process instance does not wait for a digest of the
// executable that `run` is still making — it gets a function that waits for it
// (heartbeat.Config.ExecutableDigest) and no --known-digest for it; once the digest is
// made, every instance gets it as a flag, and a serve child always waits for it.
func TestSharedFlagsLateDigest(t *testing.T) {
	t.Parallel()
	made := api.KnownDigest{Dev: 1, Ino: 2, Size: 3, MtimeNs: 4, CtimeNs: 5, SHA256: strings.Repeat("ef", 32)}
	g := &Digest{done: make(chan struct{})}
	x := &LocalExecutor{ExecutableDigest: g}
	flags, late := x.sharedFlags(false)
	if slices.Contains(flags, made.String()) || late == nil {
		t.Fatalf("pending digest: flags %q, late %v; want no digest flag and a late function", flags, late != nil)
	}
	g.d = made
	close(g.done)
	if d, ok := late(); !ok || d != made {
		t.Errorf("late() = %+v, %v; want the digest once made", d, ok)
	}
	for _, wait := range []bool{false, true} {
		flags, late := x.sharedFlags(wait)
		if !slices.Contains(flags, made.String()) || late != nil {
			t.Errorf("made digest, wait %v: flags %q, late %v; want the digest as a flag", wait, flags, late != nil)
		}
	}
}

// TestDigestCancel: a digest cancelled while the file is being hashed reports false, and
// a late digest of it (sharedFlags) gives the attempt none, so its runner hashes the
// binary itself; a digest made before the cancel stays made.
func TestDigestCancel(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: reads fast, hashes in about a second, far longer than the cancel takes.
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g := StartDigest(big)
	g.Cancel()
	if d, ok := g.Wait(10 * time.Second); ok {
		t.Fatalf("cancelled digest made: %+v", d)
	}
	if !g.Made() {
		t.Fatal("a cancelled digest has not ended")
	}
	x := &LocalExecutor{ExecutableDigest: g}
	if flags, late := x.sharedFlags(false); late != nil || slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, "--known-digest") }) {
		t.Errorf("cancelled digest: flags %q, late %v; want neither", flags, late != nil)
	}

	small := filepath.Join(t.TempDir(), "small")
	if err := os.WriteFile(small, []byte("agentproof"), 0o755); err != nil {
		t.Fatal(err)
	}
	g = StartDigest(small)
	if _, ok := g.Wait(10 * time.Second); !ok {
		t.Fatal("digest of a small file not made")
	}
	g.Cancel()
	if d, ok := g.Wait(0); !ok || d.Size != 10 {
		t.Errorf("a digest made before the cancel: %+v, %v", d, ok)
	}
}

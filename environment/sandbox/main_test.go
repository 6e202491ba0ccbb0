package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/hostile"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/internal/raceexit"
	"github.com/agentproof/agentproof/worker"
)

// The test binary doubles as the agentproof binary inside every sandbox, so each test
// runs the real init and the real hostile agent:
//
//	<test binary> sandbox-init …    the sandbox's PID 1 (RunInit)
//	<test binary> hostile <attack>  the hostile agent (package agent/hostile)
//	AGENTPROOF_TEST_MODE=controller <test binary> <lease.json>
//	                                a controller that launches `hostile daemon wait`
//	                                into the lease and is then SIGKILLed by the test
func TestMain(m *testing.M) {
	// As a child process, this binary exits without the race detector's sleep.
	raceexit.Main()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case InitCommand:
			os.Exit(RunInit(os.Args[2:], os.Stderr))
		case "hostile":
			os.Exit(hostile.Run(os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	if os.Getenv("AGENTPROOF_TEST_MODE") == "controller" {
		os.Exit(controller(os.Args[1]))
	}
	if os.Getenv("AGENTPROOF_TEST_MODE") == "rootless" {
		os.Exit(rootlessController(os.Args[1]))
	}
	// A secret in the controller's own environment: no sandbox may read it.
	os.Setenv(controllerSecretVar, controllerSecret)
	os.Exit(m.Run())
}

const (
	controllerSecretVar = "AGENTPROOF_TEST_CONTROLLER_SECRET"
	controllerSecret    = "controller-secret-5d1f0c"
)

// controller is a process that owns nothing but a launch: it reads the lease, starts
// a waiting daemon inside and supervises it until it is killed.
func controller(leaseFile string) int {
	l, err := environment.ReadLeaseFile(leaseFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	p := New(Options{})
	x, err := p.Launch(context.Background(), l, environment.LaunchRequest{Spec: hostileSpec(l, "daemon", "wait", filepath.Join(l.Workspace, "daemon-ready"))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	o, _ := worker.Supervise(context.Background(), x.Spec())
	x.Settle(o)
	return 0
}

var (
	probeOnce   sync.Once
	probeReport environment.ProbeReport
)

// requireSandbox skips (outside CI) or fails (CI=true) a test when this machine cannot
// run the sandbox provider, naming what is missing.
func requireSandbox(t testing.TB) {
	t.Helper()
	probeOnce.Do(func() { probeReport = New(Options{}).Probe(context.Background()) })
	if probeReport.Available {
		return
	}
	msg := "the sandbox provider cannot run here: " + strings.Join(probeReport.Missing(), "; ")
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: .ci/run installs bubblewrap and runs as root)")
	}
	t.Skip(msg)
}

// leaseRoot is a temporary lease root, removed at the end of the test (the bridge
// sockets live in the lease's own short socket directory, so its depth does not
// matter: TestDeepRoot).
func leaseRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "apl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

var smallShape = environment.Shape{CPUCores: 1, MemoryBytes: 256 << 20, PIDs: 128, DiskBytes: 64 << 20}

// setup creates a sandbox lease for a test and cleans it up at the end, failing the
// test when that cleanup is not confirmed.
func setup(t testing.TB, p *Provider, spec environment.LeaseSpec) *environment.Lease {
	t.Helper()
	if spec.EnvironmentID == "" {
		spec.EnvironmentID = "sandbox"
	}
	if spec.Root == "" {
		spec.Root = leaseRoot(t)
	}
	if spec.Shape.IsZero() {
		spec.Shape = smallShape
	}
	l, err := p.Setup(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r := p.Cleanup(context.Background(), l)
		if !r.Confirmed {
			t.Errorf("cleanup of %s not confirmed: %s", l.ID, r.Reason())
		}
	})
	return l
}

func testExe() string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exe
}

// hostileSpec is the worker spec of `hostile <args>` working in l's workspace. GORACE
// keeps a -race build of the test binary (init and the agent) from sleeping a second
// at exit.
func hostileSpec(l *environment.Lease, args ...string) worker.Spec {
	exe := testExe()
	return worker.Spec{Path: exe, Args: append([]string{exe, "hostile"}, args...),
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + Home, "LANG=C", "TZ=UTC", "GORACE=atexit_sleep_ms=0"},
		Dir: l.Workspace, Timeout: 60 * time.Second, MaxOutputBytes: 1 << 20, NullStdin: true}
}

// result is one supervised launch.
type result struct {
	environment.Settled
	stdout, stderr string
	report         hostile.Report
}

// launch runs spec in l through Launch, Supervise and Settle.
func launch(t testing.TB, ctx context.Context, p *Provider, l *environment.Lease, req environment.LaunchRequest) result {
	t.Helper()
	x, err := p.Launch(ctx, l, req)
	if err != nil {
		t.Fatal(err)
	}
	o, err := worker.Supervise(ctx, x.Spec())
	if err != nil {
		t.Fatal(err)
	}
	s := x.Settle(o)
	r := result{Settled: s, stdout: string(o.Output.Stdout()), stderr: string(o.Output.Stderr())}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &r.report)
	return r
}

func attack(t testing.TB, p *Provider, l *environment.Lease, args ...string) result {
	t.Helper()
	return launch(t, context.Background(), p, l, environment.LaunchRequest{Spec: hostileSpec(l, args...)})
}

func exitCode(o worker.Outcome) string {
	switch {
	case o.ExitCode != nil:
		return fmt.Sprint(*o.ExitCode)
	case o.Signal != "":
		return o.Signal
	}
	return "none"
}

// countingListener is a loopback TCP listener that counts the connections it accepts.
type countingListener struct {
	net.Listener
	mu sync.Mutex
	n  int
}

func listenCounting(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cl.mu.Lock()
			cl.n++
			cl.mu.Unlock()
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return cl
}

func (c *countingListener) accepted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// httpServer is a loopback HTTP server answering body and counting requests.
func httpServer(t *testing.T, body string) (*httptest.Server, func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func mustWrite(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

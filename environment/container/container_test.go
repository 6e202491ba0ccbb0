package container

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/internal/raceexit"
	"github.com/agentproof/agentproof/worker"
)

// The real container tests need root, an engine (podman, or docker with its daemon
// running) and Debian's busybox-static; each runs a real container of a busybox image
// imported on this machine (nothing is pulled) with a static init built from
// testdata/init (the race-enabled test binary is dynamic). The tests of the provider's
// behaviours run once per engine (forEngines): an engine this machine lacks is
// skipped, naming why.
//
//	AGENTPROOF_TEST_MODE=container-owner <test binary> <root> <image> <out> <engine>
//	    sets a lease up, starts a long container in it, writes the container's name
//	    to <out> and waits to be SIGKILLed by TestOrphanSweep
func TestMain(m *testing.M) {
	raceexit.Main()
	if os.Getenv("AGENTPROOF_TEST_MODE") == "container-owner" {
		os.Exit(owner(os.Args[1], os.Args[2], os.Args[3], os.Args[4], EngineName(os.Args[5])))
	}
	code := m.Run()
	if initDir != "" {
		_ = os.RemoveAll(initDir)
	}
	os.Exit(code)
}

// fixture is what the real container tests of one engine share: the engine, the
// static init and the busybox image.
type fixture struct {
	once sync.Once
	exe  string
	img  Image
	eng  Engine
	err  error
}

var (
	// fx is the fixture of the engine the provider picks here (requireContainer).
	fx       *fixture
	fixtures = map[EngineName]*fixture{EnginePodman: {}, EngineDocker: {}}
	initOnce sync.Once
	initDir  string // holds the static init (agentproof)
	initErr  error
)

// requireContainer skips a real container test under -short, and skips (outside CI)
// or fails (CI=true) it when this machine cannot run the provider, naming what is
// missing. It returns a provider of the engine the provider picks here (FindEngine)
// using the static test init.
func requireContainer(t testing.TB) *Provider {
	t.Helper()
	name := EnginePodman
	if e, ok := FindEngine(); ok {
		name = e.Name
	}
	p, f := requireEngine(t, name)
	fx = f
	return p
}

// requireEngine is requireContainer for the engine name. With CI=true podman must
// run, and docker too when its daemon is installed (.ci/run installs docker.io and
// starts dockerd); elsewhere an engine this machine lacks is skipped.
func requireEngine(t testing.TB, name EngineName) (*Provider, *fixture) {
	t.Helper()
	if testing.Short() {
		t.Skip("a real container (-short skips it)")
	}
	f := fixtures[name]
	f.once.Do(func() { f.err = buildFixture(f, name) })
	if f.err != nil {
		_, dockerd := exec.LookPath("dockerd")
		if os.Getenv("CI") == "true" && (name == EnginePodman || dockerd == nil) {
			t.Fatal(f.err.Error() + " (CI=true: .ci/run installs podman, runc, docker.io and busybox-static, starts dockerd and runs as root)")
		}
		t.Skip(f.err.Error())
	}
	eng := f.eng
	return New(Options{Executable: f.exe, Engine: &eng}), f
}

// forEngines runs test once per engine, podman then docker, each a subtest.
func forEngines(t *testing.T, test func(t *testing.T, p *Provider, f *fixture)) {
	for _, name := range []EngineName{EnginePodman, EngineDocker} {
		t.Run(string(name), func(t *testing.T) {
			p, f := requireEngine(t, name)
			test(t, p, f)
		})
	}
}

// engineNamed is the engine name on this machine (podman with runc when runc is
// installed), false when its CLI is not on PATH.
func engineNamed(name EngineName) (Engine, bool) {
	path, err := exec.LookPath(string(name))
	if err != nil {
		return Engine{}, false
	}
	e := Engine{Name: name, Path: path}
	if r, err := exec.LookPath("runc"); err == nil && name == EnginePodman {
		e.Runtime = r
	}
	return e, true
}

func buildFixture(f *fixture, name EngineName) error {
	eng, ok := engineNamed(name)
	if !ok || os.Geteuid() != 0 {
		return fmt.Errorf("the container provider needs root and %s here", name)
	}
	if _, err := eng.Version(context.Background()); err != nil {
		return fmt.Errorf("%s does not answer (docker: is its daemon running?): %w", name, err)
	}
	initOnce.Do(func() { initErr = buildInit() })
	if initErr != nil {
		return initErr
	}
	f.eng, f.exe = eng, filepath.Join(initDir, "agentproof")
	p := New(Options{Executable: f.exe, Engine: &eng})
	if r := p.Probe(context.Background()); !r.Available {
		return fmt.Errorf("the container provider cannot run %s here: %s", name, strings.Join(r.Missing(), "; "))
	}
	var err error
	f.img, err = eng.BusyboxImage(context.Background())
	return err
}

// buildInit builds the static test init into initDir.
func buildInit() error {
	dir, err := os.MkdirTemp("", "apc-fixture-")
	if err != nil {
		return err
	}
	initDir = dir
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "agentproof"), "./testdata/init")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the static test init: %v: %s", err, out)
	}
	return os.Chmod(dir, 0o755)
}

var smallShape = environment.Shape{CPUCores: 0.5, MemoryBytes: 96 << 20, PIDs: 64, DiskBytes: 32 << 20}

func leaseRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "apc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// TestTagRefused: an image named by a tag alone is refused before anything is made,
// naming the digest it needs.
func TestTagRefused(t *testing.T) {
	t.Parallel()
	eng := Engine{Name: EnginePodman, Path: "/usr/bin/podman"}
	p := New(Options{Executable: "/nonexistent/agentproof", Engine: &eng})
	for _, ref := range []string{"busybox", "docker.io/library/busybox:1.36", "busybox@sha256:abc"} {
		_, err := p.Setup(context.Background(), environment.LeaseSpec{EnvironmentID: "c", Shape: smallShape, Root: t.TempDir(), Image: ref})
		var se *environment.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), "image") {
			t.Errorf("Setup(image %q) = %v, want a spec error naming the image's digest", ref, err)
		}
	}
	if msg := ImageRefProblem("localhost/x@sha256:" + strings.Repeat("ab", 32)); msg != "" {
		t.Errorf("a digest ref refused: %s", msg)
	}
}

// TestLaunch: one agent process in a real container: its limits as seen inside match the
// lease's shape, it runs as the container user without capabilities, it reaches the
// allowlisted endpoint through the bridge and nothing else, it writes its workspace
// and not the image's root, init reports its own exit code, and the container is
// removed and its removal confirmed; the lease's cleanup is confirmed.
func TestLaunch(t *testing.T) { forEngines(t, testLaunch) }

func testLaunch(t *testing.T, p *Provider, fx *fixture) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "bridged-ok") })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()
	ctx := context.Background()
	l, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "container", Shape: smallShape, Root: leaseRoot(t), Image: fx.img.Ref,
		Endpoints: []environment.Endpoint{{Name: "cp", Kind: environment.EndpointControlPlane, Listen: addr, Dial: addr}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.StartBridge(l)
	if err != nil {
		t.Fatal(err)
	}
	script := `set -u
echo uid=$(id -u)
echo mem=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)
echo pids=$(cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max)
echo cpu=$(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo "$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)")
echo capeff=$(grep CapEff /proc/self/status | tr -d '\t')
echo bridge=$(printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 ` + strings.Replace(addr, ":", " ", 1) + ` | tail -n 1)
nc -w 3 1.1.1.1 80 </dev/null 2>/dev/null && echo outside=reached || echo outside=unreachable
touch /etc/agent-was-here 2>/dev/null && echo root=writable || echo root=read-only
test -e ` + InitDir + `/` + statusSocketName + ` && echo status=reachable || echo status=gone
echo work > ` + l.Workspace + `/made-inside
exit 7`
	s, o := launch(t, ctx, p, l, environment.LaunchRequest{Spec: worker.Spec{Path: "/bin/sh", Args: []string{"sh", "-c", script},
		Env: []string{"PATH=/bin", "HOME=" + Home}, Dir: l.Workspace, Timeout: time.Minute, MaxOutputBytes: 1 << 20, NullStdin: true}})
	out := string(o.Output.Stdout())
	t.Logf("stdout:\n%s\nstderr:\n%s\nfacts %v problems %v", out, o.Output.Stderr(), s.Facts, s.Problems)
	quota := int64(smallShape.CPUCores * 100000)
	for _, want := range []string{"uid=65534", "mem=" + strconv.FormatInt(smallShape.MemoryBytes, 10), "pids=" + strconv.FormatInt(smallShape.PIDs, 10),
		"cpu=" + strconv.FormatInt(quota, 10) + " 100000", "capeff=CapEff:0000000000000000", "bridge=bridged-ok", "outside=unreachable", "root=read-only", "status=gone"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("inside the container, want %q", want)
		}
	}
	if s.Outcome.ExitCode == nil || *s.Outcome.ExitCode != 7 || len(s.Problems) > 0 {
		t.Errorf("settled exit %v problems %v, want the agent's 7 and none", s.Outcome.ExitCode, s.Problems)
	}
	if s.Facts[FactRemoved] != "confirmed" || s.Facts[FactImage] != fx.img.Ref || s.Facts["connections.cp"] != "1" {
		t.Errorf("facts %v: want removal confirmed, the image by digest and one bridged connection", s.Facts)
	}
	if there, err := fx.eng.exists(ctx, s.Facts[FactContainer]); there || err != nil {
		t.Errorf("container %s still exists (%v)", s.Facts[FactContainer], err)
	}
	if data, err := os.ReadFile(filepath.Join(l.Workspace, "made-inside")); err != nil || string(data) != "work\n" {
		t.Errorf("the workspace file: %q, %v", data, err)
	}
	_ = b.Close()
	if r := p.Cleanup(ctx, l); !r.Confirmed {
		t.Errorf("cleanup not confirmed: %s", r.Reason())
	}
	if _, err := os.Stat(l.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lease directory left: %v", err)
	}
}

// TestCleanupRemovesContainers: a container the agent's launch left running (its
// engine process was killed) is found, removed and confirmed gone by the lease's
// cleanup.
func TestCleanupRemovesContainers(t *testing.T) { forEngines(t, testCleanupRemovesContainers) }

func testCleanupRemovesContainers(t *testing.T, p *Provider, fx *fixture) {
	ctx := context.Background()
	l, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "container", Shape: smallShape, Root: leaseRoot(t), Image: fx.img.Ref})
	if err != nil {
		t.Fatal(err)
	}
	name := startLong(t, p, l, fx.eng)
	statusDir, err := fx.eng.run(ctx, "inspect", "--type", "container", "--format", `{{index .Config.Labels "`+labelStatusDir+`"}}`, name)
	if err != nil || (fx.eng.Name == EngineDocker) != (statusDir != "") {
		t.Fatalf("the container's status directory label: %q, %v", statusDir, err)
	}
	r := p.Cleanup(ctx, l)
	if _, err := os.Lstat(statusDir); statusDir != "" && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unsettled launch's status directory %s survived the cleanup (%v)", statusDir, err)
	}
	if !r.Confirmed || len(r.Found.Containers) != 1 || r.Found.Containers[0] != name {
		t.Errorf("cleanup: confirmed %t, found %v (want %s): %s", r.Confirmed, r.Found.Containers, name, r.Reason())
	}
	if there, err := fx.eng.exists(ctx, name); there || err != nil {
		t.Errorf("container %s still exists after cleanup (%v)", name, err)
	}
}

// startLong launches `sleep 600` into l and kills the engine process, so the container
// keeps running on its own (as after a SIGKILLed campaign); it returns its name once
// it runs.
func startLong(t testing.TB, p *Provider, l *environment.Lease, eng Engine) string {
	t.Helper()
	x, err := p.Launch(context.Background(), l, environment.LaunchRequest{Spec: worker.Spec{Path: "/bin/sleep", Args: []string{"sleep", "600"},
		Env: []string{"PATH=/bin"}, Dir: l.Workspace, Timeout: time.Minute, NullStdin: true}})
	if err != nil {
		t.Fatal(err)
	}
	name := x.(*launched).name
	spec := x.Spec()
	cmd := exec.Command(spec.Path, spec.Args[1:]...)
	cmd.Env, cmd.ExtraFiles = spec.Env, spec.ExtraFiles
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, eng, name)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return name
}

func waitRunning(t testing.TB, eng Engine, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if out, err := eng.run(context.Background(), "inspect", "--type", "container", "--format", "{{.State.Running}}", name); err == nil && out == "true" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("container %s never ran", name)
}

// TestOrphanSweep: a container left by an owner that was SIGKILLed (a killed campaign)
// is removed by the sweep of the next run's first Setup, and its lease disk unmounted;
// a live owner's container is kept.
func TestOrphanSweep(t *testing.T) { forEngines(t, testOrphanSweep) }

func testOrphanSweep(t *testing.T, p *Provider, fx *fixture) {
	ctx := context.Background()
	root := leaseRoot(t)
	out := filepath.Join(root, "container-name")
	cmd := exec.Command(os.Args[0], root, fx.exe, fx.img.Ref, out, string(fx.eng.Name))
	cmd.Env = append(os.Environ(), "AGENTPROOF_TEST_MODE=container-owner")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var name string
	for deadline := time.Now().Add(60 * time.Second); name == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		data, _ := os.ReadFile(out)
		name = strings.TrimSpace(string(data))
	}
	if name == "" {
		_ = cmd.Process.Kill()
		t.Fatal("the owner never started its container")
	}
	live, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "container", Shape: smallShape, Root: root, Image: fx.img.Ref})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := p.Cleanup(ctx, live); !r.Confirmed {
			t.Error(r.Reason())
		}
	}()
	if there, _ := fx.eng.exists(ctx, name); !there {
		t.Fatalf("the sweep removed %s while its owner lived", name)
	}
	statusDir, err := fx.eng.run(ctx, "inspect", "--type", "container", "--format", `{{index .Config.Labels "`+labelStatusDir+`"}}`, name)
	if err != nil || (fx.eng.Name == EngineDocker) != (statusDir != "") {
		t.Fatalf("the orphan's status directory label: %q, %v", statusDir, err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if there, _ := fx.eng.exists(ctx, name); !there {
		t.Fatalf("container %s did not outlive its killed owner: nothing to sweep", name)
	}
	// The next run: a provider of its own, whose first Setup sweeps.
	eng := fx.eng
	nextRun := New(Options{Executable: fx.exe, Engine: &eng})
	next, err := nextRun.Setup(ctx, environment.LeaseSpec{EnvironmentID: "container", Shape: smallShape, Root: root, Image: fx.img.Ref})
	if err != nil {
		t.Fatal(err)
	}
	if r := nextRun.Cleanup(ctx, next); !r.Confirmed {
		t.Error(r.Reason())
	}
	if there, err := fx.eng.exists(ctx, name); there || err != nil {
		t.Errorf("the orphan %s survived the next setup's sweep (%v)", name, err)
	}
	if _, err := os.Lstat(statusDir); statusDir != "" && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the orphan's status directory %s survived the sweep (%v)", statusDir, err)
	}
	ms, _ := mountsUnderRoot(root)
	for _, m := range ms {
		if !strings.HasPrefix(m, live.Dir+"/") {
			t.Errorf("the orphan's lease disk is still mounted: %s", m)
		}
	}
}

// owner is the container-owner test mode: a lease with one long container, then wait.
func owner(root, exe, image, out string, name EngineName) int {
	eng, _ := engineNamed(name)
	p := New(Options{Executable: exe, Engine: &eng})
	l, err := p.Setup(context.Background(), environment.LeaseSpec{EnvironmentID: "container", Shape: smallShape, Root: root, Image: image})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	x, err := p.Launch(context.Background(), l, environment.LaunchRequest{Spec: worker.Spec{Path: "/bin/sleep", Args: []string{"sleep", "600"},
		Env: []string{"PATH=/bin"}, Dir: l.Workspace, Timeout: 10 * time.Minute, MaxOutputBytes: 1 << 16, NullStdin: true}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	go func() {
		name := x.(*launched).name
		for {
			if o, err := eng.run(context.Background(), "inspect", "--type", "container", "--format", "{{.State.Running}}", name); err == nil && o == "true" {
				_ = os.WriteFile(out, []byte(name), 0o600)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	o, err := worker.Supervise(context.Background(), x.Spec())
	fmt.Fprintf(os.Stderr, "owner: the container ended: %v %s\n", err, o.Output.Stderr())
	return 0
}

func mountsUnderRoot(root string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], root+"/") {
			out = append(out, f[4])
		}
	}
	return out, err
}

// TestLimitsNamed: a memory hog and a fork bomb in real containers meet the lease's
// memory and pids limits, and Settle names each limit from the container's own cgroup
// counters (the engine removes the cgroup at the exit, so the host reads nothing
// afterwards).
func TestLimitsNamed(t *testing.T) { forEngines(t, testLimitsNamed) }

func testLimitsNamed(t *testing.T, p *Provider, fx *fixture) {
	ctx := context.Background()
	l, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "container", Shape: smallShape, Root: leaseRoot(t), Image: fx.img.Ref})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := p.Cleanup(ctx, l); !r.Confirmed {
			t.Error(r.Reason())
		}
	}()
	for _, tc := range []struct {
		attack   []string
		resource environment.Resource
	}{
		{[]string{"memory", strconv.FormatInt(4*smallShape.MemoryBytes, 10)}, environment.ResourceMemory},
		{[]string{"forkbomb", strconv.FormatInt(4*smallShape.PIDs, 10)}, environment.ResourcePIDs},
	} {
		s, _ := launch(t, ctx, p, l, environment.LaunchRequest{Spec: worker.Spec{Path: fx.exe, Args: append([]string{fx.exe, "hostile"}, tc.attack...),
			Env: []string{"PATH=/bin"}, Dir: l.Workspace, Timeout: time.Minute, MaxOutputBytes: 1 << 20, NullStdin: true}})
		named := false
		for _, h := range s.Limits {
			named = named || (h.Resource == tc.resource && h.Events > 0)
		}
		if !named || s.Facts[FactRemoved] != "confirmed" {
			t.Errorf("%v: limits %+v, facts %v: want the %s limit named and the container removed", tc.attack, s.Limits, s.Facts, tc.resource)
		}
	}
}

// TestWorkdirAndBinds: an image built with the engine (FROM the busybox image, nothing
// pulled) puts a file at /app; a lease with workdir /app seeds the workspace from it and
// starts a launch in the workspace at /app; a read-only bind is mounted at /tests and a
// writable one from the lease disk at /logs, as a Harbor task's verifier needs them.
func TestWorkdirAndBinds(t *testing.T) { forEngines(t, testWorkdirAndBinds) }

func testWorkdirAndBinds(t *testing.T, p *Provider, fx *fixture) {
	ctx := context.Background()
	bctx := t.TempDir()
	if err := os.WriteFile(filepath.Join(bctx, "hello"), []byte("from-the-image\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	from := fx.img.Ref
	if fx.eng.Name == EngineDocker {
		from = fx.img.ID // docker finds a local image by its id, not by <name>@<id>
	}
	df := "FROM " + from + "\nCOPY hello /app/hello\nWORKDIR /app\n"
	if err := os.WriteFile(filepath.Join(bctx, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := fx.eng.Build(ctx, BuildRequest{Context: bctx, Name: "localhost/agentproof-test-workdir"})
	if err != nil {
		t.Fatal(err)
	}
	if msg := ImageRefProblem(img.Ref); msg != "" {
		t.Fatalf("Build returned %q: %s", img.Ref, msg)
	}
	for ref, want := range map[string]bool{img.Ref: true, "localhost/agentproof-test-workdir:latest": true, "localhost/agentproof-test-absent:1": false} {
		if has, err := fx.eng.HasImage(ctx, ref); has != want || err != nil {
			t.Errorf("HasImage(%s) = %t, %v; want %t", ref, has, err, want)
		}
	}
	l, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "container", Shape: smallShape, Root: leaseRoot(t), Image: img.Ref, Workdir: "/app"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := p.Cleanup(ctx, l); !r.Confirmed {
			t.Error(r.Reason())
		}
	}()
	tests := t.TempDir()
	if err := os.WriteFile(filepath.Join(tests, "test.sh"), []byte("echo tested\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tests, 0o755); err != nil {
		t.Fatal(err)
	}
	logs, err := p.DiskDir(l, "verifier-logs")
	if err != nil {
		t.Fatal(err)
	}
	script := `echo pwd=$(pwd); echo hello=$(cat hello); echo tests=$(sh /tests/test.sh); echo logged > /logs/out; echo made > new
touch /tests/x 2>/dev/null && echo tests=writable || echo tests=read-only`
	s, o := launch(t, ctx, p, l, environment.LaunchRequest{Spec: worker.Spec{Path: "/bin/sh", Args: []string{"sh", "-c", script},
		Env: []string{"PATH=/bin"}, Dir: l.Workspace, Timeout: time.Minute, MaxOutputBytes: 1 << 20, NullStdin: true},
		Binds: []environment.Bind{{Path: tests, At: "/tests"}, {Path: logs, Write: true, At: "/logs"}}})
	out := string(o.Output.Stdout())
	for _, want := range []string{"pwd=/app", "hello=from-the-image", "tests=tested", "tests=read-only"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("want %q in:\n%s%s", want, out, o.Output.Stderr())
		}
	}
	for file, want := range map[string]string{filepath.Join(logs, "out"): "logged\n", filepath.Join(l.Workspace, "new"): "made\n", filepath.Join(l.Workspace, "hello"): "from-the-image\n"} {
		if data, err := os.ReadFile(file); err != nil || string(data) != want {
			t.Errorf("%s: %q, %v; want %q", file, data, err, want)
		}
	}
	if s.Facts[FactRemoved] != "confirmed" || len(s.Problems) > 0 {
		t.Errorf("facts %v problems %v", s.Facts, s.Problems)
	}
}

// TestNodeImage: the Node.js image built from the host's node runs JavaScript as the
// container user with no network but the bridge: a module from a node_modules
// mounted read-only loads and cannot be written, node reaches the allowlisted endpoint
// through the bridge (its own http client) and nothing else, HOME is writable; a
// second build finds the same image by digest (reused, not imported again).
func TestNodeImage(t *testing.T) { forEngines(t, testNodeImage) }

func testNodeImage(t *testing.T, p *Provider, fx *fixture) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed (CI=true: .ci/run installs Node.js)")
		}
		t.Skip("node is not installed")
	}
	ctx := context.Background()
	img, err := fx.eng.NodeImage(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	again, err := fx.eng.NodeImage(ctx, node)
	if err != nil || again != img {
		t.Fatalf("the second build: %v, %v; want the same image %v", again, err, img)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "bridged-ok") })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()
	nm := filepath.Join(t.TempDir(), "cli", "node_modules")
	if err := os.MkdirAll(filepath.Join(nm, "greet"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nm, "greet", "index.js"), []byte("module.exports = () => 'greet-loaded'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The container user reaches the mount point through its parents: open the test's
	// own directories (t.TempDir makes them 0700), never the system's temporary
	// directory or anything above it (chmod 0755 of /tmp takes its sticky, world-writable
	// mode away from every other user of the machine).
	for d := filepath.Dir(nm); strings.HasPrefix(d, filepath.Clean(os.TempDir())+string(filepath.Separator)); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "container-node", Shape: smallShape, Root: leaseRoot(t), Image: img.Ref,
		Endpoints: []environment.Endpoint{{Name: "cp", Kind: environment.EndpointControlPlane, Listen: addr, Dial: addr}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.StartBridge(l)
	if err != nil {
		t.Fatal(err)
	}
	script := `const fs = require('fs'), http = require('http'), net = require('net'), os = require('os');
console.log('node=' + process.version);
console.log('uid=' + os.userInfo().uid);
console.log(require(` + strconv.Quote(filepath.Join(nm, "greet")) + `)());
try { fs.writeFileSync(` + strconv.Quote(filepath.Join(nm, "greet", "index.js")) + `, 'x'); console.log('cli=writable') } catch (e) { console.log('cli=' + e.code) }
fs.writeFileSync(os.homedir() + '/config.json', '{}'); console.log('home=' + os.homedir());
const s = net.connect({host: '1.1.1.1', port: 80, timeout: 3000});
s.on('connect', () => { console.log('outside=reached'); s.destroy() });
s.on('error', () => console.log('outside=unreachable'));
s.on('timeout', () => { console.log('outside=unreachable'); s.destroy() });
http.get('http://` + addr + `/', r => { let d = ''; r.on('data', c => d += c); r.on('end', () => console.log('bridge=' + d)) })
  .on('error', e => console.log('bridge=' + e.code));`
	s, o := launch(t, ctx, p, l, environment.LaunchRequest{Spec: worker.Spec{Path: node, Args: []string{"node", "-e", script},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + Home}, Dir: l.Workspace, Timeout: time.Minute, MaxOutputBytes: 1 << 20, NullStdin: true},
		ReadOnly: []string{nm}})
	out := string(o.Output.Stdout())
	t.Logf("stdout:\n%s\nstderr:\n%s\nfacts %v problems %v", out, o.Output.Stderr(), s.Facts, s.Problems)
	version, _ := exec.Command(node, "--version").Output()
	for _, want := range []string{"node=" + strings.TrimSpace(string(version)), "uid=65534", "greet-loaded", "cli=EROFS", "home=" + Home,
		"outside=unreachable", "bridge=bridged-ok"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("inside the Node.js container, want %q", want)
		}
	}
	if s.Outcome.ExitCode == nil || *s.Outcome.ExitCode != 0 || len(s.Problems) > 0 || s.Facts[FactImage] != img.Ref || s.Facts[FactRemoved] != "confirmed" {
		t.Errorf("settled exit %v problems %v facts %v: want 0, none, the Node.js image and the removal confirmed", s.Outcome.ExitCode, s.Problems, s.Facts)
	}
	_ = b.Close()
	if r := p.Cleanup(ctx, l); !r.Confirmed {
		t.Errorf("cleanup not confirmed: %s", r.Reason())
	}
}

// launch runs req in l through Launch, Supervise and Settle, failing t if the launch
// cannot start or be supervised; it returns the settled launch and the engine
// process's outcome (its captured output).
func launch(t testing.TB, ctx context.Context, p *Provider, l *environment.Lease, req environment.LaunchRequest) (environment.Settled, worker.Outcome) {
	t.Helper()
	x, err := p.Launch(ctx, l, req)
	if err != nil {
		t.Fatal(err)
	}
	o, err := worker.Supervise(ctx, x.Spec())
	if err != nil {
		t.Fatal(err)
	}
	return x.Settle(o), o
}

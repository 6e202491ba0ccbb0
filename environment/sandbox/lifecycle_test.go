package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/worker"
)

// TestProbe: on this machine every requirement is found, with its facts.
func TestProbe(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	r := New(Options{}).Probe(context.Background())
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
	}
	for _, want := range []string{"kernel", "bwrap", "privileges", "namespaces", "cgroup memory", "cgroup pids", "cgroup cpu", "kill", "oom detection", "disk", "executable"} {
		if !slices.Contains(names, want) {
			t.Errorf("probe lacks check %q: %v", want, names)
		}
	}
	if r.Provider != environment.ProviderSandbox || !r.Available {
		t.Errorf("report %+v", r)
	}
	// A missing bwrap is reported as such, with how to install it.
	bad := New(Options{Bwrap: "/nonexistent/bwrap"}).Probe(context.Background())
	if bad.Available || !strings.Contains(strings.Join(bad.Missing(), "; "), "bwrap") {
		t.Errorf("a missing bwrap probed as %+v", bad)
	}
	if why := bad.NotRunReason(); why != "bubblewrap is not installed" {
		t.Errorf("a missing bwrap: cells not run here because %q", why)
	}
}

// TestLifecycle: with reuseLease every launch shares HOME and /tmp; without it every
// launch gets fresh ones; the workspace persists on the host in both, and the lease's
// processes are gone between launches.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	for _, reuse := range []bool{true, false} {
		t.Run(map[bool]string{true: "reuseLease", false: "fresh per run"}[reuse], func(t *testing.T) {
			t.Parallel()
			p := New(Options{})
			ws := filepath.Join(leaseRoot(t), "workspace")
			mustWrite(t, filepath.Join(ws, "seed.txt"), "seeded by the harness", 0o644)
			l := setup(t, p, environment.LeaseSpec{Reuse: reuse, Workspace: ws})
			for _, path := range []string{Home + "/turn1", "/tmp/turn1", filepath.Join(ws, "turn1")} {
				if r := attack(t, p, l, "write", path); r.report.Contained {
					t.Fatalf("turn 1 could not write %s: %+v", path, r.report)
				}
			}
			st, _ := leaseState(l)
			if pids, _ := st.Cgroups.procs(); len(pids) > 0 {
				t.Errorf("processes remain between runs: %v", pids)
			}
			for _, path := range []string{Home + "/turn1", "/tmp/turn1"} {
				r := attack(t, p, l, "read", path)
				if seen := !r.report.Contained; seen != reuse {
					t.Errorf("turn 2 sees %s: %v (reuse %v)", path, seen, reuse)
				}
			}
			if r := attack(t, p, l, "read", filepath.Join(ws, "turn1")); r.report.Contained {
				t.Errorf("the workspace did not persist between runs: %+v", r.report)
			}
			if r := attack(t, p, l, "write", filepath.Join(ws, "seed.txt")); r.report.Contained {
				t.Errorf("the seeded workspace file is not the agent's to change: %+v", r.report)
			}
			if !fileExists(filepath.Join(ws, "turn1")) {
				t.Error("the workspace file is not on the host")
			}
		})
	}
}

// TestLeaseFileLaunch: another process's view of the lease (read back from
// lease.json, as the serve child reads it) launches and cleans up like the original.
func TestLeaseFileLaunch(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{Reuse: true})
	back, err := environment.ReadLeaseFile(l.LeaseFile())
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != l.ID || back.Shape != l.Shape || back.Workspace != l.Workspace || !back.StartedAt.Equal(l.StartedAt) {
		t.Fatalf("lease file round trip: %+v vs %+v", back, l)
	}
	if r := attack(t, New(Options{}), back, "facts"); exitCode(r.Outcome) != "0" {
		t.Fatalf("a launch from the lease file failed: %s %s", r.stdout, r.stderr)
	}
}

// TestExitAndStop: the worker's outcome carries the agent's own exit code; a stop
// (context cancelled: SIGTERM to the process group) reaches the agent, which exits
// cleanly within its grace period.
func TestExitAndStop(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{Reuse: true})
	if r := attack(t, p, l, "no-such-attack"); exitCode(r.Outcome) != "2" {
		t.Errorf("agent exit 2 arrived as %s", exitCode(r.Outcome))
	}
	missing := worker.Spec{Path: "/nonexistent/agent", Args: []string{"agent"}, Dir: l.Workspace, Timeout: 10 * time.Second, MaxOutputBytes: 1 << 16}
	if _, err := p.Launch(context.Background(), l, environment.LaunchRequest{Spec: missing}); err == nil || !strings.Contains(err.Error(), "the agent's program") {
		t.Errorf("a missing agent program was not refused: %v", err)
	}
	// A program the agent was to build in its workspace but did not: init reports 127.
	missing.Path = filepath.Join(l.Workspace, "bin", "agent")
	if r := launch(t, context.Background(), p, l, environment.LaunchRequest{Spec: missing}); exitCode(r.Outcome) != "127" || len(r.Problems) == 0 {
		t.Errorf("a missing agent program: exit %s, problems %v, stderr %s", exitCode(r.Outcome), r.Problems, r.stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := filepath.Join(l.Workspace, "term-ready")
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for !fileExists(ready) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	stop := hostileSpec(l, "term-grace", ready)
	stop.TerminateGrace = 10 * time.Second // a loaded machine must not turn the grace into a SIGKILL
	r := launch(t, ctx, p, l, environment.LaunchRequest{Spec: stop})
	if exitCode(r.Outcome) != "0" || !strings.Contains(r.stdout, "got SIGTERM") || slices.Contains(r.Outcome.SignalsSent, "SIGKILL") {
		t.Errorf("stop: exit %s, signals %v, stdout %s", exitCode(r.Outcome), r.Outcome.SignalsSent, r.stdout)
	}
}

// TestLaunchRefusals: a writable bind outside the workspace and the lease disk, a
// read-only path covering the workspace and a working directory outside every
// writable place are refused before anything starts, each named.
func TestLaunchRefusals(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{})
	spec := hostileSpec(l, "facts")
	spec.Dir = "/usr"
	_, err := p.Launch(context.Background(), l, environment.LaunchRequest{Spec: spec,
		Binds: []environment.Bind{{Path: "/var/tmp", Write: true}}, ReadOnly: []string{filepath.Dir(l.Workspace)}})
	var se *environment.SpecError
	if !errors.As(err, &se) || len(se.Problems) != 3 {
		t.Fatalf("want 3 problems, got %v", err)
	}
	for _, want := range []string{"/var/tmp is writable but outside", "would cover the writable", "dir /usr must be the workspace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q not in %v", want, err)
		}
	}
}

// TestSymlinkSwap: an agent that turns a bound directory into a symbolic link to a
// host secret between two launches gets nothing: the launch's fork never follows a
// link while staging, so the next launch fails before anything of it runs.
func TestSymlinkSwap(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	secretDir := filepath.Join(leaseRoot(t), "secret")
	mustWrite(t, filepath.Join(secretDir, "key"), "host-secret-6a1e", 0o600)
	l := setup(t, p, environment.LeaseSpec{Reuse: true})
	state := filepath.Join(l.Workspace, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	// what a previous run of the agent could do in its own workspace
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secretDir, state); err != nil {
		t.Fatal(err)
	}
	r := launch(t, context.Background(), p, l, environment.LaunchRequest{Spec: hostileSpec(l, "read", filepath.Join(state, "key")),
		Binds: []environment.Bind{{Path: state, Write: true}}})
	if strings.Contains(r.stdout+r.stderr, "host-secret-6a1e") {
		t.Fatal("the symlinked bind leaked the host secret")
	}
	if r.Outcome.Started || r.Outcome.SpawnError == nil || !strings.Contains(r.Outcome.SpawnError.Error(), "symbolic link") {
		t.Errorf("want the fork to refuse the link: started %v, spawn error %v", r.Outcome.Started, r.Outcome.SpawnError)
	}
}

// TestRetarget: after the endpoint moves (a restarted serve child on a new port), the
// bridge and the lease file follow, and the next launch reaches the new address.
func TestRetarget(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	first, _ := httpServer(t, "first server")
	second, _ := httpServer(t, "second server")
	addr := first.Listener.Addr().String()
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{Endpoints: []environment.Endpoint{{Name: "cp", Kind: environment.EndpointControlPlane, Listen: addr, Dial: addr}}})
	br, err := StartBridge(l)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	if r := attack(t, p, l, "reach", first.URL, "first server"); !r.report.Contained {
		t.Fatalf("first: %+v", r.report)
	}
	if err := br.Retarget("cp", second.Listener.Addr().String()); err != nil {
		t.Fatal(err)
	}
	back, err := environment.ReadLeaseFile(l.LeaseFile())
	if err != nil || back.Endpoints[0].Listen != second.Listener.Addr().String() {
		t.Fatalf("lease file after retarget: %+v, %v", back, err)
	}
	if r := attack(t, p, back, "reach", second.URL, "second server"); !r.report.Contained {
		t.Errorf("second: %+v", r.report)
	}
	if err := br.Retarget("cp", "93.184.216.34:80"); err == nil {
		t.Error("a control-plane endpoint was retargeted off loopback")
	}
}

// TestCleanupReport: Cleanup reports the files it found on the disk, removes every
// cgroup, mount and the lease directory, and a second Cleanup finds nothing and is
// confirmed too.
func TestCleanupReport(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	spec := environment.LeaseSpec{EnvironmentID: "sandbox", Root: leaseRoot(t), Shape: smallShape, Reuse: true}
	l, err := p.Setup(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	attack(t, p, l, "write", filepath.Join(l.Workspace, "left.txt"))
	st, _ := leaseState(l)
	r := p.Cleanup(context.Background(), l)
	if !r.Confirmed || r.Reason() != "" {
		t.Fatalf("cleanup: %+v", r)
	}
	if !slices.ContainsFunc(r.Found.Files, func(f string) bool { return strings.HasSuffix(f, "left.txt") }) || len(r.Found.Mounts) != 1 || len(r.Found.Cgroups) != len(st.Cgroups) {
		t.Errorf("found: %+v", r.Found)
	}
	for _, c := range st.Cgroups {
		if fileExists(c.Path) {
			t.Errorf("cgroup %s remains", c.Path)
		}
	}
	if ms, _ := hostlease.MountsUnder(l.Dir); len(ms) > 0 || fileExists(l.Dir) {
		t.Errorf("mounts %v or the lease directory remain", ms)
	}
	again := p.Cleanup(context.Background(), l)
	if !again.Confirmed || !again.Found.Empty() {
		t.Errorf("second cleanup: %+v", again)
	}
	rec := environment.NewLeaseRecord(l, 1, &r)
	if !rec.CleanupConfirmed || rec.Shape == nil || rec.EndedAt == "" || !rec.Reused {
		t.Errorf("record %+v", rec)
	}
	// The end of the lease is the end of its cleanup, never the zero time.
	if r.EndedAt.Before(l.StartedAt) {
		t.Errorf("cleanup ended at %v, before the lease started at %v", r.EndedAt, l.StartedAt)
	}
}

// TestCgroupLimits: the pinned shape is what the kernel enforces for the lease.
func TestCgroupLimits(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	shape := environment.Shape{CPUCores: 0.5, MemoryBytes: 200 << 20, PIDs: 77, DiskBytes: 5 << 20}
	l := setup(t, p, environment.LeaseSpec{Shape: shape})
	st, _ := leaseState(l)
	want := map[string]string{}
	for _, c := range st.Cgroups {
		for _, ctrl := range c.Controllers {
			switch {
			case ctrl == ctrlMemory && c.Version == 1:
				want[filepath.Join(c.Path, "memory.limit_in_bytes")] = "209715200"
			case ctrl == ctrlPIDs:
				want[filepath.Join(c.Path, "pids.max")] = "77"
			case ctrl == ctrlCPU && c.Version == 1:
				want[filepath.Join(c.Path, "cpu.cfs_quota_us")] = "50000"
			case ctrl == ctrlMemory:
				want[filepath.Join(c.Path, "memory.max")] = "209715200"
			case ctrl == ctrlCPU:
				want[filepath.Join(c.Path, "cpu.max")] = "50000 100000"
			}
		}
	}
	if len(want) != 3 {
		t.Fatalf("cgroups %+v do not pin memory, pids and cpu", st.Cgroups)
	}
	for path, v := range want {
		if got := readTrim(path); got != v {
			t.Errorf("%s = %q, want %q", path, got, v)
		}
	}
	if ms, _ := hostlease.MountsUnder(l.Dir); len(ms) != 1 {
		t.Errorf("lease mounts: %v", ms)
	}
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(st.Disk, &sfs); err != nil || int64(sfs.Blocks)*sfs.Bsize != 5<<20 {
		t.Errorf("the lease disk is %d bytes, want %d (%v)", int64(sfs.Blocks)*sfs.Bsize, 5<<20, err)
	}
	if full, err := hostlease.DiskFull(st.Disk); err != nil || full {
		t.Errorf("a fresh disk is full: %v", err)
	}
}

// TestDiskDir: a directory on the lease disk is writable inside as a bind and
// persists across launches of a reused lease; reserved and odd names are refused.
func TestDiskDir(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{Reuse: true})
	dir, err := DiskDir(l, "agent-state")
	if err != nil {
		t.Fatal(err)
	}
	bind := []environment.Bind{{Path: dir, Write: true}}
	if r := launch(t, context.Background(), p, l, environment.LaunchRequest{Spec: hostileSpec(l, "write", filepath.Join(dir, "session")), Binds: bind}); r.report.Contained {
		t.Fatalf("the disk directory is not writable inside: %+v", r.report)
	}
	if r := launch(t, context.Background(), p, l, environment.LaunchRequest{Spec: hostileSpec(l, "read", filepath.Join(dir, "session")), Binds: bind}); r.report.Contained {
		t.Errorf("the disk directory did not persist: %+v", r.report)
	}
	for _, bad := range []string{"", "..", "tmp", "a/b"} {
		if _, err := DiskDir(l, bad); err == nil {
			t.Errorf("DiskDir(%q) accepted", bad)
		}
	}
}

// TestPassFDs: the worker's extra files reach the agent as fds 3, … (the guarded
// path's control pipe); that nothing else does is TestFacts' descriptor check.
func TestPassFDs(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{})
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	spec := hostileSpec(l, "write-fd", "3")
	spec.ExtraFiles = []*os.File{wr}
	r := launch(t, context.Background(), p, l, environment.LaunchRequest{Spec: spec})
	_ = wr.Close()
	got, _ := io.ReadAll(rd)
	if string(got) != "hostile agent was here\n" || exitCode(r.Outcome) != "1" {
		t.Errorf("fd 3: read %q, exit %s, %+v %s", got, exitCode(r.Outcome), r.report, r.stderr)
	}
}

// TestDeepRoot: under a lease root far deeper than a socket path can be (a deep
// $TMPDIR), the lease's bridge sockets live in a short socket directory of their own
// (0711, the sandbox user's sockets 0600 inside), an allowlisted endpoint is reached
// through them, and Cleanup removes that directory and confirms it gone.
func TestDeepRoot(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	root := leaseRoot(t)
	for range 6 {
		root = filepath.Join(root, strings.Repeat("d", 30))
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	srv, served := httpServer(t, "deep server")
	addr := srv.Listener.Addr().String()
	p := New(Options{})
	l, err := p.Setup(context.Background(), environment.LeaseSpec{EnvironmentID: "sandbox", Root: root, Shape: smallShape,
		Endpoints: []environment.Endpoint{{Name: "cp", Kind: environment.EndpointControlPlane, Listen: addr, Dial: addr}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Dir) <= hostlease.MaxSocketPath || !hostlease.ValidSocketDir(l.SocketDir) || len(l.Endpoints[0].Socket) > hostlease.MaxSocketPath {
		t.Fatalf("lease dir %d bytes, socket dir %q, socket %q", len(l.Dir), l.SocketDir, l.Endpoints[0].Socket)
	}
	if fi, err := os.Stat(l.SocketDir); err != nil || fi.Mode().Perm() != 0o711 {
		t.Fatalf("socket directory: %v, %v", fi, err)
	}
	br, err := StartBridge(l)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(l.Endpoints[0].Socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v, %v", fi, err)
	}
	if r := attack(t, p, l, "reach", srv.URL, "deep server"); !r.report.Contained || served() != 1 {
		t.Errorf("reach through the bridge: %+v (served %d), stderr %s", r.report, served(), r.stderr)
	}
	if err := br.Close(); err != nil {
		t.Error(err)
	}
	r := p.Cleanup(context.Background(), l)
	if !r.Confirmed {
		t.Fatalf("cleanup: %s", r.Reason())
	}
	if fileExists(l.SocketDir) || fileExists(l.Dir) {
		t.Errorf("socket directory %s or lease directory remains", l.SocketDir)
	}
}

// execedCmdline is /proc/<pid>/cmdline once the process's program has its arguments:
// a process whose exec has just returned to its parent (the daemon's Start, then its
// ready file) reads an empty command line until the kernel has set up the new
// program's arguments, so an empty one is read again for up to 5 s. "" for a process
// that is gone, or still empty after that.
func execedCmdline(pid int) string {
	path := fmt.Sprintf("/proc/%d/cmdline", pid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		argv, err := os.ReadFile(path)
		if err != nil || len(argv) > 0 || time.Now().After(deadline) {
			return string(argv)
		}
	}
}

// TestOneAgentproofPerLaunch: a running launch is bubblewrap (the supervised process,
// forked by the launch's Fork as the sandbox user), one agentproof process (init, PID 1
// inside) and the agent's own: no agentproof trampoline between the supervisor and
// bubblewrap, and the stop signal goes through Spec.Stop.
func TestOneAgentproofPerLaunch(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{})
	st, _ := leaseState(l)
	ready := filepath.Join(l.Workspace, "ready")
	x, err := p.Launch(context.Background(), l, environment.LaunchRequest{Spec: hostileSpec(l, "daemon", "wait", ready)})
	if err != nil {
		t.Fatal(err)
	}
	spec := x.Spec()
	if spec.Path != st.Bwrap || spec.Fork == nil || spec.Stop == nil || spec.Credential == nil || spec.Credential.Uid != uint32(st.UID) {
		t.Fatalf("the launch's spec is not bubblewrap forked as the sandbox user: path %s, fork %v, stop %v, credential %+v", spec.Path, spec.Fork != nil, spec.Stop != nil, spec.Credential)
	}
	pidc := make(chan int, 1)
	spec.AfterStart = func(pid int) { pidc <- pid }
	done := make(chan worker.Outcome, 1)
	go func() { o, _ := worker.Supervise(context.Background(), spec); done <- o }()
	bwrap := <-pidc
	waitFile(t, ready)
	pids := waitProcs(t, st.Cgroups, 4) // bwrap, init, agent, daemon
	var inits, others []string
	for _, pid := range pids {
		args := strings.Split(execedCmdline(pid), "\x00")
		switch {
		case pid == bwrap:
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe != st.Bwrap {
				t.Errorf("the supervised process %d runs %s, not bubblewrap", pid, exe)
			}
		case len(args) > 1 && args[1] == InitCommand:
			inits = append(inits, strings.Join(args, " "))
		case len(args) > 1 && args[1] == "hostile":
		default:
			others = append(others, strings.Join(args, " "))
		}
	}
	if len(inits) != 1 || len(others) > 0 {
		t.Errorf("want one init besides bubblewrap and the agent's processes; inits %q, others %q", inits, others)
	}
	if rep := p.Cleanup(context.Background(), l); !rep.Confirmed {
		t.Errorf("cleanup: %s", rep.Reason())
	}
	x.Settle(<-done)
}

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/worker"
)

// These are the hostile agent's attacks, run in real sandboxes. Each test judges
// containment by what the host observes, not by what the agent says.

// TestAttackReadOutsideBinds: a fake server home (0700, a board token and a master
// key), a sibling lease's workspace and host files are not visible: every read fails
// and no secret reaches the agent's output.
func TestAttackReadOutsideBinds(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	home := filepath.Join(leaseRoot(t), "home")
	const token, masterKey, sibling = "board-token-8e2a1c", "master-key-77b0f3", "sibling-secret-3c9d"
	mustWrite(t, filepath.Join(home, "board-token"), token, 0o600)
	mustWrite(t, filepath.Join(home, "master.key"), masterKey, 0o600)
	mustWrite(t, filepath.Join(home, "agentproof.db"), "SQLite format 3\x00"+token, 0o600)
	l := setup(t, p, environment.LeaseSpec{})
	other := setup(t, p, environment.LeaseSpec{})
	mustWrite(t, filepath.Join(other.Workspace, "secret.txt"), sibling, 0o644)
	for _, path := range []string{
		filepath.Join(home, "board-token"), filepath.Join(home, "master.key"), filepath.Join(home, "agentproof.db"),
		filepath.Join(other.Workspace, "secret.txt"), filepath.Join(other.Dir, "lease.json"), l.LeaseFile(),
		"/etc/shadow", "/root/.bash_history", "/sys/kernel/notes",
	} {
		r := attack(t, p, l, "read", path)
		if !r.report.Contained || exitCode(r.Outcome) != "0" {
			t.Errorf("read %s was not contained: exit %s, %+v", path, exitCode(r.Outcome), r.report)
		}
		for _, secret := range []string{token, masterKey, sibling} {
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("read %s leaked %q", path, secret)
			}
		}
	}
}

// TestAttackControllerProc: the controller's /proc is not the sandbox's: its pid (or
// whatever has that number inside) does not hold the controller's environment, and
// PID 1 is the sandbox's init.
func TestAttackControllerProc(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{})
	for _, pid := range []string{strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getppid()), "1", "self"} {
		r := attack(t, p, l, "proc-environ", pid, controllerSecretVar)
		if !r.report.Contained || strings.Contains(r.stdout+r.stderr, controllerSecret) {
			t.Errorf("/proc/%s/environ: the controller's environment leaked: %+v", pid, r.report)
		}
	}
	r := attack(t, p, l, "read", "/proc/1/cmdline")
	if !strings.Contains(r.report.Output, InitCommand) {
		t.Errorf("PID 1 is not the sandbox's init: %q", r.report.Output)
	}
}

// TestAttackNetwork: with an allowlist of two endpoints, the agent reaches both
// through the bridge (one by IP and port, one by a DNS name mapped in the sandbox's
// /etc/hosts), and nothing else: not another loopback port of the host, not the
// named endpoint's real address, not an outside address.
func TestAttackNetwork(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	cp, cpRequests := httpServer(t, "control-plane says hello")
	model, modelRequests := httpServer(t, "model says hello")
	other := listenCounting(t)
	eps := []environment.Endpoint{
		{Name: "cp", Kind: environment.EndpointControlPlane, Listen: cp.Listener.Addr().String(), Dial: cp.Listener.Addr().String()},
		{Name: "model", Kind: environment.EndpointModel, Listen: "model.agentproof.test:8080", Dial: model.Listener.Addr().String()},
	}
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{Endpoints: eps})
	br, err := StartBridge(l)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()

	r := attack(t, p, l, "reach", cp.URL+"/api", "control-plane says hello")
	if !r.report.Contained || cpRequests() != 1 || br.Accepted("cp") != 1 || r.Facts["connections.cp"] != "1" {
		t.Errorf("the allowlisted control plane was not reached through the bridge: %+v, requests %d, bridge %d, facts %v",
			r.report, cpRequests(), br.Accepted("cp"), r.Facts)
	}
	r = attack(t, p, l, "reach", "http://model.agentproof.test:8080/v1", "model says hello")
	if !r.report.Contained || modelRequests() != 1 {
		t.Errorf("the allowlisted model (by name) was not reached: %+v, requests %d", r.report, modelRequests())
	}
	_, otherPort, _ := strings.Cut(other.Addr().String(), ":")
	for _, addr := range []string{other.Addr().String(), model.Listener.Addr().String(), "[::1]:" + otherPort, "10.255.255.1:80", "8.8.8.8:53"} {
		r := attack(t, p, l, "connect", addr)
		if !r.report.Contained {
			t.Errorf("connect %s was not contained: %+v", addr, r.report)
		}
	}
	if other.accepted() != 0 {
		t.Errorf("the non-allowlisted host port accepted %d connection(s)", other.accepted())
	}
	if modelRequests() != 1 {
		t.Errorf("the model's real address was reached directly (%d requests)", modelRequests())
	}
}

// TestWritesOutsideReported: a fresh (not reused) lease whose agent writes only into
// its workspace and its HOME reports no write outside them; one that also writes into
// /tmp and /dev/shm reports both, with their size.
func TestWritesOutsideReported(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{})
	for _, path := range []string{Home + "/notes", filepath.Join(l.Workspace, "out.txt")} {
		if r := attack(t, p, l, "write", path); r.report.Contained || r.Facts[FactWritesOutside] != "" {
			t.Errorf("writing %s: %+v, writes outside %q", path, r.report, r.Facts[FactWritesOutside])
		}
	}
	attack(t, p, l, "write", "/tmp/x")
	r := attack(t, p, l, "write", "/dev/shm/y")
	if w := r.Facts[FactWritesOutside]; w != "1 file(s), 23 bytes: /dev/shm/y" {
		t.Errorf("a fresh launch's scratch: %q (each launch of a lease that is not reused starts empty)", w)
	}
}

// TestAttackModelControl: the bridge carries the model API, not the harness's control
// of the scripted model. A real scripted model (a run set holding its first step, as a
// steering case's does) behind the lease's model endpoint: from inside the sandbox the
// agent reaches its model routes, and every POST to a control path (the hold's release
// the harness calls) is refused; the hold was never released.
func TestAttackModelControl(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	sc, err := scriptedmodel.ParseScript("hold", []byte("steps:\n  - call: shell\n    args: {command: \"true\"}\n    hold_ms: 30000\n  - answer: done\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	rs, err := scriptedmodel.NewRunSet([]*scriptedmodel.Script{sc}, scriptedmodel.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	running, err := rs.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close(context.Background())
	eps := []environment.Endpoint{{Name: "model", Kind: environment.EndpointModel, Listen: "model.agentproof.test:8080", Dial: running.Addr}}
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{Endpoints: eps})
	br, err := StartBridge(l)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	if r := attack(t, p, l, "reach", "http://model.agentproof.test:8080/runs/1/v1/models", `"object":"list"`); !r.report.Contained {
		t.Fatalf("the model API was not reached through the bridge: %+v", r.report)
	}
	for _, path := range []string{"/runs/1/control/release", "/control/release", "/runs/1/v1/control/release"} {
		if r := attack(t, p, l, "post", "http://model.agentproof.test:8080"+path); !r.report.Contained {
			t.Errorf("POST %s from inside the sandbox was not refused: %+v", path, r.report)
		}
	}
	if strings.Contains(log.String(), `"reply":"release"`) || rs.Holding(1) {
		t.Errorf("the agent released the harness's hold:\n%s", log.String())
	}
	if !rs.Release(1) {
		t.Error("the harness's own release (a call, not a route) failed")
	}
}

// TestAttackWriteOutside: outside the workspace, HOME and /tmp nothing is writable;
// the sandbox's /tmp is private (a file written there never appears in the host's
// /tmp); what the agent writes in its workspace is on the host, owned by the sandbox
// user.
func TestAttackWriteOutside(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	home := filepath.Join(leaseRoot(t), "server-home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	l := setup(t, p, environment.LeaseSpec{Reuse: true})
	mark := fmt.Sprintf("hostile-%d-%d", os.Getpid(), time.Now().UnixNano())
	// Refused inside: read-only or absent.
	for _, path := range []string{"/" + mark, "/usr/" + mark, "/etc/" + mark, "/dev/" + mark, "/proc/" + mark, "/run/" + mark,
		"/home/" + mark, filepath.Join(BridgeDir, mark), filepath.Join(home, mark), testExe()} {
		r := attack(t, p, l, "write", path)
		if !r.report.Contained {
			t.Errorf("write %s was not refused: %+v", path, r.report)
		}
		if path != testExe() && fileExists(path) {
			t.Errorf("%s exists on the host", path)
		}
	}
	// Host paths under /tmp are names in the sandbox's private /tmp: whatever the agent
	// writes there, the host's files are untouched.
	for _, path := range []string{filepath.Join(l.Dir, mark), filepath.Join(l.SocketDir, mark), filepath.Join(filepath.Dir(l.Dir), mark)} {
		attack(t, p, l, "write", path)
		if fileExists(path) {
			t.Errorf("the sandbox wrote %s on the host", path)
		}
	}
	for _, path := range []string{"/tmp/" + mark, "/dev/shm/" + mark, Home + "/" + mark, filepath.Join(l.Workspace, mark)} {
		r := attack(t, p, l, "write", path)
		if r.report.Contained {
			t.Errorf("writing %s must work inside the sandbox: %+v", path, r.report)
		}
		// What the agent leaves outside its workspace and HOME is in the launch's facts.
		w := r.Facts[FactWritesOutside]
		if !strings.Contains(w, "/tmp/"+mark) || (path != "/tmp/"+mark) != strings.Contains(w, "/dev/shm/"+mark) || strings.Contains(w, Home) {
			t.Errorf("after writing %s the launch reports writes outside %q", path, w)
		}
	}
	if fileExists("/tmp/"+mark) || fileExists("/dev/shm/"+mark) {
		t.Error("the sandbox's /tmp or /dev/shm is the host's")
	}
	st, _ := leaseState(l)
	for _, path := range []string{filepath.Join(st.Disk, "tmp", mark), filepath.Join(st.Disk, "shm", mark), filepath.Join(st.Disk, "home", mark)} {
		if !fileExists(path) {
			t.Errorf("%s: the sandbox's writable space is not on the lease disk", path)
		}
	}
	var fi syscall.Stat_t
	if err := syscall.Stat(filepath.Join(l.Workspace, mark), &fi); err != nil || fi.Uid != NobodyID {
		t.Errorf("the workspace file is not on the host as the sandbox user: %v uid %d", err, fi.Uid)
	}
}

// TestAttackDaemon: a setsid daemon left behind by an agent that exits dies with the
// sandbox's PID namespace; one beside a running agent is killed by Cleanup, which
// reports it found and confirms the cgroups empty — with cgroup.kill and with the
// SIGKILL rounds alike.
func TestAttackDaemon(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	t.Run("left behind", func(t *testing.T) {
		t.Parallel()
		p := New(Options{})
		l := setup(t, p, environment.LeaseSpec{})
		r := attack(t, p, l, "daemon")
		if exitCode(r.Outcome) != "1" || !r.Outcome.StdioClosed {
			t.Fatalf("the daemon attack: exit %s, stdio closed %v, %+v %s", exitCode(r.Outcome), r.Outcome.StdioClosed, r.report, r.stderr)
		}
		st, _ := leaseState(l)
		if pids := waitEmpty(st.Cgroups, 2*time.Second); len(pids) > 0 {
			t.Errorf("the daemon survived its agent: %v", pids)
		}
	})
	for _, noKill := range []bool{false, true} {
		t.Run(fmt.Sprintf("running, noCgroupKill=%v", noKill), func(t *testing.T) {
			t.Parallel()
			p := New(Options{NoCgroupKill: noKill})
			l := setup(t, p, environment.LeaseSpec{})
			st, _ := leaseState(l)
			ready := filepath.Join(l.Workspace, "ready")
			x, err := p.Launch(context.Background(), l, environment.LaunchRequest{Spec: hostileSpec(l, "daemon", "wait", ready)})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan worker.Outcome, 1)
			go func() { o, _ := worker.Supervise(context.Background(), x.Spec()); done <- o }()
			waitFile(t, ready)
			// bwrap, init, agent, daemon
			pids := waitProcs(t, st.Cgroups, 4)
			rep := p.Cleanup(context.Background(), l)
			if !rep.Confirmed || len(rep.Found.Processes) < 4 {
				t.Errorf("cleanup: confirmed %v, found %v, remaining %s, errors %v", rep.Confirmed, rep.Found.Processes, rep.Remaining, rep.Errors)
			}
			o := <-done
			x.Settle(o)
			if o.Signal != "SIGKILL" {
				t.Errorf("the supervised sandbox was not killed: %+v", o)
			}
			for _, pid := range pids {
				if err := syscall.Kill(pid, 0); err == nil {
					if s, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !strings.Contains(string(s), ") Z ") {
						t.Errorf("process %d of the lease is still alive after cleanup", pid)
					}
				}
			}
		})
	}
}

// waitFile waits until path exists (an agent's ready file in its workspace).
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !fileExists(path) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitProcs waits until cs holds at least n processes and returns them.
func waitProcs(t *testing.T, cs leaseCgroups, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids, _ := cs.procs()
		if len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease's cgroups hold %v, not %d processes", pids, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitEmpty waits up to wait for cs to hold no process and returns what remains.
func waitEmpty(cs leaseCgroups, wait time.Duration) []int {
	deadline := time.Now().Add(wait)
	for {
		pids, _ := cs.procs()
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAttackForkBomb: the pids limit refuses forks past the pinned count; the host
// counts the refusals and the launch reports the pids limit hit.
func TestAttackForkBomb(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	shape := smallShape
	shape.PIDs = 64
	l := setup(t, p, environment.LeaseSpec{Shape: shape})
	r := attack(t, p, l, "forkbomb", "10000")
	if !r.report.Contained || r.report.Count >= 64 {
		t.Errorf("the fork bomb was not contained: %+v", r.report)
	}
	if !hasLimit(r.Limits, environment.ResourcePIDs, 64) {
		t.Errorf("the pids limit hit is not reported: %+v", r.Limits)
	}
	st, _ := leaseState(l)
	if d, ok := st.Cgroups.byController(ctrlPIDs); ok {
		if peak, err := strconv.Atoi(readTrim(filepath.Join(d.Path, "pids.peak"))); err == nil && peak > 64 {
			t.Errorf("pids.peak %d is over the limit", peak)
		}
	}
}

// TestAttackMemory: an agent allocating past the memory limit is OOM-killed; the
// launch's outcome is the agent's SIGKILL and the memory limit hit is named.
func TestAttackMemory(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	shape := smallShape
	shape.MemoryBytes = 96 << 20
	l := setup(t, p, environment.LeaseSpec{Shape: shape})
	r := attack(t, p, l, "memory", strconv.Itoa(1<<30))
	if r.Outcome.Signal != "SIGKILL" || r.report.Attack != "" {
		t.Errorf("the allocation past the limit was not killed: exit %s, %+v", exitCode(r.Outcome), r.report)
	}
	if !hasLimit(r.Limits, environment.ResourceMemory, 96<<20) {
		t.Errorf("the OOM kill is not reported with its limit: %+v (problems %v)", r.Limits, r.Problems)
	}
	// A small allocation in the same lease is not blamed on the limit.
	if r := attack(t, p, l, "memory", strconv.Itoa(16<<20)); exitCode(r.Outcome) != "1" || len(r.Limits) != 0 {
		t.Errorf("a 16 MiB allocation: exit %s, limits %+v", exitCode(r.Outcome), r.Limits)
	}
}

// TestAttackDiskFill: filling /tmp, HOME or the workspace stops at the lease's disk
// cap with ENOSPC, and the launch reports the disk limit hit.
func TestAttackDiskFill(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	shape := smallShape
	shape.DiskBytes = 8 << 20
	l := setup(t, p, environment.LeaseSpec{Shape: shape, Reuse: true})
	for _, dir := range []string{"/tmp", Home, l.Workspace} {
		r := attack(t, p, l, "diskfill", dir, strconv.Itoa(64<<20))
		if !r.report.Contained || r.report.Count > 8<<20 {
			t.Errorf("filling %s was not stopped at the cap: %+v", dir, r.report)
		}
		if !hasLimit(r.Limits, environment.ResourceDisk, 8<<20) {
			t.Errorf("filling %s: the disk limit hit is not reported: %+v", dir, r.Limits)
		}
		// free the disk for the next directory (the host sees the sandbox's files)
		st, _ := leaseState(l)
		host := map[string]string{"/tmp": filepath.Join(st.Disk, "tmp"), Home: filepath.Join(st.Disk, "home"), l.Workspace: l.Workspace}[dir]
		if err := os.Remove(filepath.Join(host, "fill")); err != nil {
			t.Fatal(err)
		}
	}
}

func hasLimit(ls []environment.LimitHit, res environment.Resource, limit int64) bool {
	for _, l := range ls {
		if l.Resource == res && l.Limit == limit && l.Events > 0 && strings.Contains(l.Detail, strconv.FormatInt(limit, 10)) {
			return true
		}
	}
	return false
}

// TestControllerDeath: when the process supervising a sandbox is SIGKILLed, the
// sandbox dies with it (Pdeathsig on bwrap, set by its fork after the privilege drop,
// and bwrap's --die-with-parent): the lease's cgroups empty without Cleanup.
func TestControllerDeath(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{})
	st, _ := leaseState(l)
	cmd := exec.Command(testExe(), l.LeaseFile())
	cmd.Env = []string{"AGENTPROOF_TEST_MODE=controller", "PATH=/usr/bin:/bin", "GORACE=atexit_sleep_ms=0"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(l.Workspace, "daemon-ready"))
	waitProcs(t, st.Cgroups, 4)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if pids := waitEmpty(st.Cgroups, 5*time.Second); len(pids) > 0 {
		t.Errorf("the sandbox outlived its controller: %v", pids)
	}
}

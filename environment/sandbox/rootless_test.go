package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/hostile"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/worker"
)

// rootlessReport is what the rootless controller (rootlessController, run as uid
// 65534) found, printed as JSON for TestRootless.
type rootlessReport struct {
	UID       int                       `json:"uid"`
	Probe     environment.ProbeReport   `json:"probe"`
	LimitsErr string                    `json:"limitsErr"`
	Launches  map[string]rootlessLaunch `json:"launches"`
	// Sleepers counts the daemon's sleepers still alive once its launch settled.
	Sleepers int `json:"sleepers"`
	// SleepersSeen is what the count found with one sleeper started outside (that
	// the count sees one).
	SleepersSeen int `json:"sleepersSeen"`
	// SleepersBeforeKill, SleepersAfterKill: the sleepers of a daemon whose controller
	// is SIGKILLed, before, and GoneAfter that (at most two seconds waited).
	SleepersBeforeKill int           `json:"sleepersBeforeKill"`
	SleepersAfterKill  int           `json:"sleepersAfterKill"`
	GoneAfter          time.Duration `json:"goneAfter"`
	// NestedBindErr is Launch's refusal of a bind inside the workspace.
	NestedBindErr string                    `json:"nestedBindErr"`
	Cleanup       environment.CleanupReport `json:"cleanup"`
	LeftDir       bool                      `json:"leftDir"`
	Err           string                    `json:"err,omitempty"`
}

type rootlessLaunch struct {
	Report   hostile.Report    `json:"report"`
	Exit     string            `json:"exit"`
	Facts    map[string]string `json:"facts"`
	Problems []string          `json:"problems"`
}

// TestRootless: a normal user (uid 65534, the test binary copied where that user can
// run it) on this machine, whose kernel allows unprivileged user namespaces and whose
// cgroups are v1: the probe says the sandbox is available to them, which limits it can
// enforce (none of cpu, memory, pids: cgroup v1; never disk without root) and why; a
// lease declaring limits is refused naming each one and the reason; a lease without
// limits runs real bubblewrap sandboxes in their own user namespace: the agent
// reaches the allowlisted endpoint through the bridge and nothing of the user's own
// files, its write outside the workspace is reported, a daemon it leaves is gone when
// its launch settles, and the cleanup is confirmed with nothing left.
func TestRootless(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("becoming uid 65534 needs root")
	}
	work, err := os.MkdirTemp("", "aprootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	exe := filepath.Join(work, "agentproof.test")
	copyFile(t, testExe(), exe, 0o755)
	for _, d := range []string{"home", "leases"} {
		if err := os.Mkdir(filepath.Join(work, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(work, "home", "secret"), "the user's own secret\n", 0o600)
	if err := hostlease.ChownTree(work, NobodyID, NobodyID); err != nil || os.Chmod(work, 0o755) != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, work)
	cmd.Env = []string{"AGENTPROOF_TEST_MODE=rootless", "PATH=/usr/bin:/bin", "HOME=" + filepath.Join(work, "home"), "GORACE=atexit_sleep_ms=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NobodyID, Gid: NobodyID, Groups: []uint32{}}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep rootlessReport
	if jerr := json.Unmarshal(out, &rep); err != nil || jerr != nil || rep.Err != "" {
		t.Fatalf("rootless controller: %v %v %s\n%s\n%s", err, jerr, rep.Err, out, stderr.String())
	}
	checkRootlessProbe(t, rep)
	for _, want := range []string{"cpu, memory and pids limits need cgroup v2 delegation; this machine has cgroup v1",
		"disk limit " + needsRootDisk, "a declared limit is never dropped"} {
		if !strings.Contains(rep.LimitsErr, want) {
			t.Errorf("a lease with limits: error %q lacks %q", rep.LimitsErr, want)
		}
	}
	l := rep.Launches
	if r := l["reach"]; !r.Report.Contained || r.Facts["connections.cp"] != "1" || r.Facts["rootless"] != "true" || r.Facts["uid"] != "65534" || len(r.Problems) > 0 {
		t.Errorf("the allowlisted endpoint through the bridge: %+v", r)
	}
	if r := l["read-secret"]; !r.Report.Contained {
		t.Errorf("the agent read the user's own file outside the sandbox: %+v", r)
	}
	if r := l["connect-outside"]; !r.Report.Contained {
		t.Errorf("the agent connected outside the allowlist: %+v", r)
	}
	if r := l["write-shm"]; r.Report.Contained || r.Facts[FactWritesOutside] != "1 file(s), 23 bytes: /dev/shm/y" {
		t.Errorf("a write outside the workspace: %+v", r)
	}
	if r := l["daemon"]; r.Report.Count == 0 || rep.Sleepers != 0 || rep.SleepersSeen != 1 {
		t.Errorf("daemon: %+v, %d sleeper(s) alive after the launch settled (the count saw %d of 1 outside)", r, rep.Sleepers, rep.SleepersSeen)
	}
	if rep.SleepersBeforeKill != 1 || rep.SleepersAfterKill != 0 {
		t.Errorf("controller SIGKILLed: %d sleeper(s) before, %d still alive %v after", rep.SleepersBeforeKill, rep.SleepersAfterKill, rep.GoneAfter)
	}
	if !strings.Contains(rep.NestedBindErr, "inside the writable") {
		t.Errorf("a bind inside the workspace: %q, want a refusal (the agent could make it a link to the user's files between launches)", rep.NestedBindErr)
	}
	if !rep.Cleanup.Confirmed || rep.LeftDir {
		t.Errorf("cleanup %+v (lease directory left: %v)", rep.Cleanup, rep.LeftDir)
	}
}

// checkRootlessProbe: as uid 65534 the probe finds the sandbox available, with
// unprivileged user namespaces, the cgroup facts and no limit it can enforce here.
func checkRootlessProbe(t *testing.T, rep rootlessReport) {
	t.Helper()
	if rep.UID != NobodyID || !rep.Probe.Available {
		t.Fatalf("uid %d, probe %+v", rep.UID, rep.Probe)
	}
	checks := map[string]environment.Check{}
	for _, c := range rep.Probe.Checks {
		checks[c.Name] = c
	}
	for name, want := range map[string]string{"privileges": "uid 65534 (not root): the rootless sandbox", "namespaces": "unprivileged user, mount, pid",
		"cgroups": "cgroup v1 "} {
		if !strings.Contains(checks[name].Detail, want) {
			t.Errorf("probe check %s: %q lacks %q", name, checks[name].Detail, want)
		}
	}
	if len(rep.Probe.Limits) != 4 {
		t.Fatalf("limits %+v", rep.Probe.Limits)
	}
	for _, l := range rep.Probe.Limits {
		if l.Enforced || l.Needs == "" || l.Detail == "" {
			t.Errorf("limit %+v: on cgroup v1 without root no limit is enforced, and each says why", l)
		}
	}
	if got := rep.Probe.UnenforcedReason([]environment.Resource{environment.ResourceMemory}); got != "memory limit needs cgroup v2 delegation; this machine has cgroup v1" {
		t.Errorf("memory alone: %q", got)
	}
}

// rootlessController is the rootless test's controller, run as uid 65534 with the
// work directory work (its lease root under work/leases, the user's own secret in
// work/home): it probes, tries a lease with limits, then runs the launches of a lease
// without limits and cleans it up, printing a rootlessReport on stdout.
func rootlessController(work string) int {
	rep := rootlessReport{UID: os.Geteuid(), Launches: map[string]rootlessLaunch{}}
	if err := rootlessRun(work, &rep); err != nil {
		rep.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

func rootlessRun(work string, rep *rootlessReport) error {
	ctx := context.Background()
	p := New(Options{})
	rep.Probe = p.Probe(ctx)
	root := filepath.Join(work, "leases")
	if _, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "sandbox", Root: root, Shape: smallShape}); err == nil {
		return fmt.Errorf("a lease declaring limits this machine cannot enforce was set up")
	} else {
		rep.LimitsErr = err.Error()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "control-plane says hello") }))
	}()
	addr := ln.Addr().String()
	l, err := p.Setup(ctx, environment.LeaseSpec{EnvironmentID: "sandbox", Root: root,
		Endpoints: []environment.Endpoint{{Name: "cp", Kind: environment.EndpointControlPlane, Listen: addr, Dial: addr}}})
	if err != nil {
		return err
	}
	defer func() {
		rep.Cleanup = p.Cleanup(ctx, l)
		rep.LeftDir = fileExists(l.Dir)
	}()
	br, err := StartBridge(l)
	if err != nil {
		return err
	}
	defer br.Close()
	for name, args := range map[string][]string{
		"reach":           {"reach", "http://" + addr + "/api", "control-plane says hello"},
		"read-secret":     {"read", filepath.Join(work, "home", "secret")},
		"connect-outside": {"connect", "10.255.255.1:80"},
		"write-shm":       {"write", "/dev/shm/y"},
		"daemon":          {"daemon"},
	} {
		x, err := p.Launch(ctx, l, environment.LaunchRequest{Spec: hostileSpec(l, args...)})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		o, err := worker.Supervise(ctx, x.Spec())
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		s := x.Settle(o)
		r := rootlessLaunch{Exit: exitCode(s.Outcome), Facts: s.Facts, Problems: s.Problems}
		lines := strings.Split(strings.TrimSpace(string(o.Output.Stdout())), "\n")
		_ = json.Unmarshal([]byte(lines[len(lines)-1]), &r.Report)
		rep.Launches[name] = r
		if name == "daemon" {
			rep.Sleepers = sleepers(testExe())
		}
	}
	if err := rootlessControllerDeath(l, rep); err != nil {
		return err
	}
	if _, err := p.Launch(ctx, l, environment.LaunchRequest{Spec: hostileSpec(l, "facts"),
		Binds: []environment.Bind{{Path: filepath.Join(l.Workspace, "state"), Write: true}}}); err != nil {
		rep.NestedBindErr = err.Error()
	}
	sleeper := exec.Command(testExe(), "hostile", "sleeper")
	if err := sleeper.Start(); err != nil {
		return err
	}
	rep.SleepersSeen = sleepers(testExe())
	_ = sleeper.Process.Kill()
	_ = sleeper.Wait()
	return nil
}

// rootlessControllerDeath starts a controller (AGENTPROOF_TEST_MODE=controller) that
// launches a daemon into l and supervises it, SIGKILLs it once the daemon is ready and
// records how many of the daemon's sleepers live before, and how long the last took
// to go after (at most two seconds are waited).
func rootlessControllerDeath(l *environment.Lease, rep *rootlessReport) error {
	cmd := exec.Command(testExe(), l.LeaseFile())
	cmd.Env = []string{"AGENTPROOF_TEST_MODE=controller", "PATH=/usr/bin:/bin", "GORACE=atexit_sleep_ms=0"}
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := filepath.Join(l.Workspace, "daemon-ready")
	for deadline := time.Now().Add(30 * time.Second); !fileExists(ready) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	rep.SleepersBeforeKill = sleepers(testExe())
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	killed := time.Now()
	for rep.SleepersAfterKill = sleepers(testExe()); rep.SleepersAfterKill > 0 && time.Since(killed) < 2*time.Second; rep.SleepersAfterKill = sleepers(testExe()) {
		time.Sleep(5 * time.Millisecond)
	}
	rep.GoneAfter = time.Since(killed)
	return nil
}

// sleepers counts the live processes `<exe> hostile sleeper` (a daemon's sleeper).
func sleepers(exe string) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == exe+"\x00hostile\x00sleeper\x00" {
			if st := readTrim(filepath.Join("/proc", e.Name(), "stat")); !strings.Contains(st, ") Z ") {
				n++
			}
		}
	}
	return n
}

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

// TestNoDeclaredLimits: as root, a lease whose shape declares no limit (a sandbox
// environment without resources) still gets its cgroups (membership, counters, kill)
// with no limit written and a lease disk that is a plain directory, not a mount; its
// launch runs, reports no limit hit and no problem, and its cleanup is confirmed.
func TestNoDeclaredLimits(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("the root sandbox")
	}
	p := New(Options{})
	l, err := p.Setup(context.Background(), environment.LeaseSpec{EnvironmentID: "sandbox", Root: leaseRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := leaseState(l)
	if ms, _ := hostlease.MountsUnder(l.Dir); len(ms) != 0 || st.DiskMounted || len(st.Cgroups) == 0 {
		t.Errorf("mounts %v, disk mounted %v, cgroups %+v", ms, st.DiskMounted, st.Cgroups)
	}
	if d, ok := st.Cgroups.byController(ctrlPIDs); !ok || readTrim(filepath.Join(d.Path, "pids.max")) != "max" {
		t.Errorf("pids cgroup %+v: pids.max %q, want max (no limit written)", d, readTrim(filepath.Join(d.Path, "pids.max")))
	}
	r := attack(t, p, l, "write", "/tmp/x")
	if exitCode(r.Outcome) != "1" || len(r.Limits) > 0 || len(r.Problems) > 0 || r.Facts[FactWritesOutside] == "" {
		t.Errorf("launch: exit %s, limits %+v, problems %v, facts %v", exitCode(r.Outcome), r.Limits, r.Problems, r.Facts)
	}
	if rep := p.Cleanup(context.Background(), l); !rep.Confirmed {
		t.Errorf("cleanup: %s", rep.Reason())
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/worker"
)

// ownedRoots lists the attempt roots under tmp that carry an owner record, leaving out
// the campaign's shared root (its serve children's template database and digests).
func ownedRoots(tmp string) []string {
	recs, _ := filepath.Glob(filepath.Join(tmp, worker.AttemptRootPrefix+"*", worker.RootOwnerFile))
	var out []string
	for _, r := range recs {
		if !strings.HasPrefix(filepath.Base(filepath.Dir(r)), worker.AttemptRootPrefix+"shared-") {
			out = append(out, filepath.Dir(r))
		}
	}
	return out
}

// TestRunSweepsStaleRootsOfKilledRun: `agentproof run` killed with SIGKILL mid-attempt
// leaves its attempt root and its state root (with the instance's key files; here
// --state-dir, a memory file system by default); the next run removes both, says so on
// stderr, and leaves a root whose owner is alive.
func TestRunSweepsStaleRootsOfKilledRun(t *testing.T) {
	t.Parallel()
	tmp, state, cat := t.TempDir(), t.TempDir(), catalogWithExtras(t)
	killed, _, _ := startRun(t, tmp, "--catalog", cat, "--suite", "ordinary-hang", "--results", t.TempDir(), "--campaign", "k", "--progress", "none", "--state-dir", state)
	var stale, staleState []string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && (len(stale) == 0 || len(staleState) == 0); time.Sleep(20 * time.Millisecond) {
		stale, staleState = ownedRoots(tmp), ownedRoots(state)
	}
	if len(stale) != 1 || len(staleState) != 1 {
		t.Fatalf("the first run made no owned attempt root under %s and state root under %s: %q %q", tmp, state, stale, staleState)
	}
	waitFor := func(cond func() bool) bool {
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if cond() {
				return true
			}
		}
		return false
	}
	// Killed once its instance home holds its keys.
	if !waitFor(func() bool { _, err := os.Stat(filepath.Join(staleState[0], "home", "master.key")); return err == nil }) {
		t.Fatalf("no master.key in %s", staleState[0])
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	if !waitFor(func() bool { return len(processesUnder(tmp)) == 0 }) {
		t.Fatalf("the killed run's processes live on: %q", processesUnder(tmp))
	}
	if _, err := os.Stat(stale[0]); err != nil {
		t.Fatalf("the killed run's root is already gone: %v", err)
	}
	// A root this (live) test process owns.
	live, err := os.MkdirTemp(tmp, worker.AttemptRootPrefix)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := worker.ClaimAttemptRoot(live)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()

	next, stdout, stderr := startRun(t, tmp, "--catalog", cat, "--suite", "ordinary-nop", "--results", t.TempDir(), "--campaign", "n", "--progress", "none", "--state-dir", state)
	_ = next.Wait()
	// The attempt's root; the state root and the campaign's shared root (it lives in
	// the state directory) when the killed run had made it.
	if !regexp.MustCompile(`agentproof: removed 1 stale attempt temp root\(s\) under `+regexp.QuoteMeta(tmp)).MatchString(stderr.String()) ||
		!regexp.MustCompile(`agentproof: removed [12] stale attempt temp root\(s\) under `+regexp.QuoteMeta(state)).MatchString(stderr.String()) {
		t.Errorf("the next run did not report the sweeps; stdout %s; stderr %s", stdout, stderr)
	}
	for _, r := range []string{stale[0], staleState[0]} {
		if _, err := os.Stat(r); err == nil {
			t.Errorf("the killed run's root %s survived the next run", r)
		}
	}
	if _, err := os.Stat(filepath.Join(live, worker.RootOwnerFile)); err != nil {
		t.Errorf("the live owner's root was swept: %v", err)
	}
}

// nsProc is a process seen from the host: its pid, parent and state.
type nsProc struct {
	pid, ppid int
	state     string
	cmdline   string
}

// namespaceProcs lists the processes whose PID namespace is that of pid init.
func namespaceProcs(init int) []nsProc {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", init))
	if err != nil {
		return nil
	}
	var out []nsProc
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if l, err := os.Readlink(d + "/ns/pid"); err != nil || l != ns {
			continue
		}
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		pid, _ := strconv.Atoi(filepath.Base(d))
		ppid, _ := strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(d + "/cmdline")
		out = append(out, nsProc{pid: pid, ppid: ppid, state: f[0], cmdline: strings.ReplaceAll(string(cmd), "\x00", " ")})
	}
	return out
}

// TestRunReapsAsPIDOne runs `agentproof run` as PID 1 of a new PID namespace
// (`unshare -fp --mount-proc`), with three cells at once: an agent that leaves a
// background child in its group (killed with the group: an orphan zombie), one that
// leaves a daemon in its own session with a scrubbed environment (the marker sweep
// cannot see it, so it outlives its cell and is re-parented to run itself), and one
// that holds the campaign open. Once the daemon has exited, no zombie may be left in
// the namespace: serve and run reap what they adopt.
func TestRunReapsAsPIDOne(t *testing.T) {
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare(1) is not installed: cannot make a PID namespace")
	}
	if out, err := exec.Command(unshare, "-fp", "--mount-proc", "/bin/true").CombinedOutput(); err != nil {
		t.Skipf("cannot create a PID namespace here (needs root or user namespaces): %v %s", err, out)
	}
	dir := t.TempDir()
	rel1, rel2 := filepath.Join(dir, "release-daemon"), filepath.Join(dir, "release-holder")
	profile := func(id, command string, args ...string) string {
		a, _ := json.Marshal(args)
		return fmt.Sprintf(`  - id: %s
    label: %s
    generation: native
    groups: [builtin]
    driver: exec
    driverConfig: {command: %s, args: %s, timeoutMs: 120000}
    provider: agentproof
    model: agentproof/%s
    modelQualification: {source: builtin, qualificationId: "builtin:%s"}
    supportedEnvironments: [local]
    expectedRuntimeMetadata: {adapterType: agentproof_builtin, provider: agentproof}
`, id, id, command, a, id, id)
	}
	extra := "profiles:\n" +
		profile("orphaner", "/bin/sh", "-c", "sleep 0.1 >/dev/null 2>&1 & exit 0") +
		profile("daemonizer", "/bin/sh", "-c", `setsid -f env -i /bin/sh -c 'exec >/dev/null 2>&1 </dev/null; while [ ! -e `+rel1+` ]; do sleep 0.05; done'; sleep 0.5; exit 0`) +
		profile("holder", "/bin/sh", "-c", "while [ ! -e "+rel2+" ]; do sleep 0.05; done") +
		`suites:
  - id: zombies
    label: Zombies
    description: Agents that leave orphans behind.
    profiles: [orphaner, daemonizer, holder]
    environments: [local]
    cases: [message-marker]
    expectedMatrixSize: 3
    manualOnly: true
`
	cat := catalogWithExtras(t)
	if err := os.WriteFile(filepath.Join(cat, "zz-zombies.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "agentproof") // testscript dispatches on argv[0]'s name
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	tmp, res := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := &exec.Cmd{Path: unshare, Args: []string{"unshare", "-fp", "--mount-proc", link, "run", "--catalog", cat, "--suite", "zombies",
		"--results", res, "--campaign", "z", "--max-parallel", "3", "--max-automatic-retries", "0", "--progress", "none"},
		Env: []string{"HOME=" + tmp, "TMPDIR=" + tmp, "PATH=/usr/bin:/bin"}, Stdout: &stdout, Stderr: &stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = os.WriteFile(rel1, nil, 0o644)
		_ = os.WriteFile(rel2, nil, 0o644)
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; stdout %s; stderr %s", what, &stdout, &stderr)
			}
		}
	}
	// PID 1 of the namespace: unshare's child.
	var init int
	wait("agentproof run as PID 1", func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		init, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return init > 0
	})
	// The orphaner's and the daemonizer's cells are done; the daemon has outlived its
	// cell's server and belongs to run (PID 1) now.
	for _, p := range []string{"orphaner", "daemonizer"} {
		wait(p+"'s cell to finish", func() bool {
			_, err := os.Stat(filepath.Join(res, "z", "zombies", p, "local", "message-marker", "attempt-1", "result.json"))
			return err == nil
		})
	}
	daemon := 0
	wait("the daemon to be adopted by run", func() bool {
		for _, p := range namespaceProcs(init) {
			if strings.Contains(p.cmdline, rel1) && p.ppid == init {
				daemon = p.pid
			}
		}
		return daemon > 0
	})
	if err := os.WriteFile(rel1, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var zombies []nsProc
	wait("the daemon to exit", func() bool {
		for _, p := range namespaceProcs(init) {
			if p.pid == daemon && p.state != "Z" {
				return false
			}
		}
		return true
	})
	// No zombie may remain in the namespace (the reapers run at least every second).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		zombies = zombies[:0]
		for _, p := range namespaceProcs(init) {
			if p.state == "Z" {
				zombies = append(zombies, p)
			}
		}
		if len(zombies) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(zombies) > 0 {
		t.Errorf("zombies accumulate in the namespace of agentproof run: %+v", zombies)
	}
	if err := os.WriteFile(rel2, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		done <- nil
	case <-time.After(2 * time.Minute):
		t.Fatalf("the campaign did not end; stdout %s; stderr %s", &stdout, &stderr)
	}
	if !strings.Contains(stdout.String(), "Campaign z: ") {
		t.Errorf("no campaign line; stdout %s; stderr %s", &stdout, &stderr)
	}
}

// TestRunWorkspaceManifest: a campaign's workspace-manifest.json lists a link with its
// target (not followed) and a file over the load cap with its size and hash (a sparse
// 8 MiB file: hashed while streaming, never loaded).
func TestRunWorkspaceManifest(t *testing.T) {
	t.Parallel()
	cat := catalogWithExtras(t)
	extra := `profiles:
  - id: workspace-exec
    label: An exec agent that leaves a link and a sparse file
    generation: native
    groups: [builtin]
    driver: exec
    driverConfig: {command: /bin/sh, args: [-c, "ln -s /etc/passwd link && truncate -s 8M big.bin && echo hi > small.txt"]}
    provider: agentproof
    model: agentproof/workspace
    modelQualification: {source: builtin, qualificationId: "builtin:workspace"}
    supportedEnvironments: [local]
    expectedRuntimeMetadata: {adapterType: agentproof_builtin, provider: agentproof}
suites:
  - id: workspace-manifest
    label: Workspace manifest
    description: Links and big files in the manifest.
    profiles: [workspace-exec]
    environments: [local]
    cases: [message-marker]
    expectedMatrixSize: 1
    manualOnly: true
`
	if err := os.WriteFile(filepath.Join(cat, "zz-workspace.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	res := t.TempDir()
	var stdout, stderr bytes.Buffer
	Main([]string{"run", "--catalog", cat, "--suite", "workspace-manifest", "--results", res, "--campaign", "w", "--progress", "none", "--max-automatic-retries", "0"}, nil, &stdout, &stderr)
	b, err := os.ReadFile(filepath.Join(res, "w", "workspace-manifest", "workspace-exec", "local", "message-marker", "attempt-1", "workspace-manifest.json"))
	if err != nil {
		t.Fatalf("%v; stdout %s; stderr %s", err, &stdout, &stderr)
	}
	var doc struct {
		Schema string `json:"schema"`
		Files  []struct {
			Path, Type, SHA256, Target, Note string
			Bytes                            int64
			Loaded                           bool
		} `json:"files"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range doc.Files {
		got[f.Path] = fmt.Sprintf("%s %d %s loaded=%v target=%s", f.Type, f.Bytes, f.SHA256, f.Loaded, f.Target)
	}
	want := map[string]string{
		"big.bin":   "file 8388608 2daeb1f36095b44b318410b3f4e8b5d989dcc7bb023d1426c492dab0a3053e74 loaded=false target=",
		"link":      "symlink 11  loaded=false target=/etc/passwd",
		"small.txt": "file 3 98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4 loaded=true target=",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("manifest %s = %q, want %q", p, got[p], w)
		}
	}
	if len(got) != len(want) || doc.Schema != "agentproof.workspace-manifest/v1" {
		t.Errorf("manifest %s", b)
	}
}

// killedRunCatalog is a catalog whose exec agent leaves two descendants — a child in
// its own process group and a setsid daemon — writes their pids to <dir>/pids and
// then waits, so that the test can kill the controller mid-run.
const killedRunCatalog = `
groups:
  - {id: killed, description: A controller killed mid-run.}
environments:
  - id: local
    label: Local
    driver: local
    provider: local
    lifecycle: {setup: instance_managed, probe: run_context_via_api, cleanup: instance_shutdown}
    expectedExecutionTarget: {kind: local}
profiles:
  - id: spawner
    label: An exec agent that leaves descendants and waits
    generation: native
    groups: [killed]
    driver: exec
    driverConfig: {command: "@DIR@/spawner.py", args: ["@DIR@"], timeoutMs: 120000}
    provider: example
    model: example/no-model
    modelQualification: {source: builtin, qualificationId: "builtin:spawner"}
    supportedEnvironments: [local]
cases:
  - id: wait
    label: Wait
    groups: [killed]
    workMode: standard
    flow: single_turn
    expectedRunCount: 1
    attemptTimeoutMs: {local: 120000}
    expectedTerminalState: {issue: done, run: succeeded}
    title: "Wait {{nonce}}"
    prompt: Wait.
    marker: NEVER
    matchers:
      - {kind: message_exact, expected: "{{marker}}"}
suites:
  - id: killed
    label: Killed controller
    description: An agent whose descendants must not outlive a killed controller.
    groups: [killed]
    profiles: [spawner]
    environments: [local]
    cases: [wait]
    expectedMatrixSize: 1
`

const spawnerAgent = `#!/usr/bin/env python3
import os, subprocess, sys, time
d = sys.argv[1]
child = subprocess.Popen(["/bin/sleep", "600"])
daemon = subprocess.Popen(["/bin/sleep", "601"], start_new_session=True)
with open(os.path.join(d, "pids.tmp"), "w") as f:
    f.write("%d %d\n" % (child.pid, daemon.pid))
os.rename(os.path.join(d, "pids.tmp"), os.path.join(d, "pids"))
time.sleep(600)
`

// TestRunKilledLeavesNoAgentDescendant: `agentproof run` killed with SIGKILL while its
// local exec agent runs, with the instance in-process and as a serve child: the
// agent's child (its own process group) and its setsid daemon are gone within 2 s
// (the process sentry swept them), not re-parented to live on.
func TestRunKilledLeavesNoAgentDescendant(t *testing.T) {
	t.Parallel()
	for _, instance := range []string{"in-process", "child"} {
		t.Run(instance, func(t *testing.T) {
			t.Parallel()
			tmp, dir := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(strings.ReplaceAll(killedRunCatalog, "@DIR@", dir)), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "spawner.py"), []byte(spawnerAgent), 0o755); err != nil {
				t.Fatal(err)
			}
			run, _, stderr := startRun(t, tmp, "--catalog", dir, "--all", "--results", t.TempDir(), "--campaign", "k", "--progress", "none", "--instance", instance)
			var pids []int
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && len(pids) == 0; time.Sleep(20 * time.Millisecond) {
				if b, err := os.ReadFile(filepath.Join(dir, "pids")); err == nil {
					for _, f := range strings.Fields(string(b)) {
						n, _ := strconv.Atoi(f)
						pids = append(pids, n)
					}
				}
			}
			if len(pids) != 2 {
				t.Fatalf("the agent wrote no pids; stderr %s", stderr)
			}
			if err := run.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = run.Wait()
			killed := time.Now()
			var alive []int
			for time.Since(killed) < 2*time.Second {
				alive = alive[:0]
				for _, pid := range pids {
					if state, _, ok := procStat(pid); ok && state != "Z" {
						alive = append(alive, pid)
					}
				}
				if len(alive) == 0 {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			for _, pid := range alive {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("the agent's descendants %v outlived the killed run by 2 s", alive)
		})
	}
}

// procStat returns the state and parent of pid from /proc/<pid>/stat; ok is false
// when there is no such process.
func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, true
}

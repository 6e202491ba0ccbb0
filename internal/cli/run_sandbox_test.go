package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/shard"
	"github.com/agentproof/agentproof/verdict"
)

// TestNotRunHereBeforeRun: on a machine that cannot run the sandbox (here: bubblewrap
// missing), the sandbox cells of a selection that does not name them are not run
// here, each with the reason; a selection that names a sandbox environment
// (--environment) or cell (--id) is a configuration error (exit 2) that names the
// environment, what is missing and what to do; a selection without sandbox cells does
// not probe.
func TestNotRunHereBeforeRun(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	var sandboxCells, localCells []*catalog.Cell
	for _, cell := range c.Cells {
		if cell.Environment.Provider == "sandbox" {
			sandboxCells = append(sandboxCells, cell)
		} else {
			localCells = append(localCells, cell)
		}
	}
	if len(sandboxCells) == 0 {
		t.Fatal("the default catalog has no sandbox cell")
	}
	missing := []environment.Provider{sandbox.New(sandbox.Options{Bwrap: filepath.Join(t.TempDir(), "no-bwrap"), Executable: filepath.Join(t.TempDir(), "agentproof")})}
	cells := append(localCells[:1:1], sandboxCells...)
	notRun, err := notRunHere(context.Background(), cells, catalog.Selector{All: true}, missing, nil)
	if err != nil || len(notRun) != len(sandboxCells) || notRun[localCells[0].ID] != "" || !strings.Contains(notRun[sandboxCells[0].ID], "bubblewrap is not installed") {
		t.Fatalf("--all: %v, %d of %d sandbox cells not run here: %v", err, len(notRun), len(sandboxCells), notRun[sandboxCells[0].ID])
	}
	for _, sel := range []catalog.Selector{{Environments: []string{"sandbox"}}, {IDs: []string{sandboxCells[0].ID}}} {
		_, err = notRunHere(context.Background(), cells, sel, missing, nil)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Fatalf("%+v: error %v (%T), want a *UsageError (exit 2)", sel, err, err)
		}
		for _, want := range []string{"environment sandbox", "bwrap:", "apt-get install bubblewrap", "agentproof environments probe"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("probe error %q does not say %q", err, want)
			}
		}
	}
	if notRun, err := notRunHere(context.Background(), localCells, catalog.Selector{All: true}, missing, nil); err != nil || notRun != nil {
		t.Errorf("a selection without sandbox cells was probed: %v %v", notRun, err)
	}
}

// TestRunUnprivilegedNotRunHere: the quick start's kind of selection run by an
// unprivileged user (uid 65534, a fresh HOME): the local cells run and pass, the
// sandbox cell — whose declared limits a normal user's sandbox cannot enforce here — and the
// container cell — which needs root for its lease — are not run here with that reason (progress line, last line, summary.md, JUnit skipped),
// and the partial campaign exits 4. An explicit --environment sandbox still exits 2
// before anything starts. (The whole default campaign is .ci/quickstart-unprivileged.sh.)
func TestRunUnprivilegedNotRunHere(t *testing.T) {
	if testing.Short() {
		t.Skip("a campaign as another user")
	}
	t.Parallel()
	dir, argv := asNobody(t)
	run := func(args ...string) (string, int) { return runAsNobody(t, dir, argv, args...) }
	out, code := run("run", "--profile", "reference", "--case", "message-marker", "--results", "res", "--campaign", "q", "--progress", "plain")
	// the default sandbox environments declare cpu, memory, pids and disk limits, which
	// a normal user's sandbox cannot enforce on this machine (cgroup v1 here; the disk
	// limit needs root everywhere)
	reason := unenforcedSandboxLimits
	for _, want := range []string{
		"not run here sandbox-compatibility.reference.sandbox.message-marker: " + reason,
		// the container cell's reason also names the executable when it is not static
		// (this test binary is, or not, by how it was built): only the root part is fixed
		"not run here container-compatibility.reference.container.message-marker: needs root for the container lease",
		"passed core-compatibility.reference.local.message-marker",
		"Campaign q: 2/4 passed, 0 failed, 0 inconclusive, 2 not run here (partial)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != int(verdict.ExitPartial) {
		t.Errorf("exit %d, want %d (partial)\n%s", code, verdict.ExitPartial, out)
	}
	for file, want := range map[string]string{"summary.md": "1 cell(s) of environment sandbox: " + reason, "junit.xml": `<skipped message="not run here: ` + reason} {
		b, err := os.ReadFile(filepath.Join(dir, "work", "res", "q", file))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q (%v)", file, want, err)
		}
	}
	// Resuming it here finds nothing to run, and says that the cells without a result
	// cannot run here, not that every cell has one.
	out, code = run("run", "--resume", "q", "--results", "res")
	if want := "Campaign q has nothing left to run here: each of its 2 cell(s) this machine can run has a result for every repetition (2 stored), and the other 2 cannot run here"; code != int(ExitOK) || !strings.Contains(out, want) {
		t.Errorf("--resume of the partial campaign: exit %d, want 0 and %q\n%s", code, want, out)
	}
	out, code = run("run", "--environment", "sandbox", "--profile", "reference", "--case", "message-marker", "--results", "res2")
	if code != int(verdict.ExitUsage) || !strings.Contains(out, "need the sandbox provider, which this machine cannot run: "+reason) || strings.Count(out, reason) != 1 {
		t.Errorf("--environment sandbox: exit %d, want the reason once\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "work", "res2")); err == nil {
		t.Error("--environment sandbox wrote results before refusing")
	}
	// A suite none of whose cells can run here: exit 2, nothing written, each reason named.
	out, code = run("run", "--suite", "sandbox-compatibility", "--results", "res3")
	if code != int(verdict.ExitUsage) || !strings.Contains(out, "selected cell(s) can run on this machine, so nothing was started: environment sandbox: "+reason) {
		t.Errorf("--suite sandbox-compatibility: exit %d, want 2 naming the reason\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "work", "res3")); err == nil {
		t.Error("a selection with nothing to run here wrote results")
	}
}

// unenforcedSandboxLimits is the reason the default sandbox environments' cells are
// not run here for a normal user on a cgroup v1 machine (this one): each of their
// declared limits, and why it cannot be enforced.
const unenforcedSandboxLimits = "cpu, memory and pids limits need cgroup v2 delegation; this machine has cgroup v1; " +
	"disk limit needs root (the lease disk is a size-capped tmpfs mounted on the host)"

// rootlessSuite is a sandbox environment that declares no limit, the reference agent
// allowed in it, and a suite of the two with the message-marker case.
const rootlessSuite = `environments:
  - id: sandbox-unlimited
    label: Linux sandbox (bubblewrap) without declared limits
    driver: sandbox
    provider: sandbox
    lifecycle: {setup: create_via_api, probe: run_context_via_api, cleanup: delete_via_api_and_destroy_leases}
    expectedExecutionTarget: {kind: local, transport: sandbox}
    config: {reuseLease: false}
    attemptDeadlineMs: 600000
profiles:
  - id: reference-unlimited
    label: Reference agent in the sandbox without declared limits
    generation: native
    groups: [builtin]
    driver: reference
    provider: agentproof
    model: agentproof/reference
    modelQualification: {source: builtin, qualificationId: "builtin:reference"}
    supportedEnvironments: [sandbox-unlimited]
    expectedRuntimeMetadata: {adapterType: agentproof_builtin, provider: agentproof}
suites:
  - id: rootless-sandbox
    label: The rootless sandbox
    description: The reference agent in a sandbox environment that declares no limit.
    profiles: [reference-unlimited]
    environments: [sandbox-unlimited]
    cases: [message-marker]
    expectedMatrixSize: 1
`

// TestRunUnprivilegedRootlessSandbox: a normal user (uid 65534, a fresh HOME) on this
// machine, whose kernel allows unprivileged user namespaces and whose cgroups are
// v1, runs a sandbox environment that declares no limit for real — bubblewrap in a
// user namespace of its own, the control plane and the scripted model through the
// bridge — and its cell passes; the default sandbox environment beside it, which
// declares cpu, memory, pids and disk limits, is not run here naming each limit and
// why. `environments probe` as that user says the sandbox is available and which
// limits it cannot enforce.
func TestRunUnprivilegedRootlessSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("a campaign as another user")
	}
	t.Parallel()
	dir, argv := asNobody(t)
	cat := filepath.Join(dir, "catalog")
	if err := copyDefaultCatalog(cat); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cat, "zz-rootless.yaml"), []byte(rootlessSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("chmod", "-R", "a+rX", cat).Run(); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, int) { return runAsNobody(t, dir, argv, args...) }
	out, _ := run("environments", "probe")
	// Available, with the limits it cannot enforce for this user named in its headline.
	for _, want := range []string{"sandbox: available, but without ", " limits: an environment declaring one is not run here\n", "uid 65534 (not root): the rootless sandbox", "unprivileged user, mount, pid",
		"NOT ENFORCED memory", "needs cgroup v2 delegation; this machine has cgroup v1", "systemd-run --user --scope -p Delegate=yes"} {
		if !strings.Contains(out, want) {
			t.Errorf("probe as uid 65534 lacks %q:\n%s", want, out)
		}
	}
	out, code := run("run", "--catalog", cat, "--suite", "rootless-sandbox", "--suite", "sandbox-compatibility", "--profile", "reference",
		"--profile", "reference-unlimited", "--case", "message-marker", "--results", "res", "--campaign", "r", "--progress", "plain")
	for _, want := range []string{
		"passed rootless-sandbox.reference-unlimited.sandbox-unlimited.message-marker",
		"not run here sandbox-compatibility.reference.sandbox.message-marker: " + unenforcedSandboxLimits,
		"Campaign r: 1/2 passed, 0 failed, 0 inconclusive, 1 not run here (partial)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != int(verdict.ExitPartial) {
		t.Errorf("exit %d, want %d (partial)\n%s", code, verdict.ExitPartial, out)
	}
	// the agent's launch facts: a sandbox launch, rootless, as that user
	b, err := os.ReadFile(filepath.Join(dir, "work", "res", "r", "rootless-sandbox", "reference-unlimited", "sandbox-unlimited", "message-marker", "attempt-1", "result.json"))
	for _, want := range []string{`"provider": "sandbox"`, `"rootless": "true"`, `"uid": "65534"`} {
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("result.json of the rootless sandbox cell lacks %s (%v)", want, err)
		}
	}
}

// runAsNobody runs the agentproof argv (asNobody's) with args in dir/work, with
// HOME dir/home and TMPDIR dir/tmp, and returns its combined output and exit code.
func runAsNobody(t *testing.T, dir string, argv []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], append(argv[1:], args...)...)
	cmd.Dir = filepath.Join(dir, "work")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home"), "TMPDIR=" + filepath.Join(dir, "tmp")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestHistoryKeepFlag: --history-keep N keeps N campaigns per suite definition, 0
// keeps every one, a negative number is a usage error naming the flag.
func TestHistoryKeepFlag(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{1: 1, 30: 30, 0: -1} {
		if got, err := historyKeep(n); err != nil || got != want {
			t.Errorf("--history-keep %d: %d, %v; want %d", n, got, err, want)
		}
	}
	var ue *UsageError
	if _, err := historyKeep(-2); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--history-keep") {
		t.Errorf("--history-keep -2: %v", err)
	}
}

// TestShardsNotRunHere: a merge gathers the cells each shard run did not run here
// (its campaign.json "notRunHere"), so that the merged campaign reports them with
// their reason instead of as missing; a run without a readable campaign.json adds
// nothing.
func TestShardsNotRunHere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if body != "" {
			if err := os.WriteFile(filepath.Join(d, result.CampaignFile), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	runs := []shard.Run{
		{Dir: write("s1", `{"schema":"`+result.CampaignSchema+`","notRunHere":{"a.p.sandbox.k":"needs root"}}`)},
		{Dir: write("s2", `{"schema":"`+result.CampaignSchema+`"}`)},
		{Dir: write("s3", "")},
		{Dir: write("s4", `{"schema":"`+result.CampaignSchema+`","notRunHere":{"b.p.sandbox.k":"bubblewrap is not installed"}}`)},
	}
	got := shardsNotRunHere(runs)
	if len(got) != 2 || got["a.p.sandbox.k"] != "needs root" || got["b.p.sandbox.k"] != "bubblewrap is not installed" {
		t.Errorf("not run here %v", got)
	}
	if shardsNotRunHere(runs[1:3]) != nil {
		t.Error("runs without cells not run here gave some")
	}
}

package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"

	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/worker"
)

// extraSuites are ordinary (non-calibration) suites added to a copy of the default
// catalog, so that a run can fail (nop) or end inconclusive (a hanging fixture).
const extraSuites = `profiles:
  - id: missing-exec
    label: An exec agent whose command cannot be executed (not a program)
    generation: native
    groups: [builtin]
    driver: exec
    driverConfig: {command: "@NOT_A_PROGRAM@"}
    provider: agentproof
    model: agentproof/missing
    modelQualification: {source: builtin, qualificationId: "builtin:missing"}
    supportedEnvironments: [local]
    expectedRuntimeMetadata: {adapterType: agentproof_builtin, provider: agentproof}
  - id: leaky-exec
    label: An exec agent that copies its environment into the workspace
    generation: native
    groups: [builtin]
    driver: exec
    driverConfig: {command: /usr/bin/cp, args: [/proc/self/environ, leaked-env.txt]}
    provider: agentproof
    model: agentproof/leaky
    modelQualification: {source: builtin, qualificationId: "builtin:leaky"}
    supportedEnvironments: [local]
    expectedRuntimeMetadata: {adapterType: agentproof_builtin, provider: agentproof}
suites:
  - id: ordinary-leak
    label: Ordinary leaky agent
    description: An agent that writes a secret into its workspace fails with secret_leak.
    profiles: [leaky-exec]
    environments: [local]
    cases: [message-marker]
    expectedMatrixSize: 1
    manualOnly: true
  - id: ordinary-missing
    label: Ordinary missing agent
    description: An agent that cannot be launched is not the candidate's failure.
    profiles: [missing-exec]
    environments: [local]
    cases: [message-marker]
    expectedMatrixSize: 1
    manualOnly: true
  - id: ordinary-nop
    label: Ordinary nop
    description: The nop agent on an ordinary cell.
    profiles: [nop]
    environments: [local]
    cases: [message-marker]
    expectedMatrixSize: 1
    manualOnly: true
  - id: ordinary-hang
    label: Ordinary hang
    description: A hanging fixture on an ordinary cell.
    profiles: [fixture-hang]
    environments: [local]
    cases: [process-exit]
    expectedMatrixSize: 1
    manualOnly: true
`

// copyDefaultCatalog writes the embedded default catalog into dir as a catalog
// directory: its YAML files and, recursively, its files/ directory (the workspace
// sources and verifier files its cases name relative to the catalog).
func copyDefaultCatalog(dir string) error {
	return os.CopyFS(dir, catalog.DefaultFS())
}

// catalogWithExtras writes the default catalog plus extraSuites into a directory.
func catalogWithExtras(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := copyDefaultCatalog(dir); err != nil {
		t.Fatal(err)
	}
	// An executable file the kernel refuses to run (exec format error): it passes
	// validation (it exists, is a regular file, has an execute bit) but cannot start.
	notAProgram := filepath.Join(dir, "not-a-program")
	if err := os.WriteFile(notAProgram, []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	extra := strings.ReplaceAll(extraSuites, "@NOT_A_PROGRAM@", notAProgram)
	if err := os.WriteFile(filepath.Join(dir, "zz-extra.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readCampaign decodes the fields of campaign.json the tests look at.
type campaignDoc struct {
	Partial                            bool `json:"partial"`
	Selected, Executed, Passed, Failed int
	Inconclusive, Retries              int
	CleanupPassed                      bool `json:"cleanupPassed"`
}

func readCampaign(t *testing.T, path string) campaignDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c campaignDoc
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunExitCodes runs real campaigns in process (the executor starts this test
// binary as `agentproof serve`): a failed ordinary cell exits 1, an inconclusive one 3
// (after one automatic retry in a new attempt, both attempts kept), usage errors 2.
// A selection of one manual-only suite is partial (not every suite appears).
func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	cat := catalogWithExtras(t)
	tests := []struct {
		name     string
		args     []string
		code     verdict.ExitCode
		attempts []string
		want     campaignDoc
	}{
		{"nop fails", []string{"--suite", "ordinary-nop"}, ExitFailed,
			[]string{"ordinary-nop/nop/local/message-marker/attempt-1/result.json"},
			campaignDoc{Partial: true, Selected: 1, Executed: 1, Failed: 1, CleanupPassed: true}},
		{"a hanging fixture is inconclusive, retried once", []string{"--suite", "ordinary-hang"}, ExitInconclusive,
			[]string{"ordinary-hang/fixture-hang/local/process-exit/attempt-1/result.json", "ordinary-hang/fixture-hang/local/process-exit/attempt-2/result.json"},
			campaignDoc{Partial: true, Selected: 1, Executed: 1, Inconclusive: 1, Retries: 1, CleanupPassed: true}},
		{"no retry with --max-automatic-retries 0", []string{"--suite", "ordinary-hang", "--max-automatic-retries", "0"}, ExitInconclusive,
			[]string{"ordinary-hang/fixture-hang/local/process-exit/attempt-1/result.json"},
			campaignDoc{Partial: true, Selected: 1, Executed: 1, Inconclusive: 1, CleanupPassed: true}},
		{"an agent that cannot start is inconclusive, not failed", []string{"--suite", "ordinary-missing", "--max-automatic-retries", "0"}, ExitInconclusive,
			[]string{"ordinary-missing/missing-exec/local/message-marker/attempt-1/result.json"},
			campaignDoc{Partial: true, Selected: 1, Executed: 1, Inconclusive: 1, CleanupPassed: true}},
		{"a secret in the workspace is a leak", []string{"--suite", "ordinary-leak"}, ExitFailed,
			[]string{"ordinary-leak/leaky-exec/local/message-marker/attempt-1/result.json"},
			campaignDoc{Partial: true, Selected: 1, Executed: 1, Failed: 1, CleanupPassed: true}},
		{"no selector", nil, ExitUsage, nil, campaignDoc{}},
		{"zero parallelism", []string{"--all", "--max-parallel", "0"}, ExitUsage, nil, campaignDoc{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := t.TempDir()
			args := append([]string{"run", "--catalog", cat, "--results", res, "--campaign", "c", "--progress", "none"}, tt.args...)
			var stdout, stderr bytes.Buffer
			if code := verdict.ExitCode(Main(args, nil, &stdout, &stderr)); code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %s; stderr %s", code, tt.code, stdout.String(), stderr.String())
			}
			if tt.code == ExitUsage {
				if _, err := os.Stat(filepath.Join(res, "c")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a usage error created the campaign directory (%v)", err)
				}
				return
			}
			for _, a := range tt.attempts {
				if _, err := os.Stat(filepath.Join(res, "c", a)); err != nil {
					t.Errorf("attempt result: %v", err)
				}
			}
			if strings.Contains(tt.name, "leak") {
				b, err := os.ReadFile(filepath.Join(res, "c", tt.attempts[0]))
				if err != nil || !strings.Contains(string(b), `"failureClass": "secret_leak"`) || !strings.Contains(string(b), "persisted workspace state at leaked-env.txt") {
					t.Errorf("result.json does not report the workspace leak: %s %v", b, err)
				}
			}
			if got := readCampaign(t, filepath.Join(res, "c", "campaign.json")); got != tt.want {
				t.Errorf("campaign.json = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// startRun starts `agentproof run` as a child process (this test binary dispatches
// on argv[0]) with TMPDIR set to tmp, so that its attempt roots are found there.
func startRun(t *testing.T, tmp string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := &exec.Cmd{Path: self, Args: append([]string{"agentproof", "run"}, args...),
		Env: []string{"HOME=" + tmp, "TMPDIR=" + tmp, "PATH=/usr/bin:/bin"}, Stdout: &stdout, Stderr: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, &stdout, &stderr
}

// processesUnder lists the live processes whose command line or working directory
// mentions dir (zombies excluded), as "pid: cmdline".
func processesUnder(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		if strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir) {
			out = append(out, filepath.Base(p)+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// freezeUnder stops (SIGSTOP) the live processes processesUnder(dir) finds and returns
// the pids of those still stopped afterwards (none: every one ended meanwhile, and
// nothing is left stopped).
func freezeUnder(dir string) []int {
	var pids []int
	for _, p := range processesUnder(dir) {
		pid, err := strconv.Atoi(p[:strings.IndexByte(p, ':')])
		if err == nil && syscall.Kill(pid, syscall.SIGSTOP) == nil {
			pids = append(pids, pid)
		}
	}
	var stopped []int
	for _, pid := range pids {
		if waitStopped(pid) {
			stopped = append(stopped, pid)
		}
	}
	if len(stopped) == 0 {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	return stopped
}

// waitStopped reports whether pid is in the stopped state (T), waiting up to a second
// for a SIGSTOP sent to it to take effect; false once it is gone or a zombie.
func waitStopped(pid int) bool {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false
		}
		switch stat[i+2] {
		case 'T':
			return true
		case 'Z', 'X':
			return false
		}
	}
	return false
}

// TestRunInterrupted: SIGINT mid-campaign stops scheduling, stops the running agents
// and servers, writes what finished, marks the campaign partial and exits 130; no
// process of the campaign is left in the process table and no attempt root remains.
func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	tmp, res := t.TempDir(), t.TempDir()
	// The built-in agents' cells (the agent CLI cells need the CLIs and an executable
	// named agentproof for their MCP server: see run_clis.txtar).
	// The reference agent's local cells of them, so that the resume below stays short
	// (sandbox cells need a short TMPDIR for their bridge sockets; run_sandbox.txtar).
	cmd, stdout, stderr := startRun(t, tmp, "--group", "builtin", "--profile", "reference", "--environment", "local", "--results", res, "--campaign", "int", "--max-parallel", "2", "--progress", "plain")
	// Wait until one attempt finished and another is running, and hold the running
	// attempts there: their processes (the attempts' control-plane servers) are stopped
	// (SIGSTOP) until the interrupt is sent, so that it lands mid-attempt even when the
	// machine is slow (an attempt takes a tenth of a second: between a look at the
	// process table and the signal, it could have finished and the next not started).
	var frozen []int
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && len(frozen) == 0; time.Sleep(20 * time.Millisecond) {
		results, _ := filepath.Glob(filepath.Join(res, "int", "*", "*", "*", "*", "attempt-1", "result.json"))
		roots, _ := filepath.Glob(filepath.Join(tmp, "agentproof-attempt-*"))
		if len(results) >= 1 && len(roots) >= 1 {
			frozen = freezeUnder(tmp)
		}
	}
	if len(frozen) == 0 {
		t.Fatalf("the campaign never reached its middle; stdout %s; stderr %s", stdout, stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the interrupt is seen before they go on
	for _, pid := range frozen {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != int(ExitInterrupted) {
		t.Fatalf("wait = %v, want exit %d; stdout %s; stderr %s", err, ExitInterrupted, stdout, stderr)
	}
	if left := processesUnder(tmp); len(left) > 0 {
		t.Errorf("processes outlived the interrupted campaign: %q", left)
	}
	if roots, _ := filepath.Glob(filepath.Join(tmp, "agentproof-attempt-*")); len(roots) > 0 {
		t.Errorf("attempt roots left behind: %q", roots)
	}
	c := readCampaign(t, filepath.Join(res, "int", "campaign.json"))
	// campaign.json holds the cells that finished, so its suites are incomplete and the
	// campaign is partial.
	if !c.Partial || c.Executed == 0 || c.Executed >= 12 || c.Selected != c.Executed {
		t.Errorf("campaign.json = %+v, want a partial campaign of the cells that finished (fewer than 12)", c)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if last := lines[len(lines)-1]; !regexp.MustCompile(`^Campaign int: \d+/\d+ passed, 0 failed, 0 inconclusive, \d+ not finished \(interrupted: \d+ stopped mid-attempt(, \d+ never started)?\)$`).MatchString(last) {
		t.Errorf("last line %q is not the interrupted campaign line", last)
	}
	resume := "agentproof run --resume int --results " + res + " --max-parallel 2"
	if len(lines) < 2 || lines[len(lines)-2] != "Continue it with: "+resume {
		t.Errorf("the line before the campaign line is not the resume command %q; stdout %s", resume, stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(res, "int", "summary.md")); !strings.Contains(string(b), "**This campaign was interrupted: ") ||
		!strings.Contains(string(b), "Continue it with `"+resume+"`.") {
		t.Errorf("summary.md does not say the campaign was interrupted and how to resume it:\n%s", b)
	}

	// --resume continues it: the stored results are kept byte for byte, the attempt
	// that was cancelled mid-way keeps its evidence and its cell runs again as attempt 2,
	// the cells never started run, and the campaign ends complete.
	kept, _ := filepath.Glob(filepath.Join(res, "int", "*", "*", "*", "*", "attempt-1", "result.json"))
	before := map[string]string{}
	for _, p := range kept {
		b, _ := os.ReadFile(p)
		before[p] = string(b)
	}
	var cancelled []string
	dirs, _ := filepath.Glob(filepath.Join(res, "int", "*", "*", "*", "*", "attempt-1"))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "result.json")); err != nil {
			cancelled = append(cancelled, filepath.Dir(d))
		}
	}
	if len(cancelled) == 0 {
		t.Fatalf("no attempt was cancelled mid-way (every attempt-1 has a result.json)")
	}
	var rec campaign.PlanRecord
	if b, err := os.ReadFile(filepath.Join(res, "int", campaign.PlanFile)); err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("plan.json: %v", err)
	}
	n := len(rec.Cells)
	cmd, stdout, stderr = startRun(t, tmp, "--resume", "int", "--results", res, "--max-parallel", "2", "--progress", "plain")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resume: %v; stdout %s; stderr %s", err, stdout, stderr)
	}
	lines = strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if last := lines[len(lines)-1]; last != fmt.Sprintf("Campaign int: %d/%d passed, 0 failed, 0 inconclusive", n, n) {
		t.Errorf("resumed campaign line %q; stderr %s", last, stderr)
	}
	if want := fmt.Sprintf("keeping %d stored result(s), running %d of its", len(kept), n-len(kept)); !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q does not say %q", stderr, want)
	}
	for p, b := range before {
		if now, _ := os.ReadFile(p); string(now) != b {
			t.Errorf("resume rewrote the stored %s", p)
		}
	}
	for _, d := range cancelled {
		if _, err := os.Stat(filepath.Join(d, "attempt-1")); err != nil {
			t.Errorf("the cancelled %s/attempt-1 is gone: %v", d, err)
		}
		if _, err := os.Stat(filepath.Join(d, "attempt-2", "result.json")); err != nil {
			t.Errorf("the cancelled cell %s did not run again as attempt 2: %v", d, err)
		}
	}
	c = readCampaign(t, filepath.Join(res, "int", "campaign.json"))
	if c.Selected != n || c.Passed != n {
		t.Errorf("resumed campaign.json = %+v, want %d/%d passed", c, n, n)
	}
}

// TestRunRerunFailedNamesLaterPasses: a cell whose stored result failed and that
// passes on --rerun-failed is named, with its attempts, just before the campaign line
// and in summary.md, so that "1/1 passed" does not hide the earlier failure.
func TestRunRerunFailedNamesLaterPasses(t *testing.T) {
	t.Parallel()
	tmp, res := t.TempDir(), t.TempDir()
	const id = "core-compatibility.reference.local.message-marker"
	cmd, stdout, stderr := startRun(t, tmp, "--id", id, "--results", res, "--campaign", "rf", "--progress", "none")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("first run: %v; stdout %s; stderr %s", err, stdout, stderr)
	}
	// The stored attempt becomes a failed one, as if the candidate had failed.
	path := filepath.Join(res, "rf", "core-compatibility", "reference", "local", "message-marker", "attempt-1", "result.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["verdict"], doc["failureClass"], doc["error"] = "failed", "candidate_failure", "the marker was wrong"
	if b, err = json.MarshalIndent(doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, stdout, stderr = startRun(t, tmp, "--rerun-failed", "rf", "--results", res, "--progress", "none")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("--rerun-failed: %v; stdout %s; stderr %s", err, stdout, stderr)
	}
	want := "1 cell(s) passed only after an earlier attempt did not:\n" +
		"  " + id + ": passed on attempt 2 (a later run: --rerun-failed or --resume) after attempt 1 was failed\n" +
		"Report: " + filepath.Join(res, "rf", "dashboard.html") + " (summary.md beside it)\n" +
		"Campaign rf: 1/1 passed, 0 failed, 0 inconclusive\n"
	if got := stdout.String(); !strings.HasSuffix(got, want) {
		t.Errorf("stdout:\n%s\nwant it to end with:\n%s\nstderr %s", got, want, stderr)
	}
	sum, err := os.ReadFile(filepath.Join(res, "rf", "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Passed: 1/1 (1 only after an earlier attempt did not pass) · ",
		"## Passed only after an earlier attempt did not\n\n- **" + id + "** — passed on attempt 2 (a later run: --rerun-failed or --resume) after attempt 1 was failed\n"} {
		if !strings.Contains(string(sum), w) {
			t.Errorf("summary.md lacks %q:\n%s", w, sum)
		}
	}
}

// TestRunParallelCampaigns: two campaigns run at the same time into different results
// directories, each isolated and complete.
func TestRunParallelCampaigns(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	type run struct {
		res         string
		err         error
		out, errout *bytes.Buffer
	}
	runs := make([]*run, 2)
	for i := range runs {
		tmp := t.TempDir()
		r := &run{res: t.TempDir()}
		runs[i] = r
		cmd, out, errout := startRun(t, tmp, "--suite", "core-compatibility", "--profile", "reference", "--results", r.res, "--campaign", "par", "--max-parallel", "2", "--progress", "none")
		r.out, r.errout = out, errout
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.err = cmd.Wait()
		}()
	}
	wg.Wait()
	for i, r := range runs {
		if r.err != nil {
			t.Errorf("campaign %d: %v; stdout %s; stderr %s", i, r.err, r.out, r.errout)
			continue
		}
		// The last lines: where the report is, then the campaign line.
		want := "Report: " + filepath.Join(r.res, "par", "dashboard.html") + " (summary.md beside it)\nCampaign par: 3/3 passed, 0 failed, 0 inconclusive"
		if got := strings.TrimSpace(r.out.String()); got != want {
			t.Errorf("campaign %d printed %q", i, got)
		}
		c := readCampaign(t, filepath.Join(r.res, "par", "campaign.json"))
		if c.Passed != 3 || c.Executed != 3 || c.Partial && c.Selected != 3 {
			t.Errorf("campaign %d: %+v", i, c)
		}
	}
}

// TestLivePreflight: with --live, a cell whose live provider's credential is unset or
// empty is refused before anything starts; cells without a live provider need nothing.
func TestLivePreflight(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cells := []*catalog.Cell{c.Cell("core-compatibility.codex.local.message-marker"), c.Cell("core-compatibility.reference.local.message-marker")}
	for name, env := range map[string]map[string]string{"unset": {}, "empty": {"OPENAI_API_KEY": ""}} {
		err := livePreflight(cells, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "OPENAI_API_KEY is not set, and 1 --live cell(s) need it: core-compatibility.codex.local.message-marker") {
			t.Errorf("%s: %v, want a usage error naming OPENAI_API_KEY and the codex cell", name, err)
		}
	}
	if err := livePreflight(cells, func(string) (string, bool) { return "sk-test", true }); err != nil {
		t.Errorf("with the credential: %v", err)
	}
}

// TestRunStateDirDefault: without --state-dir, every attempt's instance home is made on
// the memory file system when it has room (worker.MemoryDir: keys and database never
// reach a disk), else inside the attempt's temp root, as the flow log says.
func TestRunStateDirDefault(t *testing.T) {
	t.Parallel()
	res := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"run", "--id", "calibration.fixture-pass.local.process-exit", "--results", res, "--campaign", "d", "--progress", "none"}
	if code := verdict.ExitCode(Main(args, nil, &stdout, &stderr)); code != ExitOK {
		t.Fatalf("exit %d; stdout %s; stderr %s", code, stdout.String(), stderr.String())
	}
	log, err := os.ReadFile(filepath.Join(res, "d", "calibration", "fixture-pass", "local", "process-exit", "attempt-1", "logs", "flow.log"))
	if err != nil {
		t.Fatal(err)
	}
	apart := regexp.MustCompile(`instance home kept apart from the workspace, in (\S+)`).FindSubmatch(log)
	switch mem := worker.MemoryDir(minStateFree); {
	case mem != "" && (apart == nil || !strings.HasPrefix(string(apart[1]), mem+string(filepath.Separator))):
		t.Errorf("%s is a memory file system with room, and the flow log says %q", mem, log)
	case mem == "" && apart != nil:
		t.Errorf("no memory file system has room, and the home was kept apart: %s", apart[0])
	}
}

// TestLaunchesSelf: only a campaign whose every agent is a real agent CLI (and whose
// flows start no further agent of the harness's) stops run's digest of its binary.
func TestLaunchesSelf(t *testing.T) {
	t.Parallel()
	cell := func(drv string, flow catalog.Flow) *catalog.Cell {
		d, _ := driver.Parse(drv) // the zero Name for one that is no driver
		return &catalog.Cell{Profile: &catalog.Profile{Driver: d}, Case: &catalog.Case{Flow: flow}}
	}
	for _, tc := range []struct {
		name  string
		cells []*catalog.Cell
		want  bool
	}{
		{"codex", []*catalog.Cell{cell("exec:codex", "single_turn")}, false},
		{"clis", []*catalog.Cell{cell("exec:opencode", "single_turn"), cell("acp:codex", "single_turn"), cell("rpc:pi", "warm_three_turn"), cell("app:codex", "permission_approve_write")}, false},
		{"fixture", []*catalog.Cell{cell("exec:codex", "single_turn"), cell("fixture:pass", "process_exit")}, true},
		{"reference", []*catalog.Cell{cell("reference", "single_turn")}, true},
		{"built-in acp", []*catalog.Cell{cell("acp:reference", "single_turn")}, true},
		{"exec", []*catalog.Cell{cell("exec", "single_turn")}, true},
		{"manager", []*catalog.Cell{cell("exec:codex", "blocker_guidance")}, true},
		{"chat", []*catalog.Cell{cell("exec:codex", "agent_chat")}, true},
		{"no driver", []*catalog.Cell{cell("no such driver", "single_turn")}, true},
		{"none", nil, false},
	} {
		if got := launchesSelf(tc.cells); got != tc.want {
			t.Errorf("%s: launchesSelf = %v, want %v", tc.name, got, tc.want)
		}
	}
}

package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/worker"
)

const secretValue = "sk-test-secret-value-0123456789"

func self(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func selfB(b *testing.B) string { return self(b) }

func runEnv(t *testing.T) agent.RunEnv {
	t.Helper()
	cfg, err := json.Marshal(agent.BuiltinConfig{Schema: agent.BuiltinConfigSchema, Nonce: "abc123", Reference: &catalog.ReferenceScript{
		Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{{Command: "finish_task", Args: map[string]any{"summary": "M_abc123"}, Present: true}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return agent.RunEnv{
		Executable: self(t), Workspace: t.TempDir(), APIURL: "http://127.0.0.1:1/api", RunID: "run-1",
		RunToken: "run-token-xyz", StateDir: t.TempDir(), Secrets: map[string]string{"OPENAI_API_KEY": secretValue},
		AdapterConfig: cfg,
	}
}

func runContext() controlplane.RunContext {
	return controlplane.RunContext{RunID: "run-1", ActiveTask: controlplane.Task{ID: "task-9"}}
}

// build makes the driver of a profile's driver string and YAML-shaped driverConfig the
// way the harness does: driver.Parse, api.DriverConfigOf, agent.New.
func build(name string, config map[string]any) (agent.Driver, error) {
	n, err := driver.Parse(name)
	if err != nil {
		return nil, err
	}
	dc, err := api.DriverConfigOf(config)
	if err != nil {
		return nil, err
	}
	return agent.New(n, dc)
}

func mustNew(t *testing.T, driver string, config map[string]any) agent.Driver {
	t.Helper()
	d, err := build(driver, config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestNewRejectsBadConfigurations: a driver string, a driverConfig key or value, or a
// key the driver does not read is refused with every problem named (parse, decode and
// agent.New each report all of theirs at once).
func TestNewRejectsBadConfigurations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		driver string
		config map[string]any
		newErr bool     // the error is agent.New's *ConfigError
		want   []string // every problem the error must name
	}{
		{"bogus", nil, false, []string{`unknown driver "bogus"`}},
		{"exec:gemini", nil, false, []string{`unknown driver "exec:gemini"`, "exec:codex"}},
		{"fixture:bogus", nil, false, []string{`unknown driver "fixture:bogus"`}},
		{"exec:codex", map[string]any{"binary": "codex", "modelBaseUrl": "https://example.com", "script": "smart"}, true,
			[]string{`binary "codex" must be an absolute path`, `modelBaseUrl "https://example.com" must be a loopback`, `script "smart"`}},
		{"exec:codex", map[string]any{"color": 1, "binray": "/x"}, false, []string{`unknown key "color"`, `unknown key "binray"`}},
		{"exec:opencode", map[string]any{"live": map[string]any{"baseUrl": "ftp://x", "envVar": "bad-name", "extra": 1}}, false, []string{`live: unknown key "extra"`}},
		{"exec:claude", map[string]any{"live": map[string]any{"baseUrl": "ftp://x", "envVar": "bad-name"}}, true, []string{"live.baseUrl", "live.model is required", "live.envVar"}},
		{"fixture:pass", map[string]any{"timeoutMs": 999_999_999, "maxOutputBytes": 0}, true, []string{"at most", "maxOutputBytes 0"}},
		{"reference", map[string]any{"timeoutMs": "soon", "color": "red"}, false, []string{"timeoutMs: a JSON string", `unknown key "color"`}},
		{"reference", map[string]any{"command": "/bin/true", "script": "nop"}, true, []string{"driverConfig command does not apply to driver reference", "driverConfig script does not apply"}},
		{"nop", map[string]any{"timeoutMs": 1.5}, false, []string{"timeoutMs: a JSON number 1.5"}},
		{"nop", map[string]any{"timeoutMs": -1}, true, []string{"timeoutMs -1 must be a positive"}},
		{"wrong", map[string]any{"strategy": "shuffle"}, true, []string{`strategy "shuffle"`}},
		{"exec", nil, true, []string{"command (an absolute path) is required"}},
		{"exec", map[string]any{"command": "codex"}, true, []string{`command "codex" must be an absolute path`}},
		{"exec", map[string]any{"command": "/bin/true", "args": "--x"}, false, []string{"args: a JSON string"}},
		{"exec", map[string]any{"command": "/bin/true", "args": []any{"{{runToken}}", 7}}, false, []string{"args: a JSON number"}},
		{"exec", map[string]any{"command": "/bin/true", "args": []any{"{{runToken}}", "{{unclosed"}, "env": map[string]any{"BAD-NAME": "x"}}, true,
			[]string{"args[0] uses {{runToken}}", "args[1]:", `env name "BAD-NAME"`}},
		{"exec", map[string]any{"command": "/bin/true", "env": map[string]any{"K": map[string]any{}}}, false, []string{"secret reference"}},
	}
	for _, tc := range tests {
		_, err := build(tc.driver, tc.config)
		var ce *agent.ConfigError
		if err == nil || errors.As(err, &ce) != tc.newErr {
			t.Errorf("build(%s, %v) error %v (%T); want a *ConfigError: %v", tc.driver, tc.config, err, err, tc.newErr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("build(%s, %v) error %q does not mention %q", tc.driver, tc.config, err, w)
			}
		}
	}
	for _, d := range []string{"fixture:pass", "fixture:fail", "fixture:hang", "fixture:noisy", "reference", "nop", "wrong", "leaky"} {
		got, err := build(d, nil)
		if err != nil || got.Name() != d {
			t.Errorf("New(%s) = %v, %v", d, got, err)
		}
	}
	if _, err := agent.New(driver.Name{}, api.DriverConfig{}); err == nil {
		t.Error("New accepted the zero driver")
	}
}

// TestDefaultCatalogProfilesHaveDrivers: every default-catalog profile's driver and
// driverConfig are accepted (an ACP profile by NewACP, which New refuses: an ACP driver
// is a session, not one process per run).
func TestDefaultCatalogProfilesHaveDrivers(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cat.Profiles {
		if p.Driver.Kind == driver.KindACP {
			if _, err := newACP(p.Driver.String(), p.DriverConfig); err != nil {
				t.Errorf("profile %s: %v", p.ID, err)
			}
			if _, err := build(p.Driver.String(), p.DriverConfig); err == nil || !strings.Contains(err.Error(), "NewACP") {
				t.Errorf("profile %s: New(%s) = %v, want the refusal naming NewACP", p.ID, p.Driver, err)
			}
			continue
		}
		if p.Driver.Kind == driver.KindRPC {
			if dc, err := api.DriverConfigOf(p.DriverConfig); err != nil {
				t.Errorf("profile %s: %v", p.ID, err)
			} else if _, err := agent.NewPi(dc); err != nil {
				t.Errorf("profile %s: %v", p.ID, err)
			}
			if _, err := build(p.Driver.String(), p.DriverConfig); err == nil || !strings.Contains(err.Error(), "NewPi") {
				t.Errorf("profile %s: New(%s) = %v, want the refusal naming NewPi", p.ID, p.Driver, err)
			}
			continue
		}
		if p.Driver.Kind == driver.KindApp {
			if dc, err := api.DriverConfigOf(p.DriverConfig); err != nil {
				t.Errorf("profile %s: %v", p.ID, err)
			} else if _, err := agent.NewSession(p.Driver, dc); err != nil {
				t.Errorf("profile %s: %v", p.ID, err)
			}
			if _, err := build(p.Driver.String(), p.DriverConfig); err == nil || !strings.Contains(err.Error(), "NewSession") {
				t.Errorf("profile %s: New(%s) = %v, want the refusal naming NewSession", p.ID, p.Driver, err)
			}
			continue
		}
		if _, err := build(p.Driver.String(), p.DriverConfig); err != nil {
			t.Errorf("profile %s: %v", p.ID, err)
		}
	}
}

// TestLaunchSpecs pins every driver's spec: absolute program, no shell, explicit
// environment (nothing inherited), the token and secrets only where they belong.
func TestLaunchSpecs(t *testing.T) {
	t.Parallel()
	env := runEnv(t)
	var compact bytes.Buffer
	if err := json.Compact(&compact, env.AdapterConfig); err != nil {
		t.Fatal(err)
	}
	apiEnv := func(extra ...string) []string {
		e := append([]string{"HOME=" + env.StateDir, "LANG=C", "PATH=/usr/bin:/bin", "TZ=UTC",
			"AGENTPROOF_API_URL=" + env.APIURL, "AGENTPROOF_RUN_TOKEN=" + env.RunToken, "AGENTPROOF_RUN_ID=run-1",
			"AGENTPROOF_WORKSPACE=" + env.Workspace, "AGENTPROOF_AGENT_STATE_DIR=" + env.StateDir, "OPENAI_API_KEY=" + secretValue}, extra...)
		slices.Sort(e)
		return e
	}
	tests := []struct {
		driver  string
		config  map[string]any
		args    []string
		env     []string
		timeout time.Duration
		output  int64
	}{
		{"fixture:hang", map[string]any{"timeoutMs": 2000, "maxOutputBytes": 65536}, []string{"agentproof", "fixture-child", "hang", "7000"}, worker.ChildEnvironment(), 2 * time.Second, 65536},
		{"fixture:pass", map[string]any{"timeoutMs": worker.MaxTimeoutMS}, []string{"agentproof", "fixture-child", "pass", strconv.Itoa(worker.MaxChildLifetimeMS)}, worker.ChildEnvironment(), time.Duration(worker.MaxTimeoutMS) * time.Millisecond, agent.DefaultMaxOutputBytes},
		{"nop", nil, []string{"agentproof", "agent", "nop"}, []string{"LANG=C", "PATH=/usr/bin:/bin", "TZ=UTC"}, agent.DefaultTimeout, agent.DefaultMaxOutputBytes},
		{"reference", map[string]any{"timeoutMs": 30000}, []string{"agentproof", "agent", "reference"}, apiEnv("AGENTPROOF_AGENT_CONFIG=" + compact.String()), 30 * time.Second, agent.DefaultMaxOutputBytes},
		{"wrong", map[string]any{"strategy": "wrong_nonce"}, []string{"agentproof", "agent", "wrong"}, apiEnv("AGENTPROOF_AGENT_CONFIG=" + compact.String()), agent.DefaultTimeout, agent.DefaultMaxOutputBytes},
		{"exec", map[string]any{"command": "/opt/agent/bin/run", "args": []any{"--cwd", "{{workspace}}", "--run={{runId}}"}, "env": map[string]any{"OPENAI_API_KEY": map[string]any{"type": "secret_ref", "secretId": "secret-1", "version": "latest"}}},
			[]string{"/opt/agent/bin/run", "--cwd", env.Workspace, "--run=run-1"}, apiEnv(), agent.DefaultTimeout, agent.DefaultMaxOutputBytes},
	}
	for _, tc := range tests {
		t.Run(tc.driver, func(t *testing.T) {
			t.Parallel()
			spec, err := mustNew(t, tc.driver, tc.config).Launch(runContext(), env)
			if err != nil {
				t.Fatal(err)
			}
			wantPath := env.Executable
			if tc.driver == "exec" {
				wantPath = "/opt/agent/bin/run"
			}
			if spec.Path != wantPath || spec.Dir != env.Workspace || spec.Timeout != tc.timeout || spec.MaxOutputBytes != tc.output {
				t.Errorf("spec path %s dir %s timeout %v output %d", spec.Path, spec.Dir, spec.Timeout, spec.MaxOutputBytes)
			}
			if !slices.Equal(spec.Args, tc.args) {
				t.Errorf("args %q, want %q", spec.Args, tc.args)
			}
			if !slices.Equal(spec.Env, tc.env) {
				t.Errorf("env\n%q\nwant\n%q", spec.Env, tc.env)
			}
			for _, a := range append([]string{spec.Path}, spec.Args...) {
				if strings.Contains(a, env.RunToken) || strings.Contains(a, secretValue) || strings.HasSuffix(a, "/sh") || strings.HasSuffix(a, "/bash") {
					t.Errorf("argv element %q holds a secret or a shell", a)
				}
			}
			for _, kv := range spec.Env {
				if strings.HasPrefix(kv, parentOnly+"=") {
					t.Errorf("the parent's environment leaked: %s", kv)
				}
			}
		})
	}
}

func TestLaunchErrors(t *testing.T) {
	t.Parallel()
	base := runEnv(t)
	tests := []struct {
		name   string
		driver string
		config map[string]any
		edit   func(e *agent.RunEnv)
		want   string
	}{
		{"relative workspace", "fixture:pass", nil, func(e *agent.RunEnv) { e.Workspace = "ws" }, "absolute"},
		{"relative executable", "nop", nil, func(e *agent.RunEnv) { e.Executable = "agentproof" }, "absolute"},
		{"no token", "reference", nil, func(e *agent.RunEnv) { e.RunToken = "" }, "run token"},
		{"no state dir", "reference", nil, func(e *agent.RunEnv) { e.StateDir = "" }, "state directory"},
		{"bad adapter config", "reference", nil, func(e *agent.RunEnv) { e.AdapterConfig = []byte(`{"schema":"x"}`) }, "configuration"},
		{"secret shadows a runner variable", "exec", map[string]any{"command": "/bin/true"}, func(e *agent.RunEnv) {
			e.Secrets = map[string]string{"AGENTPROOF_RUN_TOKEN": "x", "PATH": "/tmp", "BAD-NAME": "y"}
		}, `"AGENTPROOF_RUN_TOKEN" collides`},
		{"unresolved secret", "exec", map[string]any{"command": "/bin/true", "env": map[string]any{"ANTHROPIC_API_KEY": map[string]any{"type": "secret_ref", "secretId": "secret-2", "version": "latest"}}}, func(e *agent.RunEnv) {}, "ANTHROPIC_API_KEY are not resolved"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := base
			e.Secrets = map[string]string{"OPENAI_API_KEY": secretValue}
			tc.edit(&e)
			_, err := mustNew(t, tc.driver, tc.config).Launch(runContext(), e)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secretValue) || strings.Contains(err.Error(), base.RunToken) {
				t.Fatalf("error %q repeats a secret", err)
			}
		})
	}
}

// TestExecLaunchIsExplicit runs an exec agent for real: it sees exactly the templated
// argv (shell metacharacters stay literal), exactly the spec's environment (nothing of
// the parent's) and the workspace as its working directory.
func TestExecLaunchIsExplicit(t *testing.T) {
	t.Parallel()
	env := runEnv(t)
	d := mustNew(t, "exec", map[string]any{"command": self(t), "timeoutMs": 20000,
		"args": []any{"report", "{{workspace}}/x", "{{apiUrl}}", "{{ runId }}", "{{taskId}}", "{{stateDir}}", "$(touch pwned); echo `id` > out | cat"}})
	spec, err := d.Launch(runContext(), env)
	if err != nil {
		t.Fatal(err)
	}
	o, err := worker.Supervise(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if o.ExitCode == nil || *o.ExitCode != 0 {
		t.Fatalf("report program: %s; stderr %s", agent.Summarize(o), o.Output.Stderr())
	}
	var got childReport
	if err := json.Unmarshal(o.Output.Stdout(), &got); err != nil {
		t.Fatalf("%v: %s", err, o.Output.Stdout())
	}
	wantArgs := []string{self(t), "report", env.Workspace + "/x", env.APIURL, "run-1", "task-9", env.StateDir, "$(touch pwned); echo `id` > out | cat"}
	if !slices.Equal(got.Args, wantArgs) {
		t.Errorf("argv %q, want %q", got.Args, wantArgs)
	}
	slices.Sort(got.Env)
	if !slices.Equal(got.Env, spec.Env) {
		t.Errorf("child environment\n%q\nwant exactly\n%q", got.Env, spec.Env)
	}
	if got.Cwd != env.Workspace {
		t.Errorf("cwd %s, want %s", got.Cwd, env.Workspace)
	}
	if _, err := os.Stat(filepath.Join(env.Workspace, "pwned")); err == nil {
		t.Error("an argument was interpreted by a shell")
	}
	rep := d.Report(o)
	if rep.RunStatus != "failed" || !strings.Contains(rep.Summary, "exited with code 0") || len(rep.Transcript) != 2 || !bytes.Equal(rep.Transcript[0].Body, o.Output.Stdout()) {
		t.Errorf("report %+v", rep)
	}
	// exit 0 with the run left open: the runner must say so and what to call
	if rep.LeftOpen != agent.ExecLeftOpen || !strings.Contains(rep.LeftOpen, "POST $AGENTPROOF_API_URL/complete") {
		t.Errorf("LeftOpen %q, want agent.ExecLeftOpen", rep.LeftOpen)
	}
}

// TestExecReportLeftOpen: only an exec agent that exited 0 gets the left-open detail;
// a non-zero exit, a kill or a failed start already says what went wrong.
func TestExecReportLeftOpen(t *testing.T) {
	t.Parallel()
	d := mustNew(t, "exec", map[string]any{"command": "/bin/true"})
	zero, three := 0, 3
	for _, c := range []struct {
		o    worker.Outcome
		want string
	}{
		{worker.Outcome{Started: true, Exited: true, ExitCode: &zero}, agent.ExecLeftOpen},
		{worker.Outcome{Started: true, Exited: true, ExitCode: &three}, ""},
		{worker.Outcome{Started: true, Exited: true, Signal: "SIGKILL", TimedOut: true}, ""},
		{worker.Outcome{}, ""},
	} {
		if got := d.Report(c.o).LeftOpen; got != c.want {
			t.Errorf("%s: LeftOpen %q, want %q", agent.Summarize(c.o), got, c.want)
		}
	}
}

// TestHostileExecAgentIsGone: an exec agent that ignores SIGTERM and forks a grandchild
// that keeps writing is stopped at its timeout, and afterwards no process of its group
// remains and the file stops growing.
func TestHostileExecAgentIsGone(t *testing.T) {
	t.Parallel()
	env := runEnv(t)
	d := mustNew(t, "exec", map[string]any{"command": self(t), "timeoutMs": 3000, "args": []any{"hostile-leader", "{{workspace}}/tick.log"}})
	spec, err := d.Launch(runContext(), env)
	if err != nil {
		t.Fatal(err)
	}
	o, err := worker.Supervise(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !o.TimedOut || !slices.Equal(o.SignalsSent, []string{"SIGTERM", "SIGKILL"}) || o.Signal != "SIGKILL" {
		t.Fatalf("outcome: timedOut %v signals %v signal %q (%s)", o.TimedOut, o.SignalsSent, o.Signal, agent.Summarize(o))
	}
	gc := grandchildPID(t, o.Output.Stdout())
	if live := liveGroupMembers(t, o.PID); len(live) > 0 {
		t.Errorf("processes of group %d remain: %v", o.PID, live)
	}
	if alive(gc) && isGrandchild(gc) {
		t.Errorf("grandchild %d is still alive", gc)
	}
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(env.Workspace, "tick.log"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	if before == 0 {
		t.Fatal("the grandchild never wrote: the test proves nothing")
	}
	time.Sleep(200 * time.Millisecond)
	if after := size(); after != before {
		t.Errorf("tick.log grew from %d to %d bytes after the run", before, after)
	}
	rep := d.Report(o)
	if rep.RunStatus != "failed" || !strings.Contains(rep.Summary, "timed out") || !strings.Contains(rep.Summary, "SIGKILL") {
		t.Errorf("report %+v", rep)
	}
}

func grandchildPID(t *testing.T, stdout []byte) int {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "grandchild pid="); ok {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("no grandchild pid in %q", stdout)
	return 0
}

// procStat returns the state letter and process group of pid from /proc.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	pg, _ := strconv.Atoi(f[2])
	return f[0][0], pg, true
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	st, _, ok := procStat(pid)
	return ok && st != 'Z' && st != 'X'
}

// isGrandchild reports whether pid runs this test binary's hostile grandchild: after
// the grandchild's death its pid may already be another process's (a busy machine
// wraps around pid_max in seconds).
func isGrandchild(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(b, []byte("\x00hostile-grandchild\x00"))
}

// liveGroupMembers lists the non-zombie processes whose process group is pgid.
func liveGroupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, pg, ok := procStat(pid); ok && pg == pgid && st != 'Z' && st != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// TestFixtureDrivers runs the real fixture programs through their driver.
func TestFixtureDrivers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		driver   string
		config   map[string]any
		status   controlplane.RunStatus
		timedOut bool
	}{
		{"fixture:pass", map[string]any{"timeoutMs": 20000}, "succeeded", false},
		{"fixture:fail", map[string]any{"timeoutMs": 20000}, "failed", false},
		{"fixture:hang", map[string]any{"timeoutMs": 300}, "failed", true},
	}
	for _, tc := range tests {
		t.Run(tc.driver, func(t *testing.T) {
			t.Parallel()
			d := mustNew(t, tc.driver, tc.config)
			spec, err := d.Launch(runContext(), runEnv(t))
			if err != nil {
				t.Fatal(err)
			}
			o, err := worker.Supervise(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			rep := d.Report(o)
			if rep.RunStatus != tc.status || o.TimedOut != tc.timedOut {
				t.Fatalf("status %s timedOut %v (%s); stdout %s stderr %s", rep.RunStatus, o.TimedOut, rep.Summary, o.Output.Stdout(), o.Output.Stderr())
			}
			if strings.Contains(string(o.Output.Stdout()), "AGENTPROOF_") {
				t.Errorf("a fixture program saw runner variables: %s", o.Output.Stdout())
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	zero, one := 0, 1
	tests := []struct {
		o    worker.Outcome
		want string
	}{
		{worker.Outcome{}, "not started"},
		{worker.Outcome{SpawnError: errors.New("no such file")}, "not started: no such file"},
		{worker.Outcome{Aborted: true}, "not started: aborted before the spawn"},
		{worker.Outcome{Started: true, Exited: true, ExitCode: &zero, Duration: 1500 * time.Millisecond}, "exited with code 0 after 1.5s"},
		{worker.Outcome{Started: true, Exited: true, ExitCode: &one, Duration: time.Second}, "exited with code 1 after 1s"},
		{worker.Outcome{Started: true, Exited: true, TimedOut: true, SignalsSent: []string{"SIGTERM", "SIGKILL"}, Signal: "SIGKILL", Duration: 2 * time.Second},
			"timed out after 2s; sent SIGTERM, SIGKILL; killed by SIGKILL"},
		{worker.Outcome{Started: true, OutputExceeded: true, OutputBytes: 70000, SignalsSent: []string{"SIGTERM"}, CollectorError: "output exceeded"},
			"output exceeded its budget (70000 bytes received); sent SIGTERM; exit not confirmed; collector: output exceeded"},
		{worker.Outcome{Started: true, Aborted: true, Exited: true, Signal: "SIGTERM"}, "stopped by the runner; killed by SIGTERM"},
	}
	for _, tc := range tests {
		if got := agent.Summarize(tc.o); got != tc.want {
			t.Errorf("Summarize = %q, want %q", got, tc.want)
		}
	}
}

// TestExecLoginHome: an exec launch with RunEnv.Home (a login file's HOME) gets it as
// HOME instead of the state directory, which stays AGENTPROOF_AGENT_STATE_DIR; a relative
// HOME is refused.
func TestExecLoginHome(t *testing.T) {
	t.Parallel()
	env := runEnv(t)
	d := mustNew(t, "exec", map[string]any{"command": self(t)})
	spec, err := d.Launch(runContext(), env)
	if err != nil || !slices.Contains(spec.Env, "HOME="+env.StateDir) {
		t.Fatalf("without a login HOME: env %q, %v; want HOME=%s", spec.Env, err, env.StateDir)
	}
	env.Home = filepath.Join(t.TempDir(), "login-homes", "company-1")
	spec, err = d.Launch(runContext(), env)
	if err != nil || !slices.Contains(spec.Env, "HOME="+env.Home) || slices.Contains(spec.Env, "HOME="+env.StateDir) ||
		!slices.Contains(spec.Env, agent.EnvStateDir+"="+env.StateDir) {
		t.Fatalf("with a login HOME: env %q, %v; want HOME=%s", spec.Env, err, env.Home)
	}
	env.Home = "relative/home"
	if _, err := d.Launch(runContext(), env); err == nil || !strings.Contains(err.Error(), `HOME "relative/home" must be an absolute path`) {
		t.Errorf("a relative HOME: %v, want the refusal", err)
	}
}

package cli

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// attemptResult is the part of an attempt's result.json these tests read.
type attemptResult struct {
	Verdict      verdict.Verdict      `json:"verdict"`
	FailureClass verdict.FailureClass `json:"failureClass"`
	Reason       string               `json:"error"`
	Matchers     []struct {
		Kind   string `json:"kind"`
		Passed bool   `json:"passed"`
	} `json:"matcherResults"`
}

func readResult(t *testing.T, path string) attemptResult {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r attemptResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// matcherPassed reports whether the result's matcher of kind passed (false when absent).
func (r attemptResult) matcherPassed(kind string) bool {
	for _, m := range r.Matchers {
		if m.Kind == kind {
			return m.Passed
		}
	}
	return false
}

// hardenExec is a catalog of exec agents that attack the attempt's verdict: a daemon
// that escapes its process group, encoded copies of a credential written under HOME
// and beside the workspace, a hex copy posted as the run's message, and an agent that
// needs its driverConfig env secret reference resolved to the credential to pass.
const hardenExec = `credentials:
  - {id: APF_HARDEN_CRED, scope: profile, description: A test credential.}
profiles:
  - id: daemonizer
    label: The example exec agent, leaving a setsid daemon behind
    generation: native
    driver: exec
    driverConfig: {command: /bin/sh, args: [-c, "setsid /bin/sh -c 'echo $$ > @PIDFILE@; exec sleep 3000' >/dev/null 2>&1 </dev/null & sleep 0.3; exec @EXAMPLES@/exec-agent.py"], timeoutMs: 60000}
    provider: agentproof
    model: agentproof/daemonizer
    modelQualification: {source: builtin, qualificationId: "builtin:daemonizer"}
    supportedEnvironments: [local]
  - id: base64-writer
    label: An exec agent that writes base64 copies of its credential under HOME and beside its workspace
    generation: native
    driver: exec
    credential: APF_HARDEN_CRED
    driverConfig: {command: /bin/sh, args: [-c, "printf %s \"$APF_HARDEN_CRED\" | base64 > \"$HOME/notes.txt\"; printf %s \"$APF_HARDEN_CRED\" | base64 > ../stray.b64; exit 0"], timeoutMs: 60000}
    provider: agentproof
    model: agentproof/base64
    modelQualification: {source: builtin, qualificationId: "builtin:base64"}
    supportedEnvironments: [local]
  - id: hex-poster
    label: An exec agent that posts a hex copy of its credential as its message
    generation: native
    driver: exec
    credential: APF_HARDEN_CRED
    driverConfig: {command: "@HEXPOST@", timeoutMs: 60000}
    provider: agentproof
    model: agentproof/hex
    modelQualification: {source: builtin, qualificationId: "builtin:hex"}
    supportedEnvironments: [local]
  - id: env-ref
    label: The example exec agent, run only when its env secret reference holds the credential
    generation: native
    driver: exec
    driverConfig:
      command: /bin/sh
      args: [-c, "[ \"$(printf %s \"$MY_TOKEN\" | sha256sum | cut -d' ' -f1)\" = @CREDHASH@ ] || { echo 'MY_TOKEN is not the credential' >&2; exit 3; }; exec @EXAMPLES@/exec-agent.py"]
      env: {MY_TOKEN: {type: secret_ref, secretId: APF_HARDEN_CRED, version: latest}}
      timeoutMs: 60000
    provider: agentproof
    model: agentproof/env-ref
    modelQualification: {source: builtin, qualificationId: "builtin:env-ref"}
    supportedEnvironments: [local]
suites:
  - id: harden
    label: Hardening
    description: Agents that attack the verdict.
    profiles: [daemonizer, base64-writer, hex-poster, env-ref]
    environments: [local]
    cases: [message-marker]
    expectedMatrixSize: 4
    manualOnly: true
`

// hexPost posts the hex copy of APF_HARDEN_CRED as the run's final message
// (finish_task) and exits without completing the run.
const hexPost = `#!/usr/bin/python3
import json, os, urllib.request
api, run = os.environ["AGENTPROOF_API_URL"].rstrip("/"), os.environ["AGENTPROOF_RUN_ID"]
body = {"runId": run, "idempotencyKey": "finish-1",
        "command": {"kind": "finish_task", "summary": os.environ["APF_HARDEN_CRED"].encode().hex()}}
req = urllib.request.Request(api + "/commands", data=json.dumps(body).encode(), method="POST")
req.add_header("Authorization", "Bearer " + os.environ["AGENTPROOF_RUN_TOKEN"])
req.add_header("Content-Type", "application/json")
urllib.request.urlopen(req, timeout=30).read()
print("posted")
`

// TestRunHardenedVerdicts runs the hardenExec agents in one real campaign (a child
// `agentproof run` with the credential in its environment):
//   - the daemonizer (the example agent, which completes its run and passes every
//     matcher, after starting a setsid daemon) ends cleanup_failure, and its daemon is
//     gone;
//   - base64 copies under the agent's HOME and in the attempt's temp root beside the
//     workspace are secret leaks (the root outside home and workspace was not scanned);
//   - a hex copy posted as the message is a secret leak;
//   - no encoded copy of the credential reaches any file under the results;
//   - the env-ref agent, whose driverConfig env refers to the credential by name,
//     gets the credential resolved and passes (it was secret_ref_required).
func TestRunHardenedVerdicts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cat := catalogWithExtras(t)
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 18)
	_, _ = rand.Read(raw)
	cred := "apf-harden-" + hex.EncodeToString(raw)
	sum := sha256.Sum256([]byte(cred))
	pidFile, hexScript := filepath.Join(dir, "daemon.pid"), filepath.Join(dir, "hexpost.py")
	if err := os.WriteFile(hexScript, []byte(hexPost), 0o755); err != nil {
		t.Fatal(err)
	}
	extra := strings.NewReplacer("@PIDFILE@", pidFile, "@HEXPOST@", hexScript, "@CREDHASH@", hex.EncodeToString(sum[:]), "@EXAMPLES@", examples).Replace(hardenExec)
	if err := os.WriteFile(filepath.Join(cat, "zz-harden.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp, res := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := &exec.Cmd{Path: self, Args: []string{"agentproof", "run", "--catalog", cat, "--suite", "harden", "--results", res, "--campaign", "h",
		"--max-parallel", "2", "--max-automatic-retries", "0", "--progress", "none"},
		Env: []string{"HOME=" + tmp, "TMPDIR=" + tmp, "PATH=/usr/bin:/bin", "APF_HARDEN_CRED=" + cred}, Stdout: &stdout, Stderr: &stderr}
	if err := cmd.Run(); err == nil {
		t.Fatalf("the campaign passed; stdout %s; stderr %s", &stdout, &stderr)
	}
	if !strings.Contains(stdout.String(), "Campaign h: 1/4 passed, 3 failed, 0 inconclusive") {
		t.Errorf("campaign line: stdout %s; stderr %s", &stdout, &stderr)
	}
	cell := func(profile string) attemptResult {
		return readResult(t, filepath.Join(res, "h", "harden", profile, "local", "message-marker", "attempt-1", "result.json"))
	}
	for _, tt := range []struct {
		profile string
		verdict verdict.Verdict
		class   verdict.FailureClass
		parts   []string
	}{
		{"daemonizer", verdict.Failed, verdict.CleanupFailure, []string{"outside its process group: sleep (pid "}},
		{"base64-writer", verdict.Failed, verdict.SecretLeak, []string{"persisted instance home state at agents/", "notes.txt", "persisted attempt temp root state at stray.b64"}},
		{"hex-poster", verdict.Failed, verdict.SecretLeak, []string{"secret leak"}},
		{"env-ref", verdict.Passed, "", nil},
	} {
		r := cell(tt.profile)
		if r.Verdict != tt.verdict || r.FailureClass != tt.class {
			t.Errorf("%s: %s/%s (%s), want %s/%s", tt.profile, r.Verdict, r.FailureClass, r.Reason, tt.verdict, tt.class)
		}
		for _, p := range tt.parts {
			if !strings.Contains(r.Reason, p) {
				t.Errorf("%s: reason %q does not say %q", tt.profile, r.Reason, p)
			}
		}
	}
	// The daemon is gone.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the daemonizer's daemon did not start: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !bytes.Contains(st, []byte(") Z ")) {
		t.Errorf("the daemon %d lives on: %s", pid, st)
	}
	// No copy of the credential, raw or encoded, reaches the results.
	forms := []string{cred, hex.EncodeToString([]byte(cred)), strings.ToUpper(hex.EncodeToString([]byte(cred))),
		base64.StdEncoding.EncodeToString([]byte(cred)), base64.RawStdEncoding.EncodeToString([]byte(cred))}
	_ = filepath.WalkDir(res, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, f := range forms {
			if bytes.Contains(b, []byte(f)) {
				t.Errorf("form %d of the credential reached %s", i, p)
			}
		}
		return nil
	})
}

// fakeCodexInstall writes an agents directory with a "codex" install whose native
// binary is script, pinned with script's own digest (so the profile's runtime
// metadata check passes: the binary is the pinned one).
func fakeCodexInstall(t *testing.T, script string) string {
	t.Helper()
	agents := t.TempDir()
	base := filepath.Join(agents, "codex-0.171.0")
	bin := filepath.Join(base, "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(script))
	files := map[string]string{
		filepath.Join(base, "agentproof-install.json"):                                    fmt.Sprintf(`{"name": "codex", "package": "@openai/codex", "version": "0.171.0", "binarySha256": "%x"}`, sum),
		filepath.Join(base, "node_modules", "@openai", "codex-linux-x64", "package.json"): `{"name": "@openai/codex", "version": "0.171.0-linux-x64"}`,
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return agents
}

// fakeCodexCatalog is a suite of one exec:codex profile on message-marker.
const fakeCodexCatalog = `profiles:
  - id: codex-fake
    label: A fake Codex CLI
    generation: native
    groups: [cli]
    driver: exec:codex
    driverConfig: {timeoutMs: 120000, resultGraceMs: 1000}
    provider: scripted
    model: scripted-model
    modelQualification: {source: builtin, qualificationId: "scripted:qualified-model"}
    supportedEnvironments: [local]
    expectedRuntimeMetadata: {adapterType: codex_local, provider: scripted}
suites:
  - id: fake
    label: A fake CLI
    description: A fake Codex CLI.
    profiles: [codex-fake]
    environments: [local]
    cases: [message-marker]
    expectedMatrixSize: 1
    manualOnly: true
`

// The fake Codex streams: one that stops before turn.completed and exits 0, one that
// prints a whole stream and then hangs, ignoring SIGTERM.
const (
	codexHead = `{"type":"thread.started","thread_id":"fake"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"fake final answer"}}
`
	codexIncomplete = "#!/bin/sh\ncat <<'EOF'\n" + codexHead + "EOF\nexit 0\n"
	codexLingering  = "#!/bin/sh\ntrap '' TERM\ncat <<'EOF'\n" + codexHead +
		`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}` + "\nEOF\nwhile :; do sleep 1; done\n"
)

// TestRunFakeCLIEventStream: a pinned CLI (the binary is the pinned one) that exits 0
// without its terminal event ends inconclusive with reason event_stream_incomplete —
// not failed on the run_status matcher its incomplete run fails —; one that printed
// its result and hangs is stopped after its result grace (1 s here, not its 120 s
// timeout) and graded on that result: its run succeeded (run_status passes) and the
// cell fails only on what the fake did not do, with no deadline named.
func TestRunFakeCLIEventStream(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, script string
		code         verdict.ExitCode
		verdict      verdict.Verdict
		class        verdict.FailureClass
		reason       string
		runStatus    bool
	}{
		{"incomplete", codexIncomplete, ExitInconclusive, verdict.Inconclusive, verdict.PermanentInfrastructure, "event_stream_incomplete: the event stream of run ", false},
		{"lingering", codexLingering, ExitFailed, verdict.Failed, verdict.CandidateFailure, "matchers failed: #1 message_exact", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cat := t.TempDir()
			if err := os.WriteFile(filepath.Join(cat, "fake.yaml"), []byte(fakeCodexCatalog), 0o644); err != nil {
				t.Fatal(err)
			}
			res := t.TempDir()
			args := []string{"run", "--catalog", cat, "--with-default", "--suite", "fake", "--agents-dir", fakeCodexInstall(t, tt.script),
				"--results", res, "--campaign", "f", "--max-automatic-retries", "0", "--progress", "none"}
			var stdout, stderr bytes.Buffer
			if code := verdict.ExitCode(Main(args, nil, &stdout, &stderr)); code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %s; stderr %s", code, tt.code, &stdout, &stderr)
			}
			dir := filepath.Join(res, "f", "fake", "codex-fake", "local", "message-marker", "attempt-1")
			r := readResult(t, filepath.Join(dir, "result.json"))
			if r.Verdict != tt.verdict || r.FailureClass != tt.class || !strings.Contains(r.Reason, tt.reason) || strings.Contains(r.Reason, "deadline") {
				t.Errorf("%s/%s (%s); want %s/%s, reason with %q and no deadline", r.Verdict, r.FailureClass, r.Reason, tt.verdict, tt.class, tt.reason)
			}
			if !r.matcherPassed("runtime_metadata") || r.matcherPassed("run_status") != tt.runStatus {
				t.Errorf("matchers %+v: want runtime_metadata passed, run_status passed %v", r.Matchers, tt.runStatus)
			}
			runs, err := os.ReadFile(filepath.Join(dir, "snapshots", "heartbeat-runs.json"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.runStatus && (!bytes.Contains(runs, []byte(`"stoppedAfterResult": true`)) || !bytes.Contains(runs, []byte(`"timedOut": false`))) {
				t.Errorf("the lingering CLI's record does not say stoppedAfterResult (and not timed out): %s", runs)
			}
		})
	}
}

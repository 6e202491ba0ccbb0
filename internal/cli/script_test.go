package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment/container"
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/internal/raceexit"
	"github.com/agentproof/agentproof/loginfile"
	"github.com/agentproof/agentproof/redact"
)

// TestMain lets testscript run this test binary as the `agentproof` command inside
// scripts, so whole-CLI scenarios exercise the real Main with real child processes.
func TestMain(m *testing.M) {
	// As a child process, this binary exits without the race detector's sleep.
	raceexit.Main()
	// As a sandbox's or container's init this binary is started by its own path (an
	// engine sets argv[0] to the entrypoint), not as `agentproof`: it dispatches on the
	// first argument as the agentproof binary does, so a provider whose executable is
	// this binary (os.Executable() of a test calling Main) runs the real init.
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitCommand {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	agent.RegisterDrivers() // what Main does, for the tests that call commands directly
	testscript.Main(m, map[string]func(){
		"agentproof": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// scriptCmds are the commands the scripts of testdata/script and testdata/campaign use
// besides testscript's own.
var scriptCmds = map[string]func(*testscript.TestScript, bool, []string){"holdfence": holdFence, "defaultcatalog": defaultCatalog,
	"modelseen": modelSeen, "canaryscan": canaryScan, "expandenv": expandEnv,
	"loginfilecheck": loginFileCheck, "replace": replaceText, "secretscan": secretScan,
	"k8sjob": k8sJobCmd, "sameverdicts": sameVerdicts, "busyboxbase": busyboxBase, "staticbuild": staticBuild}

// TestScripts runs every testdata/script/*.txtar scenario.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds:                scriptCmds,
		Setup: func(env *testscript.Env) error {
			// A short temporary directory: a sandbox lease's bridge sockets live under the
			// attempt root, and a socket path holds at most 107 bytes ($WORK is deep).
			tmp, err := os.MkdirTemp("", "apts-")
			if err != nil {
				return err
			}
			env.Defer(func() { _ = os.RemoveAll(tmp) })
			env.Setenv("TMPDIR", tmp)
			if dir := scriptAgentsDir(); dir != "" {
				env.Setenv(EnvAgentsDir, dir)
			}
			examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
			if err != nil {
				return err
			}
			env.Setenv("EXAMPLES", examples) // the repository's examples/ directory
			tasks, err := filepath.Abs(filepath.Join("..", "..", "harbor", "testdata", "tasks"))
			if err != nil {
				return err
			}
			env.Setenv("HARBOR_TASKS", tasks)                                         // the Harbor-format tasks written for the tests
			env.Setenv("HARBOR_PUBLIC", filepath.Join(filepath.Dir(tasks), "public")) // a public Harbor task, as published
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "clis":
				return scriptAgentsDir() != "", nil
			case "claude":
				// Claude Code is optional (installed by name); CI installs it
				// (.ci/agents.sh): there a missing one fails.
				ok := claudeInstalled()
				if !ok && os.Getenv("CI") == "true" {
					return false, fmt.Errorf("Claude Code is not installed in CI (.ci/agents.sh installs it)")
				}
				return ok, nil
			case "container":
				// The container provider runs here: podman, as root (its lease disk is a
				// host tmpfs). CI runs as root with podman installed: there a missing
				// engine fails.
				_, ok := container.FindEngine()
				ok = ok && os.Geteuid() == 0
				if !ok && os.Getenv("CI") == "true" {
					return false, fmt.Errorf("the container provider cannot run in CI: podman missing or not root")
				}
				return ok, nil
			case "sandbox":
				// The sandbox provider's own probe (a trial sandbox, cgroups, tmpfs). CI
				// installs bubblewrap and runs as root: there a missing sandbox fails.
				r := sandbox.New(sandbox.Options{}).Probe(context.Background())
				if !r.Available && os.Getenv("CI") == "true" {
					return false, fmt.Errorf("the sandbox provider is unavailable in CI: %s", strings.Join(r.Missing(), "; "))
				}
				return r.Available, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// scriptAgentsDir is the agent CLI cache the scripts use: $AGENTPROOF_AGENTS_DIR, else
// the default cache when the pinned CLIs are installed there; "" when they are not (a
// script guarded by [clis] then skips, except in CI: see TestScriptsCLIsInCI).
func scriptAgentsDir() string {
	for _, dir := range []string{os.Getenv(EnvAgentsDir), defaultAgentsDir()} {
		if dir == "" {
			continue
		}
		ok := true
		for _, c := range clis.Pinned {
			if c.Optional {
				continue
			}
			if _, err := clis.Locate(dir, c, clis.HostPlatform()); err != nil {
				ok = false
			}
		}
		if ok {
			return dir
		}
	}
	return ""
}

// claudeInstalled reports whether the optional Claude Code is installed in the agent
// CLI cache the scripts use.
func claudeInstalled() bool {
	dir := scriptAgentsDir()
	c, ok := clis.Lookup("claude")
	if dir == "" || !ok {
		return false
	}
	_, err := clis.Locate(dir, c, clis.HostPlatform())
	return err == nil
}

func defaultAgentsDir() string {
	d, _ := clis.DefaultDir()
	return d
}

// TestScriptsCLIsInCI: in CI the real agent CLIs must be installed (.ci/agents.sh), so
// the scripts that run them never skip there.
func TestScriptsCLIsInCI(t *testing.T) {
	t.Parallel()
	if os.Getenv("CI") != "" && scriptAgentsDir() == "" {
		t.Fatalf("CI is set but the pinned agent CLIs are not installed in $%s (run .ci/agents.sh)", EnvAgentsDir)
	}
}

// holdFence is the script command `holdfence <file>`: the test process (not the
// agentproof child it runs) takes an exclusive flock on file and keeps it until the
// script ends, like another process holding a guarded run's fence.
func holdFence(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdfence <file>")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	ts.Defer(func() { _ = f.Close() })
}

// canaryScan is the script command `canaryscan <results> <campaign>`: it reads every
// file under results and fails naming each file (never the value) that holds a canary
// value of campaign (campaign.CanaryValues, in every form a secret set detects: raw,
// JSON-escaped, hex, percent-encoded, base64 at each offset) or an attempt canary
// ("apcanary-" and 48 hex digits, raw, hex or base64). With `!` it expects at least one
// finding.
func canaryScan(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: canaryscan <results> <campaign>")
	}
	found := findCanaries(ts.MkAbs(args[0]), args[1])
	switch {
	case neg && len(found) == 0:
		ts.Fatalf("no canary found under %s", args[0])
	case !neg && len(found) > 0:
		ts.Fatalf("canary values found in: %v", found)
	}
	ts.Logf("scanned %s for %d canary forms", args[0], len(canaryForms(args[1])))
}

// attemptCanary matches an attempt canary ("apcanary-" and 48 hex digits) raw, in hex
// (either case) and in base64 (either alphabet; "apcanary-" starting at each of the
// three byte offsets of a group, followed by the base64 of 45 more bytes: a campaign
// canary, whose "apcanary" is followed by fewer hex digits, does not match).
var attemptCanary = regexp.MustCompile(`apcanary-[0-9a-f]{48}|(?i:617063616e6172792d(?:3[0-9]|6[1-6]){48})|(?:YXBjYW5hcnkt|cGNhbmFyeS[01]|Y2FuYXJ5L[TW])[0-9A-Za-z+/_-]{60}`)

// canaryForms returns every form of every canary value of campaignID.
func canaryForms(campaignID string) []string {
	var out []string
	for _, f := range redact.NewSet(campaign.CanaryValues(campaignID)...).Forms() {
		out = append(out, f.Text)
	}
	return out
}

// findCanaries returns the files under root (relative) holding a canary of campaignID
// or an attempt canary; a file that cannot be read counts as a finding.
func findCanaries(root, campaignID string) []string {
	values := canaryForms(campaignID)
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			found = append(found, rel+" (unreadable)")
			return nil
		}
		hit := attemptCanary.Match(b)
		for _, v := range values {
			hit = hit || bytes.Contains(b, []byte(v))
		}
		if hit {
			found = append(found, rel)
		}
		return nil
	})
	if err != nil {
		found = append(found, "walk: "+err.Error())
	}
	return found
}

// TestFindCanaries: the results-tree scan of the canary script finds a planted canary
// (every form) and an attempt canary, and nothing in a clean tree.
func TestFindCanaries(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if got := findCanaries(root, "c1"); len(got) != 0 {
		t.Fatalf("clean tree: %v", got)
	}
	attempt := "apcanary-" + string(bytes.Repeat([]byte("ab"), 24))
	encodedAttempt := []string{hex.EncodeToString([]byte(attempt)), base64.StdEncoding.EncodeToString([]byte("x" + attempt)), base64.RawURLEncoding.EncodeToString([]byte("xy" + attempt))}
	for i, v := range slices.Concat(canaryForms("c1"), []string{attempt}, encodedAttempt) {
		dir := filepath.Join(root, "d", fmt.Sprintf("%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f.json"), []byte(`{"x":"`+v+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := findCanaries(root, "c1"); len(got) != i+1 {
			t.Fatalf("after planting form %d: found %v", i, got)
		}
	}
	if got := findCanaries(root, "other"); len(got) != 1+len(encodedAttempt) {
		t.Errorf("another campaign's canaries must not match (only the attempt canary): %v", got)
	}
}

// defaultCatalog is the script command `defaultcatalog <dir>`: it writes the embedded
// default catalog into dir (its YAML files and its files/ tree, see
// copyDefaultCatalog), so a script can extend it with files of its own.
func defaultCatalog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: defaultcatalog <dir>")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	ts.Check(copyDefaultCatalog(dir))
}

// modelSeen is the script command `modelseen <cli> <attempt-dir>`: every model response
// the CLI's event streams report (agent.ParseEvents ModelTurns, run by run) is a request
// the attempt's scripted model answered with a script step for that run — so no model
// request of the CLI went anywhere but the scripted model on 127.0.0.1 — and the
// scripted model answered no step the CLI did not report.
func modelSeen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: modelseen <cli> <attempt-dir>")
	}
	dir := ts.MkAbs(args[1])
	streams, err := filepath.Glob(filepath.Join(dir, "logs", "agent", "runs", "*", "events.jsonl"))
	ts.Check(err)
	slices.Sort(streams)
	if len(streams) == 0 {
		ts.Fatalf("no event stream under %s", dir)
	}
	answered := map[int]int{}
	raw, err := os.ReadFile(filepath.Join(dir, "logs", "model-requests.jsonl"))
	ts.Check(err)
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e scriptedmodel.LogEntry
		ts.Check(json.Unmarshal([]byte(line), &e))
		if e.Status == 200 && e.Step > 0 {
			answered[e.Run]++
		}
	}
	for i, p := range streams {
		b, err := os.ReadFile(p)
		ts.Check(err)
		ev := agent.ParseEvents(args[0], b)
		if ev.ModelTurns == 0 || ev.ModelTurns != answered[i+1] {
			ts.Fatalf("run %d: the %s event stream reports %d model responses, the scripted model answered %d steps", i+1, args[0], ev.ModelTurns, answered[i+1])
		}
		ts.Logf("run %d: %d model responses, all answered by the scripted model", i+1, ev.ModelTurns)
	}
}

// TestSchemaCommand: `agentproof schema` prints the catalog JSON Schema with the flow
// registry's flows, byte for byte the repository's file (catalog.SchemaJSON, which
// campaign/flows' TestSchemaListsTheFlows keeps listing the same flows).
func TestSchemaCommand(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Main([]string{"schema"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !bytes.Equal(out.Bytes(), catalog.SchemaJSON) {
		t.Fatal("agentproof schema does not print catalog.SchemaJSON")
	}
}

// expandEnv is the script command `expandenv <file>...`: it replaces every ${NAME} in
// each file with the script's environment variable NAME (for example ${EXAMPLES}, the
// repository's examples/ directory, or ${WORK}), so a catalog file can name an absolute
// path; a bare $name (a YAML "$schema" comment) stays as it is. A name the script's
// environment lacks is an error.
func expandEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: expandenv <file>...")
	}
	for _, name := range args {
		p := ts.MkAbs(name)
		b, err := os.ReadFile(p)
		ts.Check(err)
		var missing []string
		out := bracedVar.ReplaceAllStringFunc(string(b), func(m string) string {
			k := m[2 : len(m)-1]
			v := ts.Getenv(k)
			if v == "" {
				missing = append(missing, k)
			}
			return v
		})
		if len(missing) > 0 {
			ts.Fatalf("expandenv %s: no variable %s in the script's environment", name, strings.Join(missing, ", "))
		}
		ts.Check(os.WriteFile(p, []byte(out), 0o644))
	}
}

// replaceText is the script command `replace <from> <to> <old> <new>`: it writes file
// from to file to with the first occurrence of old replaced by new (old must occur).
func replaceText(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: replace <from> <to> <old> <new>")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	if !strings.Contains(string(b), args[2]) {
		ts.Fatalf("replace: %s does not contain %q", args[0], args[2])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Replace(string(b), args[2], args[3], 1)), 0o644))
}

// sameVerdicts is the script command `sameverdicts <campaign.json> <campaign.json>`:
// both campaigns hold the same cells with the same verdict and expected verdict each.
func sameVerdicts(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sameverdicts <campaign.json> <campaign.json>")
	}
	verdicts := func(path string) map[string]string {
		var c struct {
			Results []struct {
				ExecutionID     string `json:"executionId"`
				Verdict         string `json:"verdict"`
				ExpectedVerdict string `json:"expectedVerdict"`
			} `json:"results"`
		}
		b, err := os.ReadFile(ts.MkAbs(path))
		ts.Check(err)
		ts.Check(json.Unmarshal(b, &c))
		m := map[string]string{}
		for _, r := range c.Results {
			m[r.ExecutionID] = r.Verdict + "/" + r.ExpectedVerdict
		}
		return m
	}
	a, b := verdicts(args[0]), verdicts(args[1])
	if len(a) == 0 || len(a) != len(b) {
		ts.Fatalf("%s has %d cells, %s %d", args[0], len(a), args[1], len(b))
	}
	for id, v := range a {
		if b[id] != v {
			ts.Fatalf("%s: %s in %s, %q in %s", id, v, args[0], b[id], args[1])
		}
	}
	ts.Logf("%d cells, the same verdict each", len(a))
}

var bracedVar = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// secretScan is the script command `secretscan <results> <ENV|@dir>...`: no file under
// results holds the value of any $ENV, or the contents of any file in dir, in any form
// a secret set detects (raw, JSON-escaped, hex, percent-encoded, base64 at each
// offset), gzip and zip members included. Failures name the file and the variable or
// secret file, never the value.
func secretScan(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: secretscan <results> <ENV>...")
	}
	var found []string
	for _, name := range args[1:] {
		for what, v := range scriptSecrets(ts, name) {
			leaks, err := redact.NewSet().WithCredentials(v).ScanTree(ts.MkAbs(args[0]), false)
			ts.Check(err)
			for _, l := range leaks {
				found = append(found, what+" in "+l.Path+": "+l.Leak.String())
			}
		}
	}
	if len(found) > 0 {
		ts.Fatalf("campaign secrets under %s: %s", args[0], strings.Join(found, "; "))
	}
	ts.Logf("scanned %s: no form of %s", args[0], strings.Join(args[1:], ", "))
}

// scriptSecrets are the secrets a secretscan argument names, by what names them: the
// value of the variable name, or with "@dir" the contents of every file in dir (at
// least one).
func scriptSecrets(ts *testscript.TestScript, name string) map[string]string {
	out := map[string]string{}
	if dir, ok := strings.CutPrefix(name, "@"); ok {
		entries, err := os.ReadDir(ts.MkAbs(dir))
		ts.Check(err)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(ts.MkAbs(dir), e.Name()))
			ts.Check(err)
			out[dir+"/"+e.Name()] = string(b)
		}
	} else {
		out[name] = ts.Getenv(name)
	}
	for what, v := range out {
		if strings.TrimSpace(v) == "" {
			ts.Fatalf("secretscan: %s is empty", what)
		}
	}
	if len(out) == 0 {
		ts.Fatalf("secretscan: no secret in %s", name)
	}
	return out
}

// loginFileCheck is the script command `loginfilecheck <results> <ENV>`: no file under
// results holds the login file value of $ENV or any text of it that must be secret
// (loginfile.SecretValues), in any form a secret set detects (raw, JSON-escaped, hex,
// percent-encoded, base64); every login-file.json under results records a confirmed
// destroy of a HOME that no longer exists. Failures name the file, never the value.
func loginFileCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: loginfilecheck <results> <ENV>")
	}
	value := ts.Getenv(args[1])
	if value == "" {
		ts.Fatalf("$%s is empty", args[1])
	}
	set := redact.NewSet().WithCredentials(loginfile.SecretValues([]byte(value))...)
	root := ts.MkAbs(args[0])
	var found []string
	seen := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if set.FindExact(b) >= 0 {
			found = append(found, rel)
		}
		if d.Name() == "login-file.json" {
			seen++
			var rec struct {
				Seeded   struct{ Home string }
				Teardown *struct{ Confirmed bool }
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				ts.Fatalf("%s: %v", rel, err)
			}
			if rec.Teardown == nil || !rec.Teardown.Confirmed {
				ts.Fatalf("%s: the destroy is not confirmed", rel)
			}
			if _, err := os.Lstat(rec.Seeded.Home); err == nil || !os.IsNotExist(err) {
				ts.Fatalf("%s: the HOME %s still exists (%v)", rel, rec.Seeded.Home, err)
			}
		}
		return nil
	})
	if err != nil {
		ts.Fatalf("scanning %s: %v", args[0], err)
	}
	if len(found) > 0 {
		ts.Fatalf("the login file's value (or a token of it) is in: %v", found)
	}
	if seen == 0 {
		ts.Fatalf("no login-file.json under %s", args[0])
	}
	ts.Logf("scanned %s: no form of the login file; %d seeded HOME(s) destroyed", args[0], seen)
}

// busyboxBase builds (or finds) the container provider's busybox image and tags it as
// the name given, the base image a test's Dockerfile names (nothing is pulled).
func busyboxBase(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: busyboxbase NAME")
	}
	eng, ok := container.FindEngine()
	if !ok {
		ts.Fatalf("no container engine")
	}
	img, err := eng.BusyboxImage(context.Background())
	ts.Check(err)
	out, err := exec.Command(eng.Path, "tag", img.ID, args[0]).CombinedOutput()
	if err != nil {
		ts.Fatalf("podman tag: %v: %s", err, out)
	}
}

// staticBuild builds agentproof as the README does (CGO_ENABLED=0: a static
// executable) into the path given: a container's init is the agentproof executable,
// and this test binary (race-enabled, cgo) is not static. The build cache is the test
// process's own.
func staticBuild(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: staticbuild DEST")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	ts.Check(err)
	cmd := exec.Command("go", "build", "-o", ts.MkAbs(args[0]), "./cmd/agentproof")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		ts.Fatalf("go build: %v: %s", err, out)
	}
}

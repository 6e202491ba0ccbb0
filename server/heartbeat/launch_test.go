package heartbeat

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
)

func TestArgvShape(t *testing.T) {
	t.Parallel()
	secrets := redact.NewSet("sk-proj-AAAABBBBCCCCDDDDEEEEFFFF")
	got := argvShape([]string{"/opt/bin/codex", "exec", "--json", "-c", `model_provider="x"`, "--api-key=sk-proj-AAAABBBBCCCCDDDDEEEEFFFF",
		"-sk-proj-AAAABBBBCCCCDDDDEEEEFFFF", "-", "--" + strings.Repeat("x", 200), "Post exactly PAPERCLIP_E2E_OK_1 --json"}, secrets)
	want := []string{"codex", "<value>", "--json", "-c", "<value>", "--api-key=<value>", "-[REDACTED]", "<value>", "<value>", "<value>"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("argvShape = %q, want %q", got, want)
	}
	if len(argvShape(nil, secrets)) != 0 {
		t.Error("an empty argv has an empty shape")
	}
}

func TestProcStartTicks(t *testing.T) {
	t.Parallel()
	ticks, err := procStartTicks(os.Getpid())
	if err != nil || ticks == 0 {
		t.Fatalf("procStartTicks(self) = %d, %v", ticks, err)
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if fields[19] != strconv.FormatUint(ticks, 10) {
		t.Errorf("field 22 is %s, procStartTicks read %d", fields[19], ticks)
	}
	if _, err := procStartTicks(1 << 30); err == nil {
		t.Error("a pid that does not exist: want an error")
	}
}

func TestAdapterAndProvider(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		driver           string
		dc               *api.DriverConfig
		adapter, provide string
	}{
		{"fixture:hang", nil, "fixture", "agentproof"},
		{"reference", nil, "agentproof_builtin", "agentproof"},
		{"exec", nil, "exec", ""},
		{"exec:codex", &api.DriverConfig{ModelBaseURL: "http://127.0.0.1:4000/v1"}, "codex_local", "scripted"},
		{"exec:opencode", &api.DriverConfig{Live: &api.LiveProvider{BaseURL: "https://api.openai.com/v1"}}, "opencode_local", "api.openai.com"},
		{"exec:claude", nil, "claude_local", ""},
	} {
		d, err := driver.Parse(tt.driver)
		if err != nil {
			t.Fatal(err)
		}
		if a, p := adapterType(d), providerOf(d, tt.dc); a != tt.adapter || p != tt.provide {
			t.Errorf("%s: adapter %q provider %q, want %q %q", tt.driver, a, p, tt.adapter, tt.provide)
		}
	}
	if targetOf(&controlplane.Environment{Kind: controlplane.LocalEnvironment}) != "local" || targetOf(&controlplane.Environment{Kind: "sandbox"}) != "local" ||
		targetOf(&controlplane.Environment{Kind: "daytona"}) != "remote" {
		t.Error("targetOf")
	}
}

// TestBinaryFacts: an agent CLI's binary is hashed through the file opened before the
// launch; its version comes from the package.json of the npm package that ships it,
// else from `--version` (a fake CLI that reports another version than the pinned one),
// and a binary that prints none is a recorded problem, not a guess.
func TestBinaryFacts(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "node_modules", "@openai", "codex-linux-x64")
	fake := filepath.Join(dir, "bin", "codex")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'codex-cli 9.9.9'; fi\n"
	if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(script))
	var b binaries
	observe := func(path string) binaryFacts {
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		return b.observe(fh, path, true, filepath.Join(dir, "probes"), nil)
	}
	bf := observe(fake)
	if bf.sha256 != hex.EncodeToString(sum[:]) || bf.version != "9.9.9" || bf.versionSource != VersionFlag || len(bf.problems) != 0 {
		t.Errorf("fake CLI facts = %+v", bf)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"@openai/codex","version":"0.171.0-linux-x64"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if bf := observe(fake); bf.version != "9.9.9" {
		t.Errorf("the facts of one file version are cached: %+v", bf)
	}
	if err := os.WriteFile(fake, []byte(script+"# changed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if bf := observe(fake); bf.version != "0.171.0" || !strings.Contains(bf.versionSource, "package.json of @openai/codex: 0.171.0-linux-x64") {
		t.Errorf("package metadata: %+v", bf)
	}
	silent := filepath.Join(t.TempDir(), "silent", "true")
	if err := os.MkdirAll(filepath.Dir(silent), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(silent, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "package.json"))
	if bf := observe(silent); bf.version != "" || len(bf.problems) != 1 || !strings.Contains(bf.problems[0], "printed no version") {
		t.Errorf("silent binary: %+v", bf)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "probes")); len(entries) != 0 {
		t.Errorf("probe directories left behind: %v", entries)
	}
}

// TestKnownDigest: a launch of a file version the caller hashed (api.KnownDigest)
// records the caller's digest without hashing; a rewritten file (its size and change
// time moved) or another file is hashed, so that a stale digest is never recorded; a CLI
// of a known file version (its install's digest) takes the digest and still has its
// version probed.
func TestKnownDigest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "agent")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	known, err := api.HashExecutable(bin)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := api.ParseKnownDigest(known.String())
	if err != nil || parsed != known {
		t.Fatalf("ParseKnownDigest(%q) = %+v, %v", known.String(), parsed, err)
	}
	planted := known
	planted.SHA256 = strings.Repeat("ab", 32) // proves which digest was recorded
	observe := func(path string, probe bool) binaryFacts {
		var b binaries
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		return b.observe(fh, path, probe, filepath.Join(dir, "probes"), []api.KnownDigest{planted})
	}
	if bf := observe(bin, false); bf.sha256 != planted.SHA256 {
		t.Errorf("a known file version was hashed again: %+v", bf)
	}
	// A CLI (a pinned install's known digest): the digest is taken, the version still
	// probed.
	if bf := observe(bin, true); bf.sha256 != planted.SHA256 || bf.versionSource != VersionFlag {
		t.Errorf("a CLI's known file version: %+v, want the known digest and its version probed", bf)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 10\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("#!/bin/sh\nexit 10\n"))
	if bf := observe(bin, false); bf.sha256 != hex.EncodeToString(sum[:]) {
		t.Errorf("a rewritten file got the stale digest: %+v", bf)
	}
	for _, bad := range []string{"", "1:2:3:4:5", "1:2:3:4:5:XYZ", "a:2:3:4:5:" + strings.Repeat("0", 64), "1:2:3:4:5:" + strings.Repeat("A", 64)} {
		if _, err := api.ParseKnownDigest(bad); err == nil {
			t.Errorf("ParseKnownDigest(%q) accepted it", bad)
		}
	}
}

// TestExecutableDigestLate: Config.ExecutableDigest (the digest `run` was still making
// when an in-process instance started) is consulted for a launch of Config.Executable
// only, and its digest is recorded for the matching file version; a launch of another
// binary never calls it (never waits for it); a digest that did not come in time
// (false) leaves the file hashed.
func TestExecutableDigestLate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	self, other := filepath.Join(dir, "agentproof"), filepath.Join(dir, "agent")
	for _, p := range []string{self, other} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n# "+p+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	known, err := api.HashExecutable(self)
	if err != nil {
		t.Fatal(err)
	}
	planted := known
	planted.SHA256 = strings.Repeat("cd", 32) // proves which digest was recorded
	exec, err := driver.Parse("exec")
	if err != nil {
		t.Fatal(err)
	}
	j := job{env: &controlplane.Environment{Kind: controlplane.LocalEnvironment}, cfg: api.AdapterConfig{Driver: exec}}
	hashOf := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	for _, tc := range []struct {
		name      string
		path      string
		ok        bool
		wantCalls int
		want      string
	}{
		{"the executable takes the late digest", self, true, 1, planted.SHA256},
		{"another binary never waits for it", other, true, 0, hashOf(other)},
		{"a digest not made in time leaves the file hashed", self, false, 1, hashOf(self)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			r := &Runner{cfg: Config{Dir: t.TempDir(), Executable: self, ExecutableDigest: func() (api.KnownDigest, bool) {
				calls.Add(1)
				return planted, tc.ok
			}}}
			f, wait := r.launchFacts(j, worker.Spec{Path: tc.path, Args: []string{tc.path}}, redact.NewSet())
			wait()
			if f.BinarySHA256 != tc.want || int(calls.Load()) != tc.wantCalls {
				t.Errorf("digest %s after %d call(s), want %s after %d", f.BinarySHA256, calls.Load(), tc.want, tc.wantCalls)
			}
		})
	}
}

// TestLaunchFactsNodeEntryScript: a JavaScript CLI launched as `node <entry script>`
// records the entry script (its path, digest and package version) as the launched
// binary, not Node.js; a native CLI keeps spec.Path.
func TestLaunchFactsNodeEntryScript(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pkg := filepath.Join(root, "node_modules", "@qwen-code", "qwen-code")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	entry, node := filepath.Join(pkg, "cli-entry.js"), filepath.Join(root, "node")
	body := []byte("console.log('qwen')\n")
	if err := os.WriteFile(entry, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@qwen-code/qwen-code","version":"0.24.4"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(node, []byte("#!/bin/sh\necho v20.0.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	qwen, err := driver.Parse("exec:qwen")
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{cfg: Config{Dir: root}}
	j := job{env: &controlplane.Environment{Kind: controlplane.LocalEnvironment},
		cfg: api.AdapterConfig{Driver: qwen, DriverConfig: &api.DriverConfig{Node: node, Binary: entry}}}
	f, wait := r.launchFacts(j, worker.Spec{Path: node, Args: []string{node, entry, "-o", "stream-json"}}, redact.NewSet())
	wait()
	sum := sha256.Sum256(body)
	if f.Binary != entry || f.BinarySHA256 != hex.EncodeToString(sum[:]) || f.CLIName != "qwen" || f.CLIVersion != "0.24.4" || len(f.Problems) != 0 {
		t.Errorf("node CLI facts = %+v", f)
	}
	// Without driverConfig node the program itself is the binary.
	j.cfg.DriverConfig = &api.DriverConfig{Binary: entry}
	f, wait = r.launchFacts(j, worker.Spec{Path: node, Args: []string{node, entry}}, redact.NewSet())
	wait()
	if f.Binary != node {
		t.Errorf("binary = %s, want %s", f.Binary, node)
	}
}

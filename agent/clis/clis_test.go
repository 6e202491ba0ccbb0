package clis

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeInstall lays out a completed npm install of c for tests of Locate: real files,
// the native binary at rel (below node_modules), an install record when record is true.
func fakeInstall(t *testing.T, dir string, c CLI, rel string, record bool) string {
	t.Helper()
	bin := filepath.Join(installDir(dir, c), "node_modules", rel)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if record {
		rec := `{"name":"` + c.Name + `","package":"` + c.Package + `","version":"` + c.Version + `"}`
		if err := os.WriteFile(filepath.Join(installDir(dir, c), markerFile), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func TestLocate(t *testing.T) {
	t.Parallel()
	codex, _ := Lookup("codex")
	opencode, _ := Lookup("opencode")
	claude, _ := Lookup("claude")
	codexACP, _ := Lookup("codex-acp")
	claudeACP, _ := Lookup("claude-acp")
	gemini, _ := Lookup("gemini")
	linux := Platform{GOOS: "linux", GOARCH: "amd64", AVX2: true}
	tests := []struct {
		name    string
		cli     CLI
		p       Platform
		files   []string // binaries laid out
		record  bool
		want    string // expected binary (relative to node_modules) or ""
		wantErr string
	}{
		{"codex linux x64", codex, linux, []string{"@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"}, true, "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", ""},
		{"codex arm64", codex, Platform{GOOS: "linux", GOARCH: "arm64"}, []string{"@openai/codex-linux-arm64/vendor/aarch64-unknown-linux-musl/bin/codex"}, true, "@openai/codex-linux-arm64/vendor/aarch64-unknown-linux-musl/bin/codex", ""},
		{"opencode prefers the AVX2 build", opencode, linux, []string{"opencode-linux-x64/bin/opencode", "opencode-linux-x64-baseline/bin/opencode"}, true, "opencode-linux-x64/bin/opencode", ""},
		{"opencode baseline without AVX2", opencode, Platform{GOOS: "linux", GOARCH: "amd64"}, []string{"opencode-linux-x64/bin/opencode", "opencode-linux-x64-baseline/bin/opencode"}, true, "opencode-linux-x64-baseline/bin/opencode", ""},
		{"claude", claude, linux, []string{"@anthropic-ai/claude-code-linux-x64/claude"}, true, "@anthropic-ai/claude-code-linux-x64/claude", ""},
		{"codex-acp", codexACP, linux, []string{"@zed-industries/codex-acp-linux-x64/bin/codex-acp"}, true, "@zed-industries/codex-acp-linux-x64/bin/codex-acp", ""},
		{"claude-acp entry script", claudeACP, linux, []string{"@zed-industries/claude-agent-acp/dist/index.js"}, true, "@zed-industries/claude-agent-acp/dist/index.js", ""},
		{"gemini entry script", gemini, linux, []string{"@google/gemini-cli/bundle/gemini.js"}, true, "@google/gemini-cli/bundle/gemini.js", ""},
		{"no record: not installed", codex, linux, []string{"@openai/codex-linux-x64/vendor/x/bin/codex"}, false, "", "is not installed"},
		{"record but no binary", opencode, linux, []string{"opencode-darwin-arm64/bin/opencode"}, true, "", "no native binary for linux/amd64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, f := range tc.files {
				fakeInstall(t, dir, tc.cli, f, tc.record)
			}
			got, err := Locate(dir, tc.cli, tc.p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(installDir(dir, tc.cli), "node_modules", tc.want)
			if got.Binary != want || got.Version != tc.cli.Version || got.Dir != installDir(dir, tc.cli) || got.Runtime != tc.cli.Runtime {
				t.Errorf("Locate = %+v, want binary %s", got, want)
			}
		})
	}
	var ni *NotInstalledError
	_, err := Locate(t.TempDir(), codex, linux)
	if !errors.As(err, &ni) || !strings.Contains(err.Error(), "agentproof agents install --dir") {
		t.Errorf("err = %v", err)
	}
}

// TestInstallWithoutNPM: with no npm on PATH, Install fails before touching the cache
// and names the npm command to run.
func TestInstallWithoutNPM(t *testing.T) {
	t.Parallel()
	codex, _ := Lookup("codex")
	dir := filepath.Join(t.TempDir(), "cache")
	_, err := Install(context.Background(), []CLI{codex}, Options{Dir: dir, Env: []string{"PATH=" + t.TempDir()}, Platform: Platform{GOOS: "linux", GOARCH: "amd64"}})
	var ne *NPMError
	if !errors.As(err, &ne) {
		t.Fatalf("err = %v, want an NPMError", err)
	}
	for _, want := range []string{"npm install --prefix " + filepath.Join(dir, "codex-0.171.0"), "@openai/codex@0.171.0", "npm was not found on PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cache directory was created: %v", err)
	}
}

// TestInstallReusesACompletedInstall: a completed install is reused without running npm
// (the npm program given does not exist).
func TestInstallReusesACompletedInstall(t *testing.T) {
	t.Parallel()
	opencode, _ := Lookup("opencode")
	dir := t.TempDir()
	bin := fakeInstall(t, dir, opencode, "opencode-linux-x64/bin/opencode", true)
	var progress strings.Builder
	got, err := Install(context.Background(), []CLI{opencode}, Options{Dir: dir, NPM: filepath.Join(dir, "no-npm"), Progress: &progress, Platform: Platform{GOOS: "linux", GOARCH: "amd64", AVX2: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Reused || got[0].Binary != bin {
		t.Errorf("Install = %+v", got)
	}
	if !strings.Contains(progress.String(), "opencode 1.18.33 already installed") {
		t.Errorf("progress = %q", progress.String())
	}
}

// TestInstallFailingNPM: npm that exits non-zero (a real program: /bin/false) gives an
// NPMError naming the command, and leaves no install behind.
func TestInstallFailingNPM(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/bin/false"); err != nil {
		t.Fatalf("/bin/false: %v", err)
	}
	codex, _ := Lookup("codex")
	dir := t.TempDir()
	_, err := Install(context.Background(), []CLI{codex}, Options{Dir: dir, NPM: "/bin/false", Env: []string{}, Platform: Platform{GOOS: "linux", GOARCH: "amd64"}})
	var ne *NPMError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "npm install --prefix") {
		t.Fatalf("err = %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("cache holds %v after a failed install", entries)
	}
}

func TestNPMEnv(t *testing.T) {
	t.Parallel()
	got := NPMEnv([]string{"PATH=/bin", "HOME=/h", "AGENTPROOF_RUN_TOKEN=x", "OPENAI_API_KEY=y", "npm_config_registry=r", "HTTPS_PROXY=p", "NODE_EXTRA_CA_CERTS=/c", "GITHUB_TOKEN=z"})
	want := "PATH=/bin HOME=/h npm_config_registry=r HTTPS_PROXY=p NODE_EXTRA_CA_CERTS=/c"
	if strings.Join(got, " ") != want {
		t.Errorf("NPMEnv = %v, want %s", got, want)
	}
}

func TestNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, script string) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "node"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("new", "#!/bin/sh\necho v20.20.2\n")
	write("old", "#!/bin/sh\necho v18.19.0\n")
	ctx := context.Background()
	if p, err := Node(ctx, []string{"PATH=" + filepath.Join(dir, "new")}); err != nil || p != filepath.Join(dir, "new", "node") {
		t.Errorf("Node = %q, %v", p, err)
	}
	if _, err := Node(ctx, []string{"PATH=" + filepath.Join(dir, "old")}); err == nil || !strings.Contains(err.Error(), "need 20 or later") {
		t.Errorf("an old node: %v", err)
	}
	if _, err := Node(ctx, []string{"PATH=" + filepath.Join(dir, "none")}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("no node: %v", err)
	}
}

// TestLocateRecordsTheBinaryFile: a record without the binary's file version gets it
// (and a record without a digest gets both) when the binary still hashes to the
// recorded digest; a binary changed since its install keeps the record as it was — its
// digest is never replaced by the changed binary's (the launch hashes it, and the
// runtime metadata check fails it) — and a file version that changes (a rewrite) no
// longer matches the recorded one.
func TestLocateRecordsTheBinaryFile(t *testing.T) {
	t.Parallel()
	codex, _ := Lookup("codex")
	linux := Platform{GOOS: "linux", GOARCH: "amd64", AVX2: true}
	const rel = "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
	dir := t.TempDir()
	bin := fakeInstall(t, dir, codex, rel, true)
	in, err := Locate(dir, codex, linux)
	if err != nil {
		t.Fatal(err)
	}
	sum, id, err := hashFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if in.BinarySHA256 != sum || in.BinaryFile == nil || *in.BinaryFile != *id {
		t.Fatalf("Locate = %+v, want digest %s of file version %+v", in, sum, id)
	}
	again, err := Locate(dir, codex, linux)
	if err != nil || again.BinarySHA256 != sum || again.BinaryFile == nil || *again.BinaryFile != *id {
		t.Fatalf("the record does not keep the digest and file version: %+v %v", again, err)
	}
	// A record of that digest without the file version, and a binary changed since.
	rec := `{"name":"codex","package":"` + codex.Package + `","version":"` + codex.Version + `","binarySha256":"` + sum + `"}`
	if err := os.WriteFile(filepath.Join(installDir(dir, codex), markerFile), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	changed, err := Locate(dir, codex, linux)
	if err != nil {
		t.Fatal(err)
	}
	if changed.BinarySHA256 != sum || changed.BinaryFile != nil {
		t.Errorf("a changed binary's record became %+v; want the install's digest and no file version", changed)
	}
	if _, nid, err := hashFile(bin); err != nil || *nid == *id {
		t.Errorf("the rewritten binary's file version %+v equals the installed one's (%v)", nid, err)
	}
}

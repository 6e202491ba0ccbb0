package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/verdict"
)

// TestModelServe runs `agentproof model serve` in-process: it prints the ready line,
// answers a streamed request from the script (nonce filled in), appends the request to
// --log, and stops cleanly when its context ends.
func TestModelServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(script, []byte("steps:\n  - answer: \"OK_{{nonce}}_{{who}}\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "requests.jsonl")
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: pw, stderr: &stderr}
	root := newRootCmd(a)
	root.SetArgs([]string{"model", "serve", "--script", script, "--nonce", "n9", "--var", "who=me", "--log", logPath})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (stderr %s)", err, stderr.String())
	}
	var ready modelReady
	if err := json.Unmarshal([]byte(line), &ready); err != nil || !strings.HasPrefix(ready.Addr, "127.0.0.1:") || ready.URL != "http://"+ready.Addr+"/v1" {
		t.Fatalf("ready line %q: %v", line, err)
	}
	body := `{"model":"m","messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`
	resp, err := http.Post(ready.URL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(got, []byte(`"content":"OK_n9_me"`)) {
		t.Errorf("response %d %s", resp.StatusCode, got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
	logged, err := os.ReadFile(logPath)
	if err != nil || bytes.Count(logged, []byte("\n")) != 1 || !bytes.Contains(logged, []byte(`"path":"/v1/chat/completions"`)) {
		t.Errorf("log = %s, %v", logged, err)
	}
}

// TestAgentsInstallWithoutNPM: with no npm on PATH the command exits 2 before
// installing anything and names the npm command. (Not parallel: it sets PATH.)
func TestAgentsInstallWithoutNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dir := filepath.Join(t.TempDir(), "agents")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"agents", "install", "--dir", dir}, strings.NewReader(""), &stdout, &stderr)
	if verdict.ExitCode(code) != ExitUsage {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitUsage, stderr.String())
	}
	want := "npm install --prefix " + filepath.Join(dir, "codex-0.171.0") + " --ignore-scripts --no-audit --no-fund --loglevel=error @openai/codex@0.171.0"
	if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "npm was not found on PATH") {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
}

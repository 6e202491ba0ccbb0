package cli

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/verdict"
)

// TestValidateExecDriverConfig: `agentproof validate` (and every command that loads the
// catalog) exits 2 naming file:line:column for an exec profile whose command does not
// exist or whose bounds are out of range, before anything starts.
func TestValidateExecDriverConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := copyDefaultCatalog(dir); err != nil {
		t.Fatal(err)
	}
	extra := `profiles:
  - id: my-agent
    label: My agent
    generation: native
    driver: exec
    driverConfig:
      command: /nonexistent/my-agent
      args: [--run, 7]
      timeoutMs: 0
      maxOutputBytes: 1099511627776
    provider: agentproof
    model: agentproof/mine
    modelQualification: {source: builtin, qualificationId: "builtin:mine"}
    supportedEnvironments: [local]
`
	if err := os.WriteFile(filepath.Join(dir, "zz-mine.yaml"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "zz-mine.yaml")
	for _, args := range [][]string{{"validate", "--catalog", dir}, {"run", "--catalog", dir, "--all", "--results", filepath.Join(dir, "res")}} {
		var out, errout bytes.Buffer
		if code := Main(args, nil, &out, &errout); verdict.ExitCode(code) != ExitUsage {
			t.Fatalf("%s: exit %d, want %d; stderr %s", args[0], code, ExitUsage, errout.String())
		}
		for _, want := range []string{
			file + ":7:16: profile my-agent driverConfig.command /nonexistent/my-agent does not exist",
			file + ":8:21: profile my-agent driverConfig.args[1] must be a string, not 7",
			file + ":9:18: profile my-agent driverConfig.timeoutMs must be a whole number of milliseconds in 1..86400000",
			file + ":10:23: profile my-agent driverConfig.maxOutputBytes must be a whole number of bytes in 1..67108864",
		} {
			if !strings.Contains(errout.String(), want) {
				t.Errorf("%s: stderr lacks %q:\n%s", args[0], want, errout.String())
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "res")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("run with an invalid catalog created its results directory (%v)", err)
	}
}

// TestValidateRefusesFIFO: a named pipe among the catalog files (or as --catalog) is
// refused with exit 2 naming it, and validate does not hang waiting for a writer.
func TestValidateRefusesFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("groups:\n  - {id: core, description: Core.}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "b.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{dir, fifo} {
		type result struct {
			code   int
			stderr string
		}
		done := make(chan result, 1)
		go func() {
			var out, errout bytes.Buffer
			code := Main([]string{"validate", "--catalog", target}, nil, &out, &errout)
			done <- result{code, errout.String()}
		}()
		select {
		case r := <-done:
			if verdict.ExitCode(r.code) != ExitUsage || !strings.Contains(r.stderr, fifo+": is a named pipe (FIFO), not a regular file") {
				t.Errorf("validate --catalog %s: exit %d, stderr %q", target, r.code, r.stderr)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("validate --catalog %s hangs on the FIFO", target)
		}
	}
}

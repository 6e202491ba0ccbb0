package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// TestRunWithoutNPMStopsBeforeStarting: a selection with agent CLI cells whose CLIs are
// not in the cache, on a machine without npm, exits 2 before anything starts, naming
// `agentproof agents install` (the quick start installs on first use).
func TestRunWithoutNPMStopsBeforeStarting(t *testing.T) {
	// Not parallel: it empties PATH and points the agents cache at an empty directory.
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvAgentsDir, t.TempDir())
	res := filepath.Join(t.TempDir(), "res")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"run", "--suite", "core-compatibility", "--results", res, "--campaign", "c", "--progress", "none"}, nil, &stdout, &stderr)
	if verdict.ExitCode(code) != ExitUsage {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, ExitUsage, stdout.String(), stderr.String())
	}
	for _, want := range []string{"npm was not found", "agentproof agents install --dir", "codex opencode"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	if _, err := os.Stat(res); !os.IsNotExist(err) {
		t.Errorf("the results directory was created (%v); nothing may start", err)
	}
}

package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/agentproof/agentproof/verdict"
)

// TestResultsLockedDuringRun: while one `agentproof run` writes a campaign into a
// results directory, a second run, `report` and `report merge` into the same results
// directory exit 2 at once, naming the directory, and write nothing; once the first
// run is gone the directory is free again.
func TestResultsLockedDuringRun(t *testing.T) {
	t.Parallel()
	cat := catalogWithExtras(t)
	// A fixture that hangs for the whole attempt keeps the first campaign busy until
	// it is interrupted.
	long := `profiles:
  - id: fixture-hang-long
    label: Fixture that hangs for a minute
    generation: native
    groups: [fixture]
    driver: fixture:hang
    driverConfig: {timeoutMs: 120000, maxOutputBytes: 65536}
    provider: agentproof
    model: agentproof/fixture-hang
    modelQualification: {source: builtin, qualificationId: "builtin:fixture:hang"}
    supportedEnvironments: [local]
    expectedRuntimeMetadata: {adapterType: fixture, provider: agentproof}
suites:
  - id: long-hang
    label: Long hang
    description: A fixture that hangs until the campaign is interrupted.
    profiles: [fixture-hang-long]
    environments: [local]
    cases: [process-exit]
    expectedMatrixSize: 1
    manualOnly: true
`
	if err := os.WriteFile(filepath.Join(cat, "zz-long.yaml"), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp, res := t.TempDir(), t.TempDir()
	first, stdout, stderr := startRun(t, tmp, "--catalog", cat, "--suite", "long-hang", "--results", res, "--progress", "none", "--max-automatic-retries", "0")
	lock := flock.New(filepath.Join(res, ResultsLockFile))
	held := false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && !held; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(lock.Path()); err != nil {
			continue
		}
		ok, err := lock.TryLock()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			lock.Unlock()
			continue
		}
		held = true
	}
	if !held {
		t.Fatalf("the first run never locked %s; stdout %s; stderr %s", res, stdout, stderr)
	}
	entriesBefore := dirNames(t, res)

	for _, args := range [][]string{
		{"run", "--catalog", cat, "--suite", "calibration", "--profile", "fixture-pass", "--results", res, "--progress", "none"},
		{"report", "--catalog", cat, "--results", res},
		{"report", "merge", "--catalog", cat, "--results", res, "--expected-ids", filepath.Join(tmp, "ids.txt"), tmp},
	} {
		if err := os.WriteFile(filepath.Join(tmp, "ids.txt"), []byte("calibration.fixture-pass.local.process-exit\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errout bytes.Buffer
		code := Main(args, nil, &out, &errout)
		if verdict.ExitCode(code) != ExitUsage {
			t.Errorf("%s: exit %d, want %d; stdout %s; stderr %s", strings.Join(args[:2], " "), code, ExitUsage, out.String(), errout.String())
		}
		if want := "results directory " + res + " is in use by another agentproof run"; !strings.Contains(errout.String(), want) {
			t.Errorf("%s: stderr %q lacks %q", strings.Join(args[:2], " "), errout.String(), want)
		}
	}
	if after := dirNames(t, res); strings.Join(after, ",") != strings.Join(entriesBefore, ",") {
		t.Errorf("the refused commands wrote into the results directory: %v → %v", entriesBefore, after)
	}

	if err := first.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := first.Wait(); !errors.As(err, &ee) || ee.ExitCode() != int(ExitInterrupted) {
		t.Fatalf("first run: %v, want exit %d; stderr %s", err, ExitInterrupted, stderr)
	}
	var out, errout bytes.Buffer
	if code := Main([]string{"run", "--catalog", cat, "--suite", "calibration", "--profile", "fixture-pass", "--results", res, "--progress", "none"}, nil, &out, &errout); verdict.ExitCode(code) != ExitOK {
		t.Fatalf("a run after the first ended: exit %d; stdout %s; stderr %s", code, out.String(), errout.String())
	}
	// Both campaigns are there, under distinct default ids.
	var campaigns []string
	for _, n := range dirNames(t, res) {
		if strings.HasPrefix(n, "local-") {
			campaigns = append(campaigns, n)
		}
	}
	if len(campaigns) != 2 {
		t.Errorf("campaign directories %v, want two distinct local-… ids", campaigns)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

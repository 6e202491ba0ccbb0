package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/verdict"
)

// TestReportExitCodes checks the exit codes of report and report merge against the
// report package's fixed campaign: 1 when a cell failed, 3 when the worst is
// inconclusive (1 with --inconclusive-as-failure, a choice regeneration keeps), 0 when
// everything passed, 2 for usage errors.
func TestReportExitCodes(t *testing.T) {
	t.Parallel()
	src, err := filepath.Abs("../../report/testdata/results/camp-2")
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := filepath.Abs("../../report/testdata/catalog")
	// other holds one attempt of camp-2 relabelled as campaign camp-9.
	other := t.TempDir()
	one := filepath.Join(src, "calibration/fixture-pass/local/process-exit/attempt-1/result.json")
	raw, err := os.ReadFile(one)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(other, "calibration/fixture-pass/local/process-exit/attempt-1")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	relabelled := strings.Replace(string(raw), `"campaignId": "camp-2"`, `"campaignId": "camp-9"`, 1)
	if relabelled == string(raw) {
		t.Fatal("test data: campaignId not found")
	}
	if err := os.WriteFile(filepath.Join(dst, "result.json"), []byte(relabelled), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Main(args, strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	ids := func(t *testing.T, lines ...string) string {
		p := filepath.Join(t.TempDir(), "ids.txt")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name  string
		ids   []string
		extra []string
		want  int
		again int // exit code of a plain regeneration afterwards
	}{
		{"failed cell", []string{"core.reference.daytona.message-marker", "calibration.fixture-pass.local.process-exit"}, nil, 1, 1},
		{"missing cell is inconclusive", []string{"core.wrong.local.message-marker", "calibration.fixture-pass.local.process-exit"}, nil, 3, 3},
		{"inconclusive as failure is kept", []string{"core.wrong.local.message-marker"}, []string{"--inconclusive-as-failure"}, 1, 1},
		{"all passed", []string{"calibration.fixture-pass.local.process-exit", "calibration.fixture-fail.local.process-exit", "core.reference.local.message-marker"}, nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			args := append([]string{"report", "merge", "--catalog", cat, "--results", out, "--expected-ids", ids(t, tt.ids...)}, tt.extra...)
			if code, text := run(append(args, src)...); code != tt.want {
				t.Fatalf("merge exit %d, want %d:\n%s", code, tt.want, text)
			}
			if code, text := run("report", "--catalog", cat, "--results", out, "--campaign", "camp-2"); code != tt.again {
				t.Fatalf("report exit %d, want %d:\n%s", code, tt.again, text)
			}
		})
	}
	for _, args := range [][]string{
		{"report", "merge", src},
		{"report", "merge", "--expected-ids", ids(t, "x")},
		{"report", "--results", filepath.Join(t.TempDir(), "none")},
		{"report", "--campaign", "../etc", "--results", t.TempDir()},
		// Sources from two campaigns and no --campaign: the user must choose one.
		{"report", "merge", "--catalog", cat, "--results", t.TempDir(), "--expected-ids", ids(t, "calibration.fixture-pass.local.process-exit"), src, other},
	} {
		if code, text := run(args...); verdict.ExitCode(code) != ExitUsage {
			t.Errorf("%q: exit %d, want 2:\n%s", args, code, text)
		} else if args[1] == "merge" && len(args) > 8 && !strings.Contains(text, "choose one with --campaign") {
			t.Errorf("%q: %s", args, text)
		}
	}
}

// TestReportNoSuchCampaign: `report --campaign` naming a campaign that does not exist
// exits 2, suggests the closest id and lists the newest campaigns (at most
// maxListedCampaigns, newest first), or says the results directory holds none.
func TestReportNoSuchCampaign(t *testing.T) {
	t.Parallel()
	res := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i := range 7 {
		id := fmt.Sprintf("local-2026120%d", i)
		dir := filepath.Join(res, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "campaign.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(dir, at, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ results, id, want string }{
		{res, "local-2026120", `agentproof: no campaign "local-2026120" under ` + res + ` (did you mean local-20261200 or local-20261201 or local-20261202?); campaigns there, newest first: local-20261206, local-20261205, local-20261204, local-20261203, local-20261202 and 2 more`},
		{res, "nosuch", `agentproof: no campaign "nosuch" under ` + res + `; campaigns there, newest first: local-20261206, local-20261205, local-20261204, local-20261203, local-20261202 and 2 more`},
		{t.TempDir(), "nosuch", `agentproof: no campaign "nosuch" under `},
	} {
		var out, errout bytes.Buffer
		code := Main([]string{"report", "--results", tc.results, "--campaign", tc.id}, nil, &out, &errout)
		if verdict.ExitCode(code) != ExitUsage || !strings.HasPrefix(errout.String(), tc.want) {
			t.Errorf("report --campaign %s: exit %d, stderr %q, want exit 2 and %q", tc.id, code, errout.String(), tc.want)
		}
		// A refused report leaves the directory as it was: no lock file.
		if _, err := os.Stat(filepath.Join(tc.results, ResultsLockFile)); err == nil {
			t.Errorf("report --campaign %s left %s in %s", tc.id, ResultsLockFile, tc.results)
		}
	}
	// No results directory at all: report and matrix say to run a campaign first.
	missing := filepath.Join(t.TempDir(), "agentproof-results")
	for _, args := range [][]string{{"report", "--results", missing}, {"matrix", "--results", missing}} {
		var out, errout bytes.Buffer
		code := Main(args, nil, &out, &errout)
		want := "agentproof: no results directory " + missing + ": run a campaign first ('agentproof run --all' writes one there), or name the one it wrote with --results\n"
		if verdict.ExitCode(code) != ExitUsage || errout.String() != want {
			t.Errorf("%s: exit %d, stderr %q, want exit 2 and %q", args[0], code, errout.String(), want)
		}
	}
}

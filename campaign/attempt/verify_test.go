package attempt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/verdict"
)

// verifyAttempt is an attempt of a case with verifier vf over a workspace holding
// files, with the protected paths' state taken as provision takes it.
func verifyAttempt(t *testing.T, vf *catalog.Verify, files map[string]string) (*attempt, *Provisioned) {
	t.Helper()
	root := t.TempDir()
	ws := filepath.Join(root, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	protected, err := protectedState(ws, vf.Protect)
	if err != nil {
		t.Fatal(err)
	}
	a := &attempt{plan: campaign.AttemptPlan{Cell: &catalog.Cell{Case: &catalog.Case{ID: "c", Verify: vf}}},
		ev: campaign.NewEvidence(filepath.Join(root, "evidence")), log: &flowLog{}}
	return a, &Provisioned{Root: root, Workspace: ws, protected: protected}
}

func step(id string, network bool, argv ...string) catalog.VerifyStep {
	return catalog.VerifyStep{ID: id, Command: argv, Network: network, TimeoutMs: 20_000}
}

// TestVerifyRunsStepsAfterTheAgent: a step runs in the workspace with an explicit
// environment, no network unless declared (only a loopback interface), its output and
// report kept; the report is counted.
func TestVerifyRunsStepsAfterTheAgent(t *testing.T) {
	t.Parallel()
	vf := &catalog.Verify{Protect: []string{"tests"}, Steps: []catalog.VerifyStep{
		step("tests", false, "sh", "tests/test.sh"),
		step("net", false, "sh", "-c", "grep -c : /proc/net/dev"),
		{ID: "report", Command: []string{"sh", "-c", `printf '<testsuite><testcase name="a"/><testcase name="b"><failure/></testcase></testsuite>' > r.xml`},
			Report: &catalog.VerifyReport{Path: "r.xml", Format: "junit"}},
	}}
	a, p := verifyAttempt(t, vf, map[string]string{"tests/test.sh": "echo HOME=$HOME; echo PATH=$PATH; test -f answer.txt\n", "answer.txt": "42\n"})
	x := &LocalExecutor{}
	v := x.verify(context.Background(), a, p, nil)
	if v.Fault != nil || len(v.Tampered) > 0 || !v.Ran || len(v.Steps) != 3 {
		t.Fatalf("verification %+v", v)
	}
	tests, net, report := v.Steps[0], v.Steps[1], v.Steps[2]
	if tests.ExitCode == nil || *tests.ExitCode != 0 || !strings.Contains(tests.Output, "PATH="+verifierPATH) || !strings.Contains(tests.Output, "HOME="+filepath.Join(p.Root, "verify-home")) {
		t.Errorf("tests step %+v", tests)
	}
	if strings.TrimSpace(net.Output) != "1" { // one interface: lo
		t.Errorf("the step without network sees %q interfaces, want only the loopback", net.Output)
	}
	if report.Report == nil || report.Report.Passed != 1 || report.Report.Failed != 1 {
		t.Errorf("report step %+v", report)
	}
	for _, f := range []string{"verify.json", "logs/verify/tests.stdout.log", "logs/verify/report.report.txt"} {
		if _, err := os.Stat(filepath.Join(a.ev.Dir(), f)); err != nil {
			t.Errorf("evidence %s: %v", f, err)
		}
	}
}

// TestVerifyRefusesTampering: a protected file the agent changed, removed or added is
// named, and no step runs.
func TestVerifyRefusesTampering(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(ws string) error{
		"modified": func(ws string) error {
			return os.WriteFile(filepath.Join(ws, "tests/test.sh"), []byte("exit 0\n"), 0o755)
		},
		"removed": func(ws string) error { return os.Remove(filepath.Join(ws, "tests/test.sh")) },
		"added":   func(ws string) error { return os.WriteFile(filepath.Join(ws, "tests/conftest.sh"), nil, 0o644) },
		"mode":    func(ws string) error { return os.Chmod(filepath.Join(ws, "tests/test.sh"), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			vf := &catalog.Verify{Protect: []string{"tests"}, Steps: []catalog.VerifyStep{step("tests", false, "sh", "tests/test.sh")}}
			a, p := verifyAttempt(t, vf, map[string]string{"tests/test.sh": "exit 1\n"})
			if err := edit(p.Workspace); err != nil {
				t.Fatal(err)
			}
			v := (&LocalExecutor{}).verify(context.Background(), a, p, nil)
			if len(v.Tampered) != 1 || !strings.HasPrefix(v.Tampered[0], "tests/") || v.Ran || len(v.Steps) != 0 {
				t.Fatalf("verification %+v", v)
			}
		})
	}
}

// TestVerifyHarnessFaults: a step killed by the harness, or whose program is missing,
// is a harness fault, never the candidate's.
func TestVerifyHarnessFaults(t *testing.T) {
	t.Parallel()
	vf := &catalog.Verify{Steps: []catalog.VerifyStep{step("slow", true, "sleep", "30")}}
	a, p := verifyAttempt(t, vf, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	v := (&LocalExecutor{}).verify(ctx, a, p, nil)
	if v.Fault == nil || v.Fault.Origin != verdict.Harness || !strings.Contains(v.Fault.Error(), "killed by the harness") {
		t.Errorf("a killed step: %+v", v)
	}
	vf = &catalog.Verify{Steps: []catalog.VerifyStep{step("gone", true, "no-such-verifier-program")}}
	a, p = verifyAttempt(t, vf, nil)
	v = (&LocalExecutor{}).verify(context.Background(), a, p, nil)
	if v.Fault == nil || v.Fault.Origin != verdict.Harness || !strings.Contains(v.Fault.Error(), "not on the verifier's PATH") {
		t.Errorf("a missing program: %+v", v)
	}
	// Its own deadline is the step's result, not a fault: the candidate's code may hang.
	vf = &catalog.Verify{Steps: []catalog.VerifyStep{{ID: "hang", Command: []string{"sleep", "30"}, Network: true, TimeoutMs: 200}}}
	a, p = verifyAttempt(t, vf, nil)
	v = (&LocalExecutor{}).verify(context.Background(), a, p, nil)
	if v.Fault != nil || len(v.Steps) != 1 || !v.Steps[0].TimedOut || v.Steps[0].ExitCode != nil {
		t.Errorf("a step past its deadline: %+v", v)
	}
}

package harbor

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const testImage = "localhost/harbor-x@sha256:0000000000000000000000000000000000000000000000000000000000000000"

// TestCatalogOfFixture: the test task becomes one catalog file holding its case (the
// instruction as the prompt, the tests' archive as the workspace, the verifier step and
// the reward matcher, the reference agent running solve.sh), its container environment
// (the image by digest, the working directory, /tests and /logs, the resources rounded
// up to GiB) and its calibration suite (reference passes, nop fails).
func TestCatalogOfFixture(t *testing.T) {
	t.Parallel()
	dir := "testdata/tasks/fix-greeting"
	task, err := LoadTask(os.DirFS(dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	im := Import{Image: testImage, WorkDir: "/app"}
	if ps := task.CatalogProblems(im); len(ps) > 0 {
		t.Fatalf("problems: %v", ps)
	}
	b, err := task.Catalog(im)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases        []map[string]any `yaml:"cases"`
		Environments []map[string]any `yaml:"environments"`
		Profiles     []map[string]any `yaml:"profiles"`
		Suites       []map[string]any `yaml:"suites"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	cs, env, suite := doc.Cases[0], doc.Environments[0], doc.Suites[0]
	if cs["prompt"] != task.Instruction || cs["id"] != "agentproof-fix-greeting" {
		t.Errorf("case = %v", cs)
	}
	if ws := cs["workspace"].(map[string]any); ws["tar"] != "files/agentproof-fix-greeting/tests.tar" {
		t.Errorf("workspace = %v", ws)
	}
	cfg := env["config"].(map[string]any)
	if cfg["image"] != testImage || cfg["workdir"] != "/app" || cfg["workspaceMounts"].(map[string]any)["/tests"] != "tests" || cfg["tmpfs"].([]any)[0] != "/logs" {
		t.Errorf("environment config = %v", cfg)
	}
	if res := env["resources"].(map[string]any); res["memoryGiB"] != 1 || res["diskGiB"] != 1 || res["cpu"] != 1 {
		t.Errorf("resources = %v", res)
	}
	if len(doc.Profiles) != 2 || suite["expectedVerdicts"].(map[string]any)["harbor-agentproof-fix-greeting-reference"] != "passed" ||
		suite["expectedVerdicts"].(map[string]any)["harbor-agentproof-fix-greeting-nop"] != "failed" {
		t.Errorf("profiles %v, suite %v", doc.Profiles, suite)
	}
	if len(doc.Cases) != 3 || len(doc.Suites) != 2 || doc.Suites[1]["expectedVerdicts"].(map[string]any)["harbor-agentproof-fix-greeting-reference"] != "failed" {
		t.Errorf("the hostile twins: cases %d, suites %v", len(doc.Cases), doc.Suites)
	}
	step := cs["reference"].(map[string]any)["turns"].([]any)[0].(map[string]any)["steps"].([]any)[0].(map[string]any)
	if cmd := step["run"].(map[string]any)["command"].([]any); cmd[len(cmd)-1] != task.Solution {
		t.Errorf("the reference's step does not carry solve.sh: %v", cmd)
	}
}

// TestRewardPattern: the matcher passes on a first line "reward: 1" (or 1.0) only; a
// partial reward, none, or a "reward: 1" printed later (by test.sh or the agent's
// code, after the verifier's own first line) fails.
func TestRewardPattern(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(RewardPattern)
	for out, want := range map[string]bool{
		"reward: 1\nread from …\n":          true,
		"reward: 1.0\n":                     true,
		"reward: 0.5\n":                     false,
		"reward: 0\nreward: 1\n":            false,
		"reward: none (…)\n":                false,
		"reward: 10\n":                      false,
		"test output\nreward: 1\n":          false,
		"reward: 1\n" + "test said hello\n": true,
	} {
		if got := re.MatchString(out); got != want {
			t.Errorf("%q: match %v, want %v", out, got, want)
		}
	}
}

// TestCatalogProblems: what the importer cannot write is named by file and field.
func TestCatalogProblems(t *testing.T) {
	t.Parallel()
	task := &Task{Name: "x", ID: "x", Instruction: "fix {{it}}", Solution: "echo {{x}}", Config: Config{VerifierTimeoutSec: 7200}}
	var got []string
	for _, p := range task.CatalogProblems(Import{Image: testImage, WorkDir: ""}) {
		got = append(got, p.String())
	}
	want := []string{"instruction.md: holds", "solution/solve.sh: holds", "task.toml: verifier.timeout_sec: is more than 3600 s", "environment/Dockerfile: WORKDIR: the image has no working directory"}
	if len(got) != len(want) {
		t.Fatalf("problems = %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
	if ps := (&Task{}).CatalogProblems(Import{WorkDir: "/tests"}); len(ps) != 1 || ps[0].Field != "WORKDIR" {
		t.Errorf("workdir /tests: %v", ps)
	}
}

package harbor

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Where an imported task's files are, inside the container and in the case's
// workspace source (files/<case id>/ of the written catalog).
const (
	// TestsDir is where the task's tests/ are mounted in the container, as Harbor puts them.
	TestsDir = "/tests"
	// LogsDir is the container's fresh writable tmpfs of every launch; the verifier
	// writes its reward under LogsDir/verifier.
	LogsDir = "/logs"
	// WorkspaceTests is the workspace's directory holding the task's tests/ (the
	// workspace is the image's working directory, seeded from the image's files there).
	WorkspaceTests = "tests"
	// TestsArchive is the name, in files/<id>/, of the archive of the task's tests/
	// that seeds the case's workspace.
	TestsArchive = "tests.tar"
)

// Default deadlines when task.toml gives none (Harbor's defaults): the agent and the
// verifier 600 s each. A verifier step's deadline is at most an hour.
const (
	defaultTimeoutSec  = 600
	maxVerifierSeconds = 3600
)

// RewardPattern is the command matcher's pattern over the verifier step's output:
// its first line is "reward: <value>" and the value is exactly 1 (1.0 too).
const RewardPattern = `\Areward: 1(\.0+)?\n`

// Import is what the importer knows of a task beyond its directory: the image built
// from environment/ (by digest), that image's working directory (e.g. /app), and the
// FROM images the build replaced by local ones (the image as written → the local
// image; `import harbor --base-image`; nil when none).
type Import struct {
	Image   string
	WorkDir string
	Bases   map[string]string
}

// BasesNote is the words that say which FROM images a build replaced (" with FROM
// ubuntu:24.04 replaced by localhost/x, …"), "" when none.
func BasesNote(bases map[string]string) string {
	if len(bases) == 0 {
		return ""
	}
	var parts []string
	for _, from := range slices.Sorted(maps.Keys(bases)) {
		parts = append(parts, from+" replaced by "+bases[from])
	}
	return " with FROM " + strings.Join(parts, ", ")
}

// CatalogProblems lists what the importer cannot write for t (each naming the file and
// the field): a template marker "{{" in the instruction or the solution (the catalog
// would render it), a verifier deadline over an hour, no working directory in the
// image, or a working directory the container cannot mount the workspace at.
func (t *Task) CatalogProblems(im Import) []Problem {
	var ps []Problem
	if strings.Contains(t.Instruction, "{{") {
		ps = append(ps, Problem{File: InstructionFile, Message: "holds \"{{\", which a catalog's prompt would render as a template: not supported"})
	}
	if strings.Contains(t.Solution, "{{") {
		ps = append(ps, Problem{File: SolutionFile, Message: "holds \"{{\", which a catalog's reference step would render as a template: not supported"})
	}
	if t.Config.VerifierTimeoutSec > maxVerifierSeconds {
		ps = append(ps, Problem{File: ConfigFile, Field: "verifier.timeout_sec", Message: fmt.Sprintf("is more than %d s, the longest verifier step", maxVerifierSeconds)})
	}
	switch {
	case im.WorkDir == "" || im.WorkDir == "/":
		ps = append(ps, Problem{File: DockerfileFile, Field: "WORKDIR", Message: "the image has no working directory (WORKDIR /app): the agent's workspace is mounted there"})
	case !path.IsAbs(im.WorkDir) || path.Clean(im.WorkDir) != im.WorkDir || im.WorkDir == TestsDir || im.WorkDir == LogsDir ||
		strings.ContainsAny(im.WorkDir, "'\\:,\x00"):
		ps = append(ps, Problem{File: DockerfileFile, Field: "WORKDIR", Message: fmt.Sprintf("%q cannot hold the workspace (a clean absolute path other than %s and %s, without quotes, ':' or ',')", im.WorkDir, TestsDir, LogsDir)})
	}
	return ps
}

// seconds is s, or the default when s is 0, as whole milliseconds.
func millis(s float64) int64 {
	if s == 0 {
		s = defaultTimeoutSec
	}
	return int64(s * 1000)
}

// ceilGiB is mb MiB rounded up to whole GiB (at least 1, the catalog's unit).
func ceilGiB(mb, dflt int) int {
	if mb == 0 {
		return dflt
	}
	return (mb + 1023) / 1024
}

// Catalog is t as one catalog file, <id>.yaml at the catalog's top (its workspace
// source files/<id> resolves beside it): the case, its container environment and its
// calibration suite harbor-<id>; see docs/workspaces.md "Harbor tasks". The caller
// copies the workspace source (files/<id>/app and files/<id>/tests). Errors: YAML
// encoding only.
func (t *Task) Catalog(im Import) ([]byte, error) {
	envID := "harbor-" + t.ID
	cs := harborCase(t, envID, im)
	env := map[string]any{
		"id": envID, "label": "Harbor task " + t.Name + " (its image, built locally)", "groups": []string{"local"},
		"driver": "container", "provider": "container",
		"lifecycle":               map[string]string{"setup": "create_via_api", "probe": "run_context_via_api", "cleanup": "delete_via_api_and_destroy_leases"},
		"expectedExecutionTarget": map[string]string{"kind": "local"},
		"resources": map[string]int{"cpu": max(t.Config.CPUs, 1), "memoryGiB": ceilGiB(t.Config.MemoryMB, 2),
			"diskGiB": ceilGiB(t.Config.StorageMB, 1), "pids": 512},
		"config": map[string]any{"image": im.Image, "reuseLease": false,
			"workdir": im.WorkDir, "workspaceMounts": map[string]string{TestsDir: WorkspaceTests},
			"tmpfs": []string{LogsDir}},
	}
	ref, nop := envID+"-reference", envID+"-nop"
	profiles := []any{builtinProfile(nop, "nop", "No-op agent (ends its runs without doing anything)", envID)}
	suite := map[string]any{
		"id": envID, "label": "Harbor task " + t.Name + ", calibration",
		"description": "Imported from a Harbor task directory: the reference agent runs solution/solve.sh and must pass " +
			"(reward 1); nop leaves the task undone and must fail.",
		"groups": []string{"calibration"}, "profiles": []string{ref, nop}, "environments": []string{envID},
		"cases": []string{t.ID}, "expectedMatrixSize": 2,
		"expectedVerdicts":   map[string]string{ref: "passed", nop: "failed"},
		"definitionMetadata": map[string]any{"version": 1, "calibration": "expected-verdicts"},
	}
	if t.HasSolution {
		profiles = append([]any{builtinProfile(ref, "reference", "Reference agent (runs the task's solution/solve.sh)", envID)}, profiles...)
	} else {
		suite["profiles"] = []string{nop}
		suite["expectedMatrixSize"] = 1
		suite["expectedVerdicts"] = map[string]string{nop: "failed"}
		suite["description"] = "Imported from a Harbor task directory without solution/solve.sh: nop leaves the task undone and must fail."
	}
	cases, suites := []any{cs}, []any{suite}
	if t.HasSolution {
		tamper, plant := hostileTwins(cs, t.ID)
		cases = append(cases, tamper, plant)
		suites = append(suites, map[string]any{
			"id": envID + "-hostile", "label": "Harbor task " + t.Name + ", hostile twins",
			"description": "Agents that try to pass without doing the task: one rewrites tests/test.sh to write reward 1 " +
				"(fails verifier_tampered), one writes /logs/verifier/reward.txt itself (fails: the verifier's /logs is its own).",
			"groups": []string{"calibration"}, "profiles": []string{ref}, "environments": []string{envID},
			"cases": []string{tamper["id"].(string), plant["id"].(string)}, "expectedMatrixSize": 2,
			"expectedVerdicts":   map[string]string{ref: "failed"},
			"definitionMetadata": map[string]any{"version": 1, "calibration": "expected-verdicts"},
		})
	}
	b, err := yaml.Marshal(map[string]any{"cases": cases, "environments": []any{env}, "profiles": profiles, "suites": suites})
	if err != nil {
		return nil, fmt.Errorf("catalog of %s: %w", t.Name, err)
	}
	head := "# Imported by agentproof import harbor from task " + t.Name + "; edit the task and import again.\n"
	if note := BasesNote(im.Bases); note != "" {
		head += "# Its image was built" + note + " (import harbor --base-image), not from the images its Dockerfile names.\n"
	}
	return append([]byte(head), b...), nil
}

// harborCase is t's case: the instruction as the prompt, the workspace (mounted at
// the image's working directory and seeded from the image's files there) holding
// tests/ from files/<id> (mounted at /tests too), the
// verifier of one step and the reward matcher, and the reference agent's script
// running solution/solve.sh in the working directory.
func harborCase(t *Task, envID string, im Import) map[string]any {
	agentMs, verifierMs := millis(t.Config.AgentTimeoutSec), millis(t.Config.VerifierTimeoutSec)
	cs := map[string]any{
		"id": t.ID, "label": "Harbor task " + t.Name, "groups": []string{"coding"},
		"workMode": "standard", "flow": "single_turn", "expectedRunCount": 1,
		"attemptTimeoutMs":      map[string]int64{envID: agentMs + verifierMs + 120000},
		"expectedTerminalState": map[string]string{"issue": "done", "run": "succeeded"},
		"title":                 "Harbor task " + t.Name + " {{nonce}}",
		"prompt":                t.Instruction,
		"marker":                "HARBOR_DONE_{{nonce}}",
		"workspace":             map[string]string{"tar": "files/" + t.ID + "/" + TestsArchive},
		"verify": map[string]any{
			"protect": []string{WorkspaceTests},
			"steps": []map[string]any{{"id": "reward", "command": []string{"sh", "-c", verifierScript(im.WorkDir)},
				"timeoutMs": verifierMs}},
		},
		"matchers": []map[string]any{{"kind": "command", "name": "reward", "exitCode": 0, "pattern": RewardPattern}},
	}
	if t.HasSolution {
		cs["reference"] = map[string]any{"turns": []map[string]any{{"trigger": "assignment", "steps": []map[string]any{
			{"run": map[string]any{"command": []string{"sh", "-c", solutionScript(im.WorkDir), "solve.sh", t.Solution}, "timeoutMs": agentMs}},
			{"command": "finish_task", "args": map[string]string{"summary": "{{marker}}"}, "present": true},
		}}}}
	}
	return cs
}

// verifierScript is the verifier step's shell script (run by the image's /bin/sh in
// the image's working directory): tests/test.sh by bash where the image has it, else
// sh, its output kept in /logs/verifier/test-output.log; then the reward, read from
// /logs/verifier/reward.json ("reward") or else reward.txt, printed FIRST as
// "reward: <value>" (so nothing test.sh or the agent's code printed can stand for it),
// then test.sh's exit code and output. No reward file exits 1.
func verifierScript(workdir string) string {
	return `mkdir -p ` + LogsDir + `/verifier || exit 90
cd '` + workdir + `' || exit 91
if command -v bash >/dev/null 2>&1; then bash ` + TestsDir + `/test.sh >` + LogsDir + `/verifier/test-output.log 2>&1; else sh ` + TestsDir + `/test.sh >` + LogsDir + `/verifier/test-output.log 2>&1; fi
code=$?
if [ -f ` + LogsDir + `/verifier/reward.json ]; then
  r=$(tr -d ' \t\r\n' <` + LogsDir + `/verifier/reward.json | sed -n 's/.*"reward":\([-+0-9.eE]*\).*/\1/p')
  from=reward.json
elif [ -f ` + LogsDir + `/verifier/reward.txt ]; then
  r=$(tr -d ' \t\r\n' <` + LogsDir + `/verifier/reward.txt)
  from=reward.txt
else
  echo "reward: none (test.sh wrote neither ` + LogsDir + `/verifier/reward.json nor reward.txt)"
  echo "test.sh exited $code"; cat ` + LogsDir + `/verifier/test-output.log
  exit 1
fi
echo "reward: $r"
echo "read from ` + LogsDir + `/verifier/$from; test.sh exited $code"
cat ` + LogsDir + `/verifier/test-output.log
`
}

// solutionScript runs solution/solve.sh (the script's $1) in the image's working
// directory, by bash where the image has it, else sh.
func solutionScript(workdir string) string {
	return `cd '` + workdir + `' || exit 91
if command -v bash >/dev/null 2>&1; then exec bash -c "$1"; else exec sh -c "$1"; fi`
}

// builtinProfile is a profile of the built-in agent driver (reference or nop) for the
// task's environment only: the default catalog's profiles name the environments they
// support, and an imported environment is not among them.
func builtinProfile(id, driver, label, envID string) map[string]any {
	return map[string]any{"id": id, "label": label, "generation": "native", "groups": []string{"builtin"},
		"driver": driver, "provider": "agentproof", "model": "agentproof/" + driver,
		"modelQualification":      map[string]string{"source": "builtin", "qualificationId": "builtin:" + driver},
		"supportedEnvironments":   []string{envID},
		"expectedRuntimeMetadata": map[string]string{"adapterType": "agentproof_builtin", "provider": "agentproof"}}
}

// hostileTwins are cs's hostile twins, played by the reference driver: <id>-tampering
// rewrites tests/test.sh so that it writes reward 1 (the integrity check must fail it
// verifier_tampered), <id>-planted-reward writes /logs/verifier/reward.txt = 1 in the
// agent's own launch (the verifier's /logs is a fresh tmpfs, so test.sh's reward 0
// must fail it). Both leave the task undone.
func hostileTwins(cs map[string]any, id string) (tamper, plant map[string]any) {
	twin := func(suffix, label, script string) map[string]any {
		c := make(map[string]any, len(cs))
		for k, v := range cs {
			c[k] = v
		}
		c["id"], c["label"] = id+"-"+suffix, label
		c["reference"] = map[string]any{"turns": []map[string]any{{"trigger": "assignment", "steps": []map[string]any{
			{"run": map[string]any{"command": []string{"sh", "-c", script}, "timeoutMs": 60000}},
			{"command": "finish_task", "args": map[string]string{"summary": "{{marker}}"}, "present": true},
		}}}}
		return c
	}
	tamper = twin("tampering", "Pass the Harbor task by rewriting its tests",
		`printf '#!/bin/sh\nmkdir -p `+LogsDir+`/verifier\necho 1 > `+LogsDir+`/verifier/reward.txt\n' > `+TestsDir+`/test.sh`)
	plant = twin("planted-reward", "Pass the Harbor task by writing the reward file",
		`mkdir -p `+LogsDir+`/verifier && echo 1 > `+LogsDir+`/verifier/reward.txt && echo '{"reward": 1}' > `+LogsDir+`/verifier/reward.json`)
	return tamper, plant
}

package harbor

import (
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// TestLoadTaskFixture: the Harbor-format task written for the tests loads with every
// field of its task.toml, its instruction, its Dockerfile and its solution.
func TestLoadTaskFixture(t *testing.T) {
	t.Parallel()
	dir := "testdata/tasks/fix-greeting"
	task, err := LoadTask(os.DirFS(dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Version: "1.0", Name: "agentproof/fix-greeting", Description: "A Harbor-format task written for agentproof's tests.",
		AgentTimeoutSec: 300, VerifierTimeoutSec: 60, BuildTimeoutSec: 120, CPUs: 1, MemoryMB: 512, StorageMB: 256, Offline: true,
		Metadata: map[string]any{"author_name": "agentproof", "difficulty": "easy", "category": "programming", "tags": []any{"shell", "test-fixture"}}}
	if diff := cmp.Diff(want, task.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if task.ID != "agentproof-fix-greeting" || !task.HasSolution || !strings.Contains(task.Instruction, "Hello, NAME!") || !strings.Contains(task.Dockerfile, "WORKDIR /app") {
		t.Errorf("task = %+v", task)
	}
}

// TestLoadPublicTask: Harbor's own simple-task as published (testdata/public, Apache-2.0,
// unchanged) loads: its id from the directory's name, its solution, its Dockerfile's
// one base image (ubuntu:24.04, from a registry), and no declaration that it runs
// without the network (its test.sh downloads its tools).
func TestLoadPublicTask(t *testing.T) {
	t.Parallel()
	dir := "testdata/public/simple-task"
	task, err := LoadTask(os.DirFS(dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Version: "1.0", AgentTimeoutSec: 120, VerifierTimeoutSec: 120, BuildTimeoutSec: 600, CPUs: 1, MemoryMB: 2048, StorageMB: 10240}
	if diff := cmp.Diff(want, task.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if task.Name != "simple-task" || task.ID != "simple-task" || !task.HasSolution || !strings.Contains(task.Solution, "hello.txt") {
		t.Errorf("task = %+v", task)
	}
	if diff := cmp.Diff([]BaseImage{{Line: 1, Image: "ubuntu:24.04"}}, BaseImages(task.Dockerfile)); diff != "" {
		t.Errorf("base images (-want +got):\n%s", diff)
	}
}

// TestParseConfigOffline: a task runs without the network only when it says so.
func TestParseConfigOffline(t *testing.T) {
	t.Parallel()
	for toml, want := range map[string]bool{
		"version = \"1.0\"\n": false, "[environment]\nallow_internet = false\n": true,
		"[environment]\nnetwork_mode = \"no-network\"\n": true, "[environment]\nnetwork_mode = \"none\"\n": true,
	} {
		cfg, problems := ParseConfig([]byte(toml))
		if len(problems) != 0 || cfg.Offline != want {
			t.Errorf("%q: offline %t, problems %v; want offline %t", toml, cfg.Offline, problems, want)
		}
	}
}

// TestParseConfigPublicExamples: task.toml files as Harbor's own documentation and public
// task repositories write them (their format checked against the sources, 2026-12-06).
//
//   - Harbor's task format page (https://harborframework.com/docs/task-format): version
//     1.0, [metadata], [verifier] and [agent] timeout_sec, [environment] with
//     build_timeout_sec, cpus, memory_mb, storage_mb — and docker_image, a prebuilt image
//     from a registry, which is refused (agentproof builds environment/Dockerfile and never
//     pulls). Without docker_image it is accepted.
//   - Harbor's task creation guide (mintlify.com/harbor-framework/harbor/guides/creating-tasks):
//     the older memory = "4G" / storage = "10G" spellings, and allow_internet = true,
//     which is refused (no internet here).
//   - A newer task of the format (schema_version "1.2", a [task] table with name and
//     description only; github.com/spacedock-dev/razorback examples/tasks/hello-world,
//     no license stated, so described here, not copied).
func TestParseConfigPublicExamples(t *testing.T) {
	t.Parallel()
	docs := `version = "1.0"

[metadata]
author_name = "Steve Jobs"
author_email = "steve@apple.com"
difficulty = "easy"
category = "programming"
tags = ["trivial"]

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 120.0

[environment]
build_timeout_sec = 600.0
docker_image = "some-org/some-name:some-tag"
cpus = 1
memory_mb = 2048
storage_mb = 10240
`
	_, problems := ParseConfig([]byte(docs))
	if len(problems) != 1 || problems[0].Field != "environment.docker_image" || !strings.Contains(problems[0].Message, "never pulls") {
		t.Errorf("the documented example: problems %v, want only environment.docker_image refused", problems)
	}
	cfg, problems := ParseConfig([]byte(strings.Replace(docs, "docker_image = \"some-org/some-name:some-tag\"\n", "", 1)))
	if len(problems) != 0 || cfg.MemoryMB != 2048 || cfg.StorageMB != 10240 || cfg.AgentTimeoutSec != 120 || cfg.Metadata["difficulty"] != "easy" {
		t.Errorf("the documented example without docker_image: %+v, %v", cfg, problems)
	}
	guide := "version = \"1.0\"\n[environment]\nbuild_timeout_sec = 600.0\ncpus = 2\nmemory = \"4G\"\nstorage = \"10G\"\nallow_internet = true\n"
	cfg, problems = ParseConfig([]byte(guide))
	if len(problems) != 1 || problems[0].Field != "environment.allow_internet" || cfg.MemoryMB != 4096 || cfg.StorageMB != 10240 || cfg.CPUs != 2 {
		t.Errorf("the guide's example: %+v, %v", cfg, problems)
	}
	newer := "schema_version = \"1.2\"\n\n[task]\nname = \"razorback/hello-world\"\ndescription = \"Trivial task.\"\n"
	if cfg, problems = ParseConfig([]byte(newer)); len(problems) != 0 || cfg.Version != "1.2" || cfg.Name != "razorback/hello-world" {
		t.Errorf("the schema 1.2 example: %+v, %v", cfg, problems)
	}
}

// TestParseConfigRefusals: every key or value agentproof cannot honour is a problem
// naming the field in task.toml.
func TestParseConfigRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		toml, field, message string
	}{
		{"[environment]\ndocker_image = \"x@sha256:00\"\n", "environment.docker_image", "never pulls"},
		{"[environment]\nallow_internet = true\n", "environment.allow_internet", "no internet"},
		{"[environment]\nnetwork_mode = \"public\"\n", "environment.network_mode", "no network"},
		{"[environment]\ngpus = 1\n", "environment.gpus", "GPUs"},
		{"[environment]\ncpus = 1.5\n", "environment.cpus", "whole number"},
		{"[environment]\nmemory = \"lots\"\n", "environment.memory", "size such as"},
		{"[environment]\nmemory_mb = 0\n", "environment.memory_mb", "whole number of MiB"},
		{"[environment]\nregion = \"eu\"\n", "environment.region", "not supported"},
		{"[verifier]\nenv = { API_KEY = \"sk-test-123\" }\n", "verifier.env", "API_KEY"},
		{"[solution]\nenv = { TOKEN = \"x\" }\n", "solution.env", "TOKEN"},
		{"[verifier]\ntimeout_sec = -1\n", "verifier.timeout_sec", "more than 0"},
		{"[agent]\ntimeout_sec = \"10\"\n", "agent.timeout_sec", "number of seconds"},
		{"[agent]\nmax_turns = 3\n", "agent.max_turns", "is not supported (known: timeout_sec)"},
		{"[solution]\ntimeout_sec = 3\n", "solution.timeout_sec", "is not supported (known: env)"},
		{"agent = 3\n", "agent", "must be a table"},
		{"[[steps]]\nname = \"one\"\n", "steps", "not supported"},
		{"schema_version = \"2.0\"\n", "schema_version", "only task format 1.x"},
		{"version = 1\n", "version", "version string"},
		{"artifacts = [\"/app/out\"]\n", "artifacts", "not collected"},
		{"[task]\nname = \"\"\n", "task.name", "non-empty"},
		{"metadata = 3\n", "metadata", "table"},
		{"version = \"1.0\"\n[agent\n", "", "not valid TOML"},
	} {
		_, problems := ParseConfig([]byte(tc.toml))
		if len(problems) != 1 || problems[0].Field != tc.field || !strings.Contains(problems[0].Message, tc.message) || problems[0].File != ConfigFile {
			t.Errorf("%q: problems %v, want one on %q saying %q", tc.toml, problems, tc.field, tc.message)
		}
	}
	if _, problems := ParseConfig([]byte(strings.Repeat("#", maxConfig+1))); len(problems) != 1 || !strings.Contains(problems[0].Message, "bytes") {
		t.Errorf("an oversized task.toml: %v", problems)
	}
}

// TestLoadTaskProblems: missing files, an empty instruction, a compose environment and
// a task.toml refusal are all reported at once, each naming its file (and field).
func TestLoadTaskProblems(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"task.toml":                       {Data: []byte("[environment]\ngpus = 2\n")},
		"instruction.md":                  {Data: []byte("  \n")},
		"environment/docker-compose.yaml": {Data: []byte("services: {}\n")},
	}
	_, err := LoadTask(fsys, "tasks/bad")
	var ps *Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err = %v, want *Problems", err)
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		"tasks/bad/task.toml: environment.gpus: is not supported: GPUs are not given to an agent (only 0 is accepted)",
		"tasks/bad/instruction.md: must be UTF-8 text and not empty",
		"tasks/bad/environment/Dockerfile: is missing: every Harbor task has one",
		"tasks/bad/tests/test.sh: is missing: every Harbor task has one",
		"tasks/bad/environment/docker-compose.yaml: a compose environment (several services) is not supported: the task's environment is the one image of environment/Dockerfile",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if _, err := LoadTask(fstest.MapFS{}, "empty"); err == nil || !strings.Contains(err.Error(), "empty/task.toml: is missing") {
		t.Errorf("an empty directory: %v", err)
	}
}

// TestCaseID: task names become catalog ids.
func TestCaseID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"agentproof/fix-greeting": "agentproof-fix-greeting", "Hello World!": "hello-world", "---": "", "a__b": "a-b",
		strings.Repeat("ab-", 40): strings.TrimRight(strings.Repeat("ab-", 40)[:64], "-"),
	} {
		if got := CaseID(in); got != want {
			t.Errorf("CaseID(%q) = %q, want %q", in, got, want)
		}
	}
}

package harbor

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzParseConfig: any bytes parse without a panic, deterministically; every problem
// names task.toml; an accepted configuration has its numbers within their bounds.
// Corpus: testdata/fuzz/FuzzParseConfig.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("version = \"1.0\"\n[agent]\ntimeout_sec = 120.0\n[environment]\nmemory = \"4G\"\ncpus = 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, problems := ParseConfig(data)
		again, problems2 := ParseConfig(data)
		if !reflect.DeepEqual(problems, problems2) || (len(problems) == 0 && !reflect.DeepEqual(cfg, again)) {
			t.Fatalf("not deterministic: %v / %v", problems, problems2)
		}
		for _, p := range problems {
			if p.File != ConfigFile || p.Message == "" {
				t.Fatalf("problem %+v does not name task.toml or say what is wrong", p)
			}
		}
		if len(problems) > 0 {
			return
		}
		for _, s := range []float64{cfg.AgentTimeoutSec, cfg.VerifierTimeoutSec, cfg.BuildTimeoutSec} {
			if s < 0 || s > maxTimeoutSec {
				t.Fatalf("accepted a timeout of %v s", s)
			}
		}
		if cfg.CPUs < 0 || cfg.CPUs > maxCPUs || cfg.MemoryMB < 0 || cfg.MemoryMB > maxSizeMB || cfg.StorageMB < 0 || cfg.StorageMB > maxSizeMB {
			t.Fatalf("accepted resources %+v", cfg)
		}
	})
}

// FuzzLoadTask: a task directory whose task.toml and instruction are any bytes loads or
// is refused with problems, never a panic; a loaded task has a catalog id.
// Corpus: testdata/fuzz/FuzzLoadTask.
func FuzzLoadTask(f *testing.F) {
	f.Add([]byte("[task]\nname = \"org/x\"\n"), []byte("Do it."))
	f.Fuzz(func(t *testing.T, config, instruction []byte) {
		fsys := fstest.MapFS{
			"task.toml": {Data: config}, "instruction.md": {Data: instruction},
			"environment/Dockerfile": {Data: []byte("FROM scratch\n")}, "tests/test.sh": {Data: []byte("exit 0\n")},
		}
		task, err := LoadTask(fsys, "fuzz")
		if err == nil && (task.ID == "" || CaseID(task.ID) != task.ID) {
			t.Fatalf("loaded task with id %q", task.ID)
		}
	})
}

// FuzzBaseImages: any Dockerfile text lists its base images without a panic; each is
// a word of a FROM line it names; replacing every listed image by a fixed local one
// keeps the line count and leaves no listed image but that one.
// Corpus: testdata/fuzz/FuzzBaseImages.
func FuzzBaseImages(f *testing.F) {
	f.Add("FROM ubuntu:24.04 AS build\nRUN x\nFROM build\nFROM --platform=linux/amd64 debian:12\n")
	f.Add("from scratch\n# FROM a\nFROM \\\n  b\nFROM $BASE\n")
	f.Fuzz(func(t *testing.T, dockerfile string) {
		bases := BaseImages(dockerfile)
		lines := strings.Split(dockerfile, "\n")
		m := map[string]string{}
		for _, b := range bases {
			if b.Line < 1 || b.Line > len(lines) || !slices.Contains(strings.Fields(lines[b.Line-1]), b.Image) {
				t.Fatalf("base %+v is not a word of line %d", b, b.Line)
			}
			m[b.Image] = "localhost/fuzz-base"
		}
		out := ReplaceBaseImages(dockerfile, m)
		if n := strings.Count(out, "\n"); n != strings.Count(dockerfile, "\n") {
			t.Fatalf("%d lines became %d", strings.Count(dockerfile, "\n"), n)
		}
		for _, b := range BaseImages(out) {
			if b.Image != "localhost/fuzz-base" {
				t.Fatalf("after replacing, %+v is left in %q", b, out)
			}
		}
	})
}

package harbor

import (
	"reflect"
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

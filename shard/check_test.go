package shard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/result"
)

// TestFindRunsSkipsAttempts: a shard run is found by the plan file of its campaign
// directory; a file of that name inside an attempt directory (evidence an agent could
// have left) is not a run, nor is a plan that records no shard.
func TestFindRunsSkipsAttempts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("shard-1/camp/plan.json", `{"shard": {"index": 1, "count": 2, "fingerprint": "aaa"}}`)
	write("shard-1/camp/core/p/e/c/attempt-1/plan.json", `{"shard": {"index": 2, "count": 2, "fingerprint": "bbb"}}`)
	write("shard-2/camp/plan.json", `{"selection": "all"}`)
	runs, err := FindRuns([]string{filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2"), filepath.Join(root, "shard-1", "camp", "core", "p", "e", "c", "attempt-1")}, "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []Run{{Dir: filepath.Join(root, "shard-1", "camp"), Ref: result.ShardRef{Index: 1, Count: 2, Fingerprint: "aaa"}}}
	if diff := cmp.Diff(want, runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

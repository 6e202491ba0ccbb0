package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// BenchmarkReportMerge1000 is the whole `agentproof report merge` of 1,000 cells run in
// 8 shards, in process: the shard directories' records found, every attempt copied
// into a fresh campaign through the evidence guard, and the campaign reported with the
// report package's fixture catalog (campaign.json, summary.md, junit.xml, ctrf.json,
// the dashboard and index.html, history.json). Each attempt is a copy of that
// package's fixture attempt (its result.json and two evidence files in six
// directories) with its own execution id. Besides wall time per merge it reports the
// process's CPU time per merge (user + system, cpu-ms/op), which a loaded machine does
// not inflate as much.
func BenchmarkReportMerge1000(b *testing.B) {
	src := b.TempDir()
	ids := writeMergeShards(b, src, 1000, 8)
	idsFile := filepath.Join(b.TempDir(), "ids.txt")
	if err := os.WriteFile(idsFile, []byte(strings.Join(ids, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	shards, err := filepath.Glob(filepath.Join(src, "shard-*"))
	if err != nil || len(shards) != 8 {
		b.Fatalf("shards %v: %v", shards, err)
	}
	cat := filepath.Join("..", "..", "report", "testdata", "catalog", "catalog.yaml")
	b.ReportAllocs()
	i, cpu := 0, time.Duration(0)
	for b.Loop() {
		i++
		res := filepath.Join(b.TempDir(), fmt.Sprint(i))
		args := append([]string{"report", "merge", "--expected-ids", idsFile, "--results", res, "--catalog", cat}, shards...)
		var stdout, stderr bytes.Buffer
		before := processCPU(b)
		code := Main(args, nil, &stdout, &stderr)
		cpu += processCPU(b) - before
		// The fixture attempt is a failed cell: every cell fails, exit 1.
		if verdict.ExitCode(code) != ExitFailed || !strings.Contains(stdout.String(), "Merged 1000 attempt(s)") ||
			!strings.Contains(stdout.String(), "0/1000 passed, 1000 failed") {
			b.Fatalf("exit %d: %s\n%s", code, stdout.String(), stderr.String())
		}
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(i), "cpu-ms/op")
}

// writeMergeShards writes n cells' attempts (copies of the report package's fixture
// daytona attempt, each with its own execution id and result.json) into shards shard
// directories under root, the layout `run --shard` leaves, and returns the execution
// ids.
func writeMergeShards(b testing.TB, root string, n, shards int) []string {
	b.Helper()
	fixture := filepath.Join("..", "..", "report", "testdata", "results", "camp-2", "core", "reference", "daytona", "message-marker", "attempt-1")
	files := map[string][]byte{}
	err := filepath.WalkDir(fixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(fixture, p)
		if err == nil {
			files[rel], err = os.ReadFile(p)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(files[result.ResultFile], &doc); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		profile, cs := fmt.Sprintf("p%03d", i/10), fmt.Sprintf("c%d", i%10)
		ids[i] = "core." + profile + ".daytona." + cs
		doc["executionId"], doc["profileId"], doc["caseId"], doc["campaignId"] = ids[i], profile, cs, "bench"
		out, err := json.Marshal(doc)
		if err != nil {
			b.Fatal(err)
		}
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", i%shards), "bench", "core", profile, "daytona", cs, "attempt-1")
		for rel, content := range files {
			if rel == result.ResultFile {
				content = out
			}
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return ids
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/result"
)

// benchShards writes n cells' attempts (copies of the fixture's daytona attempt, each
// with its own execution id, result.json and evidence files) into 8 shard directories
// under root, the layout `run --shard` leaves, and returns the execution ids.
func benchShards(b testing.TB, root string, n int) []string {
	b.Helper()
	src := "testdata/results/camp-2/core/reference/daytona/message-marker/attempt-1"
	raw, err := os.ReadFile(filepath.Join(src, result.ResultFile))
	if err != nil {
		b.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
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
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", i%8), "bench", "core", profile, "daytona", cs, "attempt-1")
		copyDir(b, src, dir, nil)
		if err := os.WriteFile(filepath.Join(dir, result.ResultFile), out, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// BenchmarkMergeShards1000 is `report merge` of 1,000 cells run in 8 shards: every
// attempt directory copied through the evidence guard into a fresh campaign (merge),
// then, in the merge+report variant, the campaign reported (load, validate, choose,
// render, write); the report variant is that report alone, of a campaign merged once
// whose report files are removed before each (no directory made: what the report
// costs without the file system's directory creation, whose cost varies widely on a
// shared disk). Besides
// wall time per merge it reports the process's CPU time per merge (user + system,
// cpu-ms/op), which a loaded machine does not inflate.
func BenchmarkMergeShards1000(b *testing.B) {
	src := b.TempDir()
	ids := benchShards(b, src, 1000)
	b.Run("report", func(b *testing.B) {
		target := b.TempDir()
		if _, err := result.Merge(result.MergeOptions{Sources: []string{src}, ResultsRoot: target, CampaignID: "bench"}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i, cpu := 0, time.Duration(0)
		for b.Loop() {
			i++
			b.StopTimer()
			for _, f := range []string{result.CampaignFile, SummaryFile, JUnitFile, CTRFFile, DashboardFile, IndexFile, "../" + result.HistoryFile} {
				if err := os.Remove(filepath.Join(target, "bench", f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			before := cpuTime(b)
			if _, err := Generate(result.CampaignOptions{ResultsRoot: target, CampaignID: "bench", ExpectedIDs: ids}); err != nil {
				b.Fatal(err)
			}
			cpu += cpuTime(b) - before
		}
		b.ReportMetric(float64(cpu.Milliseconds())/float64(i), "cpu-ms/op")
	})
	for _, withReport := range []bool{false, true} {
		name := "merge"
		if withReport {
			name = "merge+report"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i, cpu := 0, time.Duration(0)
			for b.Loop() {
				i++
				target := filepath.Join(b.TempDir(), fmt.Sprint(i))
				before := cpuTime(b)
				if _, err := result.Merge(result.MergeOptions{Sources: []string{src}, ResultsRoot: target, CampaignID: "bench"}); err != nil {
					b.Fatal(err)
				}
				if withReport {
					if _, err := Generate(result.CampaignOptions{ResultsRoot: target, CampaignID: "bench", ExpectedIDs: ids}); err != nil {
						b.Fatal(err)
					}
				}
				cpu += cpuTime(b) - before
			}
			b.ReportMetric(float64(cpu.Milliseconds())/float64(i), "cpu-ms/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// BenchmarkCellOverhead measures the per-cell harness overhead of `agentproof run` for
// reference × message-marker (goal ≤ 150 ms median): the
// attempt's wall time (result.json durationMs) minus the agent processes' own time
// (the heartbeat records' termination durationMs). It reports the median overhead and
// the median attempt time in ms per cell. Each iteration is one whole `run` of one
// cell in process (the serve child is this test binary).
func BenchmarkCellOverhead(b *testing.B) {
	res := b.TempDir()
	var overhead, attempt []float64
	for i := 0; b.Loop(); i++ {
		id := "b" + strconv.Itoa(i)
		var stdout, stderr bytes.Buffer
		args := []string{"run", "--id", "core-compatibility.reference.local.message-marker", "--results", res, "--campaign", id, "--progress", "none"}
		if code := Main(args, nil, &stdout, &stderr); verdict.ExitCode(code) != ExitOK {
			b.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
		}
		dir := filepath.Join(res, id, "core-compatibility", "reference", "local", "message-marker", "attempt-1")
		cellMs, agentMs := attemptTimes(b, dir)
		overhead = append(overhead, float64(cellMs-agentMs))
		attempt = append(attempt, float64(cellMs))
	}
	b.ReportMetric(median(overhead), "overhead-ms/cell")
	b.ReportMetric(median(attempt), "attempt-ms/cell")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// attemptTimes reads an attempt directory's wall time (result.json durationMs) and the
// sum of its agent processes' durations (snapshots/heartbeat-runs.json), in ms.
func attemptTimes(b *testing.B, dir string) (cellMs, agentMs int64) {
	b.Helper()
	var r struct {
		DurationMs int64 `json:"durationMs"`
	}
	var recs []struct {
		Termination *struct {
			DurationMs int64 `json:"durationMs"`
		} `json:"termination"`
	}
	for name, v := range map[string]any{"result.json": &r, "snapshots/heartbeat-runs.json": &recs} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			b.Fatal(err)
		}
	}
	for _, rec := range recs {
		if rec.Termination != nil {
			agentMs += rec.Termination.DurationMs
		}
	}
	return r.DurationMs, agentMs
}

package heartbeat_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentproof/agentproof/server/heartbeat"
)

// BenchmarkNopRun measures the runner for the nop agent through a real server (goal
// ≤ 20 ms median overhead beyond the process itself). One op: the
// board creates an issue assigned to the agent (the wake), the runner opens the run,
// launches `agent nop`, completes the run, stores the evidence and the record. Metrics
// (medians over the ops):
//
//   - wake-to-start-ms: from the board request that schedules the wake to the process
//     start (the request's own commit included);
//   - overhead-ms: from that request to the run's completion in the control plane
//     (record finishedAt), minus the process's lifetime (supervision included): open
//     run + launch + completion;
//   - recorded-overhead-ms: the same up to the durable record with its evidence files.
func BenchmarkNopRun(b *testing.B) {
	ctx := context.Background()
	in := startInstance(b)
	co := in.company(ctx)
	actor := createAgent(ctx, b, co, map[string]any{"driver": "nop", "driverConfig": map[string]any{"timeoutMs": 60000}})
	var toStart, overhead, recorded []float64
	for b.Loop() {
		t0 := time.Now()
		_, wakes := createIssue(ctx, b, co, "Nop", "", "", actor)
		runID := heartbeat.RunID(co.ID(), wakes[0])
		for {
			rec, found := in.sv.Runner.Run(runID)
			if !found || rec.State != "finished" {
				time.Sleep(100 * time.Microsecond)
				continue
			}
			t1 := time.Now()
			start, err1 := time.Parse(time.RFC3339Nano, rec.ProcessStartedAt)
			end, err2 := time.Parse(time.RFC3339Nano, rec.ProcessEndedAt)
			done, err3 := time.Parse(time.RFC3339Nano, rec.FinishedAt)
			if err1 != nil || err2 != nil || err3 != nil || rec.Termination == nil || !rec.Termination.Started {
				b.Fatalf("record %+v has no process times", rec)
			}
			proc := end.Sub(start)
			toStart = append(toStart, ms(start.Sub(t0)))
			overhead = append(overhead, ms(done.Sub(t0)-proc))
			recorded = append(recorded, ms(t1.Sub(t0)-proc))
			break
		}
	}
	b.ReportMetric(median(toStart), "wake-to-start-ms")
	b.ReportMetric(median(overhead), "overhead-ms")
	b.ReportMetric(median(recorded), "recorded-overhead-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server"
)

// BenchmarkServeReady measures `agentproof serve` on a fresh SQLite home from process
// start to its ready line (a real child process); it reports the median as ms-median
// (goal ≤ 50 ms).
func BenchmarkServeReady(b *testing.B) {
	var ds []time.Duration
	for b.Loop() {
		home := b.TempDir()
		start := time.Now()
		c := startServe(b, home)
		ds = append(ds, time.Since(start))
		b.StopTimer()
		c.cmd.Process.Signal(syscall.SIGTERM)
		c.cmd.Wait()
		b.StartTimer()
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "ms-median")
}

// BenchmarkDurableCommands measures acknowledged (committed, synchronous=FULL)
// commands per second over loopback HTTP against SQLite with 1 and 8 clients (goal
// ≥ 2,000/s with 8).
func BenchmarkDurableCommands(b *testing.B) {
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			ctx := context.Background()
			r, err := server.Start(ctx, server.Options{Home: b.TempDir()}, "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer r.Shutdown(ctx)
			in := &instance{run: r}
			co, err := in.board().CreateFixtureCompany(ctx, controlplane.Seed{})
			if err != nil {
				b.Fatal(err)
			}
			if err := co.Start(ctx); err != nil {
				b.Fatal(err)
			}
			if err := co.OpenRun(ctx, controlplane.OpenInput{Identity: controlplane.Identity{RunID: "run-1", SessionID: "s", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"}, BackendKind: "mock"}); err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			n := int64(b.N)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > n {
							return
						}
						_, err := co.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: fmt.Sprint("k", i),
							Command: json.RawMessage(`{"kind":"report_progress","body":"b"}`)})
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commands/s")
		})
	}
}

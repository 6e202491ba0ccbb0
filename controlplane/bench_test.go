package controlplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/controlplane"
)

// sizedSeed returns a seed with n existing entities of each of three kinds: tasks,
// comments and documents (one revision each).
func sizedSeed(n int) controlplane.Seed {
	seed := controlplane.Seed{}
	seed.Tasks = append(seed.Tasks, &controlplane.Task{ID: "task-1", CompanyID: "company-1", Identifier: "MCK-1", Title: "Active", Status: "todo",
		Priority: "medium", WorkMode: "standard", AssigneeActorID: p("actor-1")})
	for i := 0; i < n; i++ {
		id := "task-x" + strconv.Itoa(i)
		seed.Tasks = append(seed.Tasks, &controlplane.Task{ID: id, CompanyID: "company-1", Identifier: "MCK-X" + strconv.Itoa(i), Title: "Filler",
			Status: "todo", Priority: "low", WorkMode: "standard"})
		seed.Comments = append(seed.Comments, &controlplane.Comment{ID: "comment-x" + strconv.Itoa(i), TaskID: id, Body: "filler", CreatedAt: "2026-08-09T00:00:00.000Z"})
		docID := "document-x" + strconv.Itoa(i)
		seed.Documents = append(seed.Documents, &controlplane.Document{ID: docID, TaskID: id, Key: "notes", Title: "Notes", Format: "markdown",
			LatestRevisionID: "revision-x" + strconv.Itoa(i), Revisions: []*controlplane.DocumentRevision{{ID: "revision-x" + strconv.Itoa(i),
				DocumentID: docID, Revision: 1, Body: "filler", CreatedAt: "2026-08-09T00:00:00.000Z"}}})
	}
	return seed
}

// BenchmarkApplyCommand measures single-threaded ApplyCommand throughput (the dry run
// and the real execution included) for report_progress and write_document with 100
// and 10,000 existing entities of each kind. Goal: ≥ 50,000 commands/s, and the
// 10,000-entity rate within 2× of the 100-entity rate.
func BenchmarkApplyCommand(b *testing.B) {
	for _, kind := range []string{"report_progress", "write_document"} {
		for _, n := range []int{100, 10000} {
			b.Run(fmt.Sprintf("%s/entities=%d", kind, n), func(b *testing.B) {
				ctx := context.Background()
				m := mustMemory(b, sizedSeed(n))
				openRun(b, m, "run-1", "task-1", "actor-1", "src")
				cmds := make([]controlplane.CommandEnvelope, b.N)
				for i := range cmds {
					var c json.RawMessage
					if kind == "report_progress" {
						c = cmd(kind, map[string]any{"body": "progress " + strconv.Itoa(i)})
					} else {
						c = cmd(kind, map[string]any{"key": "doc-" + strconv.Itoa(i), "title": "Doc", "body": "body", "baseRevisionId": nil})
					}
					cmds[i] = controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "key-" + strconv.Itoa(i), Command: c}
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					if _, err := m.ApplyCommand(ctx, cmds[i]); err != nil {
						b.Fatal(err)
					}
				}
				cpu := cpuTime() - cpu0
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commands/s")
				// On a shared machine wall time includes waiting for a core; CPU time
				// (user+system of the process, garbage collector included) does not.
				b.ReportMetric(float64(b.N)/cpu.Seconds(), "commands/cpu-s")
			})
		}
	}
}

// cpuTime returns the user+system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSerializeRestore measures Serialize followed by Restore of a state with
// 10,000 existing entities of each kind.
func BenchmarkSerializeRestore(b *testing.B) {
	ctx := context.Background()
	m := mustMemory(b, sizedSeed(10000))
	openRun(b, m, "run-1", "task-1", "actor-1", "src")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		data, err := m.Serialize(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := controlplane.Restore(data); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
	}
}

// BenchmarkRejectedCommand measures a command that fails after partial work
// (set_dependencies replaces blocker rows, then the in_review → blocked transition is
// illegal) and is rolled back, at 100 and 10,000 existing entities: the undo log makes
// the cost independent of the state size.
func BenchmarkRejectedCommand(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			ctx := context.Background()
			m := mustMemory(b, sizedSeed(n))
			openRun(b, m, "run-1", "task-1", "actor-1", "src")
			if err := apply("review", "request_review", map[string]any{"summary": "r"})(ctx, m); err != nil {
				b.Fatal(err)
			}
			env := controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "k", Command: cmd("set_dependencies", map[string]any{"blockedByTaskIds": []string{"task-x1", "task-x2"}})}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.ApplyCommand(ctx, env); controlplane.CodeOf(err) != "task_transition_illegal" {
					b.Fatal(err)
				}
			}
		})
	}
}

package reference_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentproof/agentproof/agent/reference"
)

// BenchmarkExecuteTurn measures one reference-agent run in process against
// controlplane.Memory: context, session, three steps (two commands, one edit), the
// result and terminal events, completion and the session write.
func BenchmarkExecuteTurn(b *testing.B) {
	ws := b.TempDir()
	i := 0
	for b.Loop() {
		b.StopTimer()
		m := newMemoryB(b)
		runID := fmt.Sprintf("run-%d", i)
		i++
		openB(b, m, runID)
		cfg := reference.Config{Script: singleTurn("MARK"), Workspace: ws, StateDir: b.TempDir()}
		b.StartTimer()
		if _, err := reference.Execute(context.Background(), m, runID, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

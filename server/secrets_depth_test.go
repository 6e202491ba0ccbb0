package server

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestCheckSecretRefsIsLinear: walking a payload for secret references costs memory
// linear in its size, whatever its depth: a 9000-deep array nest (18 KB) allocates a few
// MiB at most (a walk that builds every value's path string allocates over 100 MiB),
// and four times the depth costs about four times as much, not sixteen. Not parallel:
// it reads the process's allocation counter.
func TestCheckSecretRefsIsLinear(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	company, err := s.inst.CreateBoardCompany(ctx, "Deep", "DEEP")
	if err != nil {
		t.Fatal(err)
	}
	allocated := func(depth int) uint64 {
		body := []byte(`{"x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := s.checkSecretRefs(ctx, company, body); err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large, deep := allocated(2000), allocated(8000), allocated(9000)
	t.Logf("allocated: depth 2000 %d B, depth 8000 %d B, depth 9000 %d B", small, large, deep)
	if large > 8*small {
		t.Errorf("four times the depth allocates %.1f times as much (%d B vs %d B): not linear", float64(large)/float64(small), large, small)
	}
	if deep > 16<<20 {
		t.Errorf("a 9000-deep payload allocates %d MiB", deep>>20)
	}
}

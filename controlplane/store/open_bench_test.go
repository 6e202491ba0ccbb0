package store_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/controlplane/store"
)

// BenchmarkOpenSQLite measures what a fresh instance's store costs to open, to decide
// whether a pre-migrated template database copied into place would pay: "migrate"
// opens a new file (goose creates its table and applies the migrations), "template"
// copies an already migrated, closed database file into place and opens it (goose
// finds nothing to do). The two run interleaved in one loop; it reports the median
// wall time of each (ms) and the process's CPU time per open (cpu-ms, getrusage:
// stable on a loaded machine).
func BenchmarkOpenSQLite(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	tmpl := filepath.Join(dir, "template.db")
	in, err := store.OpenSQLite(ctx, tmpl)
	if err != nil {
		b.Fatal(err)
	}
	if err := in.Close(); err != nil {
		b.Fatal(err)
	}
	var wall [2][]float64
	var cpu [2]time.Duration
	for i := 0; b.Loop(); i++ {
		for k := range 2 {
			p := filepath.Join(dir, strconv.Itoa(i)+"-"+strconv.Itoa(k)+".db")
			c0, t0 := cpuNow(b), time.Now()
			if k == 1 {
				copyFile(b, tmpl, p)
			}
			in, err := store.OpenSQLite(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			wall[k] = append(wall[k], float64(time.Since(t0).Microseconds())/1000)
			cpu[k] += cpuNow(b) - c0
			b.StopTimer()
			in.Close()
			b.StartTimer()
		}
	}
	for k, name := range []string{"migrate", "template"} {
		s := slices.Clone(wall[k])
		slices.Sort(s)
		b.ReportMetric(s[len(s)/2], name+"-ms")
		b.ReportMetric(float64(cpu[k].Microseconds())/1000/float64(b.N), name+"-cpu-ms")
	}
}

func copyFile(b *testing.B, from, to string) {
	b.Helper()
	src, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		b.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		b.Fatal(err)
	}
}

func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

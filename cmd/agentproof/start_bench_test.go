package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStart measures the start of one agentproof process (`agentproof version`:
// package initialisation, cobra, one line of output) against an empty Go program built
// by the same toolchain, run interleaved (empty, agentproof, [baseline,] empty, …) so
// that a loaded machine slows every binary alike. Every serve child, fixture child and
// built-in agent of a cell pays this start. It reports the median wall time of each in
// ms (empty-ms, agentproof-ms), their ratio, and, from one GODEBUG=inittrace=1 run, the
// bytes and allocations of package initialisation (init-bytes, init-allocs: stable on a
// noisy machine). With AGENTPROOF_BENCH_BASELINE set to another agentproof binary (for
// example one built from main) it runs that binary in the same rotation and reports
// baseline-ms and its init figures too, so before and after come from one run:
//
//	go build -o /tmp/agentproof-main ./cmd/agentproof   # in the other checkout
//	AGENTPROOF_BENCH_BASELINE=/tmp/agentproof-main go test ./cmd/agentproof -run '^$' -bench BenchmarkStart -benchtime 200x
func BenchmarkStart(b *testing.B) {
	dir := b.TempDir()
	self := filepath.Join(dir, "agentproof")
	build(b, "", self, ".")
	emptySrc := filepath.Join(dir, "empty")
	if err := os.MkdirAll(emptySrc, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(emptySrc, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(emptySrc, "go.mod"), []byte("module empty\n\ngo 1.26\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.bin")
	build(b, emptySrc, empty, ".")

	type bin struct {
		name, path string
		args       []string
		ds         []float64
	}
	bins := []*bin{{name: "empty", path: empty}, {name: "agentproof", path: self, args: []string{"version"}}}
	if base := os.Getenv("AGENTPROOF_BENCH_BASELINE"); base != "" {
		bins = append(bins, &bin{name: "baseline", path: base, args: []string{"version"}})
	}
	type cost struct{ bytes, allocs float64 }
	costs := map[string]cost{}
	for _, x := range bins[1:] {
		by, allocs := initCost(b, x.path, x.args)
		costs[x.name] = cost{by, allocs}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, x := range bins {
			start := time.Now()
			cmd := exec.Command(x.path, x.args...)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s: %v: %s", x.name, err, out)
			}
			x.ds = append(x.ds, float64(time.Since(start).Microseconds())/1000)
		}
	}
	b.StopTimer()
	for name, c := range costs {
		b.ReportMetric(c.bytes, name+"-init-bytes")
		b.ReportMetric(c.allocs, name+"-init-allocs")
	}
	for _, x := range bins {
		b.ReportMetric(median(x.ds), x.name+"-ms")
	}
	b.ReportMetric(median(bins[1].ds)/median(bins[0].ds), "agentproof/empty")
	if len(bins) > 2 {
		b.ReportMetric(median(bins[1].ds)/median(bins[2].ds), "agentproof/baseline")
	}
}

func build(b *testing.B, dir, out, pkg string) {
	b.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v: %s", pkg, err, msg)
	}
}

// initCost runs the binary once with GODEBUG=inittrace=1 and sums the bytes and
// allocations of every package's initialisation.
func initCost(b *testing.B, path string, args []string) (bytes_, allocs float64) {
	b.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GODEBUG=inittrace=1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v: %s", path, err, stderr.String())
	}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init <pkg> @<t> ms, <clock> ms clock, <bytes> bytes, <allocs> allocs
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" {
			continue
		}
		by, err1 := strconv.ParseFloat(f[7], 64)
		al, err2 := strconv.ParseFloat(f[9], 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("unexpected inittrace line %q", sc.Text())
		}
		bytes_ += by
		allocs += al
	}
	return bytes_, allocs
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

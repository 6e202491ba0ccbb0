package worker

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentproof/agentproof/evidence"
)

// BenchmarkRunPass measures the worker's overhead over a bare exec.Command run of the
// same fixture program, both in one benchmark run: each iteration runs the pass fixture
// bare, through Supervise and through Worker.Run (workspace + one fsynced evidence
// record), and reports the mean of each and the ratios run/bare and supervise/bare.
func BenchmarkRunPass(b *testing.B) {
	self := selfPath(b)
	root := b.TempDir()
	store, err := evidence.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	w, err := New(Options{Store: store, WorkspaceRoot: root, Program: self})
	if err != nil {
		b.Fatal(err)
	}
	req := request("pass", 10_000, 65536)
	dir := b.TempDir()
	args := []string{"agentproof", "fixture-child", "pass", "15000"}
	var bare, sup, run time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command(self, args[1:]...)
		cmd.Args[0] = args[0]
		cmd.Env, cmd.Dir = ChildEnvironment(), dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		stdin, err := cmd.StdinPipe() // never written, like the worker's
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		stdin.Close()
		t1 := time.Now()
		o, err := Supervise(context.Background(), Spec{Path: self, Args: args, Env: ChildEnvironment(), Dir: dir, Timeout: 10 * time.Second, MaxOutputBytes: 65536})
		if err != nil || o.ExitCode == nil || *o.ExitCode != 0 {
			b.Fatalf("supervise: %+v %v", o, err)
		}
		t2 := time.Now()
		res, err := w.Run(context.Background(), req)
		if err != nil || res.Status != StatusObserved {
			b.Fatalf("run: %+v %v", res, err)
		}
		t3 := time.Now()
		bare += t1.Sub(t0)
		sup += t2.Sub(t1)
		run += t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(bare.Microseconds())/n, "bare-µs/op")
	b.ReportMetric(float64(sup.Microseconds())/n, "supervise-µs/op")
	b.ReportMetric(float64(run.Microseconds())/n, "run-µs/op")
	b.ReportMetric(float64(sup)/float64(bare), "supervise/bare")
	b.ReportMetric(float64(run)/float64(bare), "run/bare")
}

// BenchmarkNoisyCapture measures capture throughput with a 64 MiB budget: the noisy
// fixture through Supervise until its budget is full (the process is then stopped,
// spawn and settle included), against `cat` of the same number of bytes through a pipe
// read by Go into one buffer, freshly allocated per run (as any capture's memory
// is) and, as the pipe's best case, reused across runs. It reports MB/s of each, the worker's rate as a
// percentage of the pipe's, and the rate when the captured chunks are also joined into
// one slice (Captured.Stdout), as Worker.Run does for the evidence body.
func BenchmarkNoisyCapture(b *testing.B) {
	const budget = 64 << 20
	self := selfPath(b)
	dir := b.TempDir()
	src := filepath.Join(b.TempDir(), "64MiB")
	if err := os.WriteFile(src, bytes.Repeat(noisyBlock()[:1<<10], budget>>10), 0o644); err != nil {
		b.Fatal(err)
	}
	cat, err := exec.LookPath("cat")
	if err != nil {
		b.Fatal(err)
	}
	var worker, pipe, warmPipe, joinCost time.Duration
	warm := make([]byte, 0, budget)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		o, err := Supervise(context.Background(), Spec{
			Path: self, Args: []string{"agentproof", "fixture-child", "noisy", "60000"},
			Env: ChildEnvironment(), Dir: dir, Timeout: 55 * time.Second, MaxOutputBytes: budget,
		})
		if err != nil || !o.OutputExceeded || o.CapturedBytes != budget {
			b.Fatalf("noisy: exceeded=%v captured=%d err=%v", o.OutputExceeded, o.CapturedBytes, err)
		}
		t1 := time.Now()
		worker += t1.Sub(t0)
		if head := o.Output.Stdout(); len(head) != budget || !bytes.HasPrefix(head, []byte("sf-fixture-child/1 fixture=noisy")) {
			b.Fatalf("captured %d bytes starting %q", len(head), head[:min(len(head), 40)])
		}
		joinedAt := time.Now()
		joinCost += joinedAt.Sub(t1)
		t1 = joinedAt
		catPipe(b, cat, src, make([]byte, 0, budget)) // fresh per run, as any capture's memory is
		t2 := time.Now()
		catPipe(b, cat, src, warm[:0]) // reused buffer: the pipe's best case
		warmPipe += time.Since(t2)
		pipe += t2.Sub(t1)
	}
	mb := float64(budget) / 1e6 * float64(b.N)
	b.ReportMetric(mb/worker.Seconds(), "worker-MB/s")
	b.ReportMetric(mb/pipe.Seconds(), "cat-pipe-MB/s")
	b.ReportMetric(100*pipe.Seconds()/worker.Seconds(), "worker-%-of-pipe")
	b.ReportMetric(mb/(worker+joinCost).Seconds(), "worker+join-MB/s")
	b.ReportMetric(mb/warmPipe.Seconds(), "cat-pipe-warm-MB/s")
	b.ReportMetric(100*warmPipe.Seconds()/worker.Seconds(), "worker-%-of-warm-pipe")
}

// catPipe runs cat on src and reads its stdout through a pipe into sink.
func catPipe(b *testing.B, cat, src string, sink []byte) {
	cmd := exec.Command(cat, src)
	cmd.Env = []string{}
	r, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 256<<10)
	for {
		n, err := r.Read(buf)
		sink = append(sink, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil || len(sink) != cap(sink) {
		b.Fatalf("cat: %v, %d bytes", err, len(sink))
	}
}

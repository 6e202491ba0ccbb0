package worker

import (
	"context"
	"testing"
	"time"
)

// BenchmarkRunGuardedPass measures one guarded pass run against one Worker.Run of the
// same fixture in the same benchmark run, and reports both means and the ratio
// guarded/run. Each guarded iteration provisions a workspace, re-hashes the executable
// (drift check), passes the gate (flock + two control records) and stores one record.
func BenchmarkRunGuardedPass(b *testing.B) {
	g := newGuarded(b, "")
	req := g.request("pass", 10_000, 65536)
	var guarded, plain time.Duration
	for b.Loop() {
		ref, err := ProvisionWorkspace(g.root, g.fence)
		if err != nil {
			b.Fatal(err)
		}
		guard := g.guard()
		guard.Workspace = ref
		t0 := time.Now()
		res, err := g.w.RunGuarded(context.Background(), req, guard)
		if err != nil || res.Status != StatusObserved || res.Metadata.Observation.CollectorError != nil {
			b.Fatalf("guarded: %+v %v", res, err)
		}
		t1 := time.Now()
		r, err := g.w.Run(context.Background(), request("pass", 10_000, 65536))
		if err != nil || r.Status != StatusObserved {
			b.Fatalf("run: %+v %v", r, err)
		}
		guarded += t1.Sub(t0)
		plain += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(guarded.Microseconds())/n/1000, "guarded-ms/op")
	b.ReportMetric(float64(plain.Microseconds())/n/1000, "run-ms/op")
	b.ReportMetric(float64(guarded)/float64(plain), "guarded/run")
}

// BenchmarkExecutionManifest measures hashing the executable (the test binary) and the
// embedded sources, the drift check's cost per guarded run.
func BenchmarkExecutionManifest(b *testing.B) {
	self := selfPath(b)
	for b.Loop() {
		if _, err := ExecutionManifestFor(self); err != nil {
			b.Fatal(err)
		}
	}
}

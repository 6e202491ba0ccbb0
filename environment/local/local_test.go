package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/worker"
)

// TestLocalLifecycle: a local lease with a root has a lease file another process can
// read, launches the driver's spec unchanged (a real process runs), and its cleanup
// removes the lease directory, is confirmed, and says what local cannot verify.
func TestLocalLifecycle(t *testing.T) {
	t.Parallel()
	p := New()
	root := t.TempDir()
	ws := t.TempDir()
	l, err := p.Setup(context.Background(), environment.LeaseSpec{EnvironmentID: "local", Root: root, Workspace: ws, Reuse: true})
	if err != nil {
		t.Fatal(err)
	}
	back, err := environment.ReadLeaseFile(l.LeaseFile())
	if err != nil || back.ID != l.ID || back.Provider != environment.ProviderLocal {
		t.Fatalf("lease file: %+v %v", back, err)
	}
	spec := worker.Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "echo hi > out; exit 3"}, Env: []string{"PATH=/usr/bin:/bin"},
		Dir: ws, Timeout: 10 * time.Second, MaxOutputBytes: 1 << 10}
	x, err := p.Launch(context.Background(), back, environment.LaunchRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if x.Spec().Path != spec.Path || strings.Join(x.Spec().Args, " ") != strings.Join(spec.Args, " ") {
		t.Errorf("local changed the spec: %+v", x.Spec())
	}
	o, err := worker.Supervise(context.Background(), x.Spec())
	if err != nil {
		t.Fatal(err)
	}
	s := x.Settle(o)
	if s.Outcome.ExitCode == nil || *s.Outcome.ExitCode != 3 || len(s.Limits) != 0 {
		t.Errorf("settled %+v", s)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out")); string(b) != "hi\n" {
		t.Errorf("the process did not run in the workspace: %q", b)
	}
	r := p.Cleanup(context.Background(), l)
	if !r.Confirmed || len(r.Unverified) == 0 || r.EndedAt.IsZero() {
		t.Errorf("cleanup %+v", r)
	}
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Errorf("the lease directory remains: %v", err)
	}
	if rep := p.Probe(context.Background()); !rep.Available {
		t.Errorf("probe %+v", rep)
	}
	if _, err := p.Setup(context.Background(), environment.LeaseSpec{}); err == nil {
		t.Error("a spec without an environment id was accepted")
	}
}

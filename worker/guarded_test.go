package worker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/assurance"
	"github.com/agentproof/agentproof/evidence"
	"github.com/agentproof/agentproof/internal/raceexit"
	"github.com/agentproof/agentproof/verdict"
)

// genv is a guarded test's fence, controller hold, provisioned workspace and pinned
// execution digest, next to env's workspace root and evidence store.
type genv struct {
	env
	program string
	fence   FenceIdentity
	hold    *FenceHold
	ref     WorkspaceRef
	digest  string
}

// newGuarded provisions everything a guarded run needs for program (the test binary
// when ""), takes the controller hold (released at cleanup) and pins the digest.
func newGuarded(t testing.TB, program string) genv {
	t.Helper()
	if program == "" {
		program = selfPath(t)
	}
	root := t.TempDir()
	store, err := evidence.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Options{Store: store, WorkspaceRoot: root, Program: program})
	if err != nil {
		t.Fatal(err)
	}
	runID := "run-" + regexp.MustCompile(`[^a-z0-9.-]+`).ReplaceAllString(strings.ToLower(t.Name()), "-")
	fence, err := NewFenceIdentity(runID, 3, "worker-test", filepath.Join(t.TempDir(), "fences", "attempt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ProvisionFence(fence); err != nil {
		t.Fatal(err)
	}
	hold, err := Hold(fence)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Release() })
	ref, err := ProvisionWorkspace(root, fence)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ExecutionManifestFor(program)
	if err != nil {
		t.Fatal(err)
	}
	return genv{env: env{root: root, store: store, w: w}, program: program, fence: fence, hold: hold, ref: ref, digest: m.Digest}
}

func (g genv) guard() Guard {
	return Guard{Fence: g.fence, Hold: g.hold, Workspace: g.ref, ExecutionDigest: g.digest}
}

func (g genv) request(fixture string, timeoutMs, maxOutput int64) Request {
	return Request{
		Fixture: fixture, Check: "guarded-test." + fixture, TimeoutMs: timeoutMs, MaxOutputBytes: maxOutput,
		Pins: evidence.Pins{Collector: GuardedFixtureCollector, Environment: "go-test/linux",
			RunID: g.fence.RunID, Epoch: g.fence.Epoch, AttemptID: g.fence.AttemptID},
	}
}

// run runs a guarded fixture and fails the test on a returned error.
func (g genv) run(t *testing.T, ctx context.Context, req Request) GuardedRunResult {
	t.Helper()
	res, err := g.w.RunGuarded(ctx, req, g.guard())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// workspaceUntouched fails unless the provisioned workspace is still there, the same
// directory, and empty.
func (g genv) workspaceUntouched(t *testing.T) {
	t.Helper()
	if err := CheckWorkspace(g.ref); err != nil {
		t.Errorf("workspace: %v", err)
	}
	if empty, first, err := IsWorkspaceEmpty(g.ref); err != nil || !empty {
		t.Errorf("workspace not empty (%q, %v)", first, err)
	}
}

// fenceLockFree reports whether an exclusive flock on the fence file can be taken now
// (and releases it at once).
func fenceLockFree(t *testing.T, fence FenceIdentity) bool {
	t.Helper()
	f, err := os.Open(fence.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = flockNB(f)
	if err != nil && !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return err == nil
}

// TestRunGuardedPass: a healthy guarded pass is observed, Verified, stores exactly one
// record without control records, removes the workspace, runs with exactly
// CHILD_ENVIRONMENT (the gate deleted SF_FIXTURE_GATE_FENCE), and leaves the controller
// hold with the caller.
func TestRunGuardedPass(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, "")
	res := g.run(t, context.Background(), g.request("pass", 60_000, 65536))
	if res.Status != StatusObserved || res.Scope != Scope {
		t.Fatalf("status %q: %s", res.Status, res.Message)
	}
	rec, err := g.store.Get(res.EvidenceID)
	if err != nil {
		t.Fatal(err)
	}
	if ids := g.records(t); len(ids) != 1 {
		t.Errorf("%d records, want 1", len(ids))
	}
	obs := rec.Metadata.Observation
	if obs.CollectorError != nil || obs.ExitCode == nil || *obs.ExitCode != ExitPass {
		t.Errorf("collectorError=%v exit=%v", obs.CollectorError, obs.ExitCode)
	}
	if c := assurance.Classify(rec.Metadata); c.Verdict != verdict.Passed {
		t.Errorf("assurance %+v, want Verified", c)
	}
	if rec.Metadata.Pins != g.request("pass", 1, 1).Pins {
		t.Errorf("pins not stored verbatim: %+v", rec.Metadata.Pins)
	}
	body, err := evidence.ParseLocalFixtureBody(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body.Stdout, []byte("env names: GOMAXPROCS GOMEMLIMIT LANG PATH TZ\n")) {
		t.Errorf("the fixture saw other environment names than CHILD_ENVIRONMENT:\n%s", body.Stdout)
	}
	if bytes.Contains(rec.Body, []byte("sf-fixture-gate")) || bytes.Contains(rec.Body, []byte(g.fence.Nonce)) {
		t.Errorf("control records reached the evidence body:\n%s", rec.Body)
	}
	if res.Termination.Workspace.State != "removed" {
		t.Errorf("workspace %+v", res.Termination.Workspace)
	}
	if _, err := os.Lstat(g.ref.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("workspace still there: %v", err)
	}
	// The hold stays with the caller: live, and nobody else can take it.
	if p := ControllerHoldProblem(g.hold); p != "" {
		t.Errorf("hold after the run: %s", p)
	}
	if h, err := Hold(g.fence); !errors.Is(err, ErrFenceHeld) {
		if h != nil {
			_ = h.Release()
		}
		t.Errorf("a second Hold = %v, want ErrFenceHeld", err)
	}
	// The child's execution lock ended with the child.
	if !fenceLockFree(t, g.fence) {
		t.Errorf("the fence is still locked after the run")
	}
}

// TestRunGuardedChildHoldsFence: while a guarded child runs, it holds the fence itself
// (the execution lock), runs in the provisioned workspace, and the controller hold stays
// with the caller.
func TestRunGuardedChildHoldsFence(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan GuardedRunResult, 1)
	go func() { done <- g.run(t, ctx, g.request("hang", 60_000, 4096)) }()
	var child proc
	if !waitFor(30*time.Second, func() bool {
		for _, p := range processes() {
			if p.cwd == g.ref.Path && strings.Contains(p.cmdline, "fixture-child --gate") {
				child = p
				return !fenceLockFree(t, g.fence)
			}
		}
		return false
	}) {
		t.Fatal("no guarded child holding the fence appeared")
	}
	if child.ppid != os.Getpid() {
		t.Errorf("child parent %d, want %d", child.ppid, os.Getpid())
	}
	// Invariant 1 and 2: fixed arguments derived from the guard, and exactly
	// CHILD_ENVIRONMENT plus the gate's fence identity (as the process was started).
	wantCmd := "agentproof fixture-child --gate " + filepath.Dir(g.fence.Path) + " hang " + strconv.Itoa(60_000+WatchdogMarginMS) + " "
	if child.cmdline != wantCmd {
		t.Errorf("cmdline %q, want %q", child.cmdline, wantCmd)
	}
	want := append(ChildEnvironment(), GateEnv+"="+string(g.fence.label()))
	if raceexit.Var != "" {
		want = append(want, raceexit.Var) // the test binary's own restart (TestMain)
	}
	wantEnv := strings.Join(want, "\x00") + "\x00"
	if child.environ != wantEnv {
		t.Errorf("environ %q, want %q", child.environ, wantEnv)
	}
	if p := ControllerHoldProblem(g.hold); p != "" {
		t.Errorf("hold during the run: %s", p)
	}
	cancel()
	res := <-done
	if res.Status != StatusObserved || !res.Termination.Aborted {
		t.Fatalf("result %+v", res)
	}
	if !fenceLockFree(t, g.fence) {
		t.Errorf("the fence is still locked after the run")
	}
}

func TestRunGuardedRejectsInvalidGuards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(g genv, req *Request, guard *Guard)
		wantErr any
	}{
		{"nil hold", func(_ genv, _ *Request, guard *Guard) { guard.Hold = nil }, new(*GuardError)},
		{"relabelled fence identity on the same file", func(_ genv, _ *Request, guard *Guard) {
			guard.Fence.Nonce = strings.Repeat("ab", 16)
		}, new(*GuardError)},
		{"fence identity for another epoch", func(_ genv, req *Request, guard *Guard) {
			guard.Fence.Epoch, guard.Fence.AttemptID = 4, guard.Fence.RunID+"/4"
			req.Pins.Epoch, req.Pins.AttemptID = 4, req.Pins.RunID+"/4"
		}, new(*GuardError)},
		{"invalid fence identity", func(_ genv, _ *Request, guard *Guard) { guard.Fence.AttemptID = "x/1" }, new(*GuardError)},
		{"workspace of another worker", func(_ genv, _ *Request, guard *Guard) { guard.Workspace.Worker = "other" }, new(*GuardError)},
		{"workspace without inode", func(_ genv, _ *Request, guard *Guard) { guard.Workspace.Inode = 0 }, new(*GuardError)},
		{"malformed digest", func(_ genv, _ *Request, guard *Guard) { guard.ExecutionDigest = "abc" }, new(*GuardError)},
		{"pins for another run", func(_ genv, req *Request, _ *Guard) {
			req.Pins.RunID, req.Pins.AttemptID = "other", "other/3"
		}, new(*GuardError)},
		{"legacy collector", func(_ genv, req *Request, _ *Guard) { req.Pins.Collector = evidence.LocalFixtureCollector }, new(*RequestError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGuarded(t, "")
			req, guard := g.request("pass", 60_000, 4096), g.guard()
			tt.mutate(g, &req, &guard)
			res, err := g.w.RunGuarded(context.Background(), req, guard)
			switch want := tt.wantErr.(type) {
			case **GuardError:
				if !errors.As(err, want) || !strings.HasPrefix(err.Error(), "invalid guard: ") {
					t.Fatalf("err = %v (result %+v), want *GuardError", err, res)
				}
			case **RequestError:
				if !errors.As(err, want) {
					t.Fatalf("err = %v, want *RequestError", err)
				}
			}
			if len(g.records(t)) != 0 {
				t.Errorf("records stored")
			}
			g.workspaceUntouched(t)
			if len(g.rootEntries(t)) != 1 {
				t.Errorf("root holds %v", g.rootEntries(t))
			}
		})
	}
	t.Run("nil context", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, "")
		var rerr *RequestError
		// A nil context is the input under test.
		//lint:ignore SA1012 a nil context is the input under test
		if _, err := g.w.RunGuarded(nil, g.request("pass", 1000, 1000), g.guard()); !errors.As(err, &rerr) { //nolint:staticcheck // SA1012: a nil context is the input under test
			t.Errorf("err = %v", err)
		}
	})
}

// TestFenceRelabelRefused: a relabelled identity on the same fence file is refused by
// Hold, and a fence directory that is not dedicated cannot be provisioned or held.
func TestFenceRelabelRefused(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "fences")
	id, err := NewFenceIdentity("run-a", 1, "w1", filepath.Join(dir, "attempt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ProvisionFence(id); err != nil {
		t.Fatal(err)
	}
	relabelled := id
	relabelled.RunID, relabelled.AttemptID = "run-b", "run-b/1"
	var ferr *FenceError
	if h, err := Hold(relabelled); !errors.As(err, &ferr) || !strings.Contains(err.Error(), "relabelled") {
		if h != nil {
			_ = h.Release()
		}
		t.Errorf("Hold(relabelled) = %v, want a *FenceError naming the relabelling", err)
	}
	if err := ProvisionFence(relabelled); !errors.As(err, &ferr) {
		t.Errorf("provisioning over an existing fence = %v, want *FenceError", err)
	}
	if got, err := ReadFenceLabel(id.Path); err != nil || got != id {
		t.Errorf("label = %+v, %v; want the original identity", got, err)
	}
	h, err := Hold(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "intruder"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if h, err := Hold(id); !errors.As(err, &ferr) || !strings.Contains(err.Error(), "not dedicated") {
		if h != nil {
			_ = h.Release()
		}
		t.Errorf("Hold in a shared directory = %v, want *FenceError", err)
	}
}

func TestParseFenceIdentity(t *testing.T) {
	t.Parallel()
	good := FenceIdentity{RunID: "run-1", Epoch: 2, AttemptID: "run-1/2", Worker: "w", Nonce: strings.Repeat("0f", 16), Path: "/tmp/f/fence"}
	tests := []struct {
		name     string
		mutate   func(*FenceIdentity)
		problems int
	}{
		{"valid", func(*FenceIdentity) {}, 0},
		{"attempt id", func(f *FenceIdentity) { f.AttemptID = "run-1/3" }, 1},
		{"negative epoch", func(f *FenceIdentity) { f.Epoch, f.AttemptID = -1, "run-1/-1" }, 1},
		{"upper-case nonce", func(f *FenceIdentity) { f.Nonce = strings.Repeat("0F", 16) }, 1},
		{"relative path", func(f *FenceIdentity) { f.Path = "f/fence" }, 1},
		{"journal name", func(f *FenceIdentity) { f.Path = "/tmp/f/fence-journal" }, 1},
		{"unclean path", func(f *FenceIdentity) { f.Path = "/tmp/f/../fence" }, 1},
		{"empty", func(f *FenceIdentity) { *f = FenceIdentity{} }, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := good
			tt.mutate(&id)
			_, err := ParseFenceIdentity(id)
			var ferr *FenceError
			switch {
			case tt.problems == 0 && err != nil:
				t.Errorf("err = %v", err)
			case tt.problems > 0 && (!errors.As(err, &ferr) || len(ferr.Problems) != tt.problems):
				t.Errorf("err = %v, want %d problems", err, tt.problems)
			}
		})
	}
}

// TestRunGuardedWorkspaceBeforeRun: a provisioned workspace written into or swapped
// before the launch starts nothing, stores nothing and preserves every directory and
// its contents.
func TestRunGuardedWorkspaceBeforeRun(t *testing.T) {
	t.Parallel()
	t.Run("written into", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, "")
		left := filepath.Join(g.ref.Path, "planted.txt")
		if err := os.WriteFile(left, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		res := g.run(t, context.Background(), g.request("pass", 60_000, 4096))
		if res.Status != StatusNotStarted || res.Reason != ReasonSetupFailed || !strings.Contains(res.Message, "not empty") {
			t.Fatalf("result %+v", res)
		}
		if got, err := os.ReadFile(left); err != nil || string(got) != "keep" {
			t.Errorf("content not preserved: %q %v", got, err)
		}
		if len(g.records(t)) != 0 {
			t.Errorf("records stored")
		}
	})
	t.Run("swapped", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, "")
		moved := g.ref.Path + ".moved"
		if err := os.Rename(g.ref.Path, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(g.ref.Path, 0o700); err != nil {
			t.Fatal(err)
		}
		res := g.run(t, context.Background(), g.request("pass", 60_000, 4096))
		if res.Status != StatusNotStarted || res.Reason != ReasonSetupFailed || !strings.Contains(res.Message, "swapped") {
			t.Fatalf("result %+v", res)
		}
		for _, d := range []string{g.ref.Path, moved} {
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				t.Errorf("%s not preserved: %v", d, err)
			}
		}
		if len(g.records(t)) != 0 {
			t.Errorf("records stored")
		}
	})
	t.Run("fence directory shared", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, "")
		if err := os.WriteFile(filepath.Join(filepath.Dir(g.fence.Path), "other"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		res := g.run(t, context.Background(), g.request("pass", 60_000, 4096))
		if res.Status != StatusNotStarted || res.Reason != ReasonSetupFailed || !strings.Contains(res.Message, "not dedicated") {
			t.Fatalf("result %+v", res)
		}
		g.workspaceUntouched(t)
	})
}

// TestRunGuardedWorkspaceDuringRun: a workspace written into or swapped while the child
// runs is quarantined, never removed, with every directory and its contents preserved.
func TestRunGuardedWorkspaceDuringRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tamper func(t *testing.T, g genv) []string // returns paths that must survive
		reason string
	}{
		{"written into", func(t *testing.T, g genv) []string {
			p := filepath.Join(g.ref.Path, "left-behind.txt")
			if err := os.WriteFile(p, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{p}
		}, "unexpected workspace content"},
		{"swapped", func(t *testing.T, g genv) []string {
			moved := g.ref.Path + ".moved"
			if err := os.Rename(g.ref.Path, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(g.ref.Path, 0o700); err != nil {
				t.Fatal(err)
			}
			return []string{moved, g.ref.Path}
		}, "swapped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGuarded(t, "")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan GuardedRunResult, 1)
			go func() { done <- g.run(t, ctx, g.request("hang", 60_000, 4096)) }()
			if !waitFor(30*time.Second, func() bool { return !fenceLockFree(t, g.fence) }) {
				t.Fatal("the guarded child never took the fence")
			}
			keep := tt.tamper(t, g)
			cancel()
			res := <-done
			ws := res.Termination.Workspace
			if res.Status != StatusObserved || ws.State != "quarantined" || ws.Path != g.ref.Path || !strings.Contains(ws.Reason, tt.reason) {
				t.Fatalf("status %q workspace %+v, want quarantined (%s)", res.Status, ws, tt.reason)
			}
			for _, p := range keep {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s not preserved: %v", p, err)
				}
			}
			if c := assurance.Classify(*res.Metadata); c.Verdict == verdict.Passed {
				t.Errorf("a quarantined run is Verified")
			}
		})
	}
}

// TestRunGuardedGateFaults: the exit status is a fixture outcome only when the control
// pipe carried exactly admission + payload; otherwise the collector error names what
// happened and the run is never Verified.
func TestRunGuardedGateFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fault     string
		fixture   string
		timeoutMs int64
		want      string
		timedOut  bool
	}{
		{"gate death before admission", faultDieBeforeAdmission, "pass", 60_000, "died before admission", false},
		{"timeout before admission", faultSlowAdmission, "pass", 1_000, "died before admission", true},
		{"program never loaded", faultNeverLoaded, "pass", 60_000, "never confirmed to start", false},
		{"broken entry", faultBrokenEntry, "pass", 60_000, "never confirmed to start", false},
		{"malformed records", faultMalformed, "pass", 60_000, "malformed control records", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGuarded(t, faultProgram(t, tt.fault))
			res := g.run(t, context.Background(), g.request(tt.fixture, tt.timeoutMs, 65536))
			if res.Status != StatusObserved {
				t.Fatalf("status %q reason %q: %s", res.Status, res.Reason, res.Message)
			}
			obs := res.Metadata.Observation
			if obs.CollectorError == nil || !strings.Contains(*obs.CollectorError, tt.want) {
				t.Fatalf("collectorError = %v, want %q", obs.CollectorError, tt.want)
			}
			if obs.TimedOut != tt.timedOut {
				t.Errorf("timedOut = %v", obs.TimedOut)
			}
			if c := assurance.Classify(*res.Metadata); c.Verdict != verdict.Inconclusive {
				t.Errorf("assurance %+v, want Inconclusive", c)
			}
			if bytes.Contains(res.Body, []byte("sf-fixture-gate")) {
				t.Errorf("control records reached the body:\n%s", res.Body)
			}
			if len(g.records(t)) != 1 {
				t.Errorf("want exactly one record")
			}
		})
	}
}

// TestRunGuardedFenceHeldElsewhere: when another process holds the fence, the gate
// refuses (exit 123, reported as a collector error), the fixture never runs, and the
// run is Inconclusive, never a pass.
func TestRunGuardedFenceHeldElsewhere(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, "")
	// A second process holds the fence: flock(1) keeps it until its stdin closes.
	holder := startFenceHolder(t, g.fence.Path)
	defer holder()
	res := g.run(t, context.Background(), g.request("pass", 60_000, 65536))
	if res.Status != StatusObserved {
		t.Fatalf("status %q: %s", res.Status, res.Message)
	}
	obs := res.Metadata.Observation
	if obs.ExitCode == nil || *obs.ExitCode != GateRefusedExit {
		t.Errorf("exit = %v, want %d", obs.ExitCode, GateRefusedExit)
	}
	if obs.CollectorError == nil || !strings.Contains(*obs.CollectorError, "gate: refused: the fence is held by another process") {
		t.Errorf("collectorError = %v", obs.CollectorError)
	}
	if c := assurance.Classify(*res.Metadata); c.Verdict != verdict.Inconclusive {
		t.Errorf("assurance %+v, want Inconclusive", c)
	}
	if bytes.Contains(res.Body, []byte("sf-fixture-child/1")) {
		t.Errorf("fixture code ran despite the refusal:\n%s", res.Body)
	}
}

// startFenceHolder starts a separate process that holds an exclusive flock on path
// (flock(1) running cat, which exits when its stdin closes), waits until the lock is
// taken, and returns a function that ends it.
func startFenceHolder(t *testing.T, path string) func() {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.StartProcess("/usr/bin/flock", []string{"flock", "--exclusive", path, "/bin/cat"},
		&os.ProcAttr{Env: ChildEnvironment(), Files: []*os.File{r, nil, os.Stderr}})
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		t.Fatal(err)
	}
	stop := func() { _ = w.Close(); _, _ = p.Wait() }
	if !waitFor(30*time.Second, func() bool {
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		return errors.Is(flockNB(f), syscall.EWOULDBLOCK)
	}) {
		stop()
		t.Fatal("flock(1) never took the fence")
	}
	return stop
}

// TestRunGuardedWithoutLiveHold: without a live controller hold nothing is spawned,
// stored or removed.
func TestRunGuardedWithoutLiveHold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lose func(t *testing.T, g genv)
		want string
	}{
		{"released", func(t *testing.T, g genv) { _ = g.hold.Release() }, "released"},
		{"hold file replaced", func(t *testing.T, g genv) {
			j := g.fence.Path + JournalSuffix
			if err := os.Remove(j); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(j, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "hold file was removed or replaced"},
		// The check at call start comes first: a drifted program is not even hashed.
		{"released, program drifted", func(t *testing.T, g genv) {
			_ = g.hold.Release()
			if err := os.WriteFile(g.program, []byte("drifted"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "released"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGuarded(t, copyProgram(t, filepath.Join(t.TempDir(), "agentproof")))
			tt.lose(t, g)
			res := g.run(t, context.Background(), g.request("pass", 60_000, 4096))
			if res.Status != StatusNotStarted || res.Reason != ReasonOwnershipLost || !strings.Contains(res.Message, tt.want) {
				t.Fatalf("result %+v", res)
			}
			if len(g.records(t)) != 0 {
				t.Errorf("records stored")
			}
			g.workspaceUntouched(t)
			if !fenceLockFree(t, g.fence) {
				t.Errorf("something took the fence")
			}
		})
	}
}

// releasingStore releases a hold while a write is in flight, then stores for real.
type releasingStore struct {
	*evidence.Store
	hold *FenceHold
	once sync.Once
}

func (s *releasingStore) Put(meta evidence.Metadata, body []byte) (string, error) {
	s.once.Do(func() { _ = s.hold.Release() })
	return s.Store.Put(meta, body)
}

// TestRunGuardedHoldEndsWhileStoring: a hold that ends while Evidence is stored yields
// ownership-lost carrying that write's evidence id; a hold that ends during the run
// yields ownership-lost with no write and no removal.
func TestRunGuardedHoldEndsWhileStoring(t *testing.T) {
	t.Parallel()
	t.Run("during the store write", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, "")
		w, err := New(Options{Store: &releasingStore{Store: g.store, hold: g.hold}, WorkspaceRoot: g.root, Program: g.program})
		if err != nil {
			t.Fatal(err)
		}
		res, err := w.RunGuarded(context.Background(), g.request("pass", 60_000, 4096), g.guard())
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusOwnershipLost || res.EvidenceID == "" || !strings.Contains(res.Message, "released") {
			t.Fatalf("result %+v", res)
		}
		if ids := g.records(t); len(ids) != 1 || ids[0] != res.EvidenceID {
			t.Errorf("records %v, want exactly the in-flight write %s", ids, res.EvidenceID)
		}
	})
	t.Run("during the run", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, "")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan GuardedRunResult, 1)
		go func() { done <- g.run(t, ctx, g.request("hang", 60_000, 4096)) }()
		if !waitFor(30*time.Second, func() bool { return !fenceLockFree(t, g.fence) }) {
			t.Fatal("the guarded child never took the fence")
		}
		_ = g.hold.Release()
		cancel()
		res := <-done
		if res.Status != StatusOwnershipLost || res.EvidenceID != "" || res.Termination == nil {
			t.Fatalf("result %+v", res)
		}
		if len(g.records(t)) != 0 {
			t.Errorf("a controller that lost ownership stored something")
		}
		if res.Termination.Workspace.State != "quarantined" {
			t.Errorf("workspace %+v", res.Termination.Workspace)
		}
		if _, err := os.Stat(g.ref.Path); err != nil {
			t.Errorf("a controller that lost ownership removed the workspace: %v", err)
		}
	})
}

// TestRunGuardedDrift: replacing the executable between the pin and the launch returns
// not-started / drift and spawns nothing.
func TestRunGuardedDrift(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		replace func(t *testing.T, program string)
	}{
		{"one byte appended", func(t *testing.T, program string) {
			f, err := os.OpenFile(program, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte{0}); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by another build", func(t *testing.T, program string) {
			data, err := os.ReadFile(program)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 0xff
			tmp := program + ".new"
			if err := os.WriteFile(tmp, data, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, program); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			program := copyProgram(t, filepath.Join(t.TempDir(), "agentproof"))
			g := newGuarded(t, program) // pins the digest of the copy
			tt.replace(t, program)
			res := g.run(t, context.Background(), g.request("pass", 60_000, 4096))
			if res.Status != StatusNotStarted || res.Reason != ReasonDrift || res.Termination != nil {
				t.Fatalf("result %+v, want not-started/drift", res)
			}
			if len(g.records(t)) != 0 {
				t.Errorf("records stored")
			}
			g.workspaceUntouched(t)
			for _, p := range processes() {
				if p.cwd == g.ref.Path {
					t.Errorf("a process runs in the workspace: %+v", p)
				}
			}
		})
	}
	t.Run("changed after hashing, before the fork", func(t *testing.T) {
		t.Parallel()
		program := copyProgram(t, filepath.Join(t.TempDir(), "agentproof"))
		_, stamp, err := manifestFor(program)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkExecutableUnchanged(program, stamp); err != nil {
			t.Fatalf("unchanged program: %v", err)
		}
		f, err := os.OpenFile(program, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{0x7f}, 0); err != nil { // same bytes, new mtime/ctime
			t.Fatal(err)
		}
		_ = f.Close()
		if err := checkExecutableUnchanged(program, stamp); err == nil {
			t.Errorf("a rewritten executable passes the launch-window check")
		}
	})
}

// TestRunGuardedNotStarted covers the remaining not-started outcomes: a missing program,
// a file that is not an executable, and an abort before the spawn.
func TestRunGuardedNotStarted(t *testing.T) {
	t.Parallel()
	t.Run("missing program", func(t *testing.T) {
		t.Parallel()
		program := copyProgram(t, filepath.Join(t.TempDir(), "agentproof"))
		g := newGuarded(t, program)
		if err := os.Remove(program); err != nil {
			t.Fatal(err)
		}
		res := g.run(t, context.Background(), g.request("pass", 60_000, 4096))
		if res.Status != StatusNotStarted || res.Reason != ReasonSetupFailed || !strings.Contains(res.Message, "execution manifest") {
			t.Fatalf("result %+v", res)
		}
		g.workspaceUntouched(t)
	})
	t.Run("not an executable", func(t *testing.T) {
		t.Parallel()
		program := filepath.Join(t.TempDir(), "agentproof")
		writeExecutable(t, program, []byte("\x00\x01 not a program"))
		g := newGuarded(t, program)
		res := g.run(t, context.Background(), g.request("pass", 60_000, 4096))
		if res.Status != StatusNotStarted || res.Reason != ReasonSetupFailed || !strings.HasPrefix(res.Message, "spawn-failed: ") || !strings.Contains(res.Message, "exec format error") {
			t.Fatalf("result %+v", res)
		}
		if len(g.records(t)) != 0 {
			t.Errorf("records stored")
		}
		g.workspaceUntouched(t)
	})
	t.Run("abort before spawn", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, "")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := g.run(t, ctx, g.request("pass", 60_000, 4096))
		if res.Status != StatusNotStarted || res.Reason != ReasonAborted {
			t.Fatalf("result %+v", res)
		}
		g.workspaceUntouched(t)
	})
}

// TestRunGuardedBounds: the guarded path keeps the time and output bounds; control
// records never count towards the output budget.
func TestRunGuardedBounds(t *testing.T) {
	t.Parallel()
	t.Run("hang times out", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, "")
		res := g.run(t, context.Background(), g.request("hang", 2_000, 4096))
		term := res.Termination
		if res.Status != StatusObserved || !term.TimedOut || term.ExitCode != nil || len(term.SignalsSent) == 0 {
			t.Fatalf("status %q termination %+v", res.Status, term)
		}
		if c := assurance.Classify(*res.Metadata); c.Verdict != verdict.Inconclusive {
			t.Errorf("assurance %+v", c)
		}
	})
	t.Run("noisy exceeds the budget", func(t *testing.T) {
		t.Parallel()
		g := newGuarded(t, "")
		res := g.run(t, context.Background(), g.request("noisy", 60_000, 65536))
		term := res.Termination
		if res.Status != StatusObserved || !term.OutputExceeded || term.CapturedBytes != 65536 {
			t.Fatalf("status %q termination %+v", res.Status, term)
		}
		ce := res.Metadata.Observation.CollectorError
		if ce == nil || !strings.Contains(*ce, "output exceeded") || strings.Contains(*ce, "gate:") {
			t.Errorf("collectorError = %v, want only the overflow", ce)
		}
		body, err := evidence.ParseLocalFixtureBody(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(body.Stdout, []byte("sf-fixture-child/1 fixture=noisy")) {
			t.Errorf("stdout does not start with the fixture's report: %q", body.Stdout[:min(60, len(body.Stdout))])
		}
	})
}

package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/evidence"
)

// env is a test's private workspace root and evidence store.
type env struct {
	root  string
	store *evidence.Store
	w     *Worker
}

func newEnv(t *testing.T) env {
	t.Helper()
	root := t.TempDir()
	store, err := evidence.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Options{Store: store, WorkspaceRoot: root, Program: selfPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	return env{root: root, store: store, w: w}
}

func (e env) records(t *testing.T) []string {
	t.Helper()
	ids, err := e.store.List()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (e env) rootEntries(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(e.root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	return names
}

func request(fixture string, timeoutMs, maxOutput int64) Request {
	return Request{Fixture: fixture, Pins: testPins(), Check: "worker-test." + fixture, TimeoutMs: timeoutMs, MaxOutputBytes: maxOutput}
}

func TestRunFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		req       Request
		check     func(t *testing.T, term *TerminationSummary, obs evidence.ProcessObservation, body evidence.LocalFixtureBody)
		wantClean bool
	}{
		{"pass", request("pass", 60_000, 65536), func(t *testing.T, term *TerminationSummary, obs evidence.ProcessObservation, body evidence.LocalFixtureBody) {
			if term.ExitCode == nil || *term.ExitCode != ExitPass || term.Signal != nil {
				t.Errorf("exit = %v signal %v, want 0", term.ExitCode, term.Signal)
			}
			out := string(body.Stdout)
			if !strings.Contains(out, "env names: GOMAXPROCS GOMEMLIMIT LANG PATH TZ\n") {
				t.Errorf("child did not see exactly CHILD_ENVIRONMENT's names:\n%s", out)
			}
			if strings.Contains(out, "/usr/bin") || strings.Contains(out, "UTC") || strings.Contains(out, "64MiB") {
				t.Errorf("child printed environment values:\n%s", out)
			}
			if !strings.Contains(out, "denied: new-privileges (NoNewPrivs=1)") {
				t.Errorf("child did not report its denied capabilities:\n%s", out)
			}
		}, true},
		{"fail", request("fail", 60_000, 65536), func(t *testing.T, term *TerminationSummary, obs evidence.ProcessObservation, body evidence.LocalFixtureBody) {
			if term.ExitCode == nil || *term.ExitCode != ExitFail {
				t.Errorf("exit = %v, want 1", term.ExitCode)
			}
			if !bytes.Contains(body.Stderr, []byte("failing on purpose")) {
				t.Errorf("stderr = %q", body.Stderr)
			}
		}, true},
		{"hang times out", request("hang", 300, 65536), func(t *testing.T, term *TerminationSummary, obs evidence.ProcessObservation, body evidence.LocalFixtureBody) {
			if !term.TimedOut || term.ExitCode != nil || term.Signal == nil {
				t.Errorf("timedOut=%v exit=%v signal=%v, want a timeout ended by a signal", term.TimedOut, term.ExitCode, term.Signal)
			}
			// SIGTERM can stop the child before it ignores SIGTERM (keep that tolerance).
			if len(term.SignalsSent) == 0 || term.SignalsSent[0] != "SIGTERM" {
				t.Errorf("signalsSent = %v, want SIGTERM first", term.SignalsSent)
			}
			if *term.Signal == "SIGKILL" && !slices.Equal(term.SignalsSent, []string{"SIGTERM", "SIGKILL"}) {
				t.Errorf("killed by SIGKILL but signalsSent = %v", term.SignalsSent)
			}
			if !term.Exited || !term.StdioClosed {
				t.Errorf("exited=%v stdioClosed=%v, want both confirmed", term.Exited, term.StdioClosed)
			}
		}, false},
		{"noisy exceeds the budget", request("noisy", 60_000, 1<<20), func(t *testing.T, term *TerminationSummary, obs evidence.ProcessObservation, body evidence.LocalFixtureBody) {
			if !term.OutputExceeded || term.CapturedBytes != 1<<20 || term.OutputBytes <= 1<<20 {
				t.Errorf("outputExceeded=%v captured=%d received=%d", term.OutputExceeded, term.CapturedBytes, term.OutputBytes)
			}
			if obs.CollectorError == nil || !strings.Contains(*obs.CollectorError, "output exceeded") {
				t.Errorf("collectorError = %v", obs.CollectorError)
			}
			// the head is kept and the truncation is said, never only the tail.
			if !bytes.HasPrefix(body.Stdout, []byte("sf-fixture-child/1 fixture=noisy")) || body.TruncatedAt != 1<<20 {
				t.Errorf("body head %q truncatedAt %d", body.Stdout[:min(40, len(body.Stdout))], body.TruncatedAt)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			res, err := e.w.Run(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != StatusObserved || res.Scope != Scope {
				t.Fatalf("status %q scope %q: %s", res.Status, res.Scope, res.Message)
			}
			rec, err := e.store.Get(res.EvidenceID)
			if err != nil {
				t.Fatal(err)
			}
			if ids := e.records(t); len(ids) != 1 {
				t.Errorf("%d records stored, want exactly one", len(ids))
			}
			if !bytes.HasPrefix(rec.Body, []byte("sf-local-fixture/1 fixture="+tt.req.Fixture+"\n")) {
				t.Errorf("body starts %q", rec.Body[:min(60, len(rec.Body))])
			}
			body, err := evidence.ParseLocalFixtureBody(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Metadata.Pins != tt.req.Pins || rec.Metadata.Check != tt.req.Check {
				t.Errorf("pins/check not stored verbatim: %+v %q", rec.Metadata.Pins, rec.Metadata.Check)
			}
			term := res.Termination
			if term.CapturedBytes > tt.req.MaxOutputBytes {
				t.Errorf("captured %d > budget %d", term.CapturedBytes, tt.req.MaxOutputBytes)
			}
			obs := rec.Metadata.Observation
			// Invariant 9: never a false clean exit.
			if !tt.wantClean && !obs.TimedOut && obs.CollectorError == nil {
				t.Errorf("an interrupted run looks clean: %+v", obs)
			}
			if tt.wantClean && obs.CollectorError != nil {
				t.Errorf("collectorError = %q", *obs.CollectorError)
			}
			if term.Workspace.State != "removed" || len(e.rootEntries(t)) != 0 {
				t.Errorf("workspace %+v, root holds %v", term.Workspace, e.rootEntries(t))
			}
			if alive(term.PID) {
				t.Errorf("process %d still alive after Run returned", term.PID)
			}
			tt.check(t, term, obs, body)
		})
	}
}

func TestRunRejectsInvalidRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		mutate   func(*Request)
		problems int
	}{
		{"unknown fixture", func(r *Request) { r.Fixture = "sleep" }, 1},
		{"zero timeout", func(r *Request) { r.TimeoutMs = 0 }, 1},
		{"negative timeout", func(r *Request) { r.TimeoutMs = -5 }, 1},
		{"timeout too long", func(r *Request) { r.TimeoutMs = MaxTimeoutMS + 1 }, 1},
		{"zero budget", func(r *Request) { r.MaxOutputBytes = 0 }, 1},
		{"budget too big", func(r *Request) { r.MaxOutputBytes = MaxOutputBytes + 1 }, 1},
		{"wrong collector", func(r *Request) { r.Pins.Collector = "sf-guarded-fixture/1" }, 1},
		{"bad check", func(r *Request) { r.Check = "Has Space" }, 1},
		{"everything wrong at once", func(r *Request) { *r = Request{} }, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			req := request("pass", 1000, 1000)
			tt.mutate(&req)
			_, err := e.w.Run(context.Background(), req)
			var rerr *RequestError
			if !errors.As(err, &rerr) {
				t.Fatalf("err = %v, want *RequestError", err)
			}
			if len(rerr.Problems) != tt.problems {
				t.Errorf("problems %q, want %d", rerr.Problems, tt.problems)
			}
			if len(e.rootEntries(t)) != 0 || len(e.records(t)) != 0 {
				t.Errorf("an invalid request created something")
			}
		})
	}
	var rerr *RequestError
	// A nil context is the input under test.
	//lint:ignore SA1012 a nil context is the input under test
	if _, err := newEnv(t).w.Run(nil, request("pass", 1000, 1000)); !errors.As(err, &rerr) { //nolint:staticcheck // SA1012: a nil context is the input under test
		t.Errorf("nil ctx: err = %v, want *RequestError", err)
	}
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	store, err := evidence.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want int
	}{
		{"no store", Options{WorkspaceRoot: "/tmp"}, 1},
		{"relative root", Options{Store: store, WorkspaceRoot: "tmp/ws"}, 1},
		{"nul root", Options{Store: store, WorkspaceRoot: "/tmp/a\x00b"}, 1},
		{"long root", Options{Store: store, WorkspaceRoot: "/" + strings.Repeat("a", 4100)}, 1},
		{"relative program", Options{Store: store, Program: "agentproof"}, 1},
		{"all wrong", Options{WorkspaceRoot: "x", Program: "y"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.opts)
			var oerr *OptionsError
			if !errors.As(err, &oerr) || len(oerr.Problems) != tt.want {
				t.Errorf("err = %v, want *OptionsError with %d problems", err, tt.want)
			}
		})
	}
}

func TestRunNotStarted(t *testing.T) {
	t.Parallel()
	t.Run("missing workspace root", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w, err := New(Options{Store: e.store, WorkspaceRoot: filepath.Join(e.root, "missing"), Program: selfPath(t)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := w.Run(context.Background(), request("pass", 1000, 1000))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusNotStarted || res.Reason != ReasonSetupFailed || res.Termination != nil {
			t.Errorf("result %+v, want not-started/setup-failed", res)
		}
		if len(e.records(t)) != 0 {
			t.Errorf("something was stored")
		}
	})
	t.Run("abort before spawn", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res, err := e.w.Run(ctx, request("pass", 1000, 1000))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusNotStarted || res.Reason != ReasonAborted {
			t.Errorf("result %+v, want not-started/aborted", res)
		}
		if len(e.records(t)) != 0 || len(e.rootEntries(t)) != 0 {
			t.Errorf("an aborted run left records %v or directories %v", e.records(t), e.rootEntries(t))
		}
	})
	t.Run("spawn failed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w, err := New(Options{Store: e.store, WorkspaceRoot: e.root, Program: filepath.Join(e.root, "no-such-program")})
		if err != nil {
			t.Fatal(err)
		}
		res, err := w.Run(context.Background(), request("pass", 1000, 1000))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusNotStarted || res.Reason != ReasonSetupFailed || !strings.HasPrefix(res.Message, "spawn-failed: ") {
			t.Errorf("result %+v, want not-started/setup-failed spawn-failed", res)
		}
		if len(e.records(t)) != 0 || len(e.rootEntries(t)) != 0 {
			t.Errorf("a failed spawn left records or directories")
		}
	})
}

// workspaceOfRunningChild waits for the run's workspace and for a child process whose
// working directory it is, and returns both.
func workspaceOfRunningChild(t *testing.T, root string) (string, proc) {
	t.Helper()
	var dir string
	var child proc
	ok := waitFor(30*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(root, workspacePrefix+"*"))
		if len(m) != 1 {
			return false
		}
		dir = m[0]
		for _, p := range processes() {
			if p.cwd == dir && strings.Contains(p.cmdline, "fixture-child") {
				child = p
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no running fixture child appeared under %s", root)
	}
	return dir, child
}

func TestRunAbortDuringRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		res, err := e.w.Run(ctx, request("hang", 60_000, 4096))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	workspaceOfRunningChild(t, e.root)
	cancel()
	res := <-done
	if res.Status != StatusObserved || !res.Termination.Aborted || res.Termination.TimedOut {
		t.Fatalf("result %+v, want observed and aborted", res.Termination)
	}
	if c := res.Metadata.Observation.CollectorError; c == nil || !strings.Contains(*c, "aborted") {
		t.Errorf("collectorError = %v", c)
	}
	if len(e.records(t)) != 1 {
		t.Errorf("want one record")
	}
}

func TestRunQuarantinesUnexpectedContent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		res, _ := e.w.Run(ctx, request("hang", 60_000, 4096))
		done <- res
	}()
	dir, _ := workspaceOfRunningChild(t, e.root)
	left := filepath.Join(dir, "left-behind.txt")
	if err := os.WriteFile(left, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	cancel()
	res := <-done
	ws := res.Termination.Workspace
	if ws.State != "quarantined" || ws.Path != dir || !strings.Contains(ws.Reason, "unexpected workspace content") {
		t.Fatalf("workspace %+v, want quarantined %s", ws, dir)
	}
	if got, err := os.ReadFile(left); err != nil || string(got) != "keep me" {
		t.Errorf("quarantined content not preserved: %q %v", got, err)
	}
	rec, err := e.store.Get(res.EvidenceID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Metadata.Observation.Workspace != evidence.WorkspaceQuarantined {
		t.Errorf("observation workspace %q", rec.Metadata.Observation.Workspace)
	}
}

func TestRunStorageFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Replace the store's directory by a regular file: a real filesystem failure, even as root.
	if err := os.RemoveAll(e.store.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.store.Dir(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.w.Run(context.Background(), request("pass", 60_000, 4096))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusStorageFailed || res.Message == "" || res.Termination == nil || res.EvidenceID != "" {
		t.Errorf("result %+v, want storage-failed with termination", res)
	}
}

// TestSuperviseProcessTree covers escaped output holders: descendants that keep the output
// pipes after the leader is gone. The run is stopped (by an abort, once both processes
// are seen running) through the same SIGTERM → SIGKILL escalation as a timeout.
func TestSuperviseProcessTree(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		mode       string
		wantClosed bool
	}{
		// Variant A/B: the grandchild stays in the process group while the leader ignores
		// SIGTERM and waits; the group kill reaches both.
		{"grandchild in the group", "group", true},
		// Variant C: the grandchild called setsid; it escapes the group, so the run must
		// say that stdio never closed, and the escaper dies on its broken pipe.
		{"grandchild that called setsid", "setsid", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			marker := "AGENTPROOF_TEST_MARKER=" + strconv.FormatInt(time.Now().UnixNano(), 36) + tt.mode
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan Outcome, 1)
			go func() {
				out, err := Supervise(ctx, Spec{
					Path: selfPath(t), Args: []string{"agentproof", "hostile-leader", tt.mode},
					Env: []string{marker}, Dir: t.TempDir(), Timeout: time.Minute, MaxOutputBytes: 1 << 20,
					KillConfirm: 30 * time.Second, // a loaded machine may take long to tear a process down
				})
				if err != nil {
					t.Error(err)
				}
				done <- out
			}()
			var grandchild int
			if !waitFor(30*time.Second, func() bool {
				n := 0
				for _, p := range processes() {
					if strings.Contains(p.environ, marker) {
						n++
						if strings.Contains(p.cmdline, "hostile-grandchild") {
							grandchild = p.pid
						}
					}
				}
				return n == 2 && grandchild != 0
			}) {
				t.Fatal("leader and grandchild did not both start")
			}
			cancel()
			out := <-done
			if !out.Aborted || !out.Exited || out.ExitCode != nil || len(out.SignalsSent) == 0 {
				t.Errorf("aborted=%v exited=%v exit=%v signals=%v", out.Aborted, out.Exited, out.ExitCode, out.SignalsSent)
			}
			if out.StdioClosed != tt.wantClosed {
				t.Errorf("stdioClosed = %v, want %v (collectorError %q)", out.StdioClosed, tt.wantClosed, out.CollectorError)
			}
			if !tt.wantClosed && !strings.Contains(out.CollectorError, "still open") {
				t.Errorf("collectorError = %q, want the unclosed stdio named", out.CollectorError)
			}
			if !waitFor(30*time.Second, func() bool { return !alive(grandchild) }) {
				_ = syscall.Kill(grandchild, syscall.SIGKILL)
				t.Errorf("grandchild %d survived the run", grandchild)
			}
		})
	}
}

// TestSuperviseSweepsGroupAfterExit: a leader that exits at once, leaving a grandchild
// in its process group that holds the output pipes, must not hold the run past its exit:
// the group is killed before the leader is reaped, so stdio closes.
func TestSuperviseSweepsGroupAfterExit(t *testing.T) {
	t.Parallel()
	out, err := Supervise(context.Background(), Spec{
		Path: selfPath(t), Args: []string{"agentproof", "hostile-leader", "orphan"},
		Env: []string{}, Dir: t.TempDir(), Timeout: time.Minute, MaxOutputBytes: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode == nil || *out.ExitCode != 0 || out.TimedOut || len(out.SignalsSent) != 0 {
		t.Errorf("exit=%v timedOut=%v signals=%v, want a clean exit 0", out.ExitCode, out.TimedOut, out.SignalsSent)
	}
	if !out.StdioClosed || out.CollectorError != "" {
		t.Errorf("stdioClosed=%v collectorError=%q", out.StdioClosed, out.CollectorError)
	}
	var pid int
	if _, err := fmt.Sscanf(string(out.Output.Stdout()), "grandchild pid=%d", &pid); err != nil {
		t.Fatalf("no grandchild pid in %q: %v", out.Output.Stdout(), err)
	}
	if !waitFor(30*time.Second, func() bool { return !alive(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("grandchild %d survived", pid)
	}
}

func TestSuperviseRejectsInvalidSpecs(t *testing.T) {
	t.Parallel()
	good := Spec{Path: "/bin/true", Args: []string{"true"}, Dir: "/", Timeout: time.Second, MaxOutputBytes: 1}
	tests := []struct {
		name   string
		mutate func(*Spec)
	}{
		{"relative path", func(s *Spec) { s.Path = "true" }},
		{"no argv", func(s *Spec) { s.Args = nil }},
		{"nul in argument", func(s *Spec) { s.Args = []string{"true", "a\x00"} }},
		{"env without =", func(s *Spec) { s.Env = []string{"HOME"} }},
		{"relative dir", func(s *Spec) { s.Dir = "." }},
		{"zero timeout", func(s *Spec) { s.Timeout = 0 }},
		{"zero budget", func(s *Spec) { s.MaxOutputBytes = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := good
			tt.mutate(&s)
			var serr *SpecError
			if _, err := Supervise(context.Background(), s); !errors.As(err, &serr) {
				t.Errorf("err = %v, want *SpecError", err)
			}
		})
	}
}

func TestFixtureChildExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		openStdin bool
		want      int
	}{
		{"pass", []string{"pass", "10000"}, true, ExitPass},
		{"fail", []string{"fail", "10000"}, true, ExitFail},
		{"no arguments", nil, true, ExitUsage},
		{"extra argument", []string{"pass", "10", "x"}, true, ExitUsage},
		{"unknown fixture", []string{"sleep", "10"}, true, ExitUsage},
		{"zero lifetime", []string{"pass", "0"}, true, ExitUsage},
		{"leading zero", []string{"pass", "01"}, true, ExitUsage},
		{"ten digits", []string{"pass", "1234567890"}, true, ExitUsage},
		{"lifetime ends", []string{"hang", "50"}, true, ExitWatchdog},
		{"stdin end-of-file", []string{"hang", "300000"}, false, ExitParentLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(selfPath(t), append([]string{"fixture-child"}, tt.args...)...)
			cmd.Env = ChildEnvironment()
			if tt.openStdin {
				w, err := cmd.StdinPipe() // never written; closed after the exit
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			}
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Errorf("exit %d, want %d", code, tt.want)
			}
		})
	}
	t.Run("broken output pipe", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(selfPath(t), "fixture-child", "noisy", "30000")
		cmd.Env = ChildEnvironment()
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		r, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
		r.Close()
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitOutputError {
			t.Errorf("wait = %v, want exit %d", err, ExitOutputError)
		}
	})
}

func FuzzParseLifetime(f *testing.F) {
	for _, s := range []string{"1", "300000", "999999999", "0", "01", "-1", "1e3", " 5", "1234567890"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseLifetime(s)
		if lifetimePattern().MatchString(s) != (err == nil) {
			t.Fatalf("ParseLifetime(%q) err=%v disagrees with the grammar", s, err)
		}
		if err == nil && (v < 1 || v > MaxChildLifetimeMS) {
			t.Fatalf("ParseLifetime(%q) = %d outside 1..%d", s, v, MaxChildLifetimeMS)
		}
	})
}

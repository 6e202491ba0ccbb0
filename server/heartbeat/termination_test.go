package heartbeat_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/internal/fakecli"
	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/server/heartbeat"
	"github.com/agentproof/agentproof/worker"
)

// runAgent creates an agent with adapterConfig cfg and an issue assigned to it, and
// returns the run id of the issue's wake.
func runAgent(ctx context.Context, t *testing.T, co *client.Company, cfg map[string]any) string {
	t.Helper()
	actor := createAgent(ctx, t, co, cfg)
	_, wakes := createIssue(ctx, t, co, "Termination", "", "", actor)
	if len(wakes) != 1 {
		t.Fatalf("issue creation scheduled %v, want one wake", wakes)
	}
	return heartbeat.RunID(co.ID(), wakes[0])
}

// fakeCodex is the adapterConfig of exec:codex running fake CLI name, with a result
// grace of 1 s: a fake that completes exits within milliseconds of its terminal event.
// (Built with -race, it slept the race detector's second before exiting 0 and so raced
// that grace; TestMain's raceexit.Main takes the sleep away.)
func fakeCodex(t *testing.T, name string) map[string]any {
	t.Helper()
	bin, err := fakecli.Link(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"driver": "exec:codex", "cwd": t.TempDir(), "driverConfig": map[string]any{
		"binary": bin, "modelBaseUrl": "http://127.0.0.1:9", "timeoutMs": 300_000, "resultGraceMs": 1000}}
}

// TestCLIEventStreamIncomplete: a CLI that exits 0 without its terminal event is not a
// succeeded run: the record says eventStreamComplete false (through the API the
// campaign reads). A complete stream says true.
func TestCLIEventStreamIncomplete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	for _, tt := range []struct {
		fake     string
		complete bool
		status   controlplane.RunStatus
	}{
		{fakecli.CodexIncomplete, false, "failed"},
		{fakecli.CodexComplete, true, "succeeded"},
	} {
		co := in.company(ctx)
		runID := runAgent(ctx, t, co, fakeCodex(t, tt.fake))
		rec := waitRecord(t, in, runID, tt.fake+" to finish", finished)
		term := rec.Termination
		if term == nil || term.ExitCode == nil || *term.ExitCode != 0 || term.EventStreamComplete == nil || *term.EventStreamComplete != tt.complete || rec.Status != tt.status {
			t.Errorf("%s: record status %s termination %+v; want exit 0, eventStreamComplete %v, status %s", tt.fake, rec.Status, term, tt.complete, tt.status)
		}
	}
}

// TestCLIStoppedAfterResult: a CLI that printed its terminal event and then hangs
// (ignoring SIGTERM) is stopped after its result grace — not at its 300 s timeout —,
// graded on its result and recorded stoppedAfterResult.
func TestCLIStoppedAfterResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	runID := runAgent(ctx, t, co, fakeCodex(t, fakecli.CodexLingering))
	rec := waitRecord(t, in, runID, "the lingering CLI to be stopped", finished)
	term := rec.Termination
	if term == nil || !term.StoppedAfterResult || term.TimedOut || rec.Status != "succeeded" || term.EventStreamComplete == nil || !*term.EventStreamComplete {
		t.Fatalf("record status %s termination %+v; want succeeded, stoppedAfterResult, not timed out", rec.Status, term)
	}
	if term.DurationMs > 60_000 || len(term.SignalsSent) == 0 || term.SignalsSent[0] != "SIGTERM" {
		t.Errorf("stopped after %d ms with %v; want SIGTERM about 1 s after the result", term.DurationMs, term.SignalsSent)
	}
}

// TestEscapedDaemonKilledAtTeardown: an agent that leaves a real setsid daemon behind
// (outside its process group) has it found by the run's marker, killed at the run's
// teardown, and listed on the termination record (pid and command only).
func TestEscapedDaemonKilledAtTeardown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	runID := runAgent(ctx, t, co, map[string]any{"driver": "exec", "cwd": t.TempDir(), "driverConfig": map[string]any{
		"command": "/bin/sh", "args": []any{"-c", "setsid sleep 300 >/dev/null 2>&1 & sleep 0.3; exit 0"}, "timeoutMs": 60_000}})
	rec := waitRecord(t, in, runID, "the run to finish", finished)
	term := rec.Termination
	if term == nil || len(term.EscapedProcesses) != 1 {
		t.Fatalf("termination %+v; want the setsid daemon among escaped processes", term)
	}
	e := term.EscapedProcesses[0]
	if e.Command != "sleep" || !e.Killed || e.PID <= 0 {
		t.Errorf("escaped %+v; want a killed sleep", e)
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(e.PID) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
		t.Errorf("the daemon %d still runs: %s", e.PID, b)
	}
}

// TestProcessMarkerSweep: with a server-wide process marker (an attempt's), every agent
// process carries it, and worker.SweepMarked — what a campaign calls at attempt
// teardown — finds and kills the agent and its escaped daemon while the run is still
// going.
func TestProcessMarkerSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	marker := worker.NewMarker()
	in := startInstanceWith(t, server.RunnerOptions{ProcessMarker: marker})
	co := in.company(ctx)
	runID := runAgent(ctx, t, co, map[string]any{"driver": "exec", "cwd": t.TempDir(), "driverConfig": map[string]any{
		"command": "/bin/sh", "args": []any{"-c", "setsid sleep 301 >/dev/null 2>&1 & exec sleep 302"}, "timeoutMs": 120_000}})
	var found []worker.EscapedProcess
	waitFor(t, "the agent and its daemon to carry the marker", func() (bool, error) {
		var err error
		found, err = worker.SweepMarked(marker, worker.SweepConfirm)
		return len(found) > 0, err
	})
	// One sweep may catch the agent before its daemon started: sweep until both were seen.
	all := map[int]worker.EscapedProcess{}
	for deadline := time.Now().Add(10 * time.Second); ; {
		for _, e := range found {
			all[e.PID] = e
		}
		rec, _ := in.board().HeartbeatRun(ctx, runID)
		if rec.State == api.RunFinished || time.Now().After(deadline) {
			break
		}
		found, _ = worker.SweepMarked(marker, worker.SweepConfirm)
	}
	for _, e := range all {
		if (e.Command != "sleep" && e.Command != "sh" && e.Command != "setsid") || !e.Killed {
			t.Errorf("swept %+v; want the killed agent (sh, or sleep once it exec'd) and daemon", e)
		}
	}
	rec := waitRecord(t, in, runID, "the swept run to finish", finished)
	if rec.Termination == nil || rec.Termination.Signal != "SIGKILL" {
		t.Errorf("termination %+v; want the agent killed by the sweep", rec.Termination)
	}
}

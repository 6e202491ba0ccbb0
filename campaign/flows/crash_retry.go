package flows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() { register(crashFlow("crash_retry", playCrashRetry)) }

// crashFlow is the registry entry of a crash flow called name: run 1 waits on the
// case's readiness file (workspaceFile) until something is killed, and a retry of the
// killed run finishes the task, so the reference script has one turn fewer than the
// runs and the control plane runs in a server process of its own.
func crashFlow(name catalog.Flow, play func(context.Context, *Session) Outcome) Flow {
	return Flow{
		FlowContract: catalog.FlowContract{
			Name: name, RetriesKilledRun: true,
			Needs: []catalog.Need{{Field: catalog.FieldWorkspaceFile, What: "the readiness file"}},
		},
		Play:          play,
		ServerProcess: restartsOrCrashes,
	}
}

// playCrashRetry is flow crash_retry (docs/files.md "Crash and Retry"): run 1 must signal that it is waiting — it writes its run id to
// the case's workspaceFile and waits for <workspaceFile>.release —; the human
// positively identifies the agent's process (the pid and process start time the
// heartbeat runner recorded launching that run, checked against /proc/<pid>/stat and
// the run id in /proc/<pid>/environ: never a bare pid), sends SIGKILL to exactly that
// process, sees the run fail, releases the wait and presses Retry through the public
// API (board operation retry_run, keyed); the retry must be one run bound to the
// killed one (retryOf) that finishes the task. A process that cannot be identified is
// never signalled (a harness fault); an agent that never waits is the candidate's
// problem; a board that binds no retry is a harness fault.
func playCrashRetry(ctx context.Context, s *Session) Outcome {
	rel, rec, out, done := readyRun(ctx, s, "crash_retry")
	if done {
		return out
	}
	l := rec.Launch
	if err := identify(l.PID, l.ProcessStartTicks, rec.RunID); err != nil {
		out.Err = permanent(fmt.Errorf("run %s: the agent's process was not positively identified, so it was not signalled: %w", rec.RunID, err))
		return out
	}
	s.log("run %s: process %d (start %d ticks, run id in its environment) identified; sending SIGKILL", rec.RunID, l.PID, l.ProcessStartTicks)
	if err := syscall.Kill(l.PID, syscall.SIGKILL); err != nil {
		out.Err = permanent(fmt.Errorf("run %s: SIGKILL to process %d: %w", rec.RunID, l.PID, err))
		return out
	}
	out.Killed = append(out.Killed, rec.RunID)
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	crashed := v.runs[0]
	s.log("run %s ended %s after the kill", crashed.ID, crashed.Status)
	if crashed.ID != rec.RunID || crashed.Status != controlplane.RunFailed {
		out.Err = permanent(fmt.Errorf("the killed run %s ended %s (run 1 is %s), not failed", rec.RunID, crashed.Status, crashed.ID))
		return out
	}
	return releaseAndRetry(ctx, s, out, rel, crashed.ID, "killed")
}

// readyRun is the start the crash flows share: the case's readiness file and run 1's
// record once its agent waits (waitReady). done says out is the flow's outcome
// already: a harness fault (flow names the flow when the case has no readiness file),
// or a problem when run 1 ended before its agent waited.
func readyRun(ctx context.Context, s *Session, flow string) (rel string, rec *api.HeartbeatRun, out Outcome, done bool) {
	rel = s.Rendered.WorkspaceFile
	if rel == "" {
		out.Err = permanent(fmt.Errorf("flow %s needs the case's workspaceFile (the readiness file)", flow))
		return rel, nil, out, true
	}
	rec, err := waitReady(ctx, s, rel)
	if err != nil {
		out.Err = err
		return rel, nil, out, true
	}
	if rec == nil {
		out.Problems = append(out.Problems, fmt.Sprintf("run 1 ended before the agent wrote its run id to %s and waited", rel))
		return rel, nil, out, true
	}
	return rel, rec, out, false
}

// releaseAndRetry ends the crash flows: it releases run 1's wait, presses Retry on run
// ended and checks the retry (pressRetry), and returns out with the press among its
// submissions and pressRetry's error as its Err.
func releaseAndRetry(ctx context.Context, s *Session, out Outcome, rel, ended, endedAs string) Outcome {
	pressed, err := pressRetry(ctx, s, rel, ended, endedAs)
	if !pressed.IsZero() {
		out.Submitted = append(out.Submitted, pressed)
	}
	out.Err = err
	return out
}

// pressRetry releases run 1's wait (it writes <rel>.release in the workspace),
// presses Retry on run ended through the public API (board operation retry_run, keyed
// by the case's nonce) and checks that run 2 is bound to it (retryOf); endedAs names
// how run 1 ended in that error. pressed is when Retry was sent (zero when it was not).
// Errors: a harness fault (permanent), a BoardFault, or waitTurn's.
func pressRetry(ctx context.Context, s *Session, rel, ended, endedAs string) (pressed time.Time, err error) {
	if err := os.WriteFile(filepath.Join(s.Workspace, filepath.FromSlash(rel)+".release"), []byte("released\n"), 0o644); err != nil {
		return pressed, permanent(fmt.Errorf("releasing the wait: %w", err))
	}
	in, _ := json.Marshal(map[string]string{"runId": ended})
	pressed = time.Now()
	s.log("pressing Retry on run %s", ended)
	if _, err := s.Board.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardRetryRun, Input: in, IdempotencyKey: "retry-" + s.Rendered.Nonce}); err != nil {
		return pressed, BoardFault("pressing Retry on run "+ended, err)
	}
	v, err := waitTurn(ctx, s, 2)
	if err != nil {
		return pressed, err
	}
	retry := v.runs[1]
	s.log("retry run %s ended %s", retry.ID, retry.Status)
	if retry.RetryOf == nil || *retry.RetryOf != ended {
		return pressed, permanent(fmt.Errorf("run 2 %s is not bound to the %s run %s (retryOf %v)", retry.ID, endedAs, ended, retry.RetryOf))
	}
	return pressed, nil
}

// waitReady looks until run 1's agent wrote its run id to the readiness file while
// the heartbeat runner records that run's process running with its launch facts; it
// returns that record, or nil when run 1 settled first (the agent never waited).
func waitReady(ctx context.Context, s *Session, rel string) (*api.HeartbeatRun, error) {
	var ready *api.HeartbeatRun
	_, err := lookFor(ctx, s, func(ctx context.Context) (*view, error) { return look(ctx, s) }, func(v *view) (bool, error) {
		b, err := os.ReadFile(filepath.Join(s.Workspace, filepath.FromSlash(rel)))
		if err != nil || len(v.runs) == 0 {
			return false, nil
		}
		id := strings.TrimSpace(string(b))
		for i := range v.records {
			r := &v.records[i]
			if r.RunID == id && id == v.runs[0].ID && r.Launch != nil && r.Launch.PID > 0 && v.runs[0].Status == controlplane.RunRunning {
				ready = r
				return true, nil
			}
		}
		return false, nil
	})
	return ready, err
}

// identify checks that process pid is the one the runner launched for runID: its start
// time (/proc/<pid>/stat field 22, clock ticks since boot) is ticks, and its initial
// environment names the run (AGENTPROOF_RUN_ID=<runID>). Errors name what differs.
func identify(pid int, ticks uint64, runID string) error {
	if pid <= 1 || ticks == 0 {
		return fmt.Errorf("no recorded pid and start time (pid %d, start %d)", pid, ticks)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return err
	}
	// the command name (field 2) is parenthesised and may hold spaces: fields after
	// the last ')' start at field 3
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return errors.New("unreadable /proc stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return errors.New("short /proc stat")
	}
	got, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil || got != ticks {
		return fmt.Errorf("process %d started at %s ticks, the run's process at %d (another process)", pid, f[19], ticks)
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return err
	}
	want := []byte("AGENTPROOF_RUN_ID=" + runID)
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.Equal(kv, want) {
			return nil
		}
	}
	return fmt.Errorf("process %d does not name run %s in its environment", pid, runID)
}

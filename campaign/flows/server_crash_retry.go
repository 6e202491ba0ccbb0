package flows

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

func init() { register(crashFlow("server_crash_retry", playServerCrashRetry)) }

// playServerCrashRetry is flow server_crash_retry (the crash_retry case, the
// server's variant; docs/files.md "Server crash and Retry"): run 1 must signal
// that it is waiting (it writes its run id to the case's workspaceFile and waits for
// <workspaceFile>.release); the human kills the server with SIGKILL (kill -9: no
// shutdown, the run left running in the store) and starts it again on the same home;
// the restarted server's heartbeat runner must complete the orphaned run as
// interrupted (its record orphaned) and the agent's process must have died with the
// server; the human releases the wait and presses Retry through the public API (board
// operation retry_run, keyed); the retry must be one run bound to the interrupted one
// (retryOf) that finishes the task.
//
// An agent that never waits is the candidate's problem; a server that does not mark
// the orphan interrupted, an agent process that outlived the server, or a Retry that
// is not bound are harness faults (the control plane and its runner are agentproof's).
func playServerCrashRetry(ctx context.Context, s *Session) Outcome {
	if s.Crash == nil {
		return Outcome{Err: permanent(errors.New("flow server_crash_retry needs a harness that can kill and restart the server; this one cannot"))}
	}
	rel, rec, out, done := readyRun(ctx, s, "server_crash_retry")
	if done {
		return out
	}
	l := rec.Launch
	s.log("run %s: its process %d runs; killing the server (SIGKILL)", rec.RunID, l.PID)
	b, err := s.Crash(ctx)
	if err != nil {
		out.Err = BoardFault("killing and restarting the server", err)
		return out
	}
	s.Board = b
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	orphan := v.runs[0]
	var state api.HeartbeatState
	for _, r := range v.records {
		if r.RunID == orphan.ID {
			state = r.State
		}
	}
	s.log("after the restart run %s is %s (its record %s)", orphan.ID, orphan.Status, state)
	if orphan.ID != rec.RunID || orphan.Status != controlplane.RunInterrupted || state != api.RunOrphaned {
		out.Err = permanent(fmt.Errorf("the restarted server left run %s %s (record %s), not interrupted and orphaned", orphan.ID, orphan.Status, state))
		return out
	}
	if identify(l.PID, l.ProcessStartTicks, rec.RunID) == nil {
		out.Err = permanent(fmt.Errorf("run %s: its agent process %d outlived the killed server", rec.RunID, l.PID))
		return out
	}
	s.log("run %s: its agent process %d died with the server", rec.RunID, l.PID)
	return releaseAndRetry(ctx, s, out, rel, orphan.ID, "interrupted")
}

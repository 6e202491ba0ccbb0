package attempt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/workspace"
)

// FlowOutcome is what the flow stage returns: when the human submitted each turn
// (turn 1, the task's creation, first), the flow contract violations the flow saw (the
// candidate's), the deadline that passed (named with its limit, "turn 2 (600000 ms)"
// or "attempt (480000 ms)"; "" for none), whether the attempt was interrupted, and
// the harness fault that stopped the flow (nil for none).
type FlowOutcome struct {
	Submitted   []time.Time
	Problems    []string
	Deadline    string
	Interrupted bool
	Fault       *verdict.Fault
	// WorkspaceDiffs is what each turn changed in the workspace (turnDiffs), in turn
	// order; a turn whose run never settled has none.
	WorkspaceDiffs []workspace.TurnDiff
	// Tasks are the tasks the flow created besides the fixtures' one (flows.Outcome),
	// in order; observe grades their runs as the turns after the fixtures' task's.
	Tasks []string
	// Killed are the runs whose agent process the flow killed (flows.Outcome).
	Killed []string
	// Final is the flow's last look at the board, after its last action
	// (flows.Outcome.Final; nil for none): observe starts from it instead of
	// looking again.
	Final *flows.Look
}

// playFlow plays the case's flow (package flows) against the attempt's server as the
// human, restarting the server when the flow asks.
func (x *LocalExecutor) playFlow(ctx context.Context, a *attempt, p *Provisioned, f *Fixtures) FlowOutcome {
	wd := newTurnDiffs(p.Workspace, f.Workspace, f.WorkspaceErr)
	s := &flows.Session{
		TurnSettled:    wd.settled,
		Board:          p.Instance.board().Company(f.CompanyID),
		TaskID:         f.TaskID,
		ConversationID: f.ConversationID,
		Case:           a.plan.Cell.Case,
		Rendered:       a.plan.Case,
		Workspace:      p.Workspace,
		TurnTimeout:    a.plan.TurnTimeout,
		Poll:           x.PollInterval,
		Log:            a.log.note,
		ServerURL:      func() string { return p.Instance.url },
		BoardAt: func(base string) flows.Board {
			return client.New(base, p.Instance.token, nil).Company(f.CompanyID)
		},
		Restart: func(ctx context.Context) (flows.Board, error) {
			killed, err := p.Instance.restart(ctx)
			if killed {
				a.log.note("harness note: the server did not stop within %s of SIGTERM before the restart and was killed (its exit confirmed)", StopGrace)
			}
			if err != nil {
				return nil, err
			}
			a.log.note("server restarted on %s", p.Instance.addr())
			// The lease outlives the serve child: its bridge now dials the new port.
			if err := p.Lease.retarget(p.Instance.addr()); err != nil {
				return nil, fmt.Errorf("retargeting the lease's bridge: %w", err)
			}
			return p.Instance.board().Company(f.CompanyID), nil
		},
	}
	s.Crash = func(ctx context.Context) (flows.Board, error) {
		if err := p.Instance.crash(ctx); err != nil {
			return nil, err
		}
		a.log.note("server killed (SIGKILL) and started again on %s", p.Instance.addr())
		if err := p.Lease.retarget(p.Instance.addr()); err != nil {
			return nil, fmt.Errorf("retargeting the lease's bridge: %w", err)
		}
		return p.Instance.board().Company(f.CompanyID), nil
	}
	if p.Model != nil {
		s.ReleaseModel = p.Model.set.Release
		s.ModelHolding = p.Model.set.Holding
	}
	fo := flowOutcome(ctx, a.plan, f.Submitted, flows.Run(ctx, s), f.Secrets)
	fo.WorkspaceDiffs = wd.diffs
	return fo
}

// flowOutcome maps what the flow returned to the stage's value: a *flows.DeadlineError
// is a missed turn deadline, the attempt context's own deadline the attempt deadline,
// a cancellation an interruption, a fault the fault (its words redacted), and any
// other error a harness fault (the flow's own code failed).
func flowOutcome(ctx context.Context, plan campaign.AttemptPlan, first time.Time, out flows.Outcome, secrets *redact.Set) FlowOutcome {
	fo := FlowOutcome{Submitted: append([]time.Time{first}, out.Submitted...), Tasks: out.Tasks, Killed: out.Killed, Final: out.Final}
	for _, p := range out.Problems {
		fo.Problems = append(fo.Problems, secrets.RedactText(p))
	}
	var de *flows.DeadlineError
	switch err := out.Err; {
	case err == nil:
	case errors.As(err, &de):
		fo.Deadline = fmt.Sprintf("turn %d (%d ms)", de.Turn, de.Limit.Milliseconds())
	case errors.Is(context.Cause(ctx), errAttemptDeadline):
		fo.Deadline = fmt.Sprintf("attempt (%d ms)", plan.AttemptTimeout.Milliseconds())
	case ctx.Err() != nil:
		fo.Interrupted = true
	default:
		fault := verdict.FaultOf(err)
		if fault == nil {
			fault = verdict.HarnessFault(err, false)
		}
		fo.Fault = &verdict.Fault{Origin: fault.Origin, Class: fault.Class, Err: errors.New(secrets.RedactText(err.Error()))}
	}
	return fo
}

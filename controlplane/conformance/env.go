package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentproof/agentproof/controlplane"
)

// env is one case's started Port with shortcuts.
type env struct {
	ctx context.Context
	h   Harness
	p   controlplane.Port
}

func setup(ctx context.Context, h Harness, seed controlplane.Seed) (*env, error) {
	p, err := h.New(ctx, seed)
	if err != nil {
		return nil, noErr(err, "building the port")
	}
	if err := p.Start(ctx); err != nil {
		return nil, noErr(err, "start")
	}
	return &env{ctx: ctx, h: h, p: p}, nil
}

func openInput(runID, taskID, actorID string) controlplane.OpenInput {
	return controlplane.OpenInput{
		Identity:    controlplane.Identity{RunID: runID, SessionID: "session-" + runID, CompanyID: "company-1", IssueID: taskID, AgentID: actorID},
		BackendKind: "mock",
	}
}

func (e *env) open(runID, taskID, actorID string, caps ...string) (controlplane.RunContext, error) {
	in := openInput(runID, taskID, actorID)
	if caps != nil {
		in.Capabilities = caps
	}
	return e.p.OpenFixtureRun(e.ctx, in)
}

func command(kind string, fields map[string]any) json.RawMessage {
	c := map[string]any{"kind": kind}
	for k, v := range fields {
		c[k] = v
	}
	return mustJSON(c)
}

func (e *env) cmd(runID, key, kind string, fields map[string]any) (controlplane.CommandResult, error) {
	return e.p.ApplyCommand(e.ctx, controlplane.CommandEnvelope{RunID: runID, IdempotencyKey: key, Command: command(kind, fields)})
}

func (e *env) snap() (controlplane.State, error) { return e.p.Snapshot(e.ctx) }

func (e *env) lastDecision() (controlplane.Decision, error) {
	ds, err := e.p.DecisionRecords(e.ctx)
	if err != nil {
		return controlplane.Decision{}, err
	}
	if len(ds) == 0 {
		return controlplane.Decision{}, fmt.Errorf("no decision records")
	}
	return ds[len(ds)-1], nil
}

func (e *env) wantLastDecision(operation, outcome, reason string) error {
	d, err := e.lastDecision()
	if err != nil {
		return err
	}
	if d.Operation != operation || d.Outcome != outcome || d.Reason != reason {
		return failf("last decision is (%s, %s, %s), want (%s, %s, %s)", d.Operation, d.Outcome, d.Reason, operation, outcome, reason)
	}
	return nil
}

// denied checks that err is the refusal code and that the last decision denied the
// operation for reason.
func (e *env) denied(err error, code controlplane.Code, operation, reason string) error {
	if err := wantCode(err, code); err != nil {
		return err
	}
	return e.wantLastDecision(operation, "denied", reason)
}

func (e *env) appendEvent(ev any) (controlplane.Receipt, error) {
	return e.p.AppendEvent(e.ctx, mustJSON(ev))
}

func taskByID(st controlplane.State, id string) *controlplane.Task {
	for _, t := range st.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

func runByID(st controlplane.State, id string) *controlplane.Run {
	for _, r := range st.Runs {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func actorByID(st controlplane.State, id string) *controlplane.Actor {
	for _, a := range st.Actors {
		if a.ID == id {
			return a
		}
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// count is how many of xs keep holds for.
func count[T any](xs []T, keep func(T) bool) int {
	n := 0
	for _, x := range xs {
		if keep(x) {
			n++
		}
	}
	return n
}

func countWakes(st controlplane.State, reason controlplane.WakeReason) []*controlplane.ScheduledWake {
	var out []*controlplane.ScheduledWake
	for _, w := range st.Wakes {
		if w.Reason == reason {
			out = append(out, w)
		}
	}
	return out
}

func hasDecision(ds []controlplane.Decision, outcome, reason string) bool {
	return slices.ContainsFunc(ds, func(d controlplane.Decision) bool {
		return d.Outcome == outcome && (reason == "" || d.Reason == reason)
	})
}

// Seed helpers.

func actor(id, role string, grants ...string) *controlplane.Actor {
	if grants == nil {
		grants = []string{}
	}
	return &controlplane.Actor{ID: id, CompanyID: "company-1", Name: "Actor " + id, Role: role, Status: controlplane.ActorActive, BudgetID: "budget-" + id, CapabilityGrants: grants}
}

func task(id string, status controlplane.TaskStatus, assignee string) *controlplane.Task {
	t := &controlplane.Task{ID: id, CompanyID: "company-1", Identifier: "MCK-" + id, Title: "Task " + id, Status: status, Priority: "medium", WorkMode: "standard"}
	if assignee != "" {
		t.AssigneeActorID = ptr(assignee)
	}
	return t
}

func budget(id, scope, scopeID string, limit, spent int64) *controlplane.Budget {
	return &controlplane.Budget{ID: id, Scope: scope, ScopeID: scopeID, LimitCents: limit, SpentCents: spent, HardStop: true}
}

func fault(id, kind, effect string) *controlplane.FaultRule {
	return &controlplane.FaultRule{ID: id, Operation: "apply_command", CommandKind: kind, Effect: effect, Remaining: 1, Code: controlplane.Code("scripted_" + effect)}
}

// lostAckReplay sends command kind with fields under key for run-1 twice: the first
// answer must be lost (the scripted lost_ack fault: scripted_lost_ack, returned as
// lost), the replay under the same key must be answered as a duplicate; what names the
// replay in a failure.
func (e *env) lostAckReplay(key, kind string, fields map[string]any, what string) (lost, err error) {
	_, lost = e.cmd("run-1", key, kind, fields)
	if err := wantCode(lost, "scripted_lost_ack"); err != nil {
		return lost, err
	}
	res, err := e.cmd("run-1", key, kind, fields)
	if err != nil {
		return lost, noErr(err, what)
	}
	if res.Disposition != "duplicate" {
		return lost, failf("%s disposition %s, want duplicate", what, res.Disposition)
	}
	return lost, nil
}

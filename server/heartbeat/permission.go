package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// Permission interactions (api.Permission; docs/acp.md "Permissions on the board"): an
// ACP agent's session/request_permission becomes a pending permission of the run; the
// board lists it and the human answers it (DecidePermission); the runner delivers the
// answer to the agent. A Stop of the run, the end of the turn or of the session closes a
// pending permission as cancelled (the agent is told "cancelled"). A permission that
// is no longer pending refuses every further answer with interaction_already_resolved
// (409). Each run's permissions are stored durably in its record directory
// (permissions.json, rewritten on every change); a permission found pending at
// start-up was asked by a process that died with the previous server, and is closed as
// cancelled.

// PermissionsFile is the file of a run's permissions in its record directory.
const PermissionsFile = "permissions.json"

// RunnerActor is who closes a permission the human did not answer (ResolvedBy).
const RunnerActor = "runner"

// permission is one permission interaction and, while it is pending, the channel its
// answer is delivered on (buffered: the decider may have stopped listening): the
// option id, or "" when it was closed as cancelled.
type permission struct {
	p      api.Permission
	answer chan string
}

// cancelAnswerWait bounds how long a permission closed as cancelled on the board
// waits for the driver's own cancel before the agent is told "cancelled".
const cancelAnswerWait = 2 * time.Second

// boardDecider is the PermissionDecider of one ACP run: it opens a permission on the
// board for every request and waits for the human's answer.
type boardDecider struct {
	r   *Runner
	j   job
	run string
}

// Decide opens the permission and blocks until the human answers it (the option id
// delivered) or ctx ends (the turn was cancelled or the session ended: the permission
// is closed as cancelled, and the driver tells the agent so).
func (d boardDecider) Decide(ctx context.Context, req session.PermissionRequest) (session.PermissionDecision, error) {
	// What the agent wrote before asking is stamped before the question exists.
	d.r.syncWatch(d.run)
	pm, err := d.r.openPermission(d.j, d.run, req)
	if err != nil {
		return session.PermissionDecision{}, err
	}
	select {
	case opt := <-pm.answer:
		if opt == "" { // closed as cancelled (a Stop, the end of the run)
			// A Stop closes the permission on the board before the driver hears of it;
			// the agent must be told "cancelled" only after the driver's own cancel
			// (ACP: session/cancel first, then the pending answers), or it may take the
			// refusal as an ordinary one and end its turn end_turn. The driver's cancel
			// ends ctx; a close without one is answered after cancelAnswerWait.
			t := time.NewTimer(cancelAnswerWait)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			return session.PermissionDecision{Cancelled: true}, nil
		}
		return session.PermissionDecision{OptionID: opt}, nil
	case <-ctx.Done():
		d.r.closePermission(pm.p.ID, "the turn ended before the human answered (cancelled or the session closed)")
		return session.PermissionDecision{Cancelled: true}, nil
	}
}

// openPermission records a pending permission for req of run.
func (r *Runner) openPermission(j job, run string, req session.PermissionRequest) (*permission, error) {
	p := api.Permission{Schema: api.PermissionSchema, ID: "perm-" + run + "-" + strconv.Itoa(req.Seq), CompanyID: j.company, TaskID: j.task.ID,
		RunID: run, ActorID: j.actor.ID, Seq: req.Seq, Turn: req.Turn, ToolCallID: req.ToolCallID, Title: req.Title, Kind: req.Kind,
		Locations: slices.Clone(req.Locations), Options: []api.PermissionOption{}, Status: api.PermissionPending, CreatedAt: r.now()}
	for _, o := range req.Options {
		p.Options = append(p.Options, api.PermissionOption{OptionID: o.ID, Name: o.Name, Kind: o.Kind})
	}
	pm := &permission{p: p, answer: make(chan string, 1)}
	r.pmu.Lock()
	defer r.pmu.Unlock()
	if _, dup := r.perms[p.ID]; dup {
		return nil, fmt.Errorf("heartbeat: permission %s asked twice", p.ID)
	}
	r.perms[p.ID] = pm
	r.permOrder = append(r.permOrder, p.ID)
	if err := r.savePermissions(run); err != nil {
		return nil, err
	}
	return pm, nil
}

// closePermission closes permission id as cancelled with reason when it is still
// pending (an answered permission keeps its answer).
func (r *Runner) closePermission(id, reason string) {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	pm := r.perms[id]
	if pm == nil || pm.p.Status != api.PermissionPending {
		return
	}
	pm.p.Status, pm.p.ResolvedBy, pm.p.Reason, pm.p.ResolvedAt = api.PermissionCancelled, RunnerActor, reason, r.now()
	_ = r.savePermissions(pm.p.RunID)
	if pm.answer != nil {
		pm.answer <- "" // buffered (1), nothing sent while pending: the decider is told cancelled
	}
}

// closeRunPermissions closes every pending permission of run as cancelled.
func (r *Runner) closeRunPermissions(run, reason string) {
	r.pmu.Lock()
	var ids []string
	for _, id := range r.permOrder {
		if pm := r.perms[id]; pm.p.RunID == run && pm.p.Status == api.PermissionPending {
			ids = append(ids, id)
		}
	}
	r.pmu.Unlock()
	for _, id := range ids {
		r.closePermission(id, reason)
	}
}

// Permissions returns company's permission interactions in the order they were
// asked; task, when not "", keeps those of that task.
func (r *Runner) Permissions(company, task string) []api.Permission {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	out := []api.Permission{}
	for _, id := range r.permOrder {
		p := r.perms[id].p
		if p.CompanyID == company && (task == "" || p.TaskID == task) {
			p.Locations, p.Options = slices.Clone(p.Locations), slices.Clone(p.Options)
			out = append(out, p)
		}
	}
	return out
}

// DecidePermission is the human's answer to permission id of company, given by board
// actor: approve delivers the agent's allow-once option (else allow-always), decline
// its reject-once option (else reject-always). It returns the permission as closed.
// Errors (*controlplane.Error): interaction_missing (404: no such permission in
// company), interaction_already_resolved (409: it was answered or cancelled before;
// a stale or repeated answer), interaction_outcome_invalid (400: a decision other than
// approve or decline, or the agent offered no option of that kind); a store error.
func (r *Runner) DecidePermission(company, id string, decision api.PermissionDecisionKind, actor string) (api.Permission, error) {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	pm := r.perms[id]
	if pm == nil || pm.p.CompanyID != company {
		return api.Permission{}, &controlplane.Error{Code: controlplane.CodeInteractionMissing, Message: "permission " + id + " does not exist"}
	}
	status := api.PermissionApproved
	switch decision {
	case api.PermissionApprove:
	case api.PermissionDecline:
		status = api.PermissionDeclined
	default:
		return api.Permission{}, &controlplane.Error{Code: controlplane.CodeInteractionOutcomeInvalid,
			Message: fmt.Sprintf("decision %q is not %s or %s", decision, api.PermissionApprove, api.PermissionDecline)}
	}
	if pm.p.Status != api.PermissionPending {
		return api.Permission{}, &controlplane.Error{Code: controlplane.CodeInteractionAlreadyResolved,
			Message: fmt.Sprintf("permission %s is already %s", id, pm.p.Status)}
	}
	opt, ok := pm.p.OptionFor(decision)
	if !ok {
		return api.Permission{}, &controlplane.Error{Code: controlplane.CodeInteractionOutcomeInvalid,
			Message: fmt.Sprintf("permission %s offers no option to %s", id, decision)}
	}
	prev := pm.p
	// What the agent wrote while the question was pending is stamped before the answer.
	r.syncWatch(pm.p.RunID)
	pm.p.Status, pm.p.OptionID, pm.p.ResolvedBy, pm.p.ResolvedAt = status, opt, actor, r.now()
	if err := r.savePermissions(pm.p.RunID); err != nil {
		pm.p = prev
		return api.Permission{}, err
	}
	pm.answer <- opt // buffered (1): delivered once, the permission is no longer pending
	return pm.p, nil
}

// savePermissions rewrites run's permissions file. The caller holds r.pmu.
func (r *Runner) savePermissions(run string) error {
	var list []api.Permission
	for _, id := range r.permOrder {
		if p := r.perms[id].p; p.RunID == run {
			list = append(list, p)
		}
	}
	d, err := r.rec.runDir(run)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(api.PermissionList{Permissions: list}, "", "  ")
	if err != nil {
		return err
	}
	return r.rec.write(filepath.Join(d, PermissionsFile), b)
}

// loadPermissions reads every run's permissions at start-up; a pending one is closed
// as cancelled (its process died with the previous server).
func (r *Runner) loadPermissions(runs []string) error {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	for _, run := range runs {
		d, err := r.rec.runDir(run)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(d, PermissionsFile))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("heartbeat: reading the permissions of %s: %w", run, err)
		}
		var list api.PermissionList
		if err := json.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("heartbeat: decoding the permissions of %s: %w", run, err)
		}
		stale := false
		for _, p := range list.Permissions {
			if p.Status == api.PermissionPending {
				p.Status, p.ResolvedBy, p.ResolvedAt = api.PermissionCancelled, RunnerActor, r.now()
				p.Reason, stale = "the server stopped while the permission was pending", true
			}
			r.perms[p.ID] = &permission{p: p}
			r.permOrder = append(r.permOrder, p.ID)
		}
		if stale {
			if err := r.savePermissions(run); err != nil {
				return err
			}
		}
	}
	return nil
}

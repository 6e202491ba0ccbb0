package flows

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{FlowContract: catalog.FlowContract{Name: "pending_permission_stop"}, Play: playPendingPermissionStop})
}

// playPendingPermissionStop is flow pending_permission_stop: when the agent's first
// permission request is pending, the human stops the run through the Stop API (with a
// cancellationRequestId) and waits for it to settle; the permission must then be
// closed as cancelled, and the human's late answer to it — a decline, the only answer a
// stale request may get — refused with 409 interaction_already_resolved, changing
// nothing (the permission is read again: still cancelled, its answer and time as the
// Stop left them). The flow log keeps the pending request's receipt (id, tool call,
// time asked, state before the Stop). An agent that asks no permission breaks the
// flow's contract (a problem); the runner not closing the permission, accepting the
// late answer or changing the permission on it, is the harness's fault (the runner owns
// permissions). The matchers grade the run's status, the task's and the absent file.
func playPendingPermissionStop(ctx context.Context, s *Session) Outcome {
	var out Outcome
	var asked *api.Permission
	_, err := watchPermissions(ctx, s, func(p api.Permission) (bool, error) {
		asked = &p
		s.log("pending permission receipt: id %s, run %s, tool call %s (%s %q, locations %v), asked at %s, state before the Stop %s",
			p.ID, p.RunID, p.ToolCallID, p.Kind, p.Title, p.Locations, p.CreatedAt, p.Status)
		id, err := requestID()
		if err != nil {
			return true, permanent(fmt.Errorf("making a cancellationRequestId: %w", err))
		}
		s.log("stopping run %s while permission %s is pending", p.RunID, p.ID)
		if _, err := s.Board.CancelRun(ctx, p.RunID, id); err != nil {
			return true, BoardFault("stopping run "+p.RunID, err)
		}
		return true, nil
	})
	if err != nil {
		out.Err = err
		return out
	}
	if asked == nil {
		out.Problems = append(out.Problems, "the agent did not ask permission before its run ended")
		return out
	}
	if _, out.Err = waitTurn(ctx, s, 1); out.Err != nil {
		return out
	}
	closed, err := closedPermission(ctx, s, asked.ID)
	if err != nil {
		out.Err = err
		return out
	}
	out.Err = lateDecline(ctx, s, closed)
	return out
}

// closedPermission reads permission id of the task after the Stop: it must be
// cancelled. Errors: the board's (a BoardFault), or the permission missing or in
// another state (the runner's, permanent).
func closedPermission(ctx context.Context, s *Session, id string) (api.Permission, error) {
	perms, err := s.Board.Permissions(ctx, s.TaskID)
	if err != nil {
		return api.Permission{}, BoardFault("reading the permissions", err)
	}
	for _, p := range perms {
		if p.ID != id {
			continue
		}
		if p.Status != api.PermissionCancelled {
			return p, permanent(fmt.Errorf("permission %s is %s after the Stop, not cancelled", p.ID, p.Status))
		}
		return p, nil
	}
	return api.Permission{}, permanent(fmt.Errorf("permission %s is gone from the task after the Stop", id))
}

// lateDecline answers the closed permission with a decline, which must be refused
// (409 interaction_already_resolved) and change nothing: read again, the permission
// is as closed was. Errors: an accepted answer or a changed permission (permanent),
// another refusal or a failed read (a BoardFault).
func lateDecline(ctx context.Context, s *Session, closed api.Permission) error {
	s.log("declining the closed permission %s late (must be refused)", closed.ID)
	_, err := s.Board.DecidePermission(ctx, closed.ID, api.PermissionDecline)
	var ce *controlplane.Error
	switch {
	case err == nil:
		return permanent(fmt.Errorf("the board accepted a late decline of the cancelled permission %s", closed.ID))
	case !errors.As(err, &ce) || ce.Code != controlplane.CodeInteractionAlreadyResolved:
		return BoardFault(fmt.Sprintf("declining the closed permission %s (want %s)", closed.ID, controlplane.CodeInteractionAlreadyResolved), err)
	}
	after, err := closedPermission(ctx, s, closed.ID)
	if err != nil {
		return err
	}
	if after.Status != closed.Status || after.OptionID != closed.OptionID || after.ResolvedBy != closed.ResolvedBy || after.ResolvedAt != closed.ResolvedAt {
		return permanent(fmt.Errorf("the refused late decline changed permission %s: %s %q by %q at %s, was %s %q by %q at %s", closed.ID,
			after.Status, after.OptionID, after.ResolvedBy, after.ResolvedAt, closed.Status, closed.OptionID, closed.ResolvedBy, closed.ResolvedAt))
	}
	s.log("the late decline of %s was refused (%s) and changed nothing", closed.ID, controlplane.CodeInteractionAlreadyResolved)
	return nil
}

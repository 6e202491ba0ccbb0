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
// closed as cancelled and a late answer to it refused with 409
// interaction_already_resolved. An agent that asks no permission breaks the flow's
// contract (a problem); the runner not closing the permission, or accepting the late
// answer, is the harness's fault (the runner owns permissions). The matchers grade the
// run's status, the task's and the absent file.
func playPendingPermissionStop(ctx context.Context, s *Session) Outcome {
	var out Outcome
	var asked *api.Permission
	_, err := watchPermissions(ctx, s, func(p api.Permission) (bool, error) {
		asked = &p
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
	perms, err := s.Board.Permissions(ctx, s.TaskID)
	if err != nil {
		out.Err = BoardFault("reading the permissions", err)
		return out
	}
	for _, p := range perms {
		if p.ID == asked.ID && p.Status != api.PermissionCancelled {
			out.Err = permanent(fmt.Errorf("permission %s is %s after the Stop, not cancelled", p.ID, p.Status))
			return out
		}
	}
	s.log("answering the closed permission %s (must be refused)", asked.ID)
	_, err = s.Board.DecidePermission(ctx, asked.ID, api.PermissionApprove)
	var ce *controlplane.Error
	switch {
	case err == nil:
		out.Err = permanent(fmt.Errorf("the board accepted a late answer to the cancelled permission %s", asked.ID))
	case !errors.As(err, &ce) || ce.Code != controlplane.CodeInteractionAlreadyResolved:
		out.Err = BoardFault(fmt.Sprintf("answering the closed permission %s (want %s)", asked.ID, controlplane.CodeInteractionAlreadyResolved), err)
	}
	return out
}

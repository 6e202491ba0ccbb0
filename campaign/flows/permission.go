package flows

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/agentproof/agentproof/api"
)

// The permission flows (docs/acp.md "Native boundaries") play the human of an ACP
// agent's permission requests: each request is a permission interaction of the task
// on the board (api.Permission), answered through the board API.

// watchPermissions looks until run 1 of the task has settled, within the turn
// deadline, handing every pending permission of the task it sees to onPending once
// (in the order they were asked). onPending returns stop = true to end the watch at
// once (the run is then not waited for), or an error that ends the flow. It returns
// how many pending permissions it saw. Errors: as waitTurn's.
func watchPermissions(ctx context.Context, s *Session, onPending func(p api.Permission) (stop bool, err error)) (int, error) {
	ctx, cancel := turnDeadline(ctx, s, 1)
	defer cancel()
	seen := map[string]bool{}
	var perms []api.Permission
	_, err := lookFor(ctx, s, func(ctx context.Context) (*view, error) {
		var err error
		if perms, err = s.Board.Permissions(ctx, s.TaskID); err != nil {
			return nil, err
		}
		return look(ctx, s)
	}, func(*view) (bool, error) {
		for _, p := range perms {
			if p.Status != api.PermissionPending || seen[p.ID] {
				continue
			}
			seen[p.ID] = true
			if stop, err := onPending(p); err != nil || stop {
				return true, err
			}
		}
		return false, nil
	})
	return len(seen), err
}

// answerPermissions answers every permission the agent asks during run 1 with
// decision and waits for the run to settle. An agent that asks none breaks the flow's
// contract (a problem); a refused answer is the harness's.
func answerPermissions(ctx context.Context, s *Session, decision api.PermissionDecisionKind) Outcome {
	var out Outcome
	n, err := decidePermissions(ctx, s, func(api.Permission) api.PermissionDecisionKind { return decision })
	if err != nil {
		out.Err = err
		return out
	}
	if n == 0 {
		out.Problems = append(out.Problems, "the agent did not ask permission before its run ended")
	}
	return out
}

// decidePermissions answers every permission the agent asks during run 1 with what
// decide says for it (through the board, logged) and waits for the run to settle. It
// returns how many it answered. Errors: watchPermissions', or a refused answer (a
// BoardFault).
func decidePermissions(ctx context.Context, s *Session, decide func(api.Permission) api.PermissionDecisionKind) (int, error) {
	return watchPermissions(ctx, s, func(p api.Permission) (bool, error) {
		decision := decide(p)
		s.log("answering permission %s (%s %q, locations %v): %s", p.ID, p.Kind, p.Title, p.Locations, decision)
		if _, err := s.Board.DecidePermission(ctx, p.ID, decision); err != nil {
			return false, BoardFault(fmt.Sprintf("answering permission %s (%s)", p.ID, decision), err)
		}
		return false, nil
	})
}

// requestID returns a fresh cancellationRequestId (a version 4 UUID, canonical form).
func requestID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

package flows

import (
	"context"
	"crypto/rand"
	"errors"
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
// decision and waits for the run to settle. An agent that asks none, or asks one that
// offers no option to answer with decision, breaks the flow's contract (a problem,
// the candidate's); a refused answer is the harness's.
func answerPermissions(ctx context.Context, s *Session, decision api.PermissionDecisionKind) Outcome {
	return playPermissions(ctx, s, func(api.Permission) (api.PermissionDecisionKind, bool) { return decision, true },
		"the agent did not ask permission before its run ended")
}

// playPermissions answers every permission the agent asks during run 1 with what
// decide says and waits for the run to settle; decide also says whether the request is
// one the flow is about. An agent that asks none such (none: the problem's words), or
// asks one that offers no option to answer as decide says, breaks the flow's contract
// (a problem, the candidate's); a refused answer is the harness's.
func playPermissions(ctx context.Context, s *Session, decide func(api.Permission) (api.PermissionDecisionKind, bool), none string) Outcome {
	var out Outcome
	about := 0
	_, err := decidePermissions(ctx, s, func(p api.Permission) api.PermissionDecisionKind {
		decision, ok := decide(p)
		if ok {
			about++
		}
		return decision
	})
	if problem, ok := unanswerableProblem(err); ok {
		out.Problems = append(out.Problems, problem)
		return out
	}
	if err != nil {
		out.Err = err
		return out
	}
	if about == 0 {
		out.Problems = append(out.Problems, none)
	}
	return out
}

// unanswerable is decidePermissions' error for a permission that offers the human no
// option of the decision the case demands (an agent that asks to write but offers no
// way to decline): the request cannot be answered as the case demands, which is the
// candidate's doing, not the harness's.
type unanswerable struct {
	permission api.Permission
	decision   api.PermissionDecisionKind
}

func (e *unanswerable) Error() string {
	kinds := make([]string, 0, len(e.permission.Options))
	for _, o := range e.permission.Options {
		kinds = append(kinds, o.Kind)
	}
	return fmt.Sprintf("permission %s (%s %q) offers no option to %s (options offered: %v)",
		e.permission.ID, e.permission.Kind, e.permission.Title, e.decision, kinds)
}

// unanswerableProblem returns the problem an unanswerable error states, and whether
// err is one.
func unanswerableProblem(err error) (string, bool) {
	var u *unanswerable
	if errors.As(err, &u) {
		return "the agent asked a permission the human cannot answer as the case demands: " + u.Error(), true
	}
	return "", false
}

// decidePermissions answers every permission the agent asks during run 1 with what
// decide says for it (through the board, logged) and waits for the run to settle. It
// returns how many it answered. Errors: watchPermissions'; *unanswerable when a
// permission offers no option for its decision (the watch ends at once, the
// permission left pending for the attempt's teardown to cancel); a refused answer (a
// BoardFault).
func decidePermissions(ctx context.Context, s *Session, decide func(api.Permission) api.PermissionDecisionKind) (int, error) {
	return watchPermissions(ctx, s, func(p api.Permission) (bool, error) {
		decision := decide(p)
		if _, ok := p.OptionFor(decision); !ok {
			s.log("permission %s (%s %q) offers no option to %s", p.ID, p.Kind, p.Title, decision)
			return true, &unanswerable{permission: p, decision: decision}
		}
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

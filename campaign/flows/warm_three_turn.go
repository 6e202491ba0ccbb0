package flows

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "warm_three_turn", Needs: []catalog.Need{
			{Field: catalog.FieldFollowups, Count: 2, What: "the second and third turns' prompts"},
			{Field: catalog.FieldTurnMarkers, Count: 3},
			{Field: catalog.FieldWorkspaceFile},
			{Field: catalog.FieldTurnTimeout},
		}},
		Play: playWarmThreeTurn,
	})
}

// playWarmThreeTurn is flow warm_three_turn: after each turn the workspace file must
// hold exactly the lines of the turns so far (T1…Tn, each with the nonce) and, but
// for the last, the task must be in review; the human then posts the next follow-up.
// An agent that asks permission for its writes (an ACP agent's native tool) gets
// every request approved while the flow runs (approveAll): the case is about the
// session surviving three turns, and the human asked for those writes.
func playWarmThreeTurn(ctx context.Context, s *Session) Outcome {
	ctx, stop := context.WithCancel(ctx)
	approved := approveAll(ctx, s)
	out := playWarmTurns(ctx, s)
	stop()
	if err := <-approved; err != nil && out.Err == nil {
		out.Err = err
	}
	return out
}

// approveAll approves every pending permission of the task until ctx ends; the
// channel gets the first answer the board refused (a harness fault), or nil.
func approveAll(ctx context.Context, s *Session) <-chan error {
	done := make(chan error, 1)
	poll := s.Poll
	if poll <= 0 {
		poll = defaultPoll
	}
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		seen := map[string]bool{}
		for {
			perms, err := s.Board.Permissions(ctx, s.TaskID)
			if err == nil {
				for _, p := range perms {
					if p.Status != api.PermissionPending || seen[p.ID] {
						continue
					}
					seen[p.ID] = true
					s.log("approving permission %s (%s %q)", p.ID, p.Kind, p.Title)
					_, err := s.Board.DecidePermission(ctx, p.ID, api.PermissionApprove)
					if controlplane.CodeOf(err) == controlplane.CodeInteractionAlreadyResolved {
						continue // closed meanwhile (its turn ended): nothing to answer
					}
					if err != nil && ctx.Err() == nil {
						done <- BoardFault(fmt.Sprintf("approving permission %s", p.ID), err)
						return
					}
				}
			}
			select {
			case <-ctx.Done():
				done <- nil
				return
			case <-t.C:
			}
		}
	}()
	return done
}

// playWarmTurns plays the three turns (see playWarmThreeTurn).
func playWarmTurns(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	followups := s.Rendered.Followups
	for turn := 1; turn <= len(followups)+1; turn++ {
		if msg := checkWarmFile(s, turn); msg != "" {
			out.Problems = append(out.Problems, msg)
		}
		if turn > len(followups) {
			break
		}
		if v.task == nil || v.task.Status != controlplane.TaskInReview {
			out.Problems = append(out.Problems, fmt.Sprintf("turn %d was not submitted for review", turn))
			break
		}
		out.submit()
		s.log("posting follow-up %d", turn)
		if _, err := s.Board.Comment(ctx, s.TaskID, followups[turn-1]); err != nil {
			out.Err = BoardFault(fmt.Sprintf("posting follow-up %d", turn), err)
			return out
		}
		if v, out.Err = waitTurn(ctx, s, turn+1); out.Err != nil {
			return out
		}
	}
	return out
}

// checkWarmFile checks the warm case's workspace file after turn n: it must hold
// exactly the first n lines of the final expected content (T1…Tn); it returns the
// problem, or "".
func checkWarmFile(s *Session, n int) string {
	rel := s.Rendered.WorkspaceFile
	if rel == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(s.Workspace, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Sprintf("after turn %d the workspace file %s is missing", n, rel)
	}
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "T%d-%s\n", i, s.Rendered.Nonce)
	}
	if string(b) != want.String() {
		return fmt.Sprintf("after turn %d the workspace file %s does not hold lines T1…T%d", n, rel, n)
	}
	return ""
}

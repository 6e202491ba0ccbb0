package flows

import (
	"context"
	"fmt"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "blocker_guidance", Needs: []catalog.Need{{Field: catalog.FieldFollowups, Count: 1, What: "the human's answer"}}},
		Play:         playBlockerGuidance,
		Manager:      true,
	})
}

// playBlockerGuidance is flow blocker_guidance: run 1 must leave the task blocked on a question only the human can decide (the
// worker's block comment); the human answers with the case's one followup as a board
// comment, which wakes the worker; run 2 must continue with the answer and finish. A
// task that is not blocked after run 1 is the candidate's contract violation. The
// company also has a manager agent the fixtures created; the flow does nothing with
// it, and the blocker_guidance matcher fails the cell when it ran anywhere.
func playBlockerGuidance(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	if v.task == nil || v.task.Status != controlplane.TaskBlocked {
		status := "missing"
		if v.task != nil {
			status = string(v.task.Status)
		}
		out.Problems = append(out.Problems, fmt.Sprintf("the task is %s after run 1, not blocked on a question for the human", status))
		return out
	}
	answer, err := s.followup()
	if err != nil {
		out.Err = err
		return out
	}
	out.submit()
	s.log("answering the blocked task with a comment")
	if _, err := s.Board.Comment(ctx, s.TaskID, answer); err != nil {
		out.Err = BoardFault("answering the blocked task", err)
		return out
	}
	_, out.Err = waitTurn(ctx, s, 2)
	return out
}

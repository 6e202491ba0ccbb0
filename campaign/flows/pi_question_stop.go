package flows

import (
	"context"
	"fmt"

	"github.com/agentproof/agentproof/controlplane"
)

// playPiQuestionStop is flow pi_question_stop (docs/pi.md): when the agent's native
// question is pending during run 1, the human stops the run through the Stop API (with
// a cancellationRequestId) instead of answering, and waits for it to settle; the
// question must still be unanswered then (the Stop is no answer). An agent that asks
// nothing breaks the flow's contract (a problem). The matchers grade the run's status,
// the driver's observed stop reason and how the dialog was closed.
func playPiQuestionStop(ctx context.Context, s *Session) Outcome {
	var out Outcome
	q, err := waitQuestion(ctx, s)
	if err != nil || q == nil {
		out.Err = err
		if err == nil {
			out.Problems = append(out.Problems, "the agent asked no native question before its run ended")
		}
		return out
	}
	v, err := look(ctx, s)
	if err != nil || len(v.runs) == 0 {
		out.Err = BoardFault("reading the run to stop", err)
		return out
	}
	id, err := requestID()
	if err != nil {
		out.Err = permanent(fmt.Errorf("making a cancellationRequestId: %w", err))
		return out
	}
	run := v.runs[0].ID
	s.log("stopping run %s while native question %s is pending", run, q.ID)
	if _, err := s.Board.CancelRun(ctx, run, id); err != nil {
		out.Err = BoardFault("stopping run "+run, err)
		return out
	}
	if v, out.Err = waitTurn(ctx, s, 1); out.Err != nil {
		return out
	}
	for _, in := range v.st.Interactions {
		if in.ID == q.ID && in.Status != controlplane.InteractionPending {
			out.Problems = append(out.Problems, fmt.Sprintf("question %s is %s after the Stop, though nobody answered it", q.ID, in.Status))
		}
	}
	return out
}

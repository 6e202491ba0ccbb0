package flows

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{FlowContract: catalog.FlowContract{Name: "pi_question_stop"}, Play: playPiQuestionStop, Scripts: piScripts(piQuestionScripts)})
}

// playPiQuestionStop is flow pi_question_stop (docs/pi.md): when the agent's native
// question is pending during run 1, the human stops the run through the Stop API (with
// a cancellationRequestId) instead of answering, and waits for it to settle; the
// runner must then have closed the question (outcome expired, result cancelled: the
// Stop is no answer, and the dialog is gone), and a stale answer after it must be
// refused with 409 interaction_already_resolved — either failing is the
// harness's fault (the runner's duty, not the agent's). An agent that asks nothing
// breaks the flow's contract (a problem). The matchers grade the run's status, the
// driver's observed stop reason, how the dialog was closed and the closed question.
func playPiQuestionStop(ctx context.Context, s *Session) Outcome {
	var out Outcome
	q, done := askedQuestion(ctx, s, &out)
	if done {
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
		if in.ID == q.ID && in.Status != controlplane.InteractionExpired {
			// The runner closes the dead dialog's question: agentproof's duty, not Pi's.
			out.Err = permanent(fmt.Errorf("question %s is %s after the Stop, not closed (expired)", q.ID, in.Status))
			return out
		}
	}
	// A stale answer after the Stop must be refused (409), never land.
	qid, err := questionID(q)
	if err != nil {
		out.Problems = append(out.Problems, err.Error())
		return out
	}
	stale, _ := json.Marshal(map[string]any{"answers": []any{map[string]string{"questionId": qid, "text": "stale"}}})
	s.log("answering question %s after the Stop (a stale answer, which must be refused)", q.ID)
	_, err = s.Board.ResolveInteraction(ctx, q.ID, api.ResolveInteractionRequest{Outcome: controlplane.InteractionAnswered, Result: stale})
	switch code := controlplane.CodeOf(err); {
	case err == nil:
		out.Err = permanent(fmt.Errorf("a stale answer to question %s after the Stop was accepted", q.ID))
	case code != controlplane.CodeInteractionAlreadyResolved:
		out.Err = BoardFault("answering question "+q.ID+" after the Stop", err)
	}
	return out
}

package flows

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// playPlanRevision is flow plan_revision_acceptance: run 1 must leave a pending plan
// confirmation, which the human rejects with the case's revision request; run 2 must
// leave a revised one, which the human accepts; run 3 finishes.
func playPlanRevision(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v, err := waitTurn(ctx, s, 1)
	if err != nil {
		out.Err = err
		return out
	}
	for turn, outcome := range []controlplane.InteractionStatus{controlplane.InteractionRejected, controlplane.InteractionAccepted} {
		q := v.pending(s.TaskID, controlplane.InteractionConfirmation)
		if q == nil {
			out.Problems = append(out.Problems, fmt.Sprintf("no plan confirmation pending after run %d", turn+1))
			return out
		}
		result := json.RawMessage(`{}`)
		if outcome == controlplane.InteractionRejected {
			result, _ = json.Marshal(map[string]string{"note": s.Rendered.RevisionRequest})
		}
		out.submit()
		s.log("resolving plan confirmation %s as %s", q.ID, outcome)
		if _, err := s.Board.ResolveInteraction(ctx, q.ID, api.ResolveInteractionRequest{Outcome: outcome, Result: result}); err != nil {
			out.Err = BoardFault(fmt.Sprintf("resolving plan confirmation %s as %s", q.ID, outcome), err)
			return out
		}
		if v, out.Err = waitTurn(ctx, s, turn+2); out.Err != nil {
			return out
		}
	}
	return out
}

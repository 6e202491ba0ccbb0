package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "plan_revision_acceptance", Needs: []catalog.Need{
			{Field: catalog.FieldRevisionRequest}, {Field: catalog.FieldPlanMarkers},
		}},
		Play: playPlanRevision,
	})
}

// playPlanRevision is flow plan_revision_acceptance: run 1 must leave a pending plan
// confirmation, which the human rejects with the case's revision request; run 2 must
// leave a revised one, which the human accepts; run 3 finishes. Before accepting, the
// human tries to accept the first confirmation (of the older revision): the control
// plane must refuse it with a conflict (409); accepting it is a fault of the harness's
// own control plane, never the candidate's. The revision ids, bodies, step counts and
// targets are graded by the case's plan_revisions matcher, from the persisted state.
func playPlanRevision(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	var first string
	for turn, outcome := range []controlplane.InteractionStatus{controlplane.InteractionRejected, controlplane.InteractionAccepted} {
		q := v.pending(s.TaskID, controlplane.InteractionConfirmation)
		if q == nil {
			out.Problems = append(out.Problems, fmt.Sprintf("no plan confirmation pending after run %d", turn+1))
			return out
		}
		result := json.RawMessage(`{}`)
		if outcome == controlplane.InteractionRejected {
			first = q.ID
			result, _ = json.Marshal(map[string]string{"note": s.Rendered.RevisionRequest})
		} else if out.Err = probeOlderAcceptance(ctx, s, first); out.Err != nil {
			return out
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

// probeOlderAcceptance accepts the confirmation of the older plan revision and expects
// a conflict (HTTP 409: the interaction is resolved, or its revision superseded). It
// returns nil when refused so; a permanent harness fault when the control plane
// accepted it or refused it otherwise; a BoardFault when the board did not answer.
func probeOlderAcceptance(ctx context.Context, s *Session, interaction string) error {
	_, err := s.Board.ResolveInteraction(ctx, interaction, api.ResolveInteractionRequest{Outcome: controlplane.InteractionAccepted, Result: json.RawMessage(`{}`)})
	var ce *controlplane.Error
	switch {
	case err == nil:
		return permanent(fmt.Errorf("the control plane accepted confirmation %s of an older plan revision", interaction))
	case !errors.As(err, &ce):
		return BoardFault("accepting the older confirmation "+interaction, err)
	case ce.Code.Class() != controlplane.ClassConflict:
		return permanent(fmt.Errorf("accepting the older confirmation %s: want a conflict (409), got %w", interaction, err))
	}
	s.log("accepting the older confirmation %s was refused: %s", interaction, ce.Code)
	return nil
}

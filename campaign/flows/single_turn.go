package flows

import (
	"context"

	"github.com/agentproof/agentproof/catalog"
)

func init() {
	register(Flow{FlowContract: catalog.FlowContract{Name: "single_turn"}, Play: playSingleTurn})
}

// playSingleTurn is flow single_turn: the task's assignment wakes the agent; the
// human waits for its one run to settle.
func playSingleTurn(ctx context.Context, s *Session) Outcome {
	var out Outcome
	out.final = out.wait(ctx, s, 1) // the settled look: nothing is done after it
	return out
}

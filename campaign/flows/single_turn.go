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
	v, err := waitTurn(ctx, s, 1)
	if err != nil {
		return Outcome{Err: err}
	}
	return Outcome{final: v} // the settled look: nothing is done after it
}

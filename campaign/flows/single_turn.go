package flows

import "context"

// playSingleTurn is flow single_turn: the task's assignment wakes the agent; the
// human waits for its one run to settle.
func playSingleTurn(ctx context.Context, s *Session) Outcome {
	_, err := waitTurn(ctx, s, 1)
	return Outcome{Err: err}
}

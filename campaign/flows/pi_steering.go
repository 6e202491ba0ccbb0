package flows

import (
	"context"

	"github.com/agentproof/agentproof/api"
)

// playPiSteering is flow pi_steering (docs/pi.md "Steering"): once run 1 is running
// (its scripted model holds the first tool call mid-stream), the human posts the case's
// only followup with the Steer button (a board comment delivered into the running turn,
// Board.SteerRun); the runner must deliver it with Pi's steer, which the answer and the
// run's live record show (pi.steers, accepted); only then does
// the flow release the model's hold, and it waits for the run to settle. The matchers
// grade the steered marker as the run's final reply, one succeeded run and the
// delivery. A run that ends before the steer was accepted breaks the flow's contract
// (a problem); a harness without a scripted model to release is the harness's fault.
func playPiSteering(ctx context.Context, s *Session) Outcome {
	return playHeldTurn(ctx, s, heldTurnDelivery{
		flow: "pi_steering", comment: "the steering comment", sending: "steering the running turn",
		logLine: "steering run %s with a comment while it is running (the Steer button)",
		send: func(ctx context.Context, b Board, _, runID, body string) error {
			_, err := b.SteerRun(ctx, runID, body)
			return err
		},
		deliveries: func(p *api.SessionTurn) []api.Delivery { return p.Steers },
	})
}

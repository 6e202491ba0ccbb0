package flows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentproof/agentproof/controlplane"
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
	var out Outcome
	if s.Rendered == nil || len(s.Rendered.Followups) != 1 {
		out.Err = permanent(errors.New("flow pi_steering needs exactly one followup (the steering comment)"))
		return out
	}
	if s.ReleaseModel == nil || s.ModelHolding == nil {
		out.Err = permanent(errors.New("flow pi_steering needs the attempt's scripted model (it releases the held tool call)"))
		return out
	}
	if s.TurnTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.TurnTimeout, &DeadlineError{Turn: 1, Limit: s.TurnTimeout})
		defer cancel()
	}
	poll := s.Poll
	if poll <= 0 {
		poll = defaultPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	commented, steered := false, false
	for !steered {
		v, err := look(ctx, s)
		if err == nil {
			if v.settled(1) {
				out.Problems = append(out.Problems, "run 1 ended before the steering comment reached its turn")
				return out
			}
			if why := v.refused(); why != "" {
				out.Err = permanent(errors.New(why))
				return out
			}
			// The comment goes out only once the model holds the tool call mid-stream:
			// Pi takes a steer as soon as its turn exists, and one accepted before the
			// first model request would ride on that request instead of steering the
			// held call (the scripted model would then refuse, and the run fail for a
			// reason that is the flow's timing, not the candidate's).
			running := len(v.runs) > 0 && v.runs[0].Status == controlplane.RunRunning && s.ModelHolding(1)
			if running && !commented {
				s.log("steering run %s with a comment while it is running (the Steer button)", v.runs[0].ID)
				if _, err := s.Board.SteerRun(ctx, v.runs[0].ID, s.Rendered.Followups[0]); err != nil {
					out.Err = BoardFault("steering the running turn", err)
					return out
				}
				out.submit()
				commented = true
			}
			for _, r := range v.records {
				if commented && len(v.runs) > 0 && r.RunID == v.runs[0].ID && r.Pi != nil {
					for _, d := range r.Pi.Steers {
						steered = steered || d.Accepted
					}
				}
			}
		}
		if steered {
			break
		}
		select {
		case <-ctx.Done():
			out.Err = waitError(ctx)
			return out
		case <-t.C:
		}
	}
	s.log("the steer was accepted; releasing the model's held tool call")
	if !s.ReleaseModel(1) {
		out.Err = permanent(fmt.Errorf("the scripted model has no run 1 to release"))
		return out
	}
	_, out.Err = waitTurn(ctx, s, 1)
	return out
}

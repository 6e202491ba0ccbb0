package flows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// heldTurnDelivery is what a flow sends into a session's running turn 1 (Pi's, or
// Codex's app-server's for pi_steering) while the scripted model holds its first tool
// call (flows pi_steering and pi_follow_up): the flow's name
// and what its comment is (for errors and problems), the log line and board call that
// send the case's only followup into run runID, and which of the run's live
// deliveries (steers or follow-ups) must show it accepted.
type heldTurnDelivery struct {
	flow, comment, sending, logLine string
	send                            func(ctx context.Context, b Board, taskID, runID, body string) error
	deliveries                      func(*api.SessionTurn) []api.Delivery
}

// playHeldTurn sends d's comment into run 1 once its scripted model holds the tool
// call, waits until the run's live record shows the delivery accepted, releases the
// model and waits for the turn to settle. A run that ends before the delivery was
// accepted breaks the flow's contract (a problem); a case without exactly one followup
// or a harness without a scripted model to release is the harness's fault.
func playHeldTurn(ctx context.Context, s *Session, d heldTurnDelivery) Outcome {
	var out Outcome
	comment, err := s.followup()
	if err != nil {
		out.Err = err
		return out
	}
	if s.ReleaseModel == nil || s.ModelHolding == nil {
		out.Err = permanent(fmt.Errorf("flow %s needs the attempt's scripted model (it releases the held tool call)", d.flow))
		return out
	}
	ctx, cancel := turnDeadline(ctx, s, 1)
	defer cancel()
	poll := s.Poll
	if poll <= 0 {
		poll = defaultPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	commented, accepted := false, false
	for !accepted {
		v, err := look(ctx, s)
		if err == nil {
			if v.settled(1) {
				out.Problems = append(out.Problems, fmt.Sprintf("run 1 ended before %s reached its turn", d.comment))
				return out
			}
			if why := v.refused(); why != "" {
				out.Err = permanent(errors.New(why))
				return out
			}
			// The comment goes out only once the model holds the tool call mid-stream:
			// Pi takes a steer or follow-up as soon as its turn exists, and one accepted
			// before the first model request would ride on that request instead of
			// reaching the held call (the scripted model would then refuse, and the run
			// fail for a reason that is the flow's timing, not the candidate's).
			running := len(v.runs) > 0 && v.runs[0].Status == controlplane.RunRunning && s.ModelHolding(1)
			if running && !commented {
				s.log(d.logLine, v.runs[0].ID)
				if err := d.send(ctx, s.Board, s.TaskID, v.runs[0].ID, comment); err != nil {
					out.Err = BoardFault(d.sending, err)
					return out
				}
				out.submit()
				commented = true
			}
			for _, r := range v.records {
				if t := r.SessionTurn(); commented && len(v.runs) > 0 && r.RunID == v.runs[0].ID && t != nil {
					for _, del := range d.deliveries(t) {
						accepted = accepted || del.Accepted
					}
				}
			}
		}
		if accepted {
			break
		}
		select {
		case <-ctx.Done():
			out.Err = waitError(ctx)
			return out
		case <-t.C:
		}
	}
	s.log("%s was accepted; releasing the model's held tool call", d.comment)
	if !s.ReleaseModel(1) {
		out.Err = permanent(fmt.Errorf("the scripted model has no run 1 to release"))
		return out
	}
	_, out.Err = waitTurn(ctx, s, 1)
	return out
}

package flows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentproof/agentproof/controlplane"
)

// piFollowUpSettle is how long flow pi_follow_up looks, after run 1 settled, for a
// second run the follow-up comment might have started (a message the runner did not
// deliver into the turn is a wake, taken at once once the task is free).
const piFollowUpSettle = time.Second

// playPiFollowUp is flow pi_follow_up (docs/pi.md "Follow-ups"): once run 1 is running
// (its scripted model holds the first tool call mid-stream), the human posts the case's
// only followup as a plain board comment (no Steer); the runner must queue it into the
// running turn with Pi's follow_up, which the run's live record shows (pi.followUps,
// accepted); only then does the flow release the model's hold, and it waits for the
// run to settle, then makes sure no second run followed (the comment's wake was
// consumed: the message was answered in the turn, not lost nor answered twice). The
// matchers grade the follow-up's marker as the run's final reply, one succeeded run
// and the delivery. A run that ends before the follow-up was accepted breaks the flow's
// contract (a problem); a harness without a scripted model to release is the harness's
// fault.
func playPiFollowUp(ctx context.Context, s *Session) Outcome {
	var out Outcome
	if s.Rendered == nil || len(s.Rendered.Followups) != 1 {
		out.Err = permanent(errors.New("flow pi_follow_up needs exactly one followup (the follow-up comment)"))
		return out
	}
	if s.ReleaseModel == nil || s.ModelHolding == nil {
		out.Err = permanent(errors.New("flow pi_follow_up needs the attempt's scripted model (it releases the held tool call)"))
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
	commented, queued := false, false
	for !queued {
		v, err := look(ctx, s)
		if err == nil {
			if v.settled(1) {
				out.Problems = append(out.Problems, "run 1 ended before the follow-up comment reached its turn")
				return out
			}
			if why := v.refused(); why != "" {
				out.Err = permanent(errors.New(why))
				return out
			}
			// As in pi_steering: the comment goes out once the model holds its call, so
			// that the turn surely runs when it arrives.
			running := len(v.runs) > 0 && v.runs[0].Status == controlplane.RunRunning && s.ModelHolding(1)
			if running && !commented {
				s.log("commenting on the task while run %s is running (a follow-up, no Steer)", v.runs[0].ID)
				if _, err := s.Board.Comment(ctx, s.TaskID, s.Rendered.Followups[0]); err != nil {
					out.Err = BoardFault("posting the follow-up comment", err)
					return out
				}
				out.submit()
				commented = true
			}
			for _, r := range v.records {
				if commented && len(v.runs) > 0 && r.RunID == v.runs[0].ID && r.Pi != nil {
					for _, d := range r.Pi.FollowUps {
						queued = queued || d.Accepted
					}
				}
			}
		}
		if queued {
			break
		}
		select {
		case <-ctx.Done():
			out.Err = waitError(ctx)
			return out
		case <-t.C:
		}
	}
	s.log("the follow-up was queued; releasing the model's held tool call")
	if !s.ReleaseModel(1) {
		out.Err = permanent(fmt.Errorf("the scripted model has no run 1 to release"))
		return out
	}
	if _, out.Err = waitTurn(ctx, s, 1); out.Err != nil {
		return out
	}
	select {
	case <-ctx.Done():
		out.Err = waitError(ctx)
		return out
	case <-time.After(piFollowUpSettle):
	}
	if v, err := look(ctx, s); err == nil && len(v.runs) > 1 {
		out.Problems = append(out.Problems, fmt.Sprintf("the follow-up comment started run %s: it was not answered in run 1's turn", v.runs[1].ID))
	}
	return out
}

package flows

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "pi_follow_up", Needs: []catalog.Need{{Field: catalog.FieldFollowups, Count: 1, What: "the follow-up comment"}}},
		Play:         playPiFollowUp,
		Scripts: piScripts(func(ModelInput) ([]*scriptedmodel.Script, error) {
			return scriptedmodel.ForPiFollowUp(piFollowUpMarker(), "finish_task")
		}),
	})
}

// piFollowUpMarker is what Pi's scripted model takes from the follow-up message in the
// flow pi_follow_up: the case's marker (PAPERCLIP_E2E_PI_FOLLOWUP_<nonce>), which only
// the human's comment carries (scriptedmodel.ForPiFollowUp).
var piFollowUpMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(PAPERCLIP_E2E_PI_FOLLOWUP_[A-Za-z0-9]+)`) })

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
	out := playHeldTurn(ctx, s, heldTurnDelivery{
		flow: "pi_follow_up", comment: "the follow-up comment", sending: "posting the follow-up comment",
		logLine: "commenting on the task while run %s is running (a follow-up, no Steer)",
		send: func(ctx context.Context, b Board, taskID, _, body string) error {
			_, err := b.Comment(ctx, taskID, body)
			return err
		},
		deliveries: func(p *api.SessionTurn) []api.Delivery { return p.FollowUps },
	})
	if out.Err != nil || len(out.Problems) > 0 {
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

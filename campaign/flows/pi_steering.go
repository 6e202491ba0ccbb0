package flows

import (
	"context"
	"regexp"
	"sync"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "pi_steering", Needs: []catalog.Need{{Field: catalog.FieldFollowups, Count: 1, What: "the steering comment"}}},
		Play:         playPiSteering,
		Scripts:      steeringScripts,
	})
}

// steeringScripts is pi_steering's Scripts: Pi's model holds a harmless shell call
// (scriptedmodel.ForPiSteering); Codex's app-server's holds a progress report (Codex
// asks before every shell command) and takes the marker from anywhere in the
// conversation, where Codex puts the steering message at once
// (scriptedmodel.ForCodexAppSteering); any other driver plays the reference's.
func steeringScripts(in ModelInput) ([]*scriptedmodel.Script, error) {
	switch in.Profile.Driver.Kind {
	case driver.KindRPC:
		return scriptedmodel.ForPiSteering(piSteerMarker(), "finish_task")
	case driver.KindApp:
		return scriptedmodel.ForCodexAppSteering(appSteerMarker(), "report_progress", "finish_task")
	}
	return ReferenceScripts(in)
}

// piSteerMarker is what Pi's scripted model takes from the steering message in the flow
// pi_steering: the case's marker (PAPERCLIP_E2E_PI_STEERED_<nonce>), which only the
// human's comment carries (scriptedmodel.ForPiSteering).
var piSteerMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(PAPERCLIP_E2E_PI_STEERED_[A-Za-z0-9]+)`) })

// appSteerMarker is what Codex's scripted model takes from the steering message in the
// flow pi_steering: the case's marker (PAPERCLIP_E2E_APP_STEERED_<nonce>).
var appSteerMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(PAPERCLIP_E2E_APP_STEERED_[A-Za-z0-9]+)`) })

// playPiSteering is flow pi_steering (docs/pi.md "Steering"): once run 1 is running
// (its scripted model holds the first tool call mid-stream), the human posts the case's
// only followup with the Steer button (a board comment delivered into the running turn,
// Board.SteerRun); the runner must deliver it with the agent's steer (Pi's steer,
// Codex's turn/steer), which the answer and the run's live record show (its session
// turn's steers, accepted); only then does
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

package flows

import (
	"context"

	"github.com/agentproof/agentproof/catalog"
)

func init() {
	register(Flow{FlowContract: catalog.FlowContract{Name: "process_exit", FixtureProgram: true}, Play: playProcessExit})
}

// playProcessExit is flow process_exit (agentproof's process-control calibration with
// the fixture programs, driver fixture:<program>): the assignment launches the program; the human
// waits for its run to settle. The program never talks to the API, so its exit is
// the whole story (the matchers grade the run's status).
func playProcessExit(ctx context.Context, s *Session) Outcome {
	v, err := waitTurn(ctx, s, 1)
	if err != nil {
		return Outcome{Err: err}
	}
	return Outcome{final: v} // the settled look: nothing is done after it
}

package flows

import (
	"github.com/agentproof/agentproof/catalog"
)

// Flow process_exit is agentproof's process-control calibration with the fixture
// programs (driver fixture:<program>): the assignment launches the program; the human
// waits for its run to settle, as in single_turn. The program never talks to the API,
// so its exit is the whole story (the matchers grade the run's status).
func init() {
	register(Flow{FlowContract: catalog.FlowContract{Name: "process_exit", FixtureProgram: true}, Play: playSingleTurn})
}

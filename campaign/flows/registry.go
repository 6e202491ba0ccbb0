// Package flows plays a case's flow as the human, through the board API only
// (docs/ARCHITECTURE.md "Flows"): it waits for the agent's runs to settle and answers
// questions, approves plans, posts follow-ups or restarts the server, as the case says.
//
// A flow is one file of this package: its play function and its registry entry (a
// Flow, registered by the file's init), which carries the flow's traits — the case
// contract catalog validation checks (catalog.FlowContract: the fields it needs and
// accepts, its own rules), the scripted model's scripts it derives for a real CLI, why
// it needs a server process of its own, the fixtures it needs beyond the task. Nothing
// else names a flow: the command line hands Contracts to catalog loading
// (catalog.WithFlows), so that a catalog naming a flow nothing plays, or breaking a
// flow's contract, is refused before anything starts, and Names to the catalog's
// schema; the attempt asks Lookup for the rest.
//
// A flow talks to a Board (the part of the board client it uses) and returns an
// Outcome: when the human submitted each turn, the contract violations it saw (the
// candidate broke the flow) and at most one error that stopped it — a missed turn
// deadline (*DeadlineError), the attempt's context error, or a harness fault
// (*verdict.Fault: the board refused a human action, the runner refused a run, the
// server did not restart). It never judges: the attempt's verdict does.
package flows

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/catalog"
)

// Play plays one flow of one attempt. It must not return before every run it waited
// for settled or its context ended.
type Play func(ctx context.Context, s *Session) Outcome

// Flow is one flow's registry entry: its name and case contract (what catalog
// validation checks of its cases), how the human plays it, and the traits the attempt
// reads instead of naming the flow.
type Flow struct {
	catalog.FlowContract
	// Play plays the flow.
	Play Play
	// Scripts derives the scripted model's scripts for a real CLI's runs of a case of
	// the flow (ModelScripts); nil derives them from the case's reference script
	// (ReferenceScripts).
	Scripts func(ModelInput) ([]*scriptedmodel.Script, error)
	// ServerProcess says why a case of the flow needs its control plane in a server
	// process of its own (the flow restarts or kills the server, or kills an agent the
	// server must outlive), "" when it does not; nil for never.
	ServerProcess func(*catalog.Case) string
	// Manager: the fixtures create a manager agent beside the worker.
	Manager bool
	// Chat: the fixtures start a conversation with the agent, whose first message is
	// the case's prompt, instead of creating an issue, and create the handoff worker
	// (ChatWorkerName) beside it.
	Chat bool
}

// registry holds the flows, by name; each file of this package registers its own.
var registry = map[catalog.Flow]Flow{}

// register adds f to the registry; a second flow of the same name, a flow without a
// play function or with a contract naming fields no contract may name is a bug of
// this package (it panics at initialisation, and every test fails).
func register(f Flow) {
	if err := f.Valid(); err != nil {
		panic(err)
	}
	if _, dup := registry[f.Name]; dup || f.Play == nil {
		panic(fmt.Sprintf("flow %s registered twice or without a play function", f.Name))
	}
	registry[f.Name] = f
}

// Names returns the names of the registered flows, sorted.
func Names() []catalog.Flow {
	out := make([]catalog.Flow, 0, len(registry))
	for name := range registry {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Contracts returns the registered flows' case contracts, sorted by name: what the
// command line hands to catalog loading (catalog.WithFlows).
func Contracts() []catalog.FlowContract {
	out := make([]catalog.FlowContract, 0, len(registry))
	for _, name := range Names() {
		out = append(out, registry[name].FlowContract)
	}
	return out
}

// Lookup returns the registry entry of flow name.
func Lookup(name catalog.Flow) (Flow, bool) {
	f, ok := registry[name]
	return f, ok
}

// ServerProcess says why a case needs its control plane in a server process of its
// own by its flow (Flow.ServerProcess), "" when its flow does not need one.
func ServerProcess(cs *catalog.Case) string {
	if f, ok := registry[cs.Flow]; ok && f.ServerProcess != nil {
		return f.ServerProcess(cs)
	}
	return ""
}

// restartsOrCrashes is the ServerProcess of the flows that restart or kill the server,
// or kill an agent process the server must outlive as it does in production.
func restartsOrCrashes(cs *catalog.Case) string {
	return fmt.Sprintf("flow %s restarts or crashes a process", cs.Flow)
}

// Run plays s.Case's flow and then checks the run count the case expects (the runs of
// the fixtures' task and of the tasks the flow created; a
// contract violation of the candidate when the flow saw none other). A flow without an
// implementation is a harness fault (catalog loading refuses such cases, so it only
// happens with a catalog loaded without catalog.WithFlows).
func Run(ctx context.Context, s *Session) Outcome {
	f, ok := Lookup(s.Case.Flow)
	if !ok {
		return Outcome{Err: permanent(fmt.Errorf("flow %q has no implementation; implemented flows: %v", s.Case.Flow, Names()))}
	}
	out := f.Play(ctx, s)
	final := out.final
	out.final = nil
	if out.Err != nil || len(out.Problems) > 0 {
		return out
	}
	want := s.Case.ExpectedRunCount
	if want <= 0 || s.Case.MinimumExpectedRunCount != nil {
		if final != nil {
			out.Final = &Look{State: final.st, Records: final.records}
		}
		return out
	}
	v := final // the flow ended on this settled look and did nothing after it
	if v == nil {
		var err error
		if v, err = look(ctx, s); err != nil {
			return out
		}
	}
	n := len(v.runs)
	for _, t := range out.Tasks {
		n += len(viewOf(s.forTask(t, 0), v.st, v.records).runs)
	}
	if n != want {
		out.Problems = append(out.Problems, fmt.Sprintf("expected %d runs, observed %d", want, n))
	}
	out.Final = &Look{State: v.st, Records: v.records}
	return out
}

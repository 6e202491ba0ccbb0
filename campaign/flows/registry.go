// Package flows plays a case's flow as the human, through the board API only
// (docs/ARCHITECTURE.md "Stages: flow"; seed 000 "Task cases and matchers"): it waits
// for the agent's runs to settle and answers questions, approves plans, posts
// follow-ups or restarts the server, as the case says. Each flow is one file; the
// registry below maps a catalog.Flow to its implementation, and Implemented is the set
// the command line hands to catalog loading (catalog.WithFlows), so that a catalog
// naming a flow no implementation plays is refused before anything starts.
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

	"github.com/agentproof/agentproof/catalog"
)

// Play plays one flow of one attempt. It must not return before every run it waited
// for settled or its context ended.
type Play func(ctx context.Context, s *Session) Outcome

// registry holds the implemented flows, one per file of this package.
var registry = map[catalog.Flow]Play{
	catalog.FlowSingleTurn:               playSingleTurn,
	catalog.FlowProcessExit:              playProcessExit,
	catalog.FlowQuestionResumeCompletion: playQuestionResume,
	catalog.FlowPlanRevisionAcceptance:   playPlanRevision,
	catalog.FlowPlanApprovalCompletion:   playPlanApproval,
	catalog.FlowWarmThreeTurn:            playWarmThreeTurn,
	catalog.FlowPermissionApproveWrite:   playPermissionApprove,
	catalog.FlowPermissionDenyWrite:      playPermissionDeny,
	catalog.FlowPendingPermissionStop:    playPendingPermissionStop,
	catalog.FlowLostAcknowledgement:      playLostAcknowledgement,
	catalog.FlowCrashRetry:               playCrashRetry,
	catalog.FlowServerCrashRetry:         playServerCrashRetry,
	catalog.FlowInstructionPersistence:   playInstructionPersistence,
	catalog.FlowBlockerGuidance:          playBlockerGuidance,
	catalog.FlowPiNativeQuestion:         playPiNativeQuestion,
	catalog.FlowPiQuestionStop:           playPiQuestionStop,
	catalog.FlowPiSteering:               playPiSteering,
	catalog.FlowAgentChat:                playAgentChat,
	catalog.FlowPiFollowUp:               playPiFollowUp,
	catalog.FlowPiConfirmNegative:        playPiConfirmNegative,
}

// Implemented returns the flows this package plays, in the catalog's enumeration order.
func Implemented() []catalog.Flow {
	var out []catalog.Flow
	for _, f := range catalog.Flows {
		if _, ok := registry[f]; ok {
			out = append(out, f)
		}
	}
	return out
}

// Lookup returns the implementation of flow f.
func Lookup(f catalog.Flow) (Play, bool) {
	p, ok := registry[f]
	return p, ok
}

// Run plays s.Case's flow and then checks the run count the case expects (the runs of
// the fixtures' task and of the tasks the flow created; a
// contract violation of the candidate when the flow saw none other). A flow without an
// implementation is a harness fault (catalog loading refuses such cases, so it only
// happens with a catalog loaded without catalog.WithFlows).
func Run(ctx context.Context, s *Session) Outcome {
	play, ok := Lookup(s.Case.Flow)
	if !ok {
		return Outcome{Err: permanent(fmt.Errorf("flow %q has no implementation; implemented flows: %v", s.Case.Flow, Implemented()))}
	}
	out := play(ctx, s)
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

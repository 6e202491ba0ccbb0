package catalog

import "slices"

// Flow names how the harness plays the human in a case (seed 000 "Task cases and
// matchers"; spec runner-e2e-harness §2.5). The enumeration is the catalog's; which
// flows this agentproof can play is the flow registry's (package campaign/flows),
// passed to Load as WithFlows.
type Flow string

// The flows of the catalog's enumeration (spec §2.5, plus process_exit of agentproof's
// process-control calibration, lost_acknowledgement and crash_retry of the board
// idempotency and Retry journeys: docs/files.md, and the native-boundary flows of the
// ACP drivers).
const (
	FlowSingleTurn               Flow = "single_turn"
	FlowPlanRevisionAcceptance   Flow = "plan_revision_acceptance"
	FlowQuestionResumeCompletion Flow = "question_resume_completion"
	FlowPlanApprovalCompletion   Flow = "plan_approval_completion"
	FlowWarmThreeTurn            Flow = "warm_three_turn"
	FlowGovernedToolReview       Flow = "governed_tool_review"
	FlowEverydayWorkflow         Flow = "everyday_workflow"
	FlowContextIntegrity         Flow = "context_integrity"
	FlowContinuationAccounting   Flow = "continuation_accounting"
	FlowContinuation             Flow = "continuation"
	FlowFirstTask                Flow = "first_task"
	FlowAgentChat                Flow = "agent_chat"
	FlowInstructionPersistence   Flow = "instruction_persistence"
	FlowNativeProviderLoss       Flow = "native_provider_loss"
	FlowProcessExit              Flow = "process_exit"
	FlowLostAcknowledgement      Flow = "lost_acknowledgement"
	FlowCrashRetry               Flow = "crash_retry"
	// FlowServerCrashRetry: the server is killed with SIGKILL while the agent's run
	// runs; after the restart the orphaned run must be interrupted, and the human's
	// Retry must finish the task (docs/files.md "Server crash and Retry").
	FlowServerCrashRetry Flow = "server_crash_retry"
	// FlowPermissionApproveWrite: the agent asks permission (an ACP
	// session/request_permission, a permission interaction on the board) and the human
	// approves it (docs/acp.md).
	FlowPermissionApproveWrite Flow = "permission_approve_write"
	// FlowPermissionDenyWrite: the human declines the agent's permission request.
	FlowPermissionDenyWrite Flow = "permission_deny_write"
	// FlowPendingPermissionStop: the human stops the run (the Stop API) while its
	// permission request is pending, then answers the closed request (which must be
	// refused with 409).
	FlowPendingPermissionStop Flow = "pending_permission_stop"
	// FlowBlockerGuidance: the worker blocks its task on a decision only a human can
	// make, the human answers with a comment, the worker resumes (seed 000 "Direct
	// blocker fixtures"); the company also has a manager agent that must not run.
	FlowBlockerGuidance Flow = "blocker_guidance"
	// FlowPiNativeQuestion: the agent asks a native question (Pi's input dialog, a
	// question interaction on the board) and the human answers it with a value the flow
	// makes up (never in the catalog); the agent must write that exact value to the
	// case's workspace file (docs/pi.md).
	FlowPiNativeQuestion Flow = "pi_native_question"
	// FlowPiQuestionStop: the human stops the run (the Stop API) while its native
	// question is pending; the run must end cancelled without an answer (docs/pi.md).
	FlowPiQuestionStop Flow = "pi_question_stop"
	// FlowPiSteering: while the agent's model is held mid-tool-call, the human steers
	// the run with a comment (the Steer button); the comment must reach the running turn (Pi's steer) and its marker
	// be the run's final reply, in one run (docs/pi.md).
	FlowPiSteering Flow = "pi_steering"
	// FlowPiFollowUp: while the agent's model is held mid-tool-call, the human comments
	// on the task without Steer; the comment must reach the running turn as a queued
	// follow-up (Pi's follow_up: delivered when the agent would otherwise stop) and be
	// answered in the same run and process, no second run (docs/pi.md).
	FlowPiFollowUp Flow = "pi_follow_up"
	// FlowPiConfirmNegative: the agent asks a native yes/no question (Pi's confirm
	// dialog, a question interaction on the board) and the human answers no; the agent
	// must write the answer it was given (false) to the case's workspace file, and the
	// question is graded negative_or_cancelled: Pi cannot tell a no from a dismissal
	// (seed 000; docs/pi.md).
	FlowPiConfirmNegative Flow = "pi_confirm_negative"
)

// Flows lists the catalog's flow enumeration in declaration order.
var Flows = []Flow{
	FlowSingleTurn, FlowPlanRevisionAcceptance, FlowQuestionResumeCompletion,
	FlowPlanApprovalCompletion, FlowWarmThreeTurn, FlowGovernedToolReview,
	FlowEverydayWorkflow, FlowContextIntegrity, FlowContinuationAccounting, FlowContinuation,
	FlowFirstTask, FlowAgentChat, FlowInstructionPersistence, FlowNativeProviderLoss,
	FlowProcessExit, FlowLostAcknowledgement, FlowCrashRetry, FlowServerCrashRetry,
	FlowPermissionApproveWrite, FlowPermissionDenyWrite, FlowPendingPermissionStop, FlowBlockerGuidance,
	FlowPiNativeQuestion, FlowPiQuestionStop, FlowPiSteering, FlowPiFollowUp, FlowPiConfirmNegative,
}

// ScriptTurns is how many turns a reference script of the case carries out: one per
// expected run, but for flows crash_retry and server_crash_retry, whose second run (the
// Retry of the killed first) carries out the turn the kill cut short again.
func (cs *Case) ScriptTurns() int {
	if cs.Flow == FlowCrashRetry || cs.Flow == FlowServerCrashRetry {
		return cs.ExpectedRunCount - 1
	}
	return cs.ExpectedRunCount
}

// HasManager reports whether the fixtures of a case with flow f create a manager
// agent beside the worker (blocker_guidance).
func (f Flow) HasManager() bool { return f == FlowBlockerGuidance }

// IsChat reports whether a case with flow f is an agent chat (agent_chat; seed 000
// "Persistent chat fixtures"): its fixtures start a conversation with the agent, whose
// first message is the case's prompt, instead of creating an issue, and create the
// handoff worker (ChatWorkerName) beside it.
func (f Flow) IsChat() bool { return f == FlowAgentChat }

// ChatWorkerName is the name of the agent the fixtures of a chat case create for the
// agent to hand work off to: an agent of no runner here (it has no adapter
// configuration), so its handed-off task waits for it and is never executed in the
// cell.
const ChatWorkerName = "Release Worker"

// AgentFlow reports whether f has an agent do work through the control plane (every
// flow but process_exit, whose fixture programs never talk to the API).
func (f Flow) AgentFlow() bool { return f != FlowProcessExit }

// Option configures Load, LoadDir and Default.
type Option func(*loadOptions)

type loadOptions struct {
	// flows, when non-nil, are the flows an implementation can play: a case naming
	// any other flow is a problem.
	flows []Flow
}

// WithFlows makes loading refuse a case whose flow is not among implemented (naming
// the case's file:line and the implemented flows), so that a catalog that could only
// end inconclusive is a usage error before anything starts. The command line passes
// the flow registry's set (flows.Implemented); without the option every flow of the
// enumeration is accepted.
func WithFlows(implemented ...Flow) Option {
	return func(o *loadOptions) { o.flows = slices.Clone(implemented) }
}

func buildOptions(opts []Option) loadOptions {
	var o loadOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

package controlplane

// The closed string vocabularies of the control-plane state (docs/control-plane.md).
// Each is a named string type whose constants are the exact
// JSON wire values; the JSON form of every type is a plain string. Code outside this
// package compares against these constants, never against string literals.

// TaskStatus is Task.Status.
type TaskStatus string

// Task statuses.
const (
	// TaskBacklog: created on hold; not picked up until it moves to todo.
	TaskBacklog TaskStatus = "backlog"
	// TaskTodo: ready to be checked out.
	TaskTodo TaskStatus = "todo"
	// TaskInProgress: checked out by a run.
	TaskInProgress TaskStatus = "in_progress"
	// TaskInReview: handed to a human (review, question, approval).
	TaskInReview TaskStatus = "in_review"
	// TaskBlocked: waits for another task or a human.
	TaskBlocked TaskStatus = "blocked"
	// TaskDone: finished (terminal; a follow-up resumes it).
	TaskDone TaskStatus = "done"
	// TaskCancelled: abandoned (terminal; a follow-up resumes it).
	TaskCancelled TaskStatus = "cancelled"
)

// TaskStatuses lists every task status in the order of docs/control-plane.md.
var TaskStatuses = []TaskStatus{TaskBacklog, TaskTodo, TaskInProgress, TaskInReview, TaskBlocked, TaskDone, TaskCancelled}

// Terminal reports whether s is done or cancelled (a new run needs Resume).
func (s TaskStatus) Terminal() bool { return s == TaskDone || s == TaskCancelled }

// RunStatus is Run.Status and the status of a native run result.
type RunStatus string

// Run statuses.
const (
	// RunRunning: checked out; the only writable status.
	RunRunning RunStatus = "running"
	// RunSucceeded: completed successfully.
	RunSucceeded RunStatus = "succeeded"
	// RunFailed: completed unsuccessfully.
	RunFailed RunStatus = "failed"
	// RunCancelled: stopped (a Stop, or superseded by a reassignment).
	RunCancelled RunStatus = "cancelled"
	// RunBudgetStopped: stopped by a budget hard stop (record_budget_usage).
	RunBudgetStopped RunStatus = "budget_stopped"
	// RunInterrupted: the server stopped while the run's agent process was running;
	// the heartbeat runner's crash recovery completes such an orphaned run so (a native
	// completion). Like a failed run it may be retried (board operation retry_run).
	RunInterrupted RunStatus = "interrupted"
)

// RunStatuses lists every run status.
var RunStatuses = []RunStatus{RunRunning, RunSucceeded, RunFailed, RunCancelled, RunBudgetStopped, RunInterrupted}

// CompletionStatuses are the statuses a native completion may give a run (native run
// results); a PRP terminal's runTerminalState is one of the first three.
var CompletionStatuses = []RunStatus{RunSucceeded, RunFailed, RunCancelled, RunInterrupted}

// RetryableStatuses are the statuses of a run that board operation retry_run accepts.
var RetryableStatuses = []RunStatus{RunFailed, RunInterrupted}

// InteractionKind is Interaction.Kind.
type InteractionKind string

// Interaction kinds.
const (
	InteractionConfirmation InteractionKind = "confirmation"
	InteractionCheckbox     InteractionKind = "checkbox"
	// InteractionQuestions is resolved as answered, not accepted.
	InteractionQuestions    InteractionKind = "questions"
	InteractionSuggestTasks InteractionKind = "suggest_tasks"
	// InteractionItemVerdicts is resolved as answered, not accepted.
	InteractionItemVerdicts InteractionKind = "item_verdicts"
)

// InteractionKinds lists every interaction kind.
var InteractionKinds = []InteractionKind{InteractionConfirmation, InteractionCheckbox, InteractionQuestions, InteractionSuggestTasks, InteractionItemVerdicts}

// InteractionStatus is Interaction.Status; a resolution's outcome is the
// status it leaves.
type InteractionStatus string

// Interaction statuses.
const (
	// InteractionPending: waiting for the human.
	InteractionPending InteractionStatus = "pending"
	// InteractionAccepted: accepted (every kind but questions and item_verdicts).
	InteractionAccepted InteractionStatus = "accepted"
	// InteractionAnswered: answered (questions and item_verdicts only).
	InteractionAnswered InteractionStatus = "answered"
	// InteractionRejected: rejected (also a revision request).
	InteractionRejected InteractionStatus = "rejected"
	// InteractionExpired: no longer answerable.
	InteractionExpired InteractionStatus = "expired"
)

// Outcomes returns the outcomes a resolution of an interaction of kind k may give:
// answered, rejected, expired for questions and item_verdicts; accepted, rejected,
// expired otherwise.
func (k InteractionKind) Outcomes() []InteractionStatus {
	if k == InteractionQuestions || k == InteractionItemVerdicts {
		return []InteractionStatus{InteractionAnswered, InteractionRejected, InteractionExpired}
	}
	return []InteractionStatus{InteractionAccepted, InteractionRejected, InteractionExpired}
}

// ContinuationPolicy is Interaction.ContinuationPolicy: who is woken when
// the interaction is resolved.
type ContinuationPolicy string

// Continuation policies.
const (
	// ContinueNone wakes nobody.
	ContinueNone ContinuationPolicy = "none"
	// ContinueWakeAssignee wakes the task's assignee on every outcome.
	ContinueWakeAssignee ContinuationPolicy = "wake_assignee"
	// ContinueWakeAssigneeOnAccept wakes the assignee only when accepted.
	ContinueWakeAssigneeOnAccept ContinuationPolicy = "wake_assignee_on_accept"
)

// ContinuationPolicies lists every continuation policy.
var ContinuationPolicies = []ContinuationPolicy{ContinueNone, ContinueWakeAssignee, ContinueWakeAssigneeOnAccept}

// ApprovalStatus is Approval.Status; a decision is the status it leaves.
type ApprovalStatus string

// Approval statuses.
const (
	ApprovalPending   ApprovalStatus = "pending"
	ApprovalApproved  ApprovalStatus = "approved"
	ApprovalRejected  ApprovalStatus = "rejected"
	ApprovalCancelled ApprovalStatus = "cancelled"
)

// ApprovalDecisions are the statuses a decision may give an approval.
var ApprovalDecisions = []ApprovalStatus{ApprovalApproved, ApprovalRejected, ApprovalCancelled}

// WakeStatus is ScheduledWake.Status. The adapter only ever writes
// WakeScheduled; a wake is delivered when its run exists.
type WakeStatus string

// WakeScheduled is the status of every wake the adapter schedules.
const WakeScheduled WakeStatus = "scheduled"

// WakeReason is why an actor is woken (Wake.Reason, ScheduledWake.Reason).
type WakeReason string

// Wake reasons.
const (
	WakeManual              WakeReason = "manual"
	WakeIssueAssigned       WakeReason = "issue_assigned"
	WakeIssueCommented      WakeReason = "issue_commented"
	WakeInteractionResolved WakeReason = "interaction_resolved"
	WakeApprovalResolved    WakeReason = "approval_resolved"
	WakeBlockersResolved    WakeReason = "blockers_resolved"
	WakeScheduledRetry      WakeReason = "scheduled_retry"
	WakeResume              WakeReason = "resume"
	// WakeRetry: board operation retry_run asked for a new run of a failed or
	// interrupted run; the wake's payload is {"retryOf": "<run id>"}.
	WakeRetry WakeReason = "retry"
	// WakeChatMessage: a human message in a conversation (board operation
	// chat_message; payload {conversationId, messageId, generation}).
	WakeChatMessage WakeReason = "chat_message"
)

// ScheduleWakeReasons are the reasons a schedule_wake command may give.
var ScheduleWakeReasons = []WakeReason{WakeManual, WakeIssueCommented, WakeInteractionResolved, WakeApprovalResolved, WakeBlockersResolved, WakeScheduledRetry, WakeResume}

// Lifecycle is State.Lifecycle.
type Lifecycle string

// Lifecycle states.
const (
	// LifecycleStopped: the initial state and the state after Stop; every operation
	// but Start and introspection fails with CodeMockNotRunning.
	LifecycleStopped Lifecycle = "stopped"
	// LifecycleRunning: after Start.
	LifecycleRunning Lifecycle = "running"
)

// WorkDisposition is a completion result's reportedWorkDisposition: what
// the run says became of its task; the completion reconciles the task's status from
// it.
type WorkDisposition string

// Work dispositions.
const (
	// WorkDone: the task is finished (task → done; fails while blockers remain).
	WorkDone WorkDisposition = "done"
	// WorkBlocked: the task waits (task → blocked).
	WorkBlocked WorkDisposition = "blocked"
	// WorkNeedsReview: a human must look (task → in_review).
	WorkNeedsReview WorkDisposition = "needs_review"
	// WorkYielded: the run gave the task back (task → todo and a scheduled_retry wake).
	WorkYielded WorkDisposition = "yielded"
)

// ActorStatus is Actor.Status.
type ActorStatus string

// Actor statuses.
const (
	// ActorActive: the actor may run.
	ActorActive ActorStatus = "active"
	// ActorPaused: stopped by a budget hard stop; checkouts are refused.
	ActorPaused ActorStatus = "paused"
)

// FileScope is ManagedFile.Scope: whose managed storage a file is in.
type FileScope string

// File scopes.
const (
	// FileScopeCompany: the company's own files (board uploads, supporting files);
	// OwnerID is "".
	FileScopeCompany FileScope = "company"
	// FileScopeAgentHome: an agent's registered home (AGENT_HOME); OwnerID is the
	// agent's actor id. The heartbeat runner materialises it before every run and saves
	// it after (HomeSave).
	FileScopeAgentHome FileScope = "agent_home"
)

// FileScopes lists every file scope.
var FileScopes = []FileScope{FileScopeCompany, FileScopeAgentHome}

// ConflictStatus is FileConflict.Status.
type ConflictStatus string

// Conflict statuses.
const (
	// ConflictOpen: the run's version is kept beside the current file, waiting for a
	// board decision.
	ConflictOpen ConflictStatus = "open"
	// ConflictResolved: the board decided (FileConflict.Resolution).
	ConflictResolved ConflictStatus = "resolved"
)

// ConflictResolution is how the board resolves a FileConflict (board operation
// resolve_file_conflict).
type ConflictResolution string

// Conflict resolutions.
const (
	// ResolveKeepCurrent keeps the current file; the run's version stays in the
	// conflict record (and its blob in the store).
	ResolveKeepCurrent ConflictResolution = "keep_current"
	// ResolveTakeIncoming applies the run's version (its bytes, or its deletion).
	ResolveTakeIncoming ConflictResolution = "take_incoming"
)

// ConflictResolutions lists every resolution.
var ConflictResolutions = []ConflictResolution{ResolveKeepCurrent, ResolveTakeIncoming}

// Decision outcomes and reasons a reader of the decision log (State.Decisions) tells
// apart.
const (
	// DecisionDenied is the outcome of a refused operation.
	DecisionDenied = "denied"
	// ReasonClaimMissing is the reason of a command refused because its run does not
	// hold the command's claim (the agent was not granted it).
	ReasonClaimMissing = "required_claim_missing"
)

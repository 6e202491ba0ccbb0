package controlplane

import "encoding/json"

// StateSchema is the schema tag of a serialized state.
const StateSchema = "paperclip.capability.mock-state.v1"

// ContextSchema is the schema tag of a run context.
const ContextSchema = "paperclip.capability.run-context.v1"

// DefaultEpochMs is the default fixture clock epoch, 2026-08-09T00:00:00.000Z in ms
// since the Unix epoch.
const DefaultEpochMs int64 = 1786233600000

// DefaultSourceInstanceID is the run's source instance when the opener gives none.
const DefaultSourceInstanceID = "capability-mock"

// Clock is the fixture clock: every read yields EpochMs + Tick·1000 ms, then Tick+1.
type Clock struct {
	EpochMs int64 `json:"epochMs"`
	Tick    int64 `json:"tick"`
}

// Company is the fixture company. Status is informational only.
type Company struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	IssuePrefix string `json:"issuePrefix"`
	Status      string `json:"status"`
	BudgetID    string `json:"budgetId"`
}

// Actor is an agent or human of the company.
type Actor struct {
	ID               string      `json:"id"`
	CompanyID        string      `json:"companyId"`
	Name             string      `json:"name"`
	Role             string      `json:"role"`
	Status           ActorStatus `json:"status"`
	BudgetID         string      `json:"budgetId"`
	CapabilityGrants []string    `json:"capabilityGrants"`
	// AdapterConfig is the board's adapter configuration of an agent (board operation
	// create_agent): a JSON object whose credentials are secret references only. Nil for
	// seeded actors, and then absent from the serialized state.
	AdapterConfig json.RawMessage `json:"adapterConfig,omitempty"`
}

// Task is a unit of work. Nullable fields are pointers; StatusVersion is
// only advanced by reassign_task.
type Task struct {
	ID              string     `json:"id"`
	CompanyID       string     `json:"companyId"`
	Identifier      string     `json:"identifier"`
	Title           string     `json:"title"`
	Description     *string    `json:"description"`
	Status          TaskStatus `json:"status"`
	Priority        string     `json:"priority"`
	WorkMode        string     `json:"workMode"`
	ParentID        *string    `json:"parentId"`
	AssigneeActorID *string    `json:"assigneeActorId"`
	CheckoutRunID   *string    `json:"checkoutRunId"`
	ExecutionRunID  *string    `json:"executionRunId"`
	StartedAt       *string    `json:"startedAt"`
	CompletedAt     *string    `json:"completedAt"`
	StatusVersion   int        `json:"statusVersion"`
	// ConversationID is set on the backing task of a conversation (chat.go): the task
	// its chat runs check out, which issue lists leave out (Issues); nil (absent from
	// the serialized state) for every other task.
	ConversationID *string `json:"conversationId,omitempty"`
}

// Comment is a task comment; AuthorActorID nil means the system.
type Comment struct {
	ID            string  `json:"id"`
	TaskID        string  `json:"taskId"`
	AuthorActorID *string `json:"authorActorId"`
	Body          string  `json:"body"`
	CreatedAt     string  `json:"createdAt"`
}

// Document is a task document keyed by (TaskID, Key) with revisions.
type Document struct {
	ID               string              `json:"id"`
	TaskID           string              `json:"taskId"`
	Key              string              `json:"key"`
	Title            string              `json:"title"`
	Format           string              `json:"format"`
	LatestRevisionID string              `json:"latestRevisionId"`
	Revisions        []*DocumentRevision `json:"revisions"`
}

// DocumentRevision is one revision of a Document; Revision is 1-based.
type DocumentRevision struct {
	ID            string  `json:"id"`
	DocumentID    string  `json:"documentId"`
	Revision      int     `json:"revision"`
	Body          string  `json:"body"`
	ChangeSummary *string `json:"changeSummary"`
	CreatedAt     string  `json:"createdAt"`
}

// Interaction is a request for human input.
type Interaction struct {
	ID                 string             `json:"id"`
	TaskID             string             `json:"taskId"`
	Kind               InteractionKind    `json:"kind"`
	Status             InteractionStatus  `json:"status"`
	Title              string             `json:"title"`
	Prompt             string             `json:"prompt"`
	Payload            json.RawMessage    `json:"payload"`
	TargetRevisionID   *string            `json:"targetRevisionId"`
	ContinuationPolicy ContinuationPolicy `json:"continuationPolicy"`
	Result             json.RawMessage    `json:"result"`
	CreatedAt          string             `json:"createdAt"`
	ResolvedAt         *string            `json:"resolvedAt"`
}

// ApprovalComment is a comment on an approval.
type ApprovalComment struct {
	ID            string  `json:"id"`
	AuthorActorID *string `json:"authorActorId"`
	Body          string  `json:"body"`
	CreatedAt     string  `json:"createdAt"`
}

// Approval is a governance approval linked to ≥1 tasks.
type Approval struct {
	ID                 string          `json:"id"`
	CompanyID          string          `json:"companyId"`
	TaskIDs            []string        `json:"taskIds"`
	Type               string          `json:"type"`
	Status             ApprovalStatus  `json:"status"`
	RequestedByActorID *string         `json:"requestedByActorId"`
	Payload            json.RawMessage `json:"payload"`
	// TargetRevisionID is the document revision the approval is about (a plan
	// approval), nil for none; it was the document's latest when requested, and
	// approving it once a newer revision exists is target_revision_superseded.
	TargetRevisionID *string            `json:"targetRevisionId,omitempty"`
	DecisionNote     *string            `json:"decisionNote"`
	Comments         []*ApprovalComment `json:"comments"`
	CreatedAt        string             `json:"createdAt"`
	DecidedAt        *string            `json:"decidedAt"`
}

// Artifact is a registered deliverable file; ByteSize in bytes.
type Artifact struct {
	ID          string `json:"id"`
	TaskID      string `json:"taskId"`
	Filename    string `json:"filename"`
	ContentType string `json:"contentType"`
	ByteSize    int64  `json:"byteSize"`
	SHA256      string `json:"sha256"`
	ContentRef  string `json:"contentRef"`
	CreatedAt   string `json:"createdAt"`
}

// WorkProductMetadata describes the artifact behind a work product.
type WorkProductMetadata struct {
	Filename    string `json:"filename"`
	ContentType string `json:"contentType"`
	ByteSize    int64  `json:"byteSize"`
	ContentRef  string `json:"contentRef"`
}

// WorkProduct is a task output; commands only create type "artifact".
type WorkProduct struct {
	ID         string              `json:"id"`
	TaskID     string              `json:"taskId"`
	Type       string              `json:"type"`
	Title      string              `json:"title"`
	Metadata   WorkProductMetadata `json:"metadata"`
	ArtifactID *string             `json:"artifactId"`
	CreatedAt  string              `json:"createdAt"`
}

// Blocker is a dependency edge: TaskID is blocked by BlockedByTaskID while the latter
// is not done.
type Blocker struct {
	ID              string `json:"id"`
	TaskID          string `json:"taskId"`
	BlockedByTaskID string `json:"blockedByTaskId"`
	CreatedAt       string `json:"createdAt"`
}

// WorkspaceService is a task's runtime service.
type WorkspaceService struct {
	ID               string  `json:"id"`
	TaskID           string  `json:"taskId"`
	Name             string  `json:"name"`
	Status           string  `json:"status"`
	URL              *string `json:"url"`
	LastTransitionAt string  `json:"lastTransitionAt"`
}

// Budget is a spending limit in cents for a company or an actor.
type Budget struct {
	ID         string `json:"id"`
	Scope      string `json:"scope"`
	ScopeID    string `json:"scopeId"`
	LimitCents int64  `json:"limitCents"`
	SpentCents int64  `json:"spentCents"`
	HardStop   bool   `json:"hardStop"`
}

// Wake is the reason an actor is woken, with a redacted payload.
type Wake struct {
	Reason  WakeReason      `json:"reason"`
	Payload json.RawMessage `json:"payload"`
}

// Run is one checked-out execution of a task by an actor. Events holds the
// committed PRP and native events in canonical JSON, in append order.
type Run struct {
	ID                string            `json:"id"`
	CompanyID         string            `json:"companyId"`
	ActorID           string            `json:"actorId"`
	TaskID            string            `json:"taskId"`
	SessionID         string            `json:"sessionId"`
	BackendKind       string            `json:"backendKind"`
	SourceInstanceID  string            `json:"sourceInstanceId"`
	Status            RunStatus         `json:"status"`
	Attempt           int               `json:"attempt"`
	OpenedAt          string            `json:"openedAt"`
	FinishedAt        *string           `json:"finishedAt"`
	Wake              Wake              `json:"wake"`
	Capabilities      []string          `json:"capabilities"`
	Events            []json.RawMessage `json:"events"`
	Result            json.RawMessage   `json:"result"`
	SessionCheckpoint json.RawMessage   `json:"sessionCheckpoint"`
	// RetryOf is the failed or interrupted run this run retries (board operation
	// retry_run, then an open with OpenInput.RetryOf); nil for a first run.
	RetryOf *string `json:"retryOf,omitempty"`
	// RetryWakeID is the retry wake retry_run scheduled for this run; RetriedByRunID the
	// run opened for it. Both nil until the run is retried.
	RetryWakeID    *string `json:"retryWakeId,omitempty"`
	RetriedByRunID *string `json:"retriedByRunId,omitempty"`
}

// ScheduledWake is a wake the adapter scheduled; DueAt = CreatedAt +
// delay ticks seconds. The adapter only ever writes Status "scheduled".
type ScheduledWake struct {
	ID        string          `json:"id"`
	ActorID   string          `json:"actorId"`
	TaskID    string          `json:"taskId"`
	Reason    WakeReason      `json:"reason"`
	Payload   json.RawMessage `json:"payload"`
	DueAt     string          `json:"dueAt"`
	Status    WakeStatus      `json:"status"`
	CreatedAt string          `json:"createdAt"`
}

// AuditRecord is one audited mutation.
type AuditRecord struct {
	ID         string          `json:"id"`
	At         string          `json:"at"`
	RunID      *string         `json:"runId"`
	ActorID    *string         `json:"actorId"`
	Action     string          `json:"action"`
	EntityType string          `json:"entityType"`
	EntityID   string          `json:"entityId"`
	Details    json.RawMessage `json:"details"`
}

// Decision is one decision record; every decision advances the state revision by one.
// Outcome is allowed, denied, duplicate, reconciled or faulted.
type Decision struct {
	ID            string   `json:"id"`
	At            string   `json:"at"`
	RunID         *string  `json:"runId"`
	Operation     string   `json:"operation"`
	Outcome       string   `json:"outcome"`
	Reason        string   `json:"reason"`
	StateRevision int64    `json:"stateRevision"`
	EntityRefs    []string `json:"entityRefs"`
}

// IdempotencyRecord stores a command's canonical input and its result under
// (Scope "<runId>:semantic-command", Key).
type IdempotencyRecord struct {
	Scope          string        `json:"scope"`
	Key            string        `json:"key"`
	InputCanonical string        `json:"inputCanonical"`
	Result         CommandResult `json:"result"`
}

// FaultRule scripts a bounded number of faults.
// Operation is open_run, append_event, apply_command or complete_run; Effect is
// retryable_error or lost_ack; CommandKind restricts apply_command rules to one kind.
type FaultRule struct {
	ID          string `json:"id"`
	Operation   string `json:"operation"`
	CommandKind string `json:"commandKind,omitempty"`
	Effect      string `json:"effect"`
	Remaining   int    `json:"remaining"`
	Code        Code   `json:"code,omitempty"`
}

// Skill is a company skill created by create_skill.
type Skill struct {
	ID          string `json:"id"`
	CompanyID   string `json:"companyId"`
	Name        string `json:"name"`
	Slug        string `json:"slug"`
	Description string `json:"description"`
	Markdown    string `json:"markdown"`
	VersionID   string `json:"versionId"`
}

// State is the whole serializable control-plane state. Snapshot returns a
// deep copy; Serialize encodes it as sorted-key canonical JSON.
type State struct {
	Schema               string                     `json:"schema"`
	Revision             int64                      `json:"revision"`
	Clock                Clock                      `json:"clock"`
	Counters             map[string]int64           `json:"counters"`
	Lifecycle            Lifecycle                  `json:"lifecycle"`
	ActiveRunID          *string                    `json:"activeRunId"`
	Company              Company                    `json:"company"`
	Actors               []*Actor                   `json:"actors"`
	Tasks                []*Task                    `json:"tasks"`
	OutOfScopeTaskIDs    []string                   `json:"outOfScopeTaskIds"`
	Comments             []*Comment                 `json:"comments"`
	Documents            []*Document                `json:"documents"`
	Skills               []*Skill                   `json:"skills"`
	Interactions         []*Interaction             `json:"interactions"`
	Approvals            []*Approval                `json:"approvals"`
	Artifacts            []*Artifact                `json:"artifacts"`
	WorkProducts         []*WorkProduct             `json:"workProducts"`
	Blockers             []*Blocker                 `json:"blockers"`
	WorkspaceServices    []*WorkspaceService        `json:"workspaceServices"`
	Budgets              []*Budget                  `json:"budgets"`
	Runs                 []*Run                     `json:"runs"`
	Wakes                []*ScheduledWake           `json:"wakes"`
	Audit                []*AuditRecord             `json:"audit"`
	Decisions            []*Decision                `json:"decisions"`
	Idempotency          []*IdempotencyRecord       `json:"idempotency"`
	SemanticToolRuntimes map[string]json.RawMessage `json:"semanticToolRuntimes"`
	Faults               []*FaultRule               `json:"faults"`
	// Projects and Environments are created by board operations; empty lists are absent
	// from the serialized state, so states without them serialize as before.
	Projects     []*Project     `json:"projects,omitempty"`
	Environments []*Environment `json:"environments,omitempty"`
	// Managed storage (files.go, home.go) and board idempotency (board.go); empty lists
	// are absent from the serialized state.
	Blobs            []*Blob                   `json:"blobs,omitempty"`
	Files            []*ManagedFile            `json:"files,omitempty"`
	HomeReceipts     []*HomeReceipt            `json:"homeReceipts,omitempty"`
	FileConflicts    []*FileConflict           `json:"fileConflicts,omitempty"`
	BoardIdempotency []*BoardIdempotencyRecord `json:"boardIdempotency,omitempty"`
	// Conversations are the agent chats (chat.go); absent when there is none.
	Conversations []*Conversation `json:"conversations,omitempty"`
}

// Seed describes an initial state. Nil fields take the defaults: company
// "company-1"/"MCK", one engineer actor "actor-1", one todo task "task-1" assigned to
// the first actor, and (only when Budgets is nil) a company and per-actor hard-stop
// budget. Company fields that are non-empty override the default company's.
type Seed struct {
	EpochMs           *int64              `json:"epochMs,omitempty"`
	Company           *Company            `json:"company,omitempty"`
	Actors            []*Actor            `json:"actors,omitempty"`
	Tasks             []*Task             `json:"tasks,omitempty"`
	OutOfScopeTaskIDs []string            `json:"outOfScopeTaskIds,omitempty"`
	Comments          []*Comment          `json:"comments,omitempty"`
	Documents         []*Document         `json:"documents,omitempty"`
	Interactions      []*Interaction      `json:"interactions,omitempty"`
	Approvals         []*Approval         `json:"approvals,omitempty"`
	Artifacts         []*Artifact         `json:"artifacts,omitempty"`
	WorkProducts      []*WorkProduct      `json:"workProducts,omitempty"`
	Blockers          []*Blocker          `json:"blockers,omitempty"`
	WorkspaceServices []*WorkspaceService `json:"workspaceServices,omitempty"`
	Budgets           []*Budget           `json:"budgets,omitempty"`
	Faults            []*FaultRule        `json:"faults,omitempty"`
	// Bare drops the default actor, task and actor budgets (nil Actors/Tasks/Budgets
	// then mean none; the company budget is still created): the starting state of a
	// board-created company.
	Bare bool `json:"bare,omitempty"`
}

// Identity binds a run to its company, task (IssueID), actor (AgentID) and session.
type Identity struct {
	RunID     string `json:"runId"`
	SessionID string `json:"sessionId"`
	CompanyID string `json:"companyId"`
	IssueID   string `json:"issueId"`
	AgentID   string `json:"agentId"`
}

// OpenInput opens (checks out) a run. Wake defaults to {manual, {}};
// Capabilities, when nil (JSON null), to the actor's grants (an empty list means none);
// SourceInstanceID to "capability-mock". Resume lets a done or cancelled task be
// reopened (attempt 2).
type OpenInput struct {
	Identity         Identity `json:"identity"`
	BackendKind      string   `json:"backendKind"`
	SourceInstanceID string   `json:"sourceInstanceId,omitempty"`
	Wake             *Wake    `json:"wake,omitempty"`
	Capabilities     []string `json:"capabilities"`
	Resume           bool     `json:"resume,omitempty"`
	// RetryOf binds the new run to the failed or interrupted run it retries; that run
	// must have a retry asked for (retry_run) and no retry opened yet, and the same task
	// and actor (run_not_retryable, run_already_retried, run_binding_conflict).
	RetryOf string `json:"retryOf,omitempty"`
}

// ContextCompany is the company as seen in a run context.
type ContextCompany struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	IssuePrefix string `json:"issuePrefix"`
	Status      string `json:"status"`
}

// ContextActor is the run's actor as seen in a run context.
type ContextActor struct {
	ID               string      `json:"id"`
	Name             string      `json:"name"`
	Role             string      `json:"role"`
	Status           ActorStatus `json:"status"`
	CapabilityGrants []string    `json:"capabilityGrants"`
}

// ContextBudget summarises the effective budgets in cents: SpentCents is
// derived as LimitCents − RemainingCents.
type ContextBudget struct {
	LimitCents     int64 `json:"limitCents"`
	RemainingCents int64 `json:"remainingCents"`
	SpentCents     int64 `json:"spentCents"`
}

// InteractionResult is a resolved interaction of the active task.
type InteractionResult struct {
	ID     string            `json:"id"`
	Kind   InteractionKind   `json:"kind"`
	Status InteractionStatus `json:"status"`
	Result json.RawMessage   `json:"result"`
}

// RunContext is what a run sees of the world.
type RunContext struct {
	Schema             string              `json:"schema"`
	RunID              string              `json:"runId"`
	Company            ContextCompany      `json:"company"`
	Actor              ContextActor        `json:"actor"`
	ActiveTask         Task                `json:"activeTask"`
	Ancestors          []Task              `json:"ancestors"`
	Wake               Wake                `json:"wake"`
	Capabilities       []string            `json:"capabilities"`
	Budget             ContextBudget       `json:"budget"`
	InteractionResults []InteractionResult `json:"interactionResults"`
	// RetryOf is the run this run retries (Run.RetryOf); absent for a first run.
	RetryOf *string `json:"retryOf,omitempty"`
	// Conversation is the conversation of a chat run (its task is a conversation's
	// backing task); absent otherwise.
	Conversation *ContextConversation `json:"conversation,omitempty"`
}

// Receipt acknowledges an appended event; Disposition is committed or duplicate.
type Receipt struct {
	Cursor                     int64  `json:"cursor"`
	HighestContiguousSourceSeq int64  `json:"highestContiguousSourceSeq"`
	Disposition                string `json:"disposition"`
}

// ReplayQuery selects PRP events of one run and source instance after an exclusive
// cursor. Limit follows JavaScript slice semantics (0 → none, negative
// drops from the end).
type ReplayQuery struct {
	RunID            string `json:"runId"`
	SourceInstanceID string `json:"sourceInstanceId"`
	AfterSourceSeq   int64  `json:"afterSourceSeq"`
	Limit            int    `json:"limit"`
}

// Replay is the answer to a ReplayQuery: events in ascending sourceSeq.
type Replay struct {
	Events                     []json.RawMessage `json:"events"`
	HighestContiguousSourceSeq int64             `json:"highestContiguousSourceSeq"`
}

// CommandEnvelope carries one semantic command. Command is a JSON object
// {kind, taskId?, …kind fields}; only Command is compared for idempotency.
type CommandEnvelope struct {
	RunID            string          `json:"runId"`
	IdempotencyKey   string          `json:"idempotencyKey"`
	ExpectedRevision *int64          `json:"expectedRevision,omitempty"`
	Command          json.RawMessage `json:"command"`
}

// CommandResult is the result of an applied command; Disposition is applied or duplicate.
type CommandResult struct {
	CommandID        string   `json:"commandId"`
	CommandKind      string   `json:"commandKind"`
	Disposition      string   `json:"disposition"`
	StateRevision    int64    `json:"stateRevision"`
	EntityRefs       []string `json:"entityRefs"`
	ScheduledWakeIDs []string `json:"scheduledWakeIds"`
}

// CommandOutcome is TryApplyCommand's answer: OK with Result, or not OK with the
// command kind, the current state revision and the Error.
type CommandOutcome struct {
	OK            bool           `json:"ok"`
	Result        *CommandResult `json:"result,omitempty"`
	CommandKind   string         `json:"commandKind,omitempty"`
	StateRevision int64          `json:"stateRevision"`
	Error         *Error         `json:"error,omitempty"`
}

// NativeEvent is a native run event (no sourceEventId); Type is run.started or run.completed.
type NativeEvent struct {
	EventID  string `json:"eventId"`
	RunID    string `json:"runId"`
	Sequence int64  `json:"sequence"`
	Type     string `json:"type"`
}

// PRPEvent is a PRP event (schema paperclip.prp.event.v1). Extra members are allowed on
// the wire; this struct carries the known ones.
type PRPEvent struct {
	Schema              string          `json:"schema"`
	SourceEventID       string          `json:"sourceEventId"`
	SourceSeq           int64           `json:"sourceSeq"`
	SourceInstanceID    string          `json:"sourceInstanceId"`
	SourceKind          string          `json:"sourceKind"`
	RunID               string          `json:"runId"`
	NormalizedSessionID string          `json:"normalizedSessionId,omitempty"`
	TurnID              string          `json:"turnId,omitempty"`
	ItemID              string          `json:"itemId,omitempty"`
	EventType           string          `json:"eventType"`
	SchemaVersion       int             `json:"schemaVersion"`
	Priority            int             `json:"priority"`
	EmittedAt           string          `json:"emittedAt"`
	ObservedAt          string          `json:"observedAt,omitempty"`
	Payload             json.RawMessage `json:"payload"`
}

// NativeRunResult completes a run natively (discriminated by RunID); Status is
// succeeded, failed or cancelled.
type NativeRunResult struct {
	RunID   string    `json:"runId"`
	Status  RunStatus `json:"status"`
	Summary string    `json:"summary"`
}

// CompleteInput completes the active run with a PRP result and terminal.
type CompleteInput struct {
	Result          json.RawMessage `json:"result"`
	Terminal        json.RawMessage `json:"terminal"`
	TurnID          string          `json:"turnId,omitempty"`
	CallerResultID  string          `json:"callerResultId,omitempty"`
	CallerDedupeKey string          `json:"callerDedupeKey,omitempty"`
}

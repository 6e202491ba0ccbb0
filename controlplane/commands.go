package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// CommandKind names a semantic command; its JSON form is the plain string.
type CommandKind string

// The 19 semantic command kinds, in catalogue order, and agentproof's set_task_title
// (the agent names its own task; docs/journeys.md "Task titles").
const (
	CommandReportProgress          CommandKind = "report_progress"
	CommandCreateSkill             CommandKind = "create_skill"
	CommandWriteDocument           CommandKind = "write_document"
	CommandRequestHumanInput       CommandKind = "request_human_input"
	CommandResolveHumanInput       CommandKind = "resolve_human_input"
	CommandRegisterDeliverable     CommandKind = "register_deliverable"
	CommandReassignTask            CommandKind = "reassign_task"
	CommandSetDependencies         CommandKind = "set_dependencies"
	CommandCreateTask              CommandKind = "create_task"
	CommandRequestApproval         CommandKind = "request_approval"
	CommandDecideApproval          CommandKind = "decide_approval"
	CommandCommentOnApproval       CommandKind = "comment_on_approval"
	CommandControlWorkspaceService CommandKind = "control_workspace_service"
	CommandRecordBudgetUsage       CommandKind = "record_budget_usage"
	CommandFinishTask              CommandKind = "finish_task"
	CommandBlockTask               CommandKind = "block_task"
	CommandRequestReview           CommandKind = "request_review"
	CommandReleaseTask             CommandKind = "release_task"
	CommandScheduleWake            CommandKind = "schedule_wake"
	CommandSetTaskTitle            CommandKind = "set_task_title"
	// CommandPostChatReply and CommandHandoffConversation are the agent's side of a
	// conversation (chat.go).
	CommandPostChatReply       CommandKind = "post_chat_reply"
	CommandHandoffConversation CommandKind = "handoff_conversation"
)

// MaxTaskTitleChars bounds a task title set by set_task_title (characters).
const MaxTaskTitleChars = 500

// CommandSpec is one row of the semantic-command table: everything agentproof knows
// about a command kind besides its handler's logic. The state machine dispatches and
// authorizes by it, package mcp derives its tools from it, and catalog validation checks
// reference-script steps against it.
//
//   - Kind: the command kind.
//   - Claim: the run capability the command needs; "" for none.
//   - Tool: agent-facing — a tool of the MCP server and a command a reference script
//     may use. The others (resolve_human_input, record_budget_usage, release_task) are
//     reachable only through the API.
//   - Required, Optional: the tool's and reference step's arguments (besides kind and
//     taskId), in declaration order. The targetDocumentKey of request_human_input and
//     request_approval is a convention of the agents (resolved to targetRevisionId
//     before the command is sent), not a field of the command.
//   - Commenting: the command posts a comment that may be the run's user-facing
//     message (the tool's and step's present flag).
//   - PresentsByDefault: a commenting command that ends a turn; its comment is
//     presented unless the call says present: false.
//   - MessageArg: the argument whose text the posted comment is (commenting commands).
//   - Description: what the command does, in the words the model reads.
type CommandSpec struct {
	Kind              CommandKind
	Claim             string
	Tool              bool
	Required          []string
	Optional          []string
	Commenting        bool
	PresentsByDefault bool
	MessageArg        string
	Description       string

	handle func(*Memory, *cmdCtx) error
}

// commandTable is the semantic-command table in catalogue order.
var commandTable = []CommandSpec{
	{Kind: CommandReportProgress, Tool: true, Required: []string{"body"}, Commenting: true, MessageArg: "body",
		Description: "Post a progress note on your task (a comment). Not your final answer: end with finish_task, request_review or block_task.",
		handle:      (*Memory).reportProgress},
	{Kind: CommandCreateSkill, Tool: true, Required: []string{"name", "description", "markdown"}, Optional: []string{"slug"},
		Description: "Create a company skill from SKILL.md markdown (frontmatter name and description must match the arguments).",
		handle:      (*Memory).createSkill},
	{Kind: CommandWriteDocument, Tool: true, Required: []string{"key", "title", "body"}, Optional: []string{"baseRevisionId", "changeSummary"},
		Description: "Create or revise a markdown document on your task (for example the plan, key \"plan\"). Each call writes a new revision.",
		handle:      (*Memory).writeDocument},
	{Kind: CommandRequestHumanInput, Tool: true, Required: []string{"interactionKind", "title", "prompt", "continuationPolicy"},
		Optional:    []string{"payload", "targetRevisionId", "targetDocumentKey"},
		Description: "Ask the human a question and wait: the task goes to review until they answer. Optionally about a document (targetDocumentKey).",
		handle:      (*Memory).requestHumanInput},
	{Kind: CommandResolveHumanInput, Claim: "control_plane:interactions", Required: []string{"interactionId", "outcome"}, Optional: []string{"result"},
		Description: "Resolve a pending interaction of your task with an outcome and a result.",
		handle:      (*Memory).resolveHumanInput},
	{Kind: CommandRegisterDeliverable, Tool: true, Required: []string{"filename", "contentType", "byteSize", "sha256", "title"},
		Optional:    []string{"contentRef", "contentBase64"},
		Description: "Register a file you produced as a deliverable of the task. Its bytes are verified: send them as contentBase64, or upload them first; byteSize and sha256 must be theirs.",
		handle:      (*Memory).registerDeliverable},
	{Kind: CommandReassignTask, Claim: "delegation:tasks:assign", Tool: true, Required: []string{"targetTaskId", "assigneeActorId", "expectedStatusVersion", "reason"},
		Optional:    []string{"expectedAssigneeActorId"},
		Description: "Reassign another task to an actor. Pass the assignee and statusVersion you observed.",
		handle:      (*Memory).reassignTask},
	{Kind: CommandSetDependencies, Claim: "dependencies:write", Tool: true, Required: []string{"blockedByTaskIds"},
		Description: "Replace the list of tasks your task waits for; a non-empty list blocks your task.",
		handle:      (*Memory).setDependencies},
	{Kind: CommandCreateTask, Claim: "delegation:tasks:create", Tool: true, Required: []string{"title"},
		Optional:    []string{"description", "assigneeActorId", "priority", "blockedByTaskIds", "status"},
		Description: "Create a subtask of your task.",
		handle:      (*Memory).createTask},
	{Kind: CommandRequestApproval, Claim: "governance:approvals:request", Tool: true, Required: []string{"approvalType", "payload"},
		Optional:    []string{"targetRevisionId", "targetDocumentKey"},
		Description: "Ask the board for an approval; your task goes to review until it is decided. Optionally of a document (targetDocumentKey, for example your plan).",
		handle:      (*Memory).requestApproval},
	{Kind: CommandDecideApproval, Claim: "governance:approvals:decide", Tool: true, Required: []string{"approvalId", "decision", "note"},
		Description: "Decide an approval linked to your task (approver roles only; not your own request).",
		handle:      (*Memory).decideApproval},
	{Kind: CommandCommentOnApproval, Claim: "governance:approvals:comment", Tool: true, Required: []string{"approvalId", "body"},
		Description: "Comment on an approval linked to your task.",
		handle:      (*Memory).commentOnApproval},
	{Kind: CommandControlWorkspaceService, Claim: "workspace:control", Tool: true, Required: []string{"serviceId", "action"}, Optional: []string{"url"},
		Description: "Start, stop or mark failed a workspace service of your task.",
		handle:      (*Memory).controlWorkspaceService},
	{Kind: CommandRecordBudgetUsage, Claim: "control_plane:budget", Required: []string{"cents"},
		Description: "Record spending of your run in cents; a hard-stop budget that is exceeded stops the run.",
		handle:      (*Memory).recordBudgetUsage},
	{Kind: CommandFinishTask, Tool: true, Required: []string{"summary"}, Commenting: true, PresentsByDefault: true, MessageArg: "summary",
		Description: "Finish your task: it becomes done and the summary is posted as your answer to the user.",
		handle:      (*Memory).finishTask},
	{Kind: CommandBlockTask, Tool: true, Required: []string{"reason"}, Optional: []string{"blockedByTaskIds"}, Commenting: true, PresentsByDefault: true, MessageArg: "reason",
		Description: "Mark your task blocked, with the reason posted as your answer to the user.",
		handle:      (*Memory).blockTask},
	{Kind: CommandRequestReview, Tool: true, Required: []string{"summary"}, Commenting: true, PresentsByDefault: true, MessageArg: "summary",
		Description: "Hand your task to the human for review, with a summary posted as your answer to the user.",
		handle:      (*Memory).requestReview},
	{Kind: CommandReleaseTask, Claim: "control_plane:release", Required: []string{"reason"},
		Description: "Give your task back: it returns to todo with the reason as a comment.",
		handle:      (*Memory).releaseTask},
	{Kind: CommandScheduleWake, Claim: "control_plane:wakes", Tool: true, Required: []string{"reason", "delayTicks"}, Optional: []string{"payload"},
		Description: "Schedule a later wake of your task's assignee.",
		handle:      (*Memory).scheduleWakeCommand},
	{Kind: CommandSetTaskTitle, Tool: true, Required: []string{"title"},
		Description: "Set your task's title: a short phrase that says what the task is about. A task created without a title should be named as soon as you know what it asks, before the work itself.",
		handle:      (*Memory).setTaskTitle},
	{Kind: CommandPostChatReply, Tool: true, Required: []string{"body"},
		Description: "Reply in the chat you were woken for (the conversation in get_task_context). The reply ends your turn: the human writes next.",
		handle:      (*Memory).postChatReply},
	{Kind: CommandHandoffConversation, Claim: "delegation:tasks:create", Tool: true, Required: []string{"title"},
		Optional:    []string{"plan", "description", "assigneeActorId", "assigneeName", "message"},
		Description: "Hand the chat's work off to a new task: its title, its plan (markdown, saved as the task's plan document before anyone starts) and its assignee (assigneeActorId, or assigneeName: an actor of the conversation's actors list). Ends your turn.",
		handle:      (*Memory).handoffConversation},
}

// commandByKind indexes commandTable.
var commandByKind = func() map[CommandKind]*CommandSpec {
	m := make(map[CommandKind]*CommandSpec, len(commandTable))
	for i := range commandTable {
		m[commandTable[i].Kind] = &commandTable[i]
	}
	return m
}()

// Commands returns the semantic-command table in catalogue order, copies.
func Commands() []CommandSpec {
	out := make([]CommandSpec, len(commandTable))
	for i, c := range commandTable {
		out[i] = c.clone()
	}
	return out
}

// CommandKinds returns the 19 command kinds in catalogue order.
func CommandKinds() []CommandKind {
	out := make([]CommandKind, len(commandTable))
	for i, c := range commandTable {
		out[i] = c.Kind
	}
	return out
}

// LookupCommand returns the table row of kind (a copy); ok is false for an unknown kind.
func LookupCommand(kind CommandKind) (CommandSpec, bool) {
	c, ok := commandByKind[kind]
	if !ok {
		return CommandSpec{}, false
	}
	return c.clone(), true
}

func (c CommandSpec) clone() CommandSpec {
	c.Required = slices.Clone(c.Required)
	c.Optional = slices.Clone(c.Optional)
	return c
}

// ApprovalRoles are the actor roles (trimmed, lower-cased) allowed to decide approvals.
var ApprovalRoles = []string{"board", "approver", "security"}

// ApplyCommand applies one semantic command: lifecycle,
// idempotency key, run, idempotency lookup, writability, expectedRevision,
// authorization, dry run, fault, execution, lost-ack. Errors carry the codes of
// errors.go.
func (m *Memory) ApplyCommand(ctx context.Context, env CommandEnvelope) (CommandResult, error) {
	if err := m.lock(ctx); err != nil {
		return CommandResult{}, err
	}
	defer m.unlock()
	res, _, err := m.applyLocked(env)
	if err != nil {
		return CommandResult{}, err
	}
	return res, nil
}

// TryApplyCommand is ApplyCommand with state-machine errors folded into a not-OK
// outcome carrying the current state revision; it returns an error only when ctx is done.
func (m *Memory) TryApplyCommand(ctx context.Context, env CommandEnvelope) (CommandOutcome, error) {
	if err := m.lock(ctx); err != nil {
		return CommandOutcome{}, err
	}
	defer m.unlock()
	res, kind, err := m.applyLocked(env)
	if err != nil {
		var ce *Error
		if !errors.As(err, &ce) {
			return CommandOutcome{}, err
		}
		cp := *ce
		return CommandOutcome{OK: false, CommandKind: kind, StateRevision: m.st.Revision, Error: &cp}, nil
	}
	return CommandOutcome{OK: true, Result: &res, StateRevision: res.StateRevision}, nil
}

type commandHead struct {
	Kind   string  `json:"kind"`
	TaskID *string `json:"taskId"`
}

// cmdCtx is what a handler works with.
type cmdCtx struct {
	run   *Run
	actor *Actor
	task  *Task
	kind  string
	raw   json.RawMessage
	refs  []string
	wakes []string
}

func (c *cmdCtx) ref(prefix, id string) { c.refs = append(c.refs, prefix+":"+id) }

func (m *Memory) applyLocked(env CommandEnvelope) (CommandResult, string, error) {
	var head commandHead
	headErr := json.Unmarshal(env.Command, &head)
	kind := head.Kind
	if err := m.assertRunning(); err != nil {
		return CommandResult{}, kind, err
	}
	if strings.TrimSpace(env.IdempotencyKey) == "" {
		return CommandResult{}, kind, newErr(CodeIdempotencyKeyRequired, "an idempotency key is required")
	}
	r, err := m.run(env.RunID)
	if err != nil {
		return CommandResult{}, kind, err
	}
	if headErr != nil {
		return CommandResult{}, kind, newErr(CodeSemanticCommandInvalid, "command must be a JSON object with a kind: %v", headErr)
	}
	canon, err := canonicalRaw(env.Command)
	if err != nil {
		return CommandResult{}, kind, newErr(CodeSemanticCommandInvalid, "command is not valid JSON: %v", err)
	}
	runID := strp(r.ID)
	scope := r.ID + ":semantic-command"
	if rec := m.idx.idem[[2]string{scope, env.IdempotencyKey}]; rec != nil {
		if rec.InputCanonical != string(canon) {
			return CommandResult{}, kind, newErr(CodeIdempotencyConflict, "idempotency key %s was used for a different command", env.IdempotencyKey)
		}
		m.recordDecision(runID, rec.Result.CommandKind, "duplicate", "command_already_applied", rec.Result.EntityRefs)
		res := cloneResult(rec.Result)
		res.Disposition = "duplicate"
		res.StateRevision = m.st.Revision
		return res, kind, nil
	}
	if err := assertRunWritable(r); err != nil {
		return CommandResult{}, kind, err
	}
	if env.ExpectedRevision != nil && *env.ExpectedRevision != m.st.Revision {
		return CommandResult{}, kind, newErr(CodeStateRevisionConflict, "expected state revision %d, found %d", *env.ExpectedRevision, m.st.Revision)
	}
	spec, known := commandByKind[CommandKind(kind)]
	if !known {
		return CommandResult{}, kind, newErr(CodeSemanticCommandInvalid, "unknown command kind %q", kind)
	}
	c, err := m.authorize(r, spec, head, env.Command)
	if err != nil {
		return CommandResult{}, kind, err
	}
	// The dry run and the real execution are one pass under the undo log: a failing
	// command is rolled back before any fault is consumed, and a
	// retryable_error fault rolls the execution back before it records itself, which
	// leaves exactly the state a dry run followed by the execution leaves (docs/control-plane.md).
	mark := len(m.undo)
	res, err := m.execute(c, env.IdempotencyKey, scope, canon)
	if err != nil {
		m.rollback(mark)
		return CommandResult{}, kind, err
	}
	fault := m.peekFault("apply_command", kind)
	if fault != nil && fault.Effect == "retryable_error" {
		m.rollback(mark)
	}
	m.consumeFault("apply_command", kind)
	if err := m.faultBefore(fault, runID, kind); err != nil {
		return CommandResult{}, kind, err
	}
	if err := m.faultAfter(fault, runID, kind); err != nil {
		return CommandResult{}, kind, err
	}
	return cloneResult(res), kind, nil
}

func cloneResult(r CommandResult) CommandResult {
	r.EntityRefs = slices.Clone(r.EntityRefs)
	r.ScheduledWakeIDs = slices.Clone(r.ScheduledWakeIDs)
	return r
}

// authorize checks, in order, the command's claim, the active-task scope, the run's
// ownership of the task and, for decide_approval, the decider's role, the approval's
// scope and that it is not self-approval (docs/control-plane.md, "Authorization");
// denials persist a denied decision.
func (m *Memory) authorize(r *Run, spec *CommandSpec, head commandHead, raw json.RawMessage) (*cmdCtx, error) {
	runID := strp(r.ID)
	kind := head.Kind
	if claim := spec.Claim; claim != "" && !slices.Contains(r.Capabilities, claim) {
		return nil, m.deny(runID, kind, ReasonClaimMissing, []string{"run:" + r.ID},
			newErr(CodeOperationNotAuthorized, "the fixture run does not hold the required command claim %s", claim))
	}
	taskID := r.TaskID
	if head.TaskID != nil {
		taskID = *head.TaskID
	}
	task, err := m.task(taskID)
	if err != nil {
		return nil, err
	}
	if err := m.assertCompany("task", task.ID, task.CompanyID); err != nil {
		return nil, err
	}
	if task.ID != r.TaskID {
		return nil, m.deny(runID, kind, "active_task_scope_required", []string{"task:" + task.ID},
			newErr(CodeTaskScopeViolation, "command task %s is not the run's active task %s", task.ID, r.TaskID))
	}
	actor, err := m.actor(r.ActorID)
	if err != nil {
		return nil, err
	}
	if !eq(task.AssigneeActorID, actor.ID) || !eq(task.CheckoutRunID, r.ID) || !eq(task.ExecutionRunID, r.ID) {
		return nil, m.deny(runID, kind, "run_does_not_own_task", []string{"task:" + task.ID},
			newErr(CodeTaskOwnershipViolation, "fixture run %s does not own task %s", r.ID, task.ID))
	}
	if spec.Kind == CommandDecideApproval {
		if !slices.Contains(ApprovalRoles, strings.ToLower(strings.TrimSpace(actor.Role))) {
			return nil, m.deny(runID, kind, "actor_role_not_authorized", []string{"actor:" + actor.ID},
				newErr(CodeOperationNotAuthorized, "actor role %s may not decide approvals", actor.Role))
		}
		var in struct {
			ApprovalID string `json:"approvalId"`
		}
		_ = json.Unmarshal(raw, &in)
		if ap := m.idx.approvals[in.ApprovalID]; ap != nil {
			if ap.CompanyID != m.st.Company.ID || !slices.Contains(ap.TaskIDs, task.ID) {
				return nil, m.deny(runID, kind, "active_task_scope_required", []string{"approval:" + ap.ID},
					newErr(CodeApprovalScopeViolation, "approval %s is not linked to task %s", ap.ID, task.ID))
			}
			if eq(ap.RequestedByActorID, actor.ID) {
				return nil, m.deny(runID, kind, "self_approval_forbidden", []string{"approval:" + ap.ID},
					newErr(CodeSelfApprovalForbidden, "actor %s requested approval %s and may not decide it", actor.ID, ap.ID))
			}
		}
	}
	return &cmdCtx{run: r, actor: actor, task: task, kind: kind, raw: raw}, nil
}

func eq(p *string, s string) bool { return p != nil && *p == s }

// execute runs the handler and records the mutation and idempotency record.
func (m *Memory) execute(c *cmdCtx, key, scope string, canon []byte) (CommandResult, error) {
	commandID := m.newID("command")
	c.ref("task", c.task.ID)
	if err := m.handle(c); err != nil {
		return CommandResult{}, err
	}
	refs := m.sortedUnique(c.refs)
	wakes := c.wakes
	if wakes == nil {
		wakes = []string{}
	}
	m.recordMutationSorted(strp(c.run.ID), strp(c.actor.ID), "semantic_command.applied", "command", commandID,
		commandDetails{EntityRefs: refs, IdempotencyKey: key, Kind: c.kind},
		c.kind, "allowed", "semantic_command_applied", refs)
	res := CommandResult{CommandID: commandID, CommandKind: c.kind, Disposition: "applied", StateRevision: m.st.Revision, EntityRefs: refs, ScheduledWakeIDs: wakes}
	rec := &IdempotencyRecord{Scope: scope, Key: key, InputCanonical: string(canon), Result: cloneResult(res)}
	appendv(m, &m.st.Idempotency, rec)
	mapSet(m, m.idx.idem, [2]string{scope, key}, rec)
	return res, nil
}

// Ref returns the id of the result's first entity ref "<prefix>:<id>" (Ref("comment"):
// the comment the command posted), or "" when it has none.
func (r CommandResult) Ref(prefix string) string {
	for _, ref := range r.EntityRefs {
		if id, ok := strings.CutPrefix(ref, prefix+":"); ok {
			return id
		}
	}
	return ""
}

// commandDetails are the details of a semantic_command.applied audit record.
type commandDetails struct {
	EntityRefs     []string `json:"entityRefs"`
	IdempotencyKey string   `json:"idempotencyKey"`
	Kind           string   `json:"kind"`
}

// ---- shared helpers ----

func required(v, field string) error {
	if strings.TrimSpace(v) == "" {
		return newErr(CodeSemanticCommandInvalid, "%s is required", field)
	}
	return nil
}

func decode(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return newErr(CodeSemanticCommandInvalid, "command fields are invalid: %v", err)
	}
	return nil
}

// safeNonNegative parses a JSON number that must be a non-negative safe integer.
func safeNonNegative(n json.Number) (int64, bool) {
	if n == "" {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > 9007199254740991 || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

var transitions = map[TaskStatus][]TaskStatus{
	TaskBacklog:    {TaskTodo, TaskCancelled},
	TaskTodo:       {TaskInProgress, TaskBlocked, TaskCancelled},
	TaskInProgress: {TaskInReview, TaskBlocked, TaskDone, TaskCancelled},
	TaskInReview:   {TaskInProgress, TaskDone, TaskCancelled},
	TaskBlocked:    {TaskTodo, TaskInProgress, TaskCancelled},
}

// transition moves the task through the command transition table; an
// illegal move records a denied decision and fails with task_transition_illegal.
func (m *Memory) transition(c *cmdCtx, t *Task, to TaskStatus) error {
	from := t.Status
	ok := slices.Contains(transitions[from], to)
	kind := CommandKind(c.kind)
	if !ok && kind == CommandReleaseTask && from == TaskInProgress && to == TaskTodo {
		ok = true
	}
	if !ok && (kind == CommandRequestHumanInput || kind == CommandRequestApproval) && from == TaskInReview && to == TaskInReview {
		ok = true
	}
	if !ok {
		return m.deny(strp(c.run.ID), c.kind, "task_transition_illegal", []string{"task:" + t.ID},
			newErr(CodeTaskTransitionIllegal, "fixture task cannot transition from %s to %s", from, to))
	}
	if from != to {
		edit(m, t, func(t *Task) { t.Status = to })
	}
	return nil
}

func (m *Memory) addComment(taskID string, author *string, body string) *Comment {
	id := m.newID("comment")
	cm := &Comment{ID: id, TaskID: taskID, AuthorActorID: author, Body: body, CreatedAt: m.now()}
	appendv(m, &m.st.Comments, cm)
	return cm
}

// actorComment adds the run's actor's comment body on the run's task, referenced by
// the command.
func (m *Memory) actorComment(c *cmdCtx, body string) {
	cm := m.addComment(c.task.ID, strp(c.actor.ID), body)
	c.ref("comment", cm.ID)
}

func (m *Memory) addTask(t *Task) {
	appendv(m, &m.st.Tasks, t)
	mapSet(m, m.idx.tasks, t.ID, t)
}

// dependsOn reports whether from reaches target following unresolved blocker edges.
func (m *Memory) dependsOn(from, target string) bool {
	adj := map[string][]string{}
	for _, b := range m.st.Blockers {
		if t := m.idx.tasks[b.BlockedByTaskID]; t != nil && t.Status != TaskDone {
			adj[b.TaskID] = append(adj[b.TaskID], b.BlockedByTaskID)
		}
	}
	seen := map[string]bool{}
	stack := []string{from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == target {
			return true
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		stack = append(stack, adj[n]...)
	}
	return false
}

// replaceDependencies replaces task's blocker rows with one row per id.
func (m *Memory) replaceDependencies(c *cmdCtx, task *Task, ids []string) error {
	ids = m.sortedUnique(ids)
	for _, id := range ids {
		if id == task.ID {
			return newErr(CodeDependencyCycle, "a task cannot block itself")
		}
		dep, err := m.task(id)
		if err != nil {
			return err
		}
		if err := m.assertCompany("task", dep.ID, dep.CompanyID); err != nil {
			return err
		}
		if m.dependsOn(id, task.ID) {
			return newErr(CodeDependencyCycle, "dependency %s would create a cycle", id)
		}
	}
	m.deleteBlockers(func(b *Blocker) bool { return b.TaskID == task.ID })
	for _, id := range ids {
		bid := m.newID("blocker")
		appendv(m, &m.st.Blockers, &Blocker{ID: bid, TaskID: task.ID, BlockedByTaskID: id, CreatedAt: m.now()})
		c.ref("task", id)
	}
	return nil
}

func (m *Memory) approvalOnTask(c *cmdCtx, id string) (*Approval, error) {
	ap := m.idx.approvals[id]
	if ap == nil || ap.CompanyID != m.st.Company.ID {
		return nil, newErr(CodeApprovalMissing, "approval %s does not exist", id)
	}
	if !slices.Contains(ap.TaskIDs, c.task.ID) {
		return nil, newErr(CodeApprovalScopeViolation, "approval %s is not linked to task %s", id, c.task.ID)
	}
	return ap, nil
}

// requesterEligible: non-null, active, ≥1 applicable budget and none exceeded.
func (m *Memory) requesterEligible(ap *Approval) *Actor {
	if ap.RequestedByActorID == nil {
		return nil
	}
	a := m.idx.actors[*ap.RequestedByActorID]
	if a == nil || a.Status != ActorActive {
		return nil
	}
	bs := m.applicableBudgets(a)
	if len(bs) == 0 || slices.ContainsFunc(bs, exceeded) {
		return nil
	}
	return a
}

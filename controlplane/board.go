package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
)

// Board operations are what a real control plane's board (a human operator) does
// beyond the port's run protocol: create agents, projects, environments and issues,
// comment on an issue, resolve an interaction, decide an approval. Each is one
// operation on the company's state machine, deterministic like the port (fixture clock,
// fixture ids), recorded with an audit record and a decision (operation
// "board_<kind>", outcome allowed; denials record a denied decision), rolled back
// whole when it fails, and journaled by the durable store like every port operation.

// BoardKind names a board operation (BoardOp.Kind): one of BoardKinds. Its JSON form
// is the plain string; the operation's decisions are recorded as "board_<kind>".
type BoardKind string

// Board operation kinds (BoardOp.Kind).
const (
	BoardCreateAgent        BoardKind = "create_agent"
	BoardCreateProject      BoardKind = "create_project"
	BoardCreateEnvironment  BoardKind = "create_environment"
	BoardCreateIssue        BoardKind = "create_issue"
	BoardComment            BoardKind = "comment"
	BoardResolveInteraction BoardKind = "resolve_interaction"
	BoardDecideApproval     BoardKind = "decide_approval"
	// BoardPutFile writes a managed file (files.go).
	BoardPutFile BoardKind = "put_file"
	// BoardResolveFileConflict resolves a home file conflict (home.go).
	BoardResolveFileConflict BoardKind = "resolve_file_conflict"
	// BoardRetryRun asks for a new run of a failed or interrupted run (Retry).
	BoardRetryRun BoardKind = "retry_run"
	// BoardCreateConversation starts an agent chat; BoardChatMessage posts a human
	// message in it, "/new" starting a new session generation (chat.go).
	BoardCreateConversation BoardKind = "create_conversation"
	BoardChatMessage        BoardKind = "chat_message"
)

// boardPutBlob is the kind under which a keyed blob upload (PutBlob with an
// idempotency key) is remembered; it is not an ApplyBoard kind.
const boardPutBlob BoardKind = "put_blob"

// Operation is the decision operation a board operation of kind k records:
// "board_<kind>".
func (k BoardKind) Operation() string { return "board_" + string(k) }

// Valid reports whether k is one of BoardKinds (an ApplyBoard kind).
func (k BoardKind) Valid() bool { return slices.Contains(BoardKinds, k) }

// BoardKinds lists every board operation kind.
var BoardKinds = []BoardKind{BoardCreateAgent, BoardCreateProject, BoardCreateEnvironment, BoardCreateIssue,
	BoardComment, BoardResolveInteraction, BoardDecideApproval, BoardPutFile, BoardResolveFileConflict, BoardRetryRun,
	BoardCreateConversation, BoardChatMessage}

// LocalEnvironment is the name and kind of the instance-managed environment: exactly one
// per company; creating a second fails with environment_conflict.
const LocalEnvironment = "local"

// Project groups issues of a company (board operation create_project).
type Project struct {
	ID          string  `json:"id"`
	CompanyID   string  `json:"companyId"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	CreatedAt   string  `json:"createdAt"`
}

// Environment is where a company's agents run (board operation create_environment).
// Kind is "local" (instance-managed, one per company) or another adapter's name; Config
// is a JSON object whose credentials are secret references only.
type Environment struct {
	ID        string          `json:"id"`
	CompanyID string          `json:"companyId"`
	Name      string          `json:"name"`
	Kind      string          `json:"kind"`
	Config    json.RawMessage `json:"config"`
	CreatedAt string          `json:"createdAt"`
}

// BoardOp is one board operation: Kind is one of BoardKinds and Input its JSON object:
//
//   - create_agent: {name, role, capabilityGrants?, adapterConfig?, budgetCents?}
//     (budgetCents defaults to 1000, a hard-stop actor budget)
//   - create_project: {name, description?}
//   - create_environment: {name, kind, config?}
//   - create_issue: {title, description?, workMode?, priority?, assigneeActorId?,
//     parentId?, status?}; an assignee gets an issue_assigned wake
//   - comment: {issueId, body}; the assignee gets an issue_commented wake
//   - resolve_interaction: {interactionId, outcome, result?} (resolve_human_input's
//     rules: outcome accepted/rejected/expired, or answered for questions; a revision
//     request is outcome rejected with a result saying what to revise)
//   - decide_approval: {approvalId, decision, note} (decide_approval's rules)
//   - put_file: {scope?, ownerId?, path, sha256, contentType?, expectedSha256?} writes
//     the managed file at path (scope company, the default, or agent_home with the
//     agent's actor id as ownerId) to the stored blob sha256; with expectedSha256 the
//     file's current SHA-256 ("" for none) must be it (file_revision_conflict)
//   - resolve_file_conflict: {conflictId, resolution, currentSha256} (home.go)
//   - retry_run: {runId}: a failed or interrupted run gets a retry: its task returns to
//     todo and its actor gets a retry wake whose payload is {"retryOf": runId}; the run
//     opened for that wake (OpenInput.RetryOf) is bound to it (Run.RetryOf). A run is
//     retried at most once (run_already_retried); a run that is not failed or
//     interrupted, or whose task is done or cancelled, is run_not_retryable.
//   - create_conversation: {title, assigneeActorId, body?}: an agent chat (chat.go)
//     with its backing task, and the first human message when body is given
//   - chat_message: {conversationId, body}: a human message that wakes the agent
//     (chat_message), or "/new": a new session generation, nobody woken
//
// IdempotencyKey (at most MaxIdempotencyKeyBytes bytes; "" for none) makes the
// operation idempotent: the first success is remembered with its kind and canonical
// input (BoardIdempotencyRecord), and a later operation with the same key returns that
// result unchanged (same ids) when kind and input are the same, and fails with
// idempotency_conflict otherwise. A failed operation remembers nothing.
type BoardOp struct {
	Kind           BoardKind       `json:"kind"`
	Input          json.RawMessage `json:"input"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
}

// BoardIdempotencyRecord is a keyed board write's memory: its key, kind, canonical
// input and the result it committed.
type BoardIdempotencyRecord struct {
	Key            string      `json:"key"`
	Kind           BoardKind   `json:"kind"`
	InputCanonical string      `json:"inputCanonical"`
	Result         BoardResult `json:"result"`
}

// BoardResult is an applied board operation: ID is the created or acted-on entity.
type BoardResult struct {
	Kind             BoardKind `json:"kind"`
	ID               string    `json:"id"`
	StateRevision    int64     `json:"stateRevision"`
	EntityRefs       []string  `json:"entityRefs"`
	ScheduledWakeIDs []string  `json:"scheduledWakeIds"`
}

// workModes are the accepted workMode values of create_issue: the port's task work
// modes, which include every case workMode of the catalog (standard, planning, ask).
var workModes = []string{"standard", "ask", "planning", "skill_test"}

// decodeStrict decodes a board input, rejecting unknown fields and trailing data.
func decodeStrict(raw json.RawMessage, v any) error {
	if isNull(raw) {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return newErr(CodeBoardInputInvalid, "board input: %v", err)
	}
	if dec.More() {
		return newErr(CodeBoardInputInvalid, "board input has trailing data")
	}
	return nil
}

func needField(v, field string) error {
	if strings.TrimSpace(v) == "" {
		return newErr(CodeBoardInputInvalid, "%s is required", field)
	}
	return nil
}

// canonicalObject canonicalises raw, which must be a JSON object (null → {}).
func canonicalObject(raw json.RawMessage, what string) (json.RawMessage, error) {
	if isNull(raw) {
		return json.RawMessage("{}"), nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, newErr(CodeBoardInputInvalid, "%s must be a JSON object: %v", what, err)
	}
	b, err := canonicalRaw(raw)
	if err != nil {
		return nil, newErr(CodeBoardInputInvalid, "%s: %v", what, err)
	}
	return b, nil
}

// ApplyBoard applies one board operation (see BoardOp). It needs no running lifecycle.
// Errors (*Error): board_input_invalid (unknown kind or field, missing field, bad
// value), actor_missing, task_missing, interaction_missing, approval_missing,
// environment_conflict (a second local environment or a duplicate name), and the
// codes of resolve_human_input and decide_approval. A failed operation changes
// nothing but a denied decision record.
func (m *Memory) ApplyBoard(ctx context.Context, op BoardOp) (BoardResult, error) {
	if err := m.lock(ctx); err != nil {
		return BoardResult{}, err
	}
	defer m.unlock()
	operation := op.Kind.Operation()
	if !op.Kind.Valid() {
		return BoardResult{}, m.deny(nil, "board_operation", "board_input_invalid", nil,
			newErr(CodeBoardInputInvalid, "unknown board operation %q", op.Kind))
	}
	if res, replayed, err := m.boardReplay(op, operation); err != nil || replayed {
		return res, err
	}
	mark := len(m.undo)
	c := &cmdCtx{kind: string(op.Kind), raw: op.Input}
	id, action, entity, err := m.board(op.Kind, c)
	if err != nil {
		m.rollback(mark)
		code := CodeOf(err)
		var e *Error
		if ce, ok := err.(*Error); ok {
			e = ce
		} else {
			e = newErr(CodeBoardInputInvalid, "%v", err)
			code = e.Code
		}
		return BoardResult{}, m.deny(nil, operation, string(code), m.sortedUnique(c.refs), e)
	}
	refs := m.sortedUnique(c.refs)
	wakes := c.wakes
	if wakes == nil {
		wakes = []string{}
	}
	m.recordMutationSorted(nil, nil, action, entity, id, map[string]any{"entityRefs": refs, "kind": string(op.Kind)},
		operation, "allowed", "board_operation_applied", refs)
	res := BoardResult{Kind: op.Kind, ID: id, StateRevision: m.st.Revision, EntityRefs: refs, ScheduledWakeIDs: slices.Clone(wakes)}
	if err := m.boardRemember(op, res); err != nil {
		m.rollback(mark)
		return BoardResult{}, err
	}
	return res, nil
}

// boardReplay looks op's idempotency key up: a record with the same kind and canonical
// input is a replay (a duplicate decision, the stored result, true); a record with
// another kind or input is idempotency_conflict (a denied decision). No key, or a key
// not used yet, is (zero, false, nil). A key over MaxIdempotencyKeyBytes is
// board_input_invalid.
func (m *Memory) boardReplay(op BoardOp, operation string) (BoardResult, bool, error) {
	if op.IdempotencyKey == "" {
		return BoardResult{}, false, nil
	}
	if len(op.IdempotencyKey) > MaxIdempotencyKeyBytes {
		return BoardResult{}, false, m.deny(nil, operation, string(CodeBoardInputInvalid), nil,
			newErr(CodeBoardInputInvalid, "the idempotency key is %d bytes long; at most %d bytes are allowed", len(op.IdempotencyKey), MaxIdempotencyKeyBytes))
	}
	rec := m.idx.boardIdem[op.IdempotencyKey]
	if rec == nil {
		return BoardResult{}, false, nil
	}
	canon, err := boardCanonical(op.Input)
	if err != nil || rec.Kind != op.Kind || rec.InputCanonical != canon {
		return BoardResult{}, false, m.deny(nil, operation, string(CodeIdempotencyConflict), rec.Result.EntityRefs,
			newErr(CodeIdempotencyConflict, "idempotency key %q was used for a different %s request", clipID(op.IdempotencyKey), rec.Kind))
	}
	m.recordDecision(nil, operation, "duplicate", "board_operation_replayed", rec.Result.EntityRefs)
	return cloneBoardResult(rec.Result), true, nil
}

// boardRemember stores res under op's idempotency key (nothing without a key).
func (m *Memory) boardRemember(op BoardOp, res BoardResult) error {
	if op.IdempotencyKey == "" {
		return nil
	}
	canon, err := boardCanonical(op.Input)
	if err != nil {
		return newErr(CodeBoardInputInvalid, "board input: %v", err)
	}
	rec := &BoardIdempotencyRecord{Key: op.IdempotencyKey, Kind: op.Kind, InputCanonical: canon, Result: cloneBoardResult(res)}
	appendv(m, &m.st.BoardIdempotency, rec)
	mapSet(m, m.idx.boardIdem, rec.Key, rec)
	return nil
}

// boardCanonical is the canonical JSON of a board input (null and absent are {}).
func boardCanonical(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "{}", nil
	}
	b, err := canonicalRaw(raw)
	return string(b), err
}

func cloneBoardResult(r BoardResult) BoardResult {
	r.EntityRefs = slices.Clone(r.EntityRefs)
	r.ScheduledWakeIDs = slices.Clone(r.ScheduledWakeIDs)
	return r
}

// board runs one operation of kind and returns the entity id, audit action and entity
// type.
func (m *Memory) board(kind BoardKind, c *cmdCtx) (id, action, entity string, err error) {
	switch kind {
	case BoardCreateAgent:
		id, err = m.boardCreateAgent(c)
		return id, "agent.created", "actor", err
	case BoardCreateProject:
		id, err = m.boardCreateProject(c)
		return id, "project.created", "project", err
	case BoardCreateEnvironment:
		id, err = m.boardCreateEnvironment(c)
		return id, "environment.created", "environment", err
	case BoardCreateIssue:
		id, err = m.boardCreateIssue(c)
		return id, "issue.created", "task", err
	case BoardComment:
		id, err = m.boardComment(c)
		return id, "issue.commented", "comment", err
	case BoardResolveInteraction:
		id, err = m.boardResolveInteraction(c)
		return id, "interaction.resolved", "interaction", err
	case BoardDecideApproval:
		id, err = m.boardDecideApproval(c)
		return id, "approval.decided", "approval", err
	case BoardPutFile:
		id, err = m.boardPutFile(c)
		return id, "file.written", "file", err
	case BoardResolveFileConflict:
		id, err = m.boardResolveFileConflict(c)
		return id, "file_conflict.resolved", "file_conflict", err
	case BoardCreateConversation:
		id, err = m.boardCreateConversation(c)
		return id, "conversation.created", "conversation", err
	case BoardChatMessage:
		id, err = m.boardChatMessage(c)
		return id, "chat_message.posted", "chat_message", err
	default: // BoardRetryRun
		id, err = m.boardRetryRun(c)
		return id, "run.retry_requested", "wake", err
	}
}

// boardRetryRun is board operation retry_run (see BoardOp); it returns the retry wake's
// id.
func (m *Memory) boardRetryRun(c *cmdCtx) (string, error) {
	var in struct {
		RunID string `json:"runId"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	r, err := m.run(in.RunID)
	if err != nil {
		return "", err
	}
	c.ref("run", r.ID)
	if r.RetryWakeID != nil {
		return "", newErr(CodeRunAlreadyRetried, "run %s was already retried (wake %s)", r.ID, *r.RetryWakeID)
	}
	if !slices.Contains(RetryableStatuses, r.Status) {
		return "", newErr(CodeRunNotRetryable, "run %s is %s; only a failed or interrupted run is retried", r.ID, r.Status)
	}
	t, err := m.task(r.TaskID)
	if err != nil {
		return "", err
	}
	c.ref("task", t.ID)
	if t.Status.Terminal() {
		return "", newErr(CodeRunNotRetryable, "task %s of run %s is %s", t.ID, r.ID, t.Status)
	}
	if t.CheckoutRunID != nil && *t.CheckoutRunID != r.ID {
		return "", newErr(CodeCheckoutConflict, "task %s is checked out by %s", t.ID, *t.CheckoutRunID)
	}
	a, err := m.actor(r.ActorID)
	if err != nil {
		return "", err
	}
	if a.Status != ActorActive {
		return "", newErr(CodeActorNotActive, "actor %s is %s", a.ID, a.Status)
	}
	edit(m, t, func(t *Task) {
		if t.Status == TaskInProgress {
			t.Status = TaskTodo
		}
		if t.CheckoutRunID != nil && *t.CheckoutRunID == r.ID {
			t.CheckoutRunID = nil
		}
		if t.ExecutionRunID != nil && *t.ExecutionRunID == r.ID {
			t.ExecutionRunID = nil
		}
	})
	w := m.scheduleWake(a.ID, t.ID, WakeRetry, mustJSON(map[string]string{"retryOf": r.ID}), 0)
	edit(m, r, func(r *Run) { r.RetryWakeID = strp(w.ID) })
	c.ref("wake", w.ID)
	c.wakes = append(c.wakes, w.ID)
	return w.ID, nil
}

func (m *Memory) boardCreateAgent(c *cmdCtx) (string, error) {
	var in struct {
		Name             string          `json:"name"`
		Role             string          `json:"role"`
		CapabilityGrants []string        `json:"capabilityGrants"`
		AdapterConfig    json.RawMessage `json:"adapterConfig"`
		BudgetCents      *int64          `json:"budgetCents"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	if err := needField(in.Name, "agent name"); err != nil {
		return "", err
	}
	if err := needField(in.Role, "agent role"); err != nil {
		return "", err
	}
	limit := int64(1000)
	if in.BudgetCents != nil {
		if *in.BudgetCents < 0 {
			return "", newErr(CodeBoardInputInvalid, "budgetCents must not be negative")
		}
		limit = *in.BudgetCents
	}
	cfg, err := canonicalObject(in.AdapterConfig, "adapterConfig")
	if err != nil {
		return "", err
	}
	grants := m.sortedUnique(nonNil(in.CapabilityGrants))
	id := m.newID("actor")
	budgetID := "budget-" + id
	a := &Actor{ID: id, CompanyID: m.st.Company.ID, Name: in.Name, Role: in.Role, Status: ActorActive, BudgetID: budgetID,
		CapabilityGrants: grants, AdapterConfig: cfg}
	appendv(m, &m.st.Actors, a)
	mapSet(m, m.idx.actors, id, a)
	appendv(m, &m.st.Budgets, &Budget{ID: budgetID, Scope: "actor", ScopeID: id, LimitCents: limit, HardStop: true})
	c.ref("actor", id)
	return id, nil
}

func (m *Memory) boardCreateProject(c *cmdCtx) (string, error) {
	var in struct {
		Name        string  `json:"name"`
		Description *string `json:"description"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	if err := needField(in.Name, "project name"); err != nil {
		return "", err
	}
	p := &Project{ID: m.newID("project"), CompanyID: m.st.Company.ID, Name: in.Name, Description: in.Description}
	p.CreatedAt = m.now()
	appendv(m, &m.st.Projects, p)
	c.ref("project", p.ID)
	return p.ID, nil
}

func (m *Memory) boardCreateEnvironment(c *cmdCtx) (string, error) {
	var in struct {
		Name   string          `json:"name"`
		Kind   string          `json:"kind"`
		Config json.RawMessage `json:"config"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	if err := needField(in.Name, "environment name"); err != nil {
		return "", err
	}
	if err := needField(in.Kind, "environment kind"); err != nil {
		return "", err
	}
	for _, e := range m.st.Environments {
		if in.Kind == LocalEnvironment && e.Kind == LocalEnvironment {
			c.ref("environment", e.ID)
			return "", newErr(CodeEnvironmentConflict, "company %s already has its local environment %s", m.st.Company.ID, e.ID)
		}
		if e.Name == in.Name {
			c.ref("environment", e.ID)
			return "", newErr(CodeEnvironmentConflict, "environment name %q is taken by %s", in.Name, e.ID)
		}
	}
	cfg, err := canonicalObject(in.Config, "environment config")
	if err != nil {
		return "", err
	}
	e := &Environment{ID: m.newID("environment"), CompanyID: m.st.Company.ID, Name: in.Name, Kind: in.Kind, Config: cfg}
	e.CreatedAt = m.now()
	appendv(m, &m.st.Environments, e)
	c.ref("environment", e.ID)
	return e.ID, nil
}

func (m *Memory) boardCreateIssue(c *cmdCtx) (string, error) {
	var in struct {
		Title           *string     `json:"title"`
		Description     *string     `json:"description"`
		WorkMode        *string     `json:"workMode"`
		Priority        *string     `json:"priority"`
		AssigneeActorID *string     `json:"assigneeActorId"`
		ParentID        *string     `json:"parentId"`
		Status          *TaskStatus `json:"status"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	// The title is required but may be empty (an untitled task the agent names with
	// set_task_title); only whitespace is refused.
	if in.Title == nil {
		return "", newErr(CodeBoardInputInvalid, "issue title is required (\"\" for an untitled task the agent names)")
	}
	if *in.Title != "" && strings.TrimSpace(*in.Title) == "" {
		return "", newErr(CodeBoardInputInvalid, "issue title must not be only whitespace")
	}
	workMode := "standard"
	if in.WorkMode != nil {
		if !slices.Contains(workModes, *in.WorkMode) {
			return "", newErr(CodeBoardInputInvalid, "workMode must be one of %s", strings.Join(workModes, ", "))
		}
		workMode = *in.WorkMode
	}
	priority := "medium"
	if in.Priority != nil {
		if !slices.Contains(TaskPriorities, *in.Priority) {
			return "", newErr(CodeBoardInputInvalid, "priority must be one of %s", strings.Join(TaskPriorities, ", "))
		}
		priority = *in.Priority
	}
	status := TaskTodo
	if in.Status != nil {
		if *in.Status != TaskBacklog && *in.Status != TaskTodo {
			return "", newErr(CodeBoardInputInvalid, "issue status must be backlog or todo")
		}
		status = *in.Status
	}
	if in.AssigneeActorID != nil {
		if _, err := m.actor(*in.AssigneeActorID); err != nil {
			return "", err
		}
		c.ref("actor", *in.AssigneeActorID)
	}
	if in.ParentID != nil {
		if _, err := m.task(*in.ParentID); err != nil {
			return "", err
		}
		c.ref("task", *in.ParentID)
	}
	id := m.newID("task")
	n := m.nextCounter("issue-number")
	t := &Task{ID: id, CompanyID: m.st.Company.ID, Identifier: m.st.Company.IssuePrefix + "-" + itoa(n), Title: *in.Title,
		Description: in.Description, Status: status, Priority: priority, WorkMode: workMode, ParentID: in.ParentID,
		AssigneeActorID: in.AssigneeActorID}
	m.addTask(t)
	c.ref("task", id)
	if in.AssigneeActorID != nil && status == TaskTodo {
		w := m.scheduleWake(*in.AssigneeActorID, id, WakeIssueAssigned, mustJSON(map[string]string{"issueId": id}), 0)
		c.wakes = append(c.wakes, w.ID)
	}
	return id, nil
}

func (m *Memory) boardComment(c *cmdCtx) (string, error) {
	var in struct {
		IssueID string `json:"issueId"`
		Body    string `json:"body"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	t, err := m.task(in.IssueID)
	if err != nil {
		return "", err
	}
	if err := needField(in.Body, "comment body"); err != nil {
		return "", err
	}
	cm := m.addComment(t.ID, nil, in.Body)
	c.ref("task", t.ID)
	c.ref("comment", cm.ID)
	if t.AssigneeActorID != nil {
		w := m.scheduleWake(*t.AssigneeActorID, t.ID, "issue_commented", mustJSON(map[string]string{"commentId": cm.ID, "issueId": t.ID}), 0)
		c.wakes = append(c.wakes, w.ID)
	}
	return cm.ID, nil
}

func (m *Memory) boardResolveInteraction(c *cmdCtx) (string, error) {
	var in struct {
		InteractionID string            `json:"interactionId"`
		Outcome       InteractionStatus `json:"outcome"`
		Result        json.RawMessage   `json:"result"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	it := m.idx.interactions[in.InteractionID]
	if it == nil {
		return "", newErr(CodeInteractionMissing, "interaction %s does not exist", in.InteractionID)
	}
	t, err := m.task(it.TaskID)
	if err != nil {
		return "", err
	}
	c.task = t
	c.ref("task", t.ID)
	return it.ID, m.resolveHumanInput(c)
}

func (m *Memory) boardDecideApproval(c *cmdCtx) (string, error) {
	var in struct {
		ApprovalID string         `json:"approvalId"`
		Decision   ApprovalStatus `json:"decision"`
		Note       string         `json:"note"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {

		return "", err
	}
	ap := m.idx.approvals[in.ApprovalID]
	if ap == nil || len(ap.TaskIDs) == 0 {
		return "", newErr(CodeApprovalMissing, "approval %s does not exist", in.ApprovalID)
	}
	t, err := m.task(ap.TaskIDs[0])
	if err != nil {
		return "", err
	}
	c.task = t
	return ap.ID, m.decideApproval(c)
}

// ListWakes returns copies of the scheduled wakes, oldest first; with dueAtOrBefore
// non-empty (ISO-8601 UTC with ms, as DueAt) only those due by then.
func (m *Memory) ListWakes(ctx context.Context, dueAtOrBefore string) ([]ScheduledWake, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.unlock()
	out := []ScheduledWake{}
	for _, w := range m.st.Wakes {
		if dueAtOrBefore != "" && w.DueAt > dueAtOrBefore {
			continue
		}
		c := *w
		c.Payload = slices.Clone(w.Payload)
		out = append(out, c)
	}
	return out, nil
}

// ActiveRun returns the id of the active run and whether there is one.
func (m *Memory) ActiveRun(ctx context.Context) (string, bool, error) {
	if err := m.lock(ctx); err != nil {
		return "", false, err
	}
	defer m.unlock()
	if m.st.ActiveRunID == nil {
		return "", false, nil
	}
	return *m.st.ActiveRunID, true, nil
}

// RunActor returns the actor and company of a run; run_missing when unknown.
func (m *Memory) RunActor(ctx context.Context, runID string) (actorID, companyID string, err error) {
	if err := m.lock(ctx); err != nil {
		return "", "", err
	}
	defer m.unlock()
	r, err := m.run(runID)
	if err != nil {
		return "", "", err
	}
	return r.ActorID, r.CompanyID, nil
}

// RunRunning reports whether a run is still running (its writes are accepted: status
// running) and returns its status (running, succeeded, failed, cancelled or
// budget_stopped). Package server accepts a run's agent token only while it runs.
// Errors: run_missing when unknown.
func (m *Memory) RunRunning(ctx context.Context, runID string) (running bool, status RunStatus, err error) {
	if err := m.lock(ctx); err != nil {
		return false, "", err
	}
	defer m.unlock()
	r, err := m.run(runID)
	if err != nil {
		return false, "", err
	}
	return assertRunWritable(r) == nil, r.Status, nil
}

// Read runs read on the state while holding the state's lock, without copying it:
// read must not change the state nor keep anything of it (a pointer, a slice, a map)
// after it returns — it copies what it needs. For a caller that needs a few facts of
// a large state (the heartbeat runner's look for a wake to take). Errors: the lock
// could not be taken (the context's).
func (m *Memory) Read(ctx context.Context, read func(st *State)) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.unlock()
	read(m.st)
	return nil
}

// ReadJSON runs read on the state while holding the state's lock and returns read's
// value encoded by json.Marshal before the lock is released, so that read may return
// pointers into the state: nothing of the state is copied but the bytes, and nothing
// of it outlives the call. read must not change the state. Errors: read's, and an
// encoding failure.
func (m *Memory) ReadJSON(ctx context.Context, read func(st *State) (any, error)) ([]byte, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.unlock()
	v, err := read(m.st)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, newErr(CodeFixtureStateInvalid, "encoding a read of the state: %v", err)
	}
	return b, nil
}

// SnapshotJSON returns the state as plain JSON (encoding/json field order, HTML not
// escaped): what Restore reads, much cheaper than Serialize's canonical form. The
// durable store writes its periodic snapshots with it; Restore(SnapshotJSON()) then
// Serialize equals Serialize.
func (m *Memory) SnapshotJSON(ctx context.Context) ([]byte, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.unlock()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m.st); err != nil {
		return nil, newErr(CodeFixtureStateInvalid, "encoding the state: %v", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

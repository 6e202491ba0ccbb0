package controlplane

import (
	"slices"
	"strings"
)

// Agent chat (docs/journeys.md "Agent chat"): a
// conversation between the human (the board) and one agent. It is backed by a task
// (Task.ConversationID) that the agent's chat runs check out, so that a chat turn is an
// ordinary run; issue lists leave that task out (Issues), so that everything about a
// conversation is read from the company's runs and the conversation itself.
//
//   - Board operation create_conversation creates the conversation, its backing task
//     (assigned to the agent, status todo) and, with a body, its first human message,
//     which wakes the agent (wake chat_message).
//   - Board operation chat_message posts a human message; the agent is woken for it.
//     The message "/new" (surrounding white space aside) starts a new session
//     generation instead: it is recorded as a human message with command "new", the
//     generation counter advances, and nothing is woken (no provider run). A run's
//     context shows only the messages of the current generation.
//   - Semantic command post_chat_reply (a chat run's agent) records the agent's reply,
//     attributed to the run, and hands the turn back: the backing task goes to review.
//   - Semantic command handoff_conversation creates a task from the conversation: a
//     top-level task (never a child of the backing task), assigned to the named actor,
//     with the plan (document key "plan", revision 1) written in the same command, so
//     that the plan is committed before the assignee's issue_assigned wake can run. A
//     handoff without a plan is accepted: grading it is the oracle's business
//     (match kind chat_handoff), as is the assignee.

// ChatAuthor says who wrote a chat message: the human (the board) or the agent.
type ChatAuthor string

// Chat message authors.
const (
	ChatHuman ChatAuthor = "human"
	ChatAgent ChatAuthor = "agent"
)

// ChatCommand is the command a human chat message carries ("" for none).
type ChatCommand string

// ChatNew is "/new": a new session generation, no provider run.
const ChatNew ChatCommand = "new"

// ChatNewText is the message text of the /new command.
const ChatNewText = "/new"

// ChatPlanKey is the document key of a handed-off task's plan.
const ChatPlanKey = "plan"

// Conversation is an agent chat. Generation starts at 1 and advances on every /new;
// TaskID is its backing task; AssigneeActorID the agent it talks to.
type Conversation struct {
	ID              string         `json:"id"`
	CompanyID       string         `json:"companyId"`
	Title           string         `json:"title"`
	TaskID          string         `json:"taskId"`
	AssigneeActorID string         `json:"assigneeActorId"`
	Generation      int            `json:"generation"`
	Messages        []*ChatMessage `json:"messages"`
	Handoffs        []*ChatHandoff `json:"handoffs"`
	CreatedAt       string         `json:"createdAt"`
}

// ChatMessage is one message of a conversation, in the generation it was posted in
// (a /new message is in the generation it starts). An agent message has its actor and
// run; HandoffTaskID is set on the agent message a handoff posts.
type ChatMessage struct {
	ID             string      `json:"id"`
	ConversationID string      `json:"conversationId"`
	Generation     int         `json:"generation"`
	Author         ChatAuthor  `json:"author"`
	AuthorActorID  *string     `json:"authorActorId"`
	RunID          *string     `json:"runId"`
	Body           string      `json:"body"`
	Command        ChatCommand `json:"command,omitempty"`
	HandoffTaskID  *string     `json:"handoffTaskId,omitempty"`
	CreatedAt      string      `json:"createdAt"`
}

// ChatHandoff is one handoff of a conversation: the task it created, the run that
// handed off, the assignee, and the plan's revision (nil for a handoff without plan).
type ChatHandoff struct {
	ID              string  `json:"id"`
	TaskID          string  `json:"taskId"`
	RunID           string  `json:"runId"`
	Generation      int     `json:"generation"`
	AssigneeActorID string  `json:"assigneeActorId"`
	PlanRevisionID  *string `json:"planRevisionId"`
	CreatedAt       string  `json:"createdAt"`
}

// ContextConversation is a chat run's conversation (RunContext.Conversation): the
// current generation's messages, oldest first, and the company's actors a handoff may
// be assigned to (id, name, role).
type ContextConversation struct {
	ID         string         `json:"id"`
	Title      string         `json:"title"`
	Generation int            `json:"generation"`
	Messages   []ChatMessage  `json:"messages"`
	Actors     []ContextActor `json:"actors"`
}

// Issues returns the issue list of a state: every task but the conversations' backing
// tasks, in state order (an ordinary issue list excludes a conversation's source).
func Issues(st State) []*Task {
	out := []*Task{}
	for _, t := range st.Tasks {
		if t.ConversationID == nil {
			out = append(out, t)
		}
	}
	return out
}

// ConversationOf returns the conversation whose id is id in st, or nil.
func ConversationOf(st State, id string) *Conversation {
	for _, c := range st.Conversations {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (m *Memory) conversation(id string) (*Conversation, error) {
	for _, c := range m.st.Conversations {
		if c.ID == id {
			return c, nil
		}
	}
	return nil, newErr(CodeConversationMissing, "conversation %s does not exist", id)
}

func (m *Memory) addChatMessage(cv *Conversation, msg *ChatMessage) {
	msg.ID = m.newID("chat-message")
	msg.ConversationID = cv.ID
	msg.CreatedAt = m.now()
	appendv(m, &cv.Messages, msg)
}

// boardCreateConversation is board operation create_conversation: {title,
// assigneeActorId, body?}; it returns the conversation's id.
func (m *Memory) boardCreateConversation(c *cmdCtx) (string, error) {
	var in struct {
		Title           string  `json:"title"`
		AssigneeActorID string  `json:"assigneeActorId"`
		Body            *string `json:"body"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	if err := needField(in.Title, "conversation title"); err != nil {
		return "", err
	}
	if _, err := m.actor(in.AssigneeActorID); err != nil {
		return "", err
	}
	c.ref("actor", in.AssigneeActorID)
	id := m.newID("conversation")
	n := m.nextCounter("issue-number")
	t := &Task{ID: m.newID("task"), CompanyID: m.st.Company.ID, Identifier: m.st.Company.IssuePrefix + "-" + itoa(n), Title: in.Title,
		Status: TaskTodo, Priority: "medium", WorkMode: "standard", AssigneeActorID: strp(in.AssigneeActorID), ConversationID: strp(id)}
	m.addTask(t)
	cv := &Conversation{ID: id, CompanyID: m.st.Company.ID, Title: in.Title, TaskID: t.ID, AssigneeActorID: in.AssigneeActorID,
		Generation: 1, Messages: []*ChatMessage{}, Handoffs: []*ChatHandoff{}, CreatedAt: m.now()}
	appendv(m, &m.st.Conversations, cv)
	c.ref("conversation", id)
	c.ref("task", t.ID)
	if in.Body != nil {
		if _, err := m.humanMessage(c, cv, *in.Body); err != nil {
			return "", err
		}
	}
	return id, nil
}

// boardChatMessage is board operation chat_message: {conversationId, body}; it returns
// the message's id.
func (m *Memory) boardChatMessage(c *cmdCtx) (string, error) {
	var in struct {
		ConversationID string `json:"conversationId"`
		Body           string `json:"body"`
	}
	if err := decodeStrict(c.raw, &in); err != nil {
		return "", err
	}
	cv, err := m.conversation(in.ConversationID)
	if err != nil {
		return "", err
	}
	c.ref("conversation", cv.ID)
	return m.humanMessage(c, cv, in.Body)
}

// humanMessage records a human message of cv: /new advances the generation and wakes
// nobody; any other text wakes the assignee (chat_message), reopening a backing task
// that was finished or cancelled.
func (m *Memory) humanMessage(c *cmdCtx, cv *Conversation, body string) (string, error) {
	if err := needField(body, "chat message body"); err != nil {
		return "", err
	}
	if strings.TrimSpace(body) == ChatNewText {
		edit(m, cv, func(cv *Conversation) { cv.Generation++ })
		msg := &ChatMessage{Generation: cv.Generation, Author: ChatHuman, Body: ChatNewText, Command: ChatNew}
		m.addChatMessage(cv, msg)
		c.ref("chat_message", msg.ID)
		return msg.ID, nil
	}
	msg := &ChatMessage{Generation: cv.Generation, Author: ChatHuman, Body: body}
	m.addChatMessage(cv, msg)
	c.ref("chat_message", msg.ID)
	t, err := m.task(cv.TaskID)
	if err != nil {
		return "", err
	}
	if t.Status.Terminal() {
		edit(m, t, func(t *Task) { t.Status = TaskTodo; t.CompletedAt = nil })
	}
	w := m.scheduleWake(cv.AssigneeActorID, t.ID, WakeChatMessage,
		mustJSON(map[string]any{"conversationId": cv.ID, "messageId": msg.ID, "generation": cv.Generation}), 0)
	c.ref("wake", w.ID)
	c.wakes = append(c.wakes, w.ID)
	return msg.ID, nil
}

// conversationOfTask returns the conversation task t backs, or nil.
func (m *Memory) conversationOfTask(t *Task) *Conversation {
	if t == nil || t.ConversationID == nil {
		return nil
	}
	cv, _ := m.conversation(*t.ConversationID)
	return cv
}

// chatCommand decodes a chat command's input into in and returns the conversation of
// its run. Errors: the input's decode errors, task_not_conversation when the run's task
// backs none.
func (m *Memory) chatCommand(c *cmdCtx, in any) (*Conversation, error) {
	if err := decode(c.raw, in); err != nil {
		return nil, err
	}
	cv := m.conversationOfTask(c.task)
	if cv == nil {
		return nil, newErr(CodeNotConversation, "task %s is not a conversation; %s is for chat runs", c.task.ID, c.kind)
	}
	c.ref("conversation", cv.ID)
	return cv, nil
}

// postChatReply is post_chat_reply {body}: the agent's reply in the current generation;
// the backing task goes to review (the turn is the human's again).
func (m *Memory) postChatReply(c *cmdCtx) error {
	var in struct {
		Body string `json:"body"`
	}
	cv, err := m.chatCommand(c, &in)
	if err != nil {
		return err
	}
	if err := required(in.Body, "chat reply body"); err != nil {
		return err
	}
	msg := &ChatMessage{Generation: cv.Generation, Author: ChatAgent, AuthorActorID: strp(c.actor.ID), RunID: strp(c.run.ID), Body: in.Body}
	m.addChatMessage(cv, msg)
	c.ref("chat_message", msg.ID)
	return m.chatTurnEnds(c)
}

// chatTurnEnds hands the turn back to the human: the backing task goes to review (it
// stays there when an earlier command of the run put it there).
func (m *Memory) chatTurnEnds(c *cmdCtx) error {
	if c.task.Status == TaskInReview {
		return nil
	}
	return m.transition(c, c.task, TaskInReview)
}

// handoffConversation is handoff_conversation {title, description?, plan?,
// assigneeActorId | assigneeName, message?}: a new top-level task assigned to the actor
// (exactly one of id or exact name), its plan written first when given, the handoff
// recorded with an agent message (message, or "Handed off to <identifier>"), and the
// assignee woken (issue_assigned). The backing task goes to review.
func (m *Memory) handoffConversation(c *cmdCtx) error {
	var in struct {
		Title           string  `json:"title"`
		Description     *string `json:"description"`
		Plan            *string `json:"plan"`
		AssigneeActorID *string `json:"assigneeActorId"`
		AssigneeName    *string `json:"assigneeName"`
		Message         *string `json:"message"`
	}
	cv, err := m.chatCommand(c, &in)
	if err != nil {
		return err
	}
	if err := required(in.Title, "handoff title"); err != nil {
		return err
	}
	assignee, err := m.handoffAssignee(in.AssigneeActorID, in.AssigneeName)
	if err != nil {
		return err
	}
	c.ref("actor", assignee.ID)
	n := m.nextCounter("issue-number")
	t := &Task{ID: m.newID("task"), CompanyID: m.st.Company.ID, Identifier: m.st.Company.IssuePrefix + "-" + itoa(n), Title: strings.TrimSpace(in.Title),
		Description: in.Description, Status: TaskTodo, Priority: "medium", WorkMode: "standard", AssigneeActorID: strp(assignee.ID)}
	m.addTask(t)
	c.ref("task", t.ID)
	var planRev *string
	if in.Plan != nil && strings.TrimSpace(*in.Plan) != "" {
		doc := &Document{ID: m.newID("document"), TaskID: t.ID, Key: ChatPlanKey, Title: "Plan", Format: "markdown", Revisions: []*DocumentRevision{}}
		appendv(m, &m.st.Documents, doc)
		mapSet(m, m.idx.docs, [2]string{t.ID, ChatPlanKey}, doc)
		rev := &DocumentRevision{ID: m.newID("revision"), DocumentID: doc.ID, Revision: 1, Body: *in.Plan, CreatedAt: m.now()}
		edit(m, doc, func(d *Document) { d.LatestRevisionID = rev.ID })
		appendv(m, &doc.Revisions, rev)
		mapSet(m, m.idx.revisionDoc, rev.ID, doc)
		c.ref("document", doc.ID)
		c.ref("revision", rev.ID)
		planRev = strp(rev.ID)
	}
	h := &ChatHandoff{ID: m.newID("handoff"), TaskID: t.ID, RunID: c.run.ID, Generation: cv.Generation, AssigneeActorID: assignee.ID,
		PlanRevisionID: planRev, CreatedAt: m.now()}
	appendv(m, &cv.Handoffs, h)
	c.ref("handoff", h.ID)
	body := "Handed off to " + t.Identifier
	if in.Message != nil && strings.TrimSpace(*in.Message) != "" {
		body = *in.Message
	}
	msg := &ChatMessage{Generation: cv.Generation, Author: ChatAgent, AuthorActorID: strp(c.actor.ID), RunID: strp(c.run.ID), Body: body, HandoffTaskID: strp(t.ID)}
	m.addChatMessage(cv, msg)
	c.ref("chat_message", msg.ID)
	w := m.scheduleWake(assignee.ID, t.ID, WakeIssueAssigned, mustJSON(map[string]string{"issueId": t.ID, "conversationId": cv.ID}), 0)
	c.ref("wake", w.ID)
	c.wakes = append(c.wakes, w.ID)
	return m.chatTurnEnds(c)
}

// handoffAssignee resolves a handoff's assignee: exactly one of an actor id or an exact
// actor name of the company (semantic_command_invalid otherwise, actor_missing when no
// actor matches).
func (m *Memory) handoffAssignee(id, name *string) (*Actor, error) {
	switch {
	case (id == nil) == (name == nil):
		return nil, newErr(CodeSemanticCommandInvalid, "a handoff names its assignee by exactly one of assigneeActorId and assigneeName")
	case id != nil:
		return m.actor(*id)
	}
	var found []*Actor
	for _, a := range m.st.Actors {
		if a.Name == strings.TrimSpace(*name) {
			found = append(found, a)
		}
	}
	switch len(found) {
	case 0:
		return nil, newErr(CodeActorMissing, "no actor is named %q", *name)
	case 1:
		return found[0], nil
	}
	return nil, newErr(CodeSemanticCommandInvalid, "%d actors are named %q; use assigneeActorId", len(found), *name)
}

// contextConversation is the conversation task t backs as a run sees it, or nil.
func (m *Memory) contextConversation(t *Task) *ContextConversation {
	cv := m.conversationOfTask(t)
	if cv == nil {
		return nil
	}
	out := &ContextConversation{ID: cv.ID, Title: cv.Title, Generation: cv.Generation, Messages: []ChatMessage{}, Actors: []ContextActor{}}
	for _, msg := range cv.Messages {
		if msg.Generation == cv.Generation && msg.Command == "" {
			cp := *msg
			cp.AuthorActorID, cp.RunID, cp.HandoffTaskID = clonePtr(msg.AuthorActorID), clonePtr(msg.RunID), clonePtr(msg.HandoffTaskID)
			out.Messages = append(out.Messages, cp)
		}
	}
	for _, a := range m.st.Actors {
		out.Actors = append(out.Actors, ContextActor{ID: a.ID, Name: a.Name, Role: a.Role, Status: a.Status, CapabilityGrants: slices.Clone(a.CapabilityGrants)})
	}
	return out
}

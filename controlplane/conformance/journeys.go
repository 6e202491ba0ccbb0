package conformance

import (
	"context"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/controlplane"
)

// JourneyCases returns the cases of the control-plane behaviour the product journeys
// rely on beyond the port's cases (docs/journeys.md): a human can accept only the plan
// revision that is current. They run after Cases.
func JourneyCases() []Case {
	return []Case{
		{"journey/01-accept-superseded-revision", journey01},
		{"journey/02-approval-targets-revision", journey02},
		{"journey/03-agent-names-untitled-task", journey03},
		{"journey/04-agent-chat-new-handoff", journey04},
	}
}

// journey01: a confirmation about plan revision 1 is still pending when revision 2 is
// written; accepting it is target_revision_superseded (409), rejecting it is not; a
// confirmation about revision 2 is accepted.
func journey01(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed, "control_plane:interactions")
	if err != nil {
		return err
	}
	write := func(key, body string, base any) (string, error) {
		res, err := e.cmd("run-1", key, "write_document", map[string]any{"key": "plan", "title": "Plan", "body": body, "baseRevisionId": base})
		return refOf(res, "revision"), err
	}
	ask := func(key, target string) (string, error) {
		res, err := e.cmd("run-1", key, "request_human_input", map[string]any{"interactionKind": "confirmation", "title": "Plan", "prompt": "Accept?",
			"targetRevisionId": target, "continuationPolicy": "none"})
		return refOf(res, "interaction"), err
	}
	resolve := func(key, id string, outcome controlplane.InteractionStatus) error {
		_, err := e.cmd("run-1", key, "resolve_human_input", map[string]any{"interactionId": id, "outcome": outcome, "result": map[string]any{}})
		return err
	}
	rev1, err := write("k1", "1. one\n2. two\n", nil)
	if err != nil {
		return noErr(err, "write revision 1")
	}
	old, err := ask("k2", rev1)
	if err != nil {
		return noErr(err, "ask about revision 1")
	}
	rev2, err := write("k3", "1. one\n2. two\n3. three\n", rev1)
	if err != nil {
		return noErr(err, "write revision 2")
	}
	if err := wantCode(resolve("k4", old, controlplane.InteractionAccepted), controlplane.CodeTargetRevisionSuperseded); err != nil {
		return failf("accepting the confirmation of superseded revision %s: %v", rev1, err)
	}
	if c := controlplane.CodeTargetRevisionSuperseded.Class(); c != controlplane.ClassConflict {
		return failf("target_revision_superseded has class %v, want conflict (409)", c)
	}
	if err := resolve("k5", old, controlplane.InteractionRejected); err != nil {
		return noErr(err, "rejecting the superseded confirmation")
	}
	cur, err := ask("k6", rev2)
	if err != nil {
		return noErr(err, "ask about revision 2")
	}
	if err := resolve("k7", cur, controlplane.InteractionAccepted); err != nil {
		return noErr(err, "accepting the current revision")
	}
	return nil
}

// journey02: request_approval records its targetRevisionId (which must be the latest
// revision: interaction_target_stale otherwise); approving an approval whose revision
// was superseded is target_revision_superseded, rejecting it is not.
func journey02(ctx context.Context, h Harness) error {
	doc := &controlplane.Document{ID: "document-1", TaskID: "task-1", Key: "plan", Title: "Plan", Format: "markdown", LatestRevisionID: "revision-2",
		Revisions: []*controlplane.DocumentRevision{
			{ID: "revision-1", DocumentID: "document-1", Revision: 1, Body: "1. one\n2. two\n", CreatedAt: "2026-08-09T00:00:00.000Z"},
			{ID: "revision-2", DocumentID: "document-1", Revision: 2, Body: "1. one\n2. two\n3. three\n", CreatedAt: "2026-08-09T00:00:01.000Z"},
		}}
	seed := approvalSeed("approver", "actor-2", "task-1")
	seed.Documents = []*controlplane.Document{doc}
	seed.Approvals[0].TargetRevisionID = ptr("revision-1")
	e, err := openDefault(ctx, h, seed, "governance:approvals:decide", "governance:approvals:request")
	if err != nil {
		return err
	}
	_, err = e.cmd("run-1", "k1", "decide_approval", map[string]any{"approvalId": "approval-1", "decision": "approved", "note": "plan revision-1"})
	if err := wantCode(err, controlplane.CodeTargetRevisionSuperseded); err != nil {
		return failf("approving superseded revision-1: %v", err)
	}
	request := func(key, target string) (controlplane.CommandResult, error) {
		return e.cmd("run-1", key, "request_approval", map[string]any{"approvalType": "plan", "payload": map[string]any{}, "targetRevisionId": target})
	}
	if _, err := request("k2", "revision-1"); wantCode(err, controlplane.CodeInteractionTargetStale) != nil {
		return failf("requesting an approval of superseded revision-1: %v", wantCode(err, controlplane.CodeInteractionTargetStale))
	}
	res, err := request("k3", "revision-2")
	if err != nil {
		return noErr(err, "requesting an approval of revision-2")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	id := refOf(res, "approval")
	for _, ap := range st.Approvals {
		if ap.ID == id && (ap.TargetRevisionID == nil || *ap.TargetRevisionID != "revision-2") {
			return failf("approval %s has targetRevisionId %v, want revision-2", id, ap.TargetRevisionID)
		}
	}
	_, err = e.cmd("run-1", "k4", "decide_approval", map[string]any{"approvalId": "approval-1", "decision": "rejected", "note": "superseded"})
	return noErr(err, "rejecting superseded approval-1")
}

// journey03: the board creates a task
// with an empty title (one of only whitespace is refused); its run names it with
// set_task_title (trimmed; an empty title is semantic_command_invalid); the saved title
// survives a restart, and the change is the command's audit record, attributed to the
// run and its actor, whose idempotency record holds the title given.
func journey03(ctx context.Context, h Harness) error {
	e, err := boardSetup(ctx, h)
	if err != nil {
		return err
	}
	if _, err := e.board(controlplane.BoardCreateIssue, map[string]any{"title": "  "}, ""); wantCode(err, controlplane.CodeBoardInputInvalid) != nil {
		return failf("creating an issue titled only by whitespace: %v", wantCode(err, controlplane.CodeBoardInputInvalid))
	}
	created, err := e.board(controlplane.BoardCreateIssue, map[string]any{"title": "", "assigneeActorId": "actor-1"}, "")
	if err != nil {
		return noErr(err, "creating an untitled issue")
	}
	task := created.ID
	if _, err := e.open("run-t", task, "actor-1"); err != nil {
		return noErr(err, "opening the run of the untitled task")
	}
	if _, err := e.cmd("run-t", "t0", "set_task_title", map[string]any{"title": " "}); wantCode(err, controlplane.CodeSemanticCommandInvalid) != nil {
		return failf("set_task_title with an empty title: %v", wantCode(err, controlplane.CodeSemanticCommandInvalid))
	}
	res, err := e.cmd("run-t", "t1", "set_task_title", map[string]any{"title": " Rotate the API keys "})
	if err != nil {
		return noErr(err, "set_task_title")
	}
	st, err := e.restartSnap()
	if err != nil {
		return err
	}
	title := ""
	for _, t := range st.Tasks {
		if t.ID == task {
			title = t.Title
		}
	}
	if title != "Rotate the API keys" {
		return failf("task %s title after restart %q, want %q", task, title, "Rotate the API keys")
	}
	audited := false
	for _, a := range st.Audit {
		if a.EntityID == res.CommandID {
			audited = a.RunID != nil && *a.RunID == "run-t" && a.ActorID != nil && *a.ActorID == "actor-1"
		}
	}
	if !audited {
		return failf("command %s has no audit record attributed to run-t and actor-1", res.CommandID)
	}
	for _, rec := range st.Idempotency {
		if rec.Result.CommandID == res.CommandID && !strings.Contains(rec.InputCanonical, "Rotate the API keys") {
			return failf("idempotency record of %s holds %s, not the title given", res.CommandID, rec.InputCanonical)
		}
	}
	return nil
}

// journey04: the board starts a conversation
// with an agent; its backing task is left out of the issue list; the first human
// message wakes the agent (chat_message) and the chat run sees it in its context and
// replies (post_chat_reply); "/new" starts session generation 2 and wakes nobody; the
// next message wakes the agent, whose run sees only generation 2, and hands off
// (handoff_conversation) to the worker named in the conversation's actors: a top-level
// task assigned to the worker whose plan (revision 1) was written in the same command,
// with an issue_assigned wake; all of it survives a restart. A chat command from a run
// that is not a chat run is task_not_conversation; a message to an unknown conversation
// is conversation_missing.
func journey04(ctx context.Context, h Harness) error {
	e, err := boardSetup(ctx, h)
	if err != nil {
		return err
	}
	worker, err := e.board(controlplane.BoardCreateAgent, map[string]any{"name": "Release Worker", "role": "engineer"}, "")
	if err != nil {
		return noErr(err, "creating the worker agent")
	}
	conv, backing, err := chatStarted(e)
	if err != nil {
		return err
	}
	if err := chatFirstRunAndReset(e, conv, backing); err != nil {
		return err
	}
	rc, err := e.open("run-c2", backing, "actor-1", "delegation:tasks:create")
	if err != nil {
		return noErr(err, "opening chat run 2")
	}
	if c := rc.Conversation; c == nil || c.Generation != 2 || len(c.Messages) != 1 || c.Messages[0].Author != controlplane.ChatHuman {
		return failf("chat run 2's context has conversation %+v, want generation 2 with only the handoff request", c)
	}
	if _, err := e.cmd("run-c2", "h0", "handoff_conversation", map[string]any{"title": "Release notes", "assigneeName": "Release Worker", "assigneeActorId": worker.ID}); wantCode(err, controlplane.CodeSemanticCommandInvalid) != nil {
		return failf("a handoff naming its assignee twice: %v", wantCode(err, controlplane.CodeSemanticCommandInvalid))
	}
	if _, err := e.cmd("run-c2", "h1", "handoff_conversation", map[string]any{"title": "Release notes", "assigneeName": "Nobody"}); wantCode(err, controlplane.CodeActorMissing) != nil {
		return failf("a handoff to an unknown name: %v", wantCode(err, controlplane.CodeActorMissing))
	}
	plan := "1. Collect the merged changes.\n2. Write the release notes.\n"
	res, err := e.cmd("run-c2", "h2", "handoff_conversation", map[string]any{"title": "Release notes", "assigneeName": "Release Worker", "plan": plan})
	if err != nil {
		return noErr(err, "handoff_conversation")
	}
	st, err := e.restartSnap()
	if err != nil {
		return err
	}
	handed, err := checkHandoff(st, handoffWant{conv: conv, backing: backing, worker: worker.ID, plan: plan, res: res})
	if err != nil {
		return err
	}
	if err := e.completeNative("run-c2", controlplane.RunSucceeded); err != nil {
		return err
	}
	if _, err := e.open("run-w", handed, worker.ID); err != nil {
		return noErr(err, "opening the worker's run")
	}
	_, err = e.cmd("run-w", "w1", "post_chat_reply", map[string]any{"body": "not a chat"})
	return wantCode(err, controlplane.CodeNotConversation)
}

// chatStarted creates journey04's conversation with actor-1 and checks its start: one
// human message in generation 1, a backing task left out of the issue list, and one
// chat_message wake for actor-1 on it. It returns the conversation and backing task
// ids; a failed check is a journey failure.
func chatStarted(e *boardEnv) (conv, backing string, err error) {
	created, err := e.board(controlplane.BoardCreateConversation, map[string]any{"title": "Release chat", "assigneeActorId": "actor-1", "body": "Hello, what can you do?"}, "")
	if err != nil {
		return "", "", noErr(err, "creating the conversation")
	}
	conv = created.ID
	if len(created.ScheduledWakeIDs) != 1 {
		return "", "", failf("the conversation's first message scheduled %d wakes, want 1", len(created.ScheduledWakeIDs))
	}
	st, err := e.snap()
	if err != nil {
		return "", "", err
	}
	cv := controlplane.ConversationOf(st, conv)
	if cv == nil || cv.Generation != 1 || len(cv.Messages) != 1 || cv.Messages[0].Author != controlplane.ChatHuman {
		return "", "", failf("conversation %s after creation: %+v, want generation 1 with one human message", conv, cv)
	}
	backing = cv.TaskID
	for _, t := range controlplane.Issues(st) {
		if t.ID == backing {
			return "", "", failf("the conversation's backing task %s is in the issue list", backing)
		}
	}
	if ws := countWakes(st, controlplane.WakeChatMessage); len(ws) != 1 || ws[0].TaskID != backing || ws[0].ActorID != "actor-1" {
		return "", "", failf("chat_message wakes after the first message: %d, want 1 for actor-1 on %s", len(ws), backing)
	}
	return conv, backing, nil
}

// chatFirstRunAndReset plays journey04's first chat run (run-c1 sees the first
// message and replies), then "/new" (which wakes nobody), the handoff request, and a
// message to an unknown conversation (conversation_missing).
func chatFirstRunAndReset(e *boardEnv, conv, backing string) error {
	rc, err := e.open("run-c1", backing, "actor-1", "delegation:tasks:create")
	if err != nil {
		return noErr(err, "opening chat run 1")
	}
	if rc.Conversation == nil || rc.Conversation.ID != conv || len(rc.Conversation.Messages) != 1 {
		return failf("chat run 1's context has conversation %+v, want %s with its one message", rc.Conversation, conv)
	}
	if _, err := e.cmd("run-c1", "c1", "post_chat_reply", map[string]any{"body": "I can plan and hand off work."}); err != nil {
		return noErr(err, "post_chat_reply")
	}
	if err := e.completeNative("run-c1", controlplane.RunSucceeded); err != nil {
		return err
	}
	reset, err := e.board(controlplane.BoardChatMessage, map[string]any{"conversationId": conv, "body": " /new "}, "")
	if err != nil {
		return noErr(err, "/new")
	}
	if len(reset.ScheduledWakeIDs) != 0 {
		return failf("/new scheduled %d wakes, want none (no provider run)", len(reset.ScheduledWakeIDs))
	}
	if _, err := e.board(controlplane.BoardChatMessage, map[string]any{"conversationId": conv, "body": "Hand the release notes off to Release Worker with a plan."}, ""); err != nil {
		return noErr(err, "the handoff request")
	}
	if _, err := e.board(controlplane.BoardChatMessage, map[string]any{"conversationId": "conversation-nope", "body": "hi"}, ""); wantCode(err, controlplane.CodeConversationMissing) != nil {
		return failf("a message to an unknown conversation: %v", wantCode(err, controlplane.CodeConversationMissing))
	}
	return nil
}

// handoffWant is what journey04's handoff should have left: in conversation conv
// (backed by task backing), a task for worker whose plan is plan, made by the
// handoff_conversation command whose result is res.
type handoffWant struct {
	conv, backing, worker, plan string
	res                         controlplane.CommandResult
}

// checkHandoff checks state st after journey04's handoff and a restart: one handoff
// to a new top-level task assigned to the worker (among the command's entity refs),
// generation 2 with five messages ending in the handoff's agent message, and the
// handed task as checkHandedTask checks it. It returns the handed-off task's id; a
// failed check is a journey failure.
func checkHandoff(st controlplane.State, w handoffWant) (string, error) {
	rev := refOf(w.res, "revision")
	cv := controlplane.ConversationOf(st, w.conv)
	if cv == nil || len(cv.Handoffs) != 1 {
		return "", failf("conversation %s after the handoff and a restart: %+v, want one handoff", w.conv, cv)
	}
	handed := cv.Handoffs[0].TaskID
	if handed == w.backing || !slices.Contains(w.res.EntityRefs, "task:"+handed) {
		return "", failf("the handoff's task %s is the backing task or not among the command's entity refs %v", handed, w.res.EntityRefs)
	}
	t := taskByID(st, handed)
	if t == nil || t.ParentID != nil || deref(t.AssigneeActorID) != w.worker || t.ConversationID != nil {
		return "", failf("the handed-off task %s after restart: %+v, want a top-level task assigned to %s", handed, t, w.worker)
	}
	if cv.Generation != 2 || deref(cv.Handoffs[0].PlanRevisionID) != rev || rev == "" {
		return "", failf("conversation %s after the handoff and a restart: %+v, want generation 2 and one handoff to %s with plan revision %s", w.conv, cv, handed, rev)
	}
	msgs := cv.Messages
	if len(msgs) != 5 || msgs[2].Command != controlplane.ChatNew || msgs[4].Author != controlplane.ChatAgent || deref(msgs[4].HandoffTaskID) != handed || deref(msgs[4].RunID) != "run-c2" {
		return "", failf("conversation %s has %d messages, want human, agent, /new, human and the handoff's agent message", w.conv, len(msgs))
	}
	return handed, checkHandedTask(st, w, handed, rev)
}

// checkHandedTask checks what the handoff made around task handed in state st: a plan
// document whose one revision rev is the plan, an issue_assigned wake for the worker
// and two chat_message wakes, and the task (not the backing one) in the issue list.
func checkHandedTask(st controlplane.State, w handoffWant, handed, rev string) error {
	planOK := false
	for _, d := range st.Documents {
		if d.TaskID == handed && d.Key == controlplane.ChatPlanKey && d.LatestRevisionID == rev && len(d.Revisions) == 1 && d.Revisions[0].Body == w.plan {
			planOK = true
		}
	}
	if !planOK {
		return failf("the handed-off task %s has no plan document whose one revision %s is the plan given", handed, rev)
	}
	assigned := false
	for _, wk := range countWakes(st, controlplane.WakeIssueAssigned) {
		assigned = assigned || (wk.TaskID == handed && wk.ActorID == w.worker)
	}
	if !assigned || len(countWakes(st, controlplane.WakeChatMessage)) != 2 {
		return failf("wakes after the handoff: issue_assigned for the worker %v, chat_message %d (want true, 2)", assigned, len(countWakes(st, controlplane.WakeChatMessage)))
	}
	inList := false
	for _, it := range controlplane.Issues(st) {
		if it.ID == w.backing {
			return failf("the backing task %s is in the issue list after the handoff", w.backing)
		}
		inList = inList || it.ID == handed
	}
	if !inList {
		return failf("the handed-off task %s is not in the issue list", handed)
	}
	return nil
}

// refOf returns the id of the first entity ref "<prefix>:<id>" of res, or "".
func refOf(res controlplane.CommandResult, prefix string) string {
	for _, r := range res.EntityRefs {
		if id, ok := strings.CutPrefix(r, prefix+":"); ok {
			return id
		}
	}
	return ""
}

package match

import (
	"encoding/json"
	"fmt"
	"strings"
)

// KindChatHandoff grades an agent chat (the run count counts provider turns, cancelled
// and handed-off task runs included, synthetic /new runs excluded; every company run is
// inspected because ordinary issue lists exclude the source conversation; missing plans,
// chat children, wrong assignees and execution before the plan commit fail) from the
// composite JSON observation's chat view {agentId, conversation, actors, tasks,
// documents, runs}. Parameters: name (the assignee's actor name, required),
// expected (text the handed-off plan must contain, required) and count (the provider
// turns: every run of the company, whatever its status, required ≥ 1). It passes when
// all of these hold:
//
//   - handoff: the conversation has exactly one handoff;
//   - plan: the handoff recorded a plan revision, which is the handed-off task's plan
//     document revision and contains expected;
//   - no chat child: the handed-off task is a top-level task (no parent) that backs no
//     conversation;
//   - assignee: the handed-off task and the handoff are assigned to the actor named
//     name;
//   - plan before execution: no run of the handed-off task opened before the plan
//     revision was created;
//   - provider turns: the company has exactly count runs (cancelled ones included),
//     none of them woken by a /new message.
//
// It is not reached when no JSON document, or no chat view with a conversation, was
// observed.
const KindChatHandoff Kind = "chat_handoff"

// chatState is the part of the composite JSON observation chat_handoff reads.
type chatState struct {
	Chat *struct {
		Conversation *struct {
			ID       string `json:"id"`
			TaskID   string `json:"taskId"`
			Messages []struct {
				ID      string `json:"id"`
				Command string `json:"command"`
			} `json:"messages"`
			Handoffs []chatHandoff `json:"handoffs"`
		} `json:"conversation"`
		Actors []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"actors"`
		Tasks []struct {
			ID              string  `json:"id"`
			ParentID        *string `json:"parentId"`
			ConversationID  *string `json:"conversationId"`
			AssigneeActorID *string `json:"assigneeActorId"`
		} `json:"tasks"`
		Documents []struct {
			TaskID    string `json:"taskId"`
			Key       string `json:"key"`
			Revisions []struct {
				ID        string `json:"id"`
				Body      string `json:"body"`
				CreatedAt string `json:"createdAt"`
			} `json:"revisions"`
		} `json:"documents"`
		Runs []struct {
			ID          string          `json:"id"`
			TaskID      string          `json:"taskId"`
			Status      string          `json:"status"`
			WakeReason  string          `json:"wakeReason"`
			WakePayload json.RawMessage `json:"wakePayload"`
			OpenedAt    string          `json:"openedAt"`
		} `json:"runs"`
	} `json:"chat"`
}

// chatHandoff is one handoff of the observed conversation: the task it made, that
// task's assignee, and the plan revision written with it (nil when none was).
type chatHandoff struct {
	ID              string  `json:"id"`
	TaskID          string  `json:"taskId"`
	AssigneeActorID string  `json:"assigneeActorId"`
	PlanRevisionID  *string `json:"planRevisionId"`
}

// compileChat checks chat_handoff's parameters.
func compileChat(spec Spec, c *compiled, bad badFunc) {
	if strings.TrimSpace(spec.Name) == "" {
		bad("name", "name (the assignee's actor name) is required")
	}
	exp, ok := spec.Expected.(string)
	if !ok || strings.TrimSpace(exp) == "" {
		bad("expected", "expected (text the handed-off plan must contain) must be a non-empty string")
	}
	if spec.Count == nil || *spec.Count < 1 {
		bad("count", "count (the provider turns of the company) must be 1 or more")
	} else {
		c.count = *spec.Count
	}
	c.text = exp
	c.display = map[string]any{"assignee": spec.Name, "planContains": exp, "providerTurns": spec.Count}
}

// evalChat grades chat_handoff (see KindChatHandoff); observed lists every check that
// failed (empty when it passed) beside the handoff found.
func (c *compiled) evalChat(obs *Observation) result {
	st, missing := decodeObserved[chatState](obs)
	if missing != "" {
		return result{missing: missing}
	}
	ch := st.Chat
	if ch == nil || ch.Conversation == nil {
		return result{missing: "no conversation was observed (the chat view is missing)"}
	}
	cv := ch.Conversation
	found := map[string]any{}
	problems := c.turnProblems(&st)
	found["providerTurns"] = len(ch.Runs)
	if len(cv.Handoffs) != 1 {
		problems = append(problems, fmt.Sprintf("the conversation has %d handoffs, want exactly 1", len(cv.Handoffs)))
		return result{observed: map[string]any{"found": found, "problems": problems}}
	}
	h := cv.Handoffs[0]
	found["handoff"], found["task"] = h.ID, h.TaskID
	problems = append(problems, c.handoffTaskProblems(&st, h)...)
	problems = append(problems, c.planProblems(&st, h, found)...)
	return result{passed: len(problems) == 0, observed: map[string]any{"found": found, "problems": problems}}
}

// turnProblems checks the company's provider turns: as many runs (cancelled ones
// included) as the matcher's count, and none woken by a "/new" message. It returns the
// checks that failed.
func (c *compiled) turnProblems(st *chatState) []string {
	ch := st.Chat
	var problems []string
	newMessages := map[string]bool{}
	for _, m := range ch.Conversation.Messages {
		if m.Command != "" {
			newMessages[m.ID] = true
		}
	}
	if len(ch.Runs) != c.count {
		problems = append(problems, fmt.Sprintf("the company has %d provider turns (runs, cancelled ones included), want %d", len(ch.Runs), c.count))
	}
	for _, r := range ch.Runs {
		var p struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(r.WakePayload, &p)
		if r.WakeReason == "chat_message" && newMessages[p.MessageID] {
			problems = append(problems, fmt.Sprintf("run %s was woken by the /new message %s", r.ID, p.MessageID))
		}
	}
	return problems
}

// handoffTaskProblems checks handoff h's assignee and task: both assigned to the
// actor the matcher names, the task in the company and top-level (no parent, no
// conversation). It returns the checks that failed.
func (c *compiled) handoffTaskProblems(st *chatState, h chatHandoff) []string {
	ch := st.Chat
	var problems []string
	names := map[string]string{}
	for _, a := range ch.Actors {
		names[a.ID] = a.Name
	}
	if names[h.AssigneeActorID] != c.spec.Name {
		problems = append(problems, fmt.Sprintf("the handoff is assigned to %q (%s), not %q", names[h.AssigneeActorID], h.AssigneeActorID, c.spec.Name))
	}
	taskSeen := false
	for _, t := range ch.Tasks {
		if t.ID != h.TaskID {
			continue
		}
		taskSeen = true
		if t.ParentID != nil || t.ConversationID != nil {
			problems = append(problems, fmt.Sprintf("the handed-off task %s is a chat child (parent %v, conversation %v), not a top-level task", t.ID, orNone(t.ParentID), orNone(t.ConversationID)))
		}
		if t.AssigneeActorID == nil || names[*t.AssigneeActorID] != c.spec.Name {
			problems = append(problems, fmt.Sprintf("the handed-off task %s is not assigned to %q", t.ID, c.spec.Name))
		}
	}
	if !taskSeen {
		problems = append(problems, fmt.Sprintf("the handed-off task %s is not in the company", h.TaskID))
	}
	return problems
}

// planProblems checks handoff h's plan: a revision (found["planRevision"]) of the
// handed-off task's plan document that contains the matcher's text, committed before
// any run of the task opened. It returns the checks that failed.
func (c *compiled) planProblems(st *chatState, h chatHandoff, found map[string]any) []string {
	ch := st.Chat
	var problems []string
	planAt := ""
	switch {
	case h.PlanRevisionID == nil:
		problems = append(problems, "the handoff has no plan")
	default:
		for _, d := range ch.Documents {
			if d.TaskID != h.TaskID || d.Key != "plan" {
				continue
			}
			for _, rev := range d.Revisions {
				if rev.ID == *h.PlanRevisionID {
					planAt = rev.CreatedAt
					if !strings.Contains(rev.Body, c.text) {
						problems = append(problems, fmt.Sprintf("the plan revision %s does not contain %q", rev.ID, c.text))
					}
				}
			}
		}
		if planAt == "" {
			problems = append(problems, fmt.Sprintf("the handoff's plan revision %s is not the handed-off task's plan document", *h.PlanRevisionID))
		}
		found["planRevision"] = *h.PlanRevisionID
	}
	for _, r := range ch.Runs {
		if r.TaskID == h.TaskID && (planAt == "" || r.OpenedAt < planAt) {
			problems = append(problems, fmt.Sprintf("run %s executed the handed-off task (opened %s) before its plan was committed", r.ID, r.OpenedAt))
		}
	}
	return problems
}

// orNone is *p, or "none" for nil.
func orNone(p *string) string {
	if p == nil {
		return "none"
	}
	return *p
}

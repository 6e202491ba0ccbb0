package controlplane

import (
	"encoding/json"
	"strings"
)

// RunMessage returns a run's user-facing message (docs/harness.md, "The
// run's message"): when the run's result names a comment in presentationDecision.commentId, that
// comment's body ("" when no such comment exists); otherwise the bodies of every comment
// the run's applied semantic commands created, in audit order, joined with "\n". A chat
// run (its task backs a conversation, chat.go) that posted chat messages has them as its
// message instead, in order, joined with "\n". It reads s only and never fails: a
// malformed result or audit detail counts as absent.
func (s *State) RunMessage(run *Run) string {
	var chat []string
	for _, cv := range s.Conversations {
		if cv.TaskID != run.TaskID {
			continue
		}
		for _, m := range cv.Messages {
			if m.Author == ChatAgent && m.RunID != nil && *m.RunID == run.ID {
				chat = append(chat, m.Body)
			}
		}
	}
	if len(chat) > 0 {
		return strings.Join(chat, "\n")
	}
	bodies := make(map[string]string, len(s.Comments))
	for _, c := range s.Comments {
		bodies[c.ID] = c.Body
	}
	var res struct {
		Result struct {
			PresentationDecision struct {
				CommentID *string `json:"commentId"`
			} `json:"presentationDecision"`
		} `json:"result"`
	}
	_ = json.Unmarshal(run.Result, &res)
	if id := res.Result.PresentationDecision.CommentID; id != nil {
		return bodies[*id]
	}
	var msgs []string
	for _, au := range s.Audit {
		if au.RunID == nil || *au.RunID != run.ID || au.Action != "semantic_command.applied" {
			continue
		}
		var d struct {
			EntityRefs []string `json:"entityRefs"`
		}
		_ = json.Unmarshal(au.Details, &d)
		for _, ref := range d.EntityRefs {
			if id, ok := strings.CutPrefix(ref, "comment:"); ok {
				msgs = append(msgs, bodies[id])
			}
		}
	}
	return strings.Join(msgs, "\n")
}

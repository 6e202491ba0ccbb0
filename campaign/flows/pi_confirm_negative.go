package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "pi_confirm_negative", Needs: []catalog.Need{{Field: catalog.FieldWorkspaceFile, What: "the file the agent writes the answer to"}}},
		Play:         playPiConfirmNegative,
		Scripts: piScripts(func(in ModelInput) ([]*scriptedmodel.Script, error) {
			return scriptedmodel.ForPiConfirm(in.Rendered.Reference, piConfirmTitle)
		}),
	})
}

// piConfirmTitle is the yes/no question Pi's scripted model asks in the flow
// pi_confirm_negative (scriptedmodel.ForPiConfirm).
const piConfirmTitle = "May I go ahead?"

// Confirm questions on the board (the heartbeat runner's options of a Pi confirm
// dialog, docs/pi.md) and what an agent told "no" writes back.
const (
	piConfirmNo      = "no"
	piConfirmWritten = "false"
)

// playPiConfirmNegative is flow pi_confirm_negative (docs/pi.md): while run 1 is active
// the agent's native yes/no question (a pending question interaction of type confirm)
// is answered "no" through the board; after the run settles, the case's workspace file
// must hold exactly "false" (independent evidence: the agent wrote the answer it was
// given). Pi cannot tell a no from a dismissal, so the matchers grade the question as
// negative_or_cancelled. An agent that asks nothing, asks something other than a yes/no
// question, or writes anything else breaks the flow's contract (a problem).
func playPiConfirmNegative(ctx context.Context, s *Session) Outcome {
	var out Outcome
	if s.Rendered == nil || s.Rendered.WorkspaceFile == "" {
		out.Err = permanent(errors.New("flow pi_confirm_negative needs the case's workspaceFile"))
		return out
	}
	q, qid, done := askedQuestionID(ctx, s, &out)
	if done {
		return out
	}
	if typ := questionType(q); typ != "confirm" {
		out.Problems = append(out.Problems, fmt.Sprintf("question %s is of type %q, not a yes/no question (confirm)", q.ID, typ))
		return out
	}
	result, _ := json.Marshal(map[string]any{"answers": []any{map[string]string{"questionId": qid, "optionId": piConfirmNo}}})
	if !answerAndSettle(ctx, s, &out, q, result, "yes/no question "+q.ID+" with no") {
		return out
	}
	if got, ok := writtenAnswer(s, &out); ok && string(got) != piConfirmWritten {
		out.Problems = append(out.Problems, fmt.Sprintf("%s holds %q, not the answer the agent was given (%s)", s.Rendered.WorkspaceFile, clipText(string(got), 80), piConfirmWritten))
	}
	return out
}

// questionType returns the type of an interaction's only question ("" when unreadable).
func questionType(q *controlplane.Interaction) string {
	var p struct {
		Questions []struct {
			Type string `json:"type"`
		} `json:"questions"`
	}
	if json.Unmarshal(q.Payload, &p) != nil || len(p.Questions) != 1 {
		return ""
	}
	return p.Questions[0].Type
}

// clipText cuts s to at most n bytes (valid UTF-8) for a problem line.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/api"
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
	q, problem, err := askedQuestion(ctx, s)
	if err != nil || q == nil {
		out.Err = err
		if problem != "" {
			out.Problems = append(out.Problems, problem)
		}
		return out
	}
	qid, err := questionID(q)
	if err != nil {
		out.Problems = append(out.Problems, err.Error())
		return out
	}
	if typ := questionType(q); typ != "confirm" {
		out.Problems = append(out.Problems, fmt.Sprintf("question %s is of type %q, not a yes/no question (confirm)", q.ID, typ))
		return out
	}
	result, _ := json.Marshal(map[string]any{"answers": []any{map[string]string{"questionId": qid, "optionId": piConfirmNo}}})
	out.submit()
	s.log("answering yes/no question %s with no", q.ID)
	if _, err := s.Board.ResolveInteraction(ctx, q.ID, api.ResolveInteractionRequest{Outcome: controlplane.InteractionAnswered, Result: result}); err != nil {
		out.Err = BoardFault("answering question "+q.ID, err)
		return out
	}
	if _, out.Err = waitTurn(ctx, s, 1); out.Err != nil {
		return out
	}
	got, err := os.ReadFile(filepath.Join(s.Workspace, s.Rendered.WorkspaceFile))
	switch {
	case err != nil:
		out.Problems = append(out.Problems, fmt.Sprintf("the agent did not write the answer to %s: %v", s.Rendered.WorkspaceFile, err))
	case string(got) != piConfirmWritten:
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

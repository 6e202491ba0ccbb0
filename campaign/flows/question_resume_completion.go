package flows

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/verdict"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{
			Name:    "question_resume_completion",
			Needs:   []catalog.Need{{Field: catalog.FieldQuestionAnswer}},
			Accepts: []catalog.CaseField{catalog.FieldRestartServer},
		},
		Play: playQuestionResume,
		ServerProcess: func(cs *catalog.Case) string {
			if cs.RestartServerBeforeAnswer {
				return "the case restarts the server before its answer"
			}
			return ""
		},
	})
}

// playQuestionResume is flow question_resume_completion: run 1 must leave a pending
// structured question; the human (after restarting the server when the case says
// restartServerBeforeQuestionAnswer) answers it with the case's option; run 2 must
// resume and finish; every run must succeed and nothing may stay pending.
func playQuestionResume(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	q := v.pending(s.TaskID, controlplane.InteractionQuestions)
	if q == nil {
		out.Problems = append(out.Problems, "no pending question after run 1")
		return out
	}
	if s.Case.RestartServerBeforeAnswer {
		if out.Err = restart(ctx, s, "before answering question "+q.ID); out.Err != nil {
			return out
		}
	}
	result, err := answerFor(q, s.Rendered.QuestionAnswer.OptionLabel)
	if err != nil {
		out.Problems = append(out.Problems, err.Error())
		return out
	}
	out.submit()
	s.log("answering question %s with %q", q.ID, s.Rendered.QuestionAnswer.OptionLabel)
	if _, err := s.Board.ResolveInteraction(ctx, q.ID, api.ResolveInteractionRequest{Outcome: controlplane.InteractionAnswered, Result: result}); err != nil {
		out.Err = BoardFault("answering question "+q.ID, err)
		return out
	}
	if v, out.Err = waitTurn(ctx, s, 2); out.Err != nil {
		return out
	}
	if p := v.pending(s.TaskID, ""); p != nil {
		out.Problems = append(out.Problems, fmt.Sprintf("interaction %s is still pending at the end", p.ID))
	}
	for i, r := range v.runs {
		if r.Status != controlplane.RunSucceeded {
			out.Problems = append(out.Problems, fmt.Sprintf("run %d ended %s, not succeeded", i+1, r.Status))
		}
	}
	return out
}

// restart restarts the server through the session (a harness fault when it cannot).
func restart(ctx context.Context, s *Session, why string) error {
	if s.Restart == nil {
		return permanent(fmt.Errorf("the case restarts the server %s, but this harness cannot restart it", why))
	}
	s.log("restarting the server %s", why)
	b, err := s.Restart(ctx)
	if err != nil {
		return verdict.HarnessFault(fmt.Errorf("server restart failed: %w", err), true)
	}
	s.Board = b
	return nil
}

// answerFor builds the answer of a structured question: the question offering an
// option labelled label, answered with that option. Errors (the agent asked a
// question the case cannot answer) are the candidate's.
func answerFor(q *controlplane.Interaction, label string) (json.RawMessage, error) {
	var p struct {
		Questions []struct {
			ID      string `json:"id"`
			Options []struct {
				ID    string `json:"id"`
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(q.Payload, &p); err != nil {
		return nil, fmt.Errorf("question %s has no readable payload", q.ID)
	}
	for _, qu := range p.Questions {
		for _, o := range qu.Options {
			if o.Label == label {
				return json.Marshal(map[string]any{"answers": []any{map[string]string{"questionId": qu.ID, "optionId": o.ID, "optionLabel": o.Label}}})
			}
		}
	}
	return nil, fmt.Errorf("question %s offers no option labelled %q", q.ID, label)
}

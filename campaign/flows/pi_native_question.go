package flows

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "pi_native_question", Needs: []catalog.Need{{Field: catalog.FieldWorkspaceFile, What: "the file the agent writes the answer to"}}},
		Play:         playPiNativeQuestion,
		Scripts:      piScripts(piQuestionScripts),
	})
}

// piQuestionTitle is the native question Pi's scripted model asks in the flows
// pi_native_question and pi_question_stop.
const piQuestionTitle = "Which value should I write?"

// piQuestionScripts are the scripts of Pi's runs in the flows pi_native_question and
// pi_question_stop: the first run asks a native question first and writes its answer
// (scriptedmodel.ForPiQuestion).
func piQuestionScripts(in ModelInput) ([]*scriptedmodel.Script, error) {
	return scriptedmodel.ForPiQuestion(in.Rendered.Reference, piQuestionTitle)
}

// playPiNativeQuestion is flow pi_native_question (docs/pi.md): while run 1 is active
// the agent's native question (a pending question interaction on the task, asked by
// the runner for Pi's dialog) is answered through the board with a value this flow
// makes up (random, never in the catalog, the prompt or the model's script); after the
// run settles, the case's workspace file must hold exactly that value (independent
// evidence: the agent wrote what the human answered). An agent that asks nothing, or
// writes anything else, breaks the flow's contract (a problem).
func playPiNativeQuestion(ctx context.Context, s *Session) Outcome {
	var out Outcome
	q, qid, done := askedQuestionID(ctx, s, &out)
	if done {
		return out
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		out.Err = permanent(fmt.Errorf("making the undisclosed answer: %w", err))
		return out
	}
	value := "v-" + hex.EncodeToString(b)
	result, _ := json.Marshal(map[string]any{"answers": []any{map[string]string{"questionId": qid, "text": value}}})
	if !answerAndSettle(ctx, s, &out, q, result, "native question "+q.ID+" with an undisclosed value") {
		return out
	}
	if s.Rendered == nil || s.Rendered.WorkspaceFile == "" {
		out.Err = permanent(errors.New("flow pi_native_question needs the case's workspaceFile"))
		return out
	}
	if got, ok := writtenAnswer(s, &out); ok && string(got) != value {
		out.Problems = append(out.Problems, fmt.Sprintf("%s holds %d bytes that are not the human's answer", s.Rendered.WorkspaceFile, len(got)))
	}
	return out
}

// answerAndSettle answers question q through the board with result (what says how, in
// the log), counts the answer among out's submissions and waits for run 1 to settle.
// It returns false when out holds the flow's outcome already: a BoardFault or
// waitTurn's error.
func answerAndSettle(ctx context.Context, s *Session, out *Outcome, q *controlplane.Interaction, result json.RawMessage, what string) bool {
	out.submit()
	s.log("answering %s", what)
	if _, err := s.Board.ResolveInteraction(ctx, q.ID, api.ResolveInteractionRequest{Outcome: controlplane.InteractionAnswered, Result: result}); err != nil {
		out.Err = BoardFault("answering question "+q.ID, err)
		return false
	}
	_, out.Err = waitTurn(ctx, s, 1)
	return out.Err == nil
}

// writtenAnswer reads the case's workspace file, where the agent writes the answer it
// was given; ok is false, with a problem in out, when it cannot be read.
func writtenAnswer(s *Session, out *Outcome) (got []byte, ok bool) {
	got, err := os.ReadFile(filepath.Join(s.Workspace, s.Rendered.WorkspaceFile))
	if err != nil {
		out.Problems = append(out.Problems, fmt.Sprintf("the agent did not write the answer to %s: %v", s.Rendered.WorkspaceFile, err))
		return nil, false
	}
	return got, true
}

// askedQuestion waits for run 1's pending native question (waitQuestion). done says
// out holds the flow's outcome already: waitQuestion's error, or the problem that the
// run ended without a question (the candidate's: it asked nothing).
func askedQuestion(ctx context.Context, s *Session, out *Outcome) (q *controlplane.Interaction, done bool) {
	q, err := waitQuestion(ctx, s)
	switch {
	case err != nil:
		out.Err = err
		return nil, true
	case q == nil:
		out.Problems = append(out.Problems, "the agent asked no native question before its run ended")
		return nil, true
	}
	return q, false
}

// askedQuestionID is askedQuestion and the id of the question's only entry
// (questionID; a question that has none is the candidate's problem, in out).
func askedQuestionID(ctx context.Context, s *Session, out *Outcome) (q *controlplane.Interaction, qid string, done bool) {
	if q, done = askedQuestion(ctx, s, out); done {
		return nil, "", true
	}
	qid, err := questionID(q)
	if err != nil {
		out.Problems = append(out.Problems, err.Error())
		return nil, "", true
	}
	return q, qid, false
}

// waitQuestion looks until the task has a pending question interaction while run 1
// is active, or run 1 settled without one (nil), within the turn deadline. Errors: as
// waitTurn's.
func waitQuestion(ctx context.Context, s *Session) (*controlplane.Interaction, error) {
	ctx, cancel := turnDeadline(ctx, s, 1)
	defer cancel()
	var pending *controlplane.Interaction
	_, err := lookFor(ctx, s, func(ctx context.Context) (*view, error) { return look(ctx, s) }, func(v *view) (bool, error) {
		if q := v.pending(s.TaskID, controlplane.InteractionQuestions); q != nil && len(v.runs) > 0 && v.runs[0].Status == controlplane.RunRunning {
			pending = q
			return true, nil
		}
		return false, nil
	})
	return pending, err
}

// questionID is the id of the only question of a question interaction's payload.
func questionID(q *controlplane.Interaction) (string, error) {
	var p struct {
		Questions []struct {
			ID string `json:"id"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(q.Payload, &p); err != nil || len(p.Questions) != 1 || p.Questions[0].ID == "" {
		return "", fmt.Errorf("question %s does not carry exactly one question with an id", q.ID)
	}
	return p.Questions[0].ID, nil
}

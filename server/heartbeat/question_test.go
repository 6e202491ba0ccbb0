package heartbeat

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/controlplane"
)

// fakeQuestionBoard creates one interaction per request_human_input and resolves it
// once the test sets its status and result.
type fakeQuestionBoard struct {
	mu     sync.Mutex
	cmds   []map[string]any
	env    []controlplane.CommandEnvelope
	status controlplane.InteractionStatus
	result json.RawMessage
	// ops are the board operations (the runner's closes); closeErr refuses them.
	ops      []controlplane.BoardOp
	closeErr error
}

func (f *fakeQuestionBoard) ApplyCommand(_ context.Context, env controlplane.CommandEnvelope) (controlplane.CommandResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var cmd map[string]any
	_ = json.Unmarshal(env.Command, &cmd)
	f.cmds, f.env = append(f.cmds, cmd), append(f.env, env)
	return controlplane.CommandResult{EntityRefs: []string{"task:t1", "interaction:it-1"}}, nil
}

func (f *fakeQuestionBoard) Snapshot(context.Context) (controlplane.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.status
	if st == "" {
		st = controlplane.InteractionPending
	}
	return controlplane.State{Interactions: []*controlplane.Interaction{{ID: "it-1", TaskID: "t1", Kind: controlplane.InteractionQuestions, Status: st, Result: f.result}}}, nil
}

// ApplyBoard is the runner closing an unanswered question (resolve_interaction); with
// closeErr set it is refused with it.
func (f *fakeQuestionBoard) ApplyBoard(_ context.Context, op controlplane.BoardOp) (controlplane.BoardResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, op)
	if f.closeErr != nil {
		return controlplane.BoardResult{}, f.closeErr
	}
	var in struct {
		Outcome controlplane.InteractionStatus `json:"outcome"`
		Result  json.RawMessage                `json:"result"`
	}
	_ = json.Unmarshal(op.Input, &in)
	f.status, f.result = in.Outcome, in.Result
	return controlplane.BoardResult{ID: "it-1"}, nil
}

func (f *fakeQuestionBoard) resolve(st controlplane.InteractionStatus, result string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.result = st, json.RawMessage(result)
}

// TestBoardQuestions: each native dialog is requested as the run (request_human_input,
// kind questions, continuation none, the dialog's method and options in the payload),
// and the human's board answer becomes the dialog's answer: select by option, confirm
// yes/no (no is false, like a dismissal), input and editor text; a rejected interaction
// is a dismissal; a foreign option or a missing text is a harness error; the turn's end
// cancels a pending dialog.
func TestBoardQuestions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		req     session.QuestionRequest
		status  controlplane.InteractionStatus
		result  string
		want    session.QuestionAnswer
		wantErr bool
		options int
	}{
		{"select", session.QuestionRequest{Seq: 1, Method: session.QuestionSelect, Title: "Colour?", Options: []string{"Cobalt", "Amber"}},
			controlplane.InteractionAnswered, `{"answers":[{"questionId":"pi-1","optionId":"o2","optionLabel":"Amber"}]}`, session.QuestionAnswer{Value: "Amber"}, false, 2},
		{"confirm yes", session.QuestionRequest{Seq: 2, Method: session.QuestionConfirm, Title: "Sure?", Message: "Go on?"},
			controlplane.InteractionAnswered, `{"answers":[{"questionId":"pi-2","optionId":"yes"}]}`, session.QuestionAnswer{Confirmed: true}, false, 2},
		{"confirm no", session.QuestionRequest{Seq: 3, Method: session.QuestionConfirm, Title: "Sure?"},
			controlplane.InteractionAnswered, `{"answers":[{"questionId":"pi-3","optionId":"no"}]}`, session.QuestionAnswer{}, false, 2},
		{"input", session.QuestionRequest{Seq: 4, Method: session.QuestionInput, Title: "Code?", Placeholder: "code"},
			controlplane.InteractionAnswered, `{"answers":[{"questionId":"pi-4","text":"k7-undisclosed"}]}`, session.QuestionAnswer{Value: "k7-undisclosed"}, false, 0},
		{"editor", session.QuestionRequest{Seq: 5, Method: session.QuestionEditor, Title: "Notes", Prefill: "x"},
			controlplane.InteractionAnswered, `{"answers":[{"questionId":"pi-5","text":"line one\nline two"}]}`, session.QuestionAnswer{Value: "line one\nline two"}, false, 0},
		{"rejected", session.QuestionRequest{Seq: 6, Method: session.QuestionInput, Title: "Code?"},
			controlplane.InteractionRejected, `{}`, session.QuestionAnswer{Cancelled: true}, false, 0},
		{"foreign option", session.QuestionRequest{Seq: 7, Method: session.QuestionSelect, Title: "Colour?", Options: []string{"Cobalt"}},
			controlplane.InteractionAnswered, `{"answers":[{"questionId":"pi-7","optionId":"o9"}]}`, session.QuestionAnswer{}, true, 1},
		{"input without text", session.QuestionRequest{Seq: 8, Method: session.QuestionInput, Title: "Code?"},
			controlplane.InteractionAnswered, `{"answers":[{"questionId":"pi-8","optionId":"o1"}]}`, session.QuestionAnswer{}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeQuestionBoard{}
			q := boardQuestions{c: f, run: "hb-c1-w1", task: "t1", poll: time.Millisecond}
			type answer struct {
				a   session.QuestionAnswer
				err error
			}
			got := make(chan answer, 1)
			go func() {
				a, err := q.Answer(context.Background(), tc.req)
				got <- answer{a, err}
			}()
			time.Sleep(20 * time.Millisecond)
			select {
			case a := <-got:
				t.Fatalf("answered before the human: %+v", a)
			default:
			}
			f.resolve(tc.status, tc.result)
			a := <-got
			if (a.err != nil) != tc.wantErr || (!tc.wantErr && a.a != tc.want) {
				t.Fatalf("answer %+v, %v; want %+v (error %v)", a.a, a.err, tc.want, tc.wantErr)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			cmd := f.cmds[0]
			p, _ := cmd["payload"].(map[string]any)
			qs, _ := p["questions"].([]any)
			if cmd["kind"] != string(controlplane.CommandRequestHumanInput) || cmd["taskId"] != "t1" || cmd["interactionKind"] != string(controlplane.InteractionQuestions) ||
				cmd["continuationPolicy"] != string(controlplane.ContinueNone) || f.env[0].RunID != "hb-c1-w1" || p["method"] != tc.req.Method || len(qs) != 1 {
				t.Fatalf("command %v as %s", cmd, f.env[0].RunID)
			}
			opts, _ := qs[0].(map[string]any)["options"].([]any)
			if len(opts) != tc.options {
				t.Errorf("options %v, want %d", opts, tc.options)
			}
		})
	}
	t.Run("cancelled while pending", func(t *testing.T) {
		t.Parallel()
		f := &fakeQuestionBoard{}
		q := boardQuestions{c: f, run: "hb-c1-w1", task: "t1", poll: time.Millisecond}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		a, err := q.Answer(ctx, session.QuestionRequest{Seq: 1, Method: session.QuestionInput, Title: "Code?"})
		if err != nil || !a.Cancelled {
			t.Fatalf("answer %+v, %v; want cancelled", a, err)
		}
		// The runner closed the interaction (expired, result cancelled), so that a
		// stale answer is refused.
		f.mu.Lock()
		defer f.mu.Unlock()
		var closed PiQuestionClosed
		if len(f.ops) != 1 || f.ops[0].Kind != controlplane.BoardResolveInteraction || f.status != controlplane.InteractionExpired ||
			json.Unmarshal(f.result, &closed) != nil || !closed.Cancelled || closed.RunID != "hb-c1-w1" {
			t.Fatalf("close %+v, status %s, result %s", f.ops, f.status, f.result)
		}
	})
	t.Run("close refused", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name    string
			err     error
			wantErr bool
		}{
			{"answered meanwhile", &controlplane.Error{Code: controlplane.CodeInteractionAlreadyResolved, Message: "already answered"}, false},
			{"store down", &controlplane.Error{Code: controlplane.CodeStoreUnavailable, Message: "down"}, true},
		} {
			f := &fakeQuestionBoard{closeErr: tc.err}
			q := boardQuestions{c: f, run: "hb-c1-w1", task: "t1", poll: time.Millisecond}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			a, err := q.Answer(ctx, session.QuestionRequest{Seq: 1, Method: session.QuestionInput, Title: "Code?"})
			cancel()
			if !a.Cancelled || (err != nil) != tc.wantErr {
				t.Errorf("%s: answer %+v, %v; want cancelled, error %v", tc.name, a, err, tc.wantErr)
			}
		}
	})
}

package heartbeat

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/controlplane"
)

// Native questions on the board (docs/pi.md "In the heartbeat runner"): every question
// an agent asks during a run (Pi's dialogs, agentproof's ask_user tool: select,
// confirm, input, editor)
// becomes a control-plane interaction of kind questions on the run's task, requested
// as the run itself (request_human_input, continuation policy none: the answer goes
// back into the same turn, it wakes nobody), with one question whose type is the
// dialog's method. The human answers it through the board API (ResolveInteraction,
// outcome answered) with a result {"answers":[{questionId, optionId, optionLabel}]}
// for select and confirm (options yes and no), or {"answers":[{questionId, text}]} for
// input and editor; the runner polls the task's state (PiQuestionPoll) and gives Pi the
// answer. An interaction the human rejects or lets expire is a dismissed dialog. A
// confirm answered "no" reaches Pi as false, which Pi cannot tell from a dismissal
// (graded negative_or_cancelled). When the turn is cancelled (Stop) or ends, the dialog
// is answered "cancelled" by the driver and the runner closes the interaction (outcome
// expired, result {cancelled, runId, reason}: close), so that a stale answer is refused
// with 409 interaction_already_resolved instead of landing on a dead dialog.

// PiQuestionPoll is how often the runner looks for the human's answer to a native
// question.
const PiQuestionPoll = 150 * time.Millisecond

// Confirm dialog options as the board shows them.
const (
	PiConfirmYes = "yes"
	PiConfirmNo  = "no"
)

// questionBoard is what the question decider needs of a company.
type questionBoard interface {
	Snapshot(ctx context.Context) (controlplane.State, error)
	ApplyCommand(ctx context.Context, env controlplane.CommandEnvelope) (controlplane.CommandResult, error)
	ApplyBoard(ctx context.Context, op controlplane.BoardOp) (controlplane.BoardResult, error)
}

// boardQuestions is the QuestionDecider of one run: source names the protocol whose
// questions they are (the payload's source and the questions' id prefix; "pi" when
// empty).
type boardQuestions struct {
	c      questionBoard
	run    string
	task   string
	poll   time.Duration
	source string
}

// piQuestionOption is one option of a native question's payload.
type piQuestionOption struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Answer asks req on the board and blocks until the human resolves the interaction or
// ctx ends (then the dialog is cancelled). Errors (a harness fault: Pi is told
// "cancelled" and the turn records it): the command was refused, no interaction was
// created, or the answer does not fit the question.
func (q boardQuestions) Answer(ctx context.Context, req session.QuestionRequest) (session.QuestionAnswer, error) {
	qid := cmp.Or(q.source, "pi") + "-" + strconv.Itoa(req.Seq)
	question := map[string]any{"id": qid, "type": req.Method, "prompt": cmp.Or(req.Message, req.Title)}
	var opts []piQuestionOption
	switch req.Method {
	case session.QuestionSelect:
		for i, o := range req.Options {
			opts = append(opts, piQuestionOption{ID: "o" + strconv.Itoa(i+1), Label: o})
		}
	case session.QuestionConfirm:
		opts = []piQuestionOption{{ID: PiConfirmYes, Label: "Yes"}, {ID: PiConfirmNo, Label: "No"}}
	case session.QuestionInput:
		question["placeholder"] = req.Placeholder
	case session.QuestionEditor:
		question["prefill"] = req.Prefill
	}
	if opts != nil {
		question["options"] = opts
	}
	cmd, err := json.Marshal(map[string]any{"kind": controlplane.CommandRequestHumanInput, "taskId": q.task,
		"interactionKind": controlplane.InteractionQuestions, "title": cmp.Or(req.Title, "Pi asks"),
		"prompt": cmp.Or(req.Message, req.Title, "Pi asks"), "continuationPolicy": controlplane.ContinueNone,
		"payload": map[string]any{"source": cmp.Or(q.source, "pi"), "method": req.Method, "questions": []any{question}}})
	if err != nil {
		return session.QuestionAnswer{}, err
	}
	res, err := q.c.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: q.run, IdempotencyKey: q.run + "-pi-question-" + strconv.Itoa(req.Seq), Command: cmd})
	if err != nil {
		return session.QuestionAnswer{}, fmt.Errorf("asking question %d on the board: %w", req.Seq, err)
	}
	id := ""
	for _, ref := range res.EntityRefs {
		if v, ok := strings.CutPrefix(ref, "interaction:"); ok {
			id = v
		}
	}
	if id == "" {
		return session.QuestionAnswer{}, fmt.Errorf("asking question %d on the board: no interaction was created (%v)", req.Seq, res.EntityRefs)
	}
	t := time.NewTicker(q.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return session.QuestionAnswer{Cancelled: true}, q.close(ctx, id)
		case <-t.C:
		}
		st, err := q.c.Snapshot(ctx)
		if err != nil {
			continue
		}
		for _, it := range st.Interactions {
			if it.ID != id || it.Status == controlplane.InteractionPending {
				continue
			}
			if it.Status != controlplane.InteractionAnswered {
				return session.QuestionAnswer{Cancelled: true}, nil
			}
			return piAnswerOf(req, qid, opts, it.Result)
		}
	}
}

// PiQuestionClosed is the result the runner records on a native question it closes
// because the dialog ended unanswered (close).
type PiQuestionClosed struct {
	Cancelled bool   `json:"cancelled"`
	RunID     string `json:"runId"`
	Reason    string `json:"reason"`
}

// PiQuestionCloseTimeout bounds the board operation that closes a question.
const PiQuestionCloseTimeout = 10 * time.Second

// close closes interaction id, still pending when its dialog ended unanswered (a Stop of
// the run, or its turn ended), so that no stale answer can land on it: the board
// operation resolve_interaction with outcome expired (the control plane's "no longer
// answerable"; it has no cancelled status for interactions) and a PiQuestionClosed
// result saying why; an answer after it is refused (409 interaction_already_resolved).
// An interaction the human resolved meanwhile is left as it is. Errors: the close was
// refused otherwise (a harness fault, recorded with the question).
func (q boardQuestions) close(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PiQuestionCloseTimeout)
	defer cancel()
	in, _ := json.Marshal(map[string]any{"interactionId": id, "outcome": controlplane.InteractionExpired,
		"result": PiQuestionClosed{Cancelled: true, RunID: q.run, Reason: "the run was stopped or its turn ended before the human answered"}})
	_, err := q.c.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardResolveInteraction, Input: in, IdempotencyKey: q.run + "-pi-question-close-" + id})
	if err != nil && controlplane.CodeOf(err) != controlplane.CodeInteractionAlreadyResolved {
		return fmt.Errorf("closing the unanswered question %s: %w", id, err)
	}
	return nil
}

// piAnswerOf reads the human's result of question qid as the dialog's answer.
func piAnswerOf(req session.QuestionRequest, qid string, opts []piQuestionOption, result json.RawMessage) (session.QuestionAnswer, error) {
	var r struct {
		Answers []struct {
			QuestionID string  `json:"questionId"`
			OptionID   string  `json:"optionId"`
			Text       *string `json:"text"`
		} `json:"answers"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return session.QuestionAnswer{}, fmt.Errorf("question %d: the answer is not readable: %w", req.Seq, err)
	}
	for _, a := range r.Answers {
		if a.QuestionID != qid {
			continue
		}
		switch req.Method {
		case session.QuestionInput, session.QuestionEditor:
			if a.Text == nil {
				return session.QuestionAnswer{}, fmt.Errorf("question %d (%s) was answered without text", req.Seq, req.Method)
			}
			return session.QuestionAnswer{Value: *a.Text}, nil
		case session.QuestionConfirm:
			switch a.OptionID {
			case PiConfirmYes:
				return session.QuestionAnswer{Confirmed: true}, nil
			case PiConfirmNo:
				return session.QuestionAnswer{Confirmed: false}, nil
			}
			return session.QuestionAnswer{}, fmt.Errorf("question %d (confirm) was answered with option %q, not %s or %s", req.Seq, a.OptionID, PiConfirmYes, PiConfirmNo)
		default:
			for _, o := range opts {
				if o.ID == a.OptionID {
					return session.QuestionAnswer{Value: o.Label}, nil
				}
			}
			return session.QuestionAnswer{}, fmt.Errorf("question %d (select) was answered with option %q, which it does not offer", req.Seq, a.OptionID)
		}
	}
	return session.QuestionAnswer{}, fmt.Errorf("question %d was answered without an answer to %s", req.Seq, qid)
}

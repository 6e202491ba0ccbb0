package flows

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "agent_chat", Needs: []catalog.Need{{Field: catalog.FieldFollowups, Count: 1, What: "the handoff request"}}},
		Play:         playAgentChat,
		Chat:         true,
	})
}

// ChatWorkerName is the name of the agent the fixtures of a chat case (Flow.Chat)
// create for the agent to hand work off to: an agent of no runner here (it has no
// adapter configuration), so its handed-off task waits for it and is never executed
// in the cell.
const ChatWorkerName = "Release Worker"

// playAgentChat is flow agent_chat (docs/journeys.md "Agent chat"): the fixtures
// started a conversation whose first human message is the case's prompt (turn 1). Run 1 must reply in the chat. The human then sends "/new",
// which must start a new session generation without a wake (no provider run: the case's
// expectedRunCount and the chat_handoff matcher count the runs), and then the case's one
// followup, asking for a handoff (turn 2). Run 2 must hand the work off to a task.
// Finally the flow stops every run still running in the company beside the
// conversation's (handed-off work: nothing of the cell may outlive it). A missing reply or handoff is
// the candidate's contract violation; a /new the control plane answered with a wake or
// without a new generation is the harness's fault (the control plane is agentproof's
// own).
func playAgentChat(ctx context.Context, s *Session) Outcome {
	var out Outcome
	if s.ConversationID == "" {
		out.Err = permanent(errors.New("flow agent_chat needs the conversation the fixtures started; the session has none"))
		return out
	}
	request, err := s.followup()
	if err != nil {
		out.Err = err
		return out
	}
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	cv := controlplane.ConversationOf(v.st, s.ConversationID)
	if cv == nil {
		out.Err = permanent(fmt.Errorf("the conversation %s is not in the company state", s.ConversationID))
		return out
	}
	if !repliedIn(cv, v.runs[0].ID) {
		out.Problems = append(out.Problems, fmt.Sprintf("the agent did not reply in the chat in run 1 (%s)", v.runs[0].ID))
		return out
	}
	gen := cv.Generation
	s.log("starting a new chat session (/new)")
	res, err := s.Board.ChatMessage(ctx, s.ConversationID, controlplane.ChatNewText)
	if err != nil {
		out.Err = BoardFault("sending /new", err)
		return out
	}
	if len(res.ScheduledWakeIDs) > 0 {
		out.Err = permanent(fmt.Errorf("the control plane answered /new with wakes %v; /new must start no provider run", res.ScheduledWakeIDs))
		return out
	}
	if v, err = look(ctx, s); err != nil {
		out.Err = BoardFault("reading the conversation after /new", err)
		return out
	}
	if cv = controlplane.ConversationOf(v.st, s.ConversationID); cv == nil || cv.Generation != gen+1 {
		out.Err = permanent(fmt.Errorf("the conversation's session generation after /new is not %d", gen+1))
		return out
	}
	out.submit()
	s.log("asking for the handoff")
	if _, err := s.Board.ChatMessage(ctx, s.ConversationID, request); err != nil {
		out.Err = BoardFault("asking for the handoff", err)
		return out
	}
	if v = out.wait(ctx, s, 2); v == nil {
		return out
	}
	cv = controlplane.ConversationOf(v.st, s.ConversationID)
	if cv == nil || len(cv.Handoffs) == 0 {
		out.Problems = append(out.Problems, fmt.Sprintf("the agent did not hand the work off in run 2 (%s)", v.runs[1].ID))
	}
	out.Err = stopOthers(ctx, s, v)
	return out
}

// repliedIn reports whether run posted an agent message in cv.
func repliedIn(cv *controlplane.Conversation, run string) bool {
	for _, m := range cv.Messages {
		if m.Author == controlplane.ChatAgent && m.RunID != nil && *m.RunID == run {
			return true
		}
	}
	return false
}

// stopOthers stops (the Stop API) every run of the company still running on another
// task than the session's: handed-off work the cell does not wait for. A refused Stop
// is the harness's fault.
func stopOthers(ctx context.Context, s *Session, v *view) error {
	for _, r := range v.st.Runs {
		if r.TaskID == s.TaskID || r.Status != controlplane.RunRunning {
			continue
		}
		s.log("stopping run %s of handed-off task %s", r.ID, r.TaskID)
		if _, err := s.Board.CancelRun(ctx, r.ID, ""); err != nil {
			return BoardFault("stopping handed-off run "+r.ID, err)
		}
	}
	return nil
}

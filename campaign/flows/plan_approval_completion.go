package flows

import (
	"context"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// playPlanApproval is flow plan_approval_completion: run 1 must leave a pending plan
// approval for the task; the human approves it, naming the plan document's latest
// revision; run 2 finishes.
func playPlanApproval(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v, err := waitTurn(ctx, s, 1)
	if err != nil {
		out.Err = err
		return out
	}
	ap := pendingApproval(v, s.TaskID)
	if ap == nil {
		out.Problems = append(out.Problems, "no pending plan approval after run 1")
		return out
	}
	rev := ""
	for _, d := range v.st.Documents {
		if d.TaskID == s.TaskID && d.Key == "plan" {
			rev = d.LatestRevisionID
		}
	}
	out.submit()
	s.log("approving %s (plan revision %s)", ap.ID, rev)
	if _, err := s.Board.DecideApproval(ctx, ap.ID, api.DecideApprovalRequest{Decision: controlplane.ApprovalApproved, Note: "Approved plan revision " + rev}); err != nil {
		out.Err = BoardFault("approving "+ap.ID, err)
		return out
	}
	_, out.Err = waitTurn(ctx, s, 2)
	return out
}

// pendingApproval returns the pending approval whose first task is task, or nil.
func pendingApproval(v *view, task string) *controlplane.Approval {
	for _, x := range v.st.Approvals {
		if x.Status == controlplane.ApprovalPending && len(x.TaskIDs) > 0 && x.TaskIDs[0] == task {
			return x
		}
	}
	return nil
}

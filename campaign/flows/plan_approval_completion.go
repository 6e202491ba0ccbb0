package flows

import (
	"context"
	"fmt"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "plan_approval_completion", Needs: []catalog.Need{{Field: catalog.FieldPlanMarkers}}},
		Play:         playPlanApproval,
	})
}

// playPlanApproval is flow plan_approval_completion (target the exact two-step canonical plan revision, capture its pending
// approval, approve it): run 1 must leave a pending approval for the task whose target
// revision is the plan document's latest revision; the human approves that approval,
// naming the revision; run 2 finishes. An approval of no revision or of another one is
// the candidate's contract violation. When run 1 was refused the approval request for
// a claim the catalog did not grant (capabilityGrants), no approval is the harness's
// setup, not the candidate's: the cell is inconclusive (permanent infrastructure),
// naming the refusal.
func playPlanApproval(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	ap := pendingApproval(v, s.TaskID)
	if ap == nil {
		if refused := refusedClaims(v, s.TaskID, controlplane.CommandRequestApproval); refused != "" {
			out.Err = permanent(fmt.Errorf("harness setup: no pending plan approval after run 1%s", refused))
			return out
		}
		out.Problems = append(out.Problems, "no pending plan approval after run 1")
		return out
	}
	rev := latestRevision(v, s.TaskID, planKey)
	switch {
	case rev == "":
		out.Problems = append(out.Problems, "no plan document (key \"plan\") after run 1")
		return out
	case ap.TargetRevisionID == nil:
		out.Problems = append(out.Problems, fmt.Sprintf("the pending approval %s targets no plan revision (the plan's latest is %s)", ap.ID, rev))
		return out
	case *ap.TargetRevisionID != rev:
		out.Problems = append(out.Problems, fmt.Sprintf("the pending approval %s targets revision %s, not the plan's latest revision %s", ap.ID, *ap.TargetRevisionID, rev))
		return out
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

// refusedClaims explains a missing approval by the control plane's denials: for every
// command of kind the task's runs were refused for a claim they do not hold (decision
// reason required_claim_missing), "; <kind> of run <id> was refused: the agent does
// not hold <claim> (grant it with capabilityGrants on the case or the profile)"; ""
// when there is none. The grants are the catalog's (docs/journeys.md "Capability
// grants"): nothing is granted implicitly.
func refusedClaims(v *view, task string, kind controlplane.CommandKind) string {
	runs := map[string]bool{}
	for _, r := range v.st.Runs {
		if r.TaskID == task {
			runs[r.ID] = true
		}
	}
	spec, _ := controlplane.LookupCommand(kind)
	var out string
	for _, d := range v.st.Decisions {
		if d.RunID != nil && runs[*d.RunID] && d.Operation == string(kind) && d.Outcome == controlplane.DecisionDenied && d.Reason == controlplane.ReasonClaimMissing {
			out += fmt.Sprintf("; %s of run %s was refused: the agent does not hold %s (grant it with capabilityGrants on the case or the profile)", kind, *d.RunID, spec.Claim)
		}
	}
	return out
}

// planKey is the document key of a task's plan.
const planKey = "plan"

// latestRevision returns the latest revision id of the task's document key, or "".
func latestRevision(v *view, task, key string) string {
	for _, d := range v.st.Documents {
		if d.TaskID == task && d.Key == key {
			return d.LatestRevisionID
		}
	}
	return ""
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

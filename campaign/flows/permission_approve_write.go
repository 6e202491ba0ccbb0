package flows

import (
	"context"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
)

func init() {
	register(Flow{FlowContract: catalog.FlowContract{Name: "permission_approve_write"}, Play: playPermissionApprove})
}

// playPermissionApprove is flow permission_approve_write: the human approves every
// permission the agent asks during its run (allow once), then the run settles; the
// matchers grade the file and the run.
func playPermissionApprove(ctx context.Context, s *Session) Outcome {
	return answerPermissions(ctx, s, api.PermissionApprove)
}

package flows

import (
	"context"

	"github.com/agentproof/agentproof/api"
)

// playPermissionDeny is flow permission_deny_write: the human declines every
// permission the agent asks during its run (reject once), then the run settles; the
// matchers grade that the file never appeared and what the agent said.
func playPermissionDeny(ctx context.Context, s *Session) Outcome {
	return answerPermissions(ctx, s, api.PermissionDecline)
}

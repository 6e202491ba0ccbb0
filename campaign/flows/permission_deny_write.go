package flows

import (
	"context"
	"path/filepath"

	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{Name: "permission_deny_write", Needs: []catalog.Need{{Field: catalog.FieldWorkspaceFile, What: "the file the agent must not write"}}},
		Play:         playPermissionDeny,
		Scripts:      denyScripts,
	})
}

// denyScripts are the reference's scripts (ReferenceScripts) whose final answer reacts
// to the write's tool result (scriptedmodel.BranchOnDenial): the model says the write
// was denied only when the agent's runtime told it so, so that "the agent's own final
// message says denied" grades the runner, not the script.
func denyScripts(in ModelInput) ([]*scriptedmodel.Script, error) {
	scripts, err := ReferenceScripts(in)
	if err != nil {
		return nil, err
	}
	file := "the file"
	if in.Rendered != nil && in.Rendered.WorkspaceFile != "" {
		file = in.Rendered.WorkspaceFile
	}
	scriptedmodel.BranchOnDenial(scripts, file)
	return scripts, nil
}

// playPermissionDeny is flow permission_deny_write: the human declines the agent's
// write and approves everything else it asks during its run, then the run settles;
// the matchers grade that the file never appeared and what the agent said. A
// permission is the write when its tool kind can change the workspace (api.ToolKind
// Mutates: edit, delete, move, execute) or its locations name the case's workspace
// file, as the agent sent them; every other request (an MCP server's semantic tools,
// which some agents also ask for: kind other) is approved, so that the agent can
// still report and finish the task. An agent that asks no permission for a write, or
// asks one the human cannot decline (no reject option offered), breaks the flow's
// contract (a problem, the candidate's).
func playPermissionDeny(ctx context.Context, s *Session) Outcome {
	return playPermissions(ctx, s, func(p api.Permission) (api.PermissionDecisionKind, bool) {
		if writes(p, s) {
			return api.PermissionDecline, true
		}
		return api.PermissionApprove, false
	}, "the agent did not ask permission to write before its run ended")
}

// writes reports whether permission p asks for a write: its tool kind can change the
// workspace, or one of its locations is the case's workspace file (absolute, or
// relative to the workspace).
func writes(p api.Permission, s *Session) bool {
	if api.ToolKind(p.Kind).Mutates() {
		return true
	}
	if s.Rendered == nil || s.Rendered.WorkspaceFile == "" {
		return false
	}
	file := filepath.Clean(s.Rendered.WorkspaceFile)
	for _, loc := range p.Locations {
		l := filepath.Clean(loc)
		if l == file || s.Workspace != "" && l == filepath.Join(s.Workspace, file) {
			return true
		}
	}
	return false
}

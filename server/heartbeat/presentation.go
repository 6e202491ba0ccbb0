package heartbeat

import (
	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/controlplane/mcp"
)

// ReadPresentation returns the comment a real-CLI run presented through the MCP server
// (`agentproof mcp` records it in the agent's state directory, see
// mcp.ReadPresentation), or nil when the run made no presenting call. Errors: an
// unreadable or malformed record, or one of another run.
func ReadPresentation(stateDir, runID string) (*agent.Presentation, error) {
	p, err := mcp.ReadPresentation(stateDir, runID)
	if err != nil || p == nil {
		return nil, err
	}
	return &agent.Presentation{CommentID: p.CommentID, Text: p.Text}, nil
}

package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/agentproof/agentproof/agent"
)

// ReadPresentation returns the comment a real-CLI run presented through the MCP server
// (`agentproof mcp` records it in the agent's state directory at
// mcp.PresentationPath: <stateDir>/agentproof-mcp/presentation-<run>.json), or nil when
// the run made no presenting call. Errors: an unreadable or malformed record, or one of
// another run. It reads the record itself instead of calling mcp.ReadPresentation:
// package mcp imports client, whose tests import the server (an import cycle);
// TestReadPresentationReadsTheMCPRecord pins the format against package mcp.
func ReadPresentation(stateDir, runID string) (*agent.Presentation, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, "agentproof-mcp", "presentation-"+url.PathEscape(runID)+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p struct {
		RunID     string `json:"runId"`
		CommentID string `json:"commentId"`
		Text      string `json:"text"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.RunID != runID || p.CommentID == "" {
		return nil, fmt.Errorf("presentation record of run %s is malformed", runID)
	}
	return &agent.Presentation{CommentID: p.CommentID, Text: p.Text}, nil
}

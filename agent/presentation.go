package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/agentproof/agentproof/atomicfile"
)

// PresentationSchema tags a presentation record file.
const PresentationSchema = "agentproof.mcp-presentation/v1"

// PresentationRecord is the file form of a real-CLI run's presented comment, written by
// the MCP server (`agentproof mcp`, package mcp) and read by the heartbeat
// runner when the CLI exits: the comment created by the last successful presenting
// call (finish_task, request_review and block_task present by default; any commenting
// tool with present: true; present: false opts out). CommentID is what the run result's
// presentationDecision.commentId must name so that controlplane.State.RunMessage
// returns Text, the message the matchers read.
type PresentationRecord struct {
	Schema    string `json:"schema"`
	RunID     string `json:"runId"`
	CommentID string `json:"commentId"`
	Tool      string `json:"tool"`
	Text      string `json:"text"`
}

// PresentationPath is where the presentation of runID lives under the agent's state
// directory: <stateDir>/agentproof-mcp/presentation-<runID, path-escaped>.json.
func PresentationPath(stateDir, runID string) string {
	return filepath.Join(stateDir, "agentproof-mcp", "presentation-"+url.PathEscape(runID)+".json")
}

// WritePresentation atomically replaces the presentation file of p.RunID under stateDir
// (creating the directory 0700, the file 0600). Errors: the directory or file cannot be
// written.
func WritePresentation(stateDir string, p PresentationRecord) error {
	p.Schema = PresentationSchema
	path := PresentationPath(stateDir, p.RunID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("agent: presentation directory: %w", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("agent: encoding the presentation: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o600, atomicfile.NoSync()); err != nil {
		return fmt.Errorf("agent: writing the presentation: %w", err)
	}
	return nil
}

// ReadPresentation returns the presentation of runID under stateDir, or nil when the
// run made no presenting call. Errors: an unreadable or malformed file, or one of
// another run or schema.
func ReadPresentation(stateDir, runID string) (*PresentationRecord, error) {
	b, err := os.ReadFile(PresentationPath(stateDir, runID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent: reading the presentation: %w", err)
	}
	var p PresentationRecord
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("agent: presentation file of run %s: %w", runID, err)
	}
	if p.Schema != PresentationSchema || p.RunID != runID || p.CommentID == "" {
		return nil, fmt.Errorf("agent: presentation file of run %s has schema %q, run %q, comment %q", runID, p.Schema, p.RunID, p.CommentID)
	}
	return &p, nil
}

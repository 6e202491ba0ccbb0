package mcp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// PresentationSchema tags a Presentation file.
const PresentationSchema = "agentproof.mcp-presentation/v1"

// Presentation is the run's presented comment as the MCP server saw it: the comment
// created by the last successful presenting call (finish_task, request_review and
// block_task present by default; any commenting tool with present: true; present: false
// opts out). CommentID is what the run result's presentationDecision.commentId must
// name so that controlplane.State.RunMessage returns Text (spec runner-e2e-harness §5).
type Presentation struct {
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
func WritePresentation(stateDir string, p Presentation) error {
	p.Schema = PresentationSchema
	path := PresentationPath(stateDir, p.RunID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("mcp: presentation directory: %w", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("mcp: encoding the presentation: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".presentation-*")
	if err != nil {
		return fmt.Errorf("mcp: writing the presentation: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("mcp: writing the presentation: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("mcp: writing the presentation: %w", err)
	}
	return nil
}

// ReadPresentation returns the presentation of runID under stateDir, or nil when the
// run made no presenting call. Errors: an unreadable or malformed file, or one of
// another run or schema.
func ReadPresentation(stateDir, runID string) (*Presentation, error) {
	b, err := os.ReadFile(PresentationPath(stateDir, runID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: reading the presentation: %w", err)
	}
	var p Presentation
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("mcp: presentation file of run %s: %w", runID, err)
	}
	if p.Schema != PresentationSchema || p.RunID != runID || p.CommentID == "" {
		return nil, fmt.Errorf("mcp: presentation file of run %s has schema %q, run %q, comment %q", runID, p.Schema, p.RunID, p.CommentID)
	}
	return &p, nil
}

// RunIDFromToken reads the run id out of an agent token ("apr1.<claims>.<mac>", claims
// base64url JSON {"c","a","r"}, see package server) without verifying it — the server
// does that on every call. ok is false for anything else.
func RunIDFromToken(token string) (runID string, ok bool) {
	rest, found := strings.CutPrefix(token, "apr1.")
	if !found {
		return "", false
	}
	claims, _, found := strings.Cut(rest, ".")
	if !found {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(claims)
	if err != nil {
		return "", false
	}
	var c struct {
		Run string `json:"r"`
	}
	if json.Unmarshal(raw, &c) != nil || strings.TrimSpace(c.Run) == "" {
		return "", false
	}
	return c.Run, true
}

package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentproof/agentproof/atomicfile"
)

// Run bindings (docs/acp.md "Warm lifecycle"): a warm session serves several runs with
// one agent process, and the agentproof MCP server the agent starts (from ACP's
// session/new, from Codex's configuration) lives as long as the agent does. Instead of
// one run's id and token in its environment, that server gets EnvRunBinding, the path
// of a file the layer writes at the start (Env.Binding) and Session.Bind rewrites at
// the start of every turn with the current run's id and token and clears when the turn
// ends. Every tool call reads the file afresh, so a call acts for
// the run of the turn it is made in, and between turns for none. The file grants no
// more than one run's token does: a token is valid only while its run runs.

// EnvRunBinding is the variable naming the run binding file of an `agentproof mcp`
// server (instead of EnvRunToken and EnvRunID).
const EnvRunBinding = "AGENTPROOF_RUN_BINDING"

// RunBindingSchema is the schema of a run binding file.
const RunBindingSchema = "agentproof.run-binding/v1"

// RunBindingFile is the name of a warm session's binding file in its session
// directory.
const RunBindingFile = "run-binding.json"

// RunBinding is the content of a run binding file: the run the session's current turn
// belongs to and its token. A cleared binding (between turns) has neither.
type RunBinding struct {
	Schema   string `json:"schema"`
	RunID    string `json:"runId,omitempty"`
	RunToken string `json:"runToken,omitempty"`
}

// ErrNoRunBound is ReadRunBinding's error for a binding that names no run (cleared
// between turns, or never written).
var ErrNoRunBound = errors.New("agent: no run is bound to this session now (the turn has ended)")

// WriteRunBinding replaces the binding file at path (mode 0600, written to a temporary
// file and renamed, so a reader sees the old or the new binding, never a torn one). A
// zero runID and token clear it. The file gets its directory's owner when that is not
// the caller (under a sandbox lease the session directory belongs to the sandbox user,
// whose MCP server reads the file inside). Errors: the directory is not writable, or
// the owner could not be given.
func WriteRunBinding(path, runID, token string) error {
	b, err := json.Marshal(RunBinding{Schema: RunBindingSchema, RunID: runID, RunToken: token})
	if err != nil {
		return fmt.Errorf("agent: encoding the run binding: %w", err)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("agent: writing the run binding: %w", err)
	}
	p, err := atomicfile.Create(path, 0o600)
	if err != nil {
		return fmt.Errorf("agent: writing the run binding: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		if err := p.File().Chown(int(st.Uid), int(st.Gid)); err != nil {
			p.Discard()
			return fmt.Errorf("agent: writing the run binding: %w", err)
		}
	}
	if _, err := p.Write(append(b, '\n')); err != nil {
		p.Discard()
		return fmt.Errorf("agent: writing the run binding: %w", err)
	}
	if err := p.Commit(); err != nil {
		return fmt.Errorf("agent: writing the run binding: %w", err)
	}
	return nil
}

// ReadRunBinding reads the binding file at path. Errors: ErrNoRunBound when the file
// is missing or cleared; an unreadable file, another schema or a binding with a run
// but no token (or the reverse) otherwise.
func ReadRunBinding(path string) (RunBinding, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return RunBinding{}, ErrNoRunBound
	}
	if err != nil {
		return RunBinding{}, fmt.Errorf("agent: reading the run binding: %w", err)
	}
	var rb RunBinding
	if err := json.Unmarshal(b, &rb); err != nil {
		return RunBinding{}, fmt.Errorf("agent: run binding %s: %w", path, err)
	}
	if rb.Schema != RunBindingSchema {
		return RunBinding{}, fmt.Errorf("agent: run binding %s: schema %q is not %s", path, rb.Schema, RunBindingSchema)
	}
	rb.RunID, rb.RunToken = strings.TrimSpace(rb.RunID), strings.TrimSpace(rb.RunToken)
	switch {
	case rb.RunID == "" && rb.RunToken == "":
		return RunBinding{}, ErrNoRunBound
	case rb.RunID == "" || rb.RunToken == "":
		return RunBinding{}, fmt.Errorf("agent: run binding %s names a run without its token, or a token without its run", path)
	}
	return rb, nil
}

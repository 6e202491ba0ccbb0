package worker

import (
	"fmt"
	"os"
)

// workspacePrefix names the private working directories the worker creates.
const workspacePrefix = "agentproof-fixture-"

// createWorkspace makes a new private directory (mode 0o700) under root. It fails when
// root does not exist or is not a writable directory.
func createWorkspace(root string) (string, error) {
	info, err := os.Stat(root)
	if err != nil {
		return "", fmt.Errorf("workspace root: %w", err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("workspace root %s is not a directory", root)
	}
	dir, err := os.MkdirTemp(root, workspacePrefix)
	if err != nil {
		return "", fmt.Errorf("creating workspace: %w", err)
	}
	return dir, nil
}

// WorkspaceDisposition is what became of a run's working directory (seed 003): State is
// "removed", or "quarantined" with the directory's Path and the Reason it was kept.
type WorkspaceDisposition struct {
	State  string `json:"state"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// disposeWorkspace removes dir non-recursively when confirmed (the process exited and
// its stdio closed) and dir is empty; otherwise it quarantines dir (seed 003, invariant 7).
func disposeWorkspace(dir string, confirmed bool, why string) WorkspaceDisposition {
	if !confirmed {
		return quarantine(dir, "process not confirmed gone: "+why)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return quarantine(dir, fmt.Sprintf("listing workspace: %v", err))
	}
	if len(entries) > 0 {
		return quarantine(dir, fmt.Sprintf("unexpected workspace content: %d entries (first %q)", len(entries), entries[0].Name()))
	}
	// os.Remove on a directory is rmdir(2): it never removes content.
	if err := os.Remove(dir); err != nil {
		return quarantine(dir, fmt.Sprintf("removing workspace: %v", err))
	}
	return WorkspaceDisposition{State: "removed"}
}

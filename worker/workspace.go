package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentproof/agentproof/evidence"
)

// workspacePrefix names the private working directories the worker creates.
const workspacePrefix = "agentproof-fixture-"

// createWorkspace makes a new private directory (mode 0o700) under root, named prefix
// plus random characters. It fails when root does not exist or is not a writable
// directory.
func createWorkspace(root, prefix string) (string, error) {
	info, err := os.Stat(root)
	if err != nil {
		return "", fmt.Errorf("workspace root: %w", err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("workspace root %s is not a directory", root)
	}
	dir, err := os.MkdirTemp(root, prefix)
	if err != nil {
		return "", fmt.Errorf("creating workspace: %w", err)
	}
	return dir, nil
}

// WorkspaceDisposition is what became of a run's working directory: State is
// evidence.WorkspaceRemoved, or evidence.WorkspaceQuarantined with the directory's Path
// and the Reason it was kept.
type WorkspaceDisposition struct {
	State  evidence.WorkspaceState `json:"state"`
	Path   string                  `json:"path,omitempty"`
	Reason string                  `json:"reason,omitempty"`
}

// disposeWorkspace removes dir non-recursively when confirmed (the process exited and
// its stdio closed) and dir is empty; otherwise it quarantines dir (cleanup only when
// confirmed).
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
	return WorkspaceDisposition{State: evidence.WorkspaceRemoved}
}

// WorkspaceRef is a provisioned workspace: a directory made for
// one Attempt by ProvisionWorkspace, bound to the fence's RunID, Epoch, Worker and Nonce,
// and identified by its Device and Inode numbers, so that a directory swapped in at the
// same Path is recognised as another directory.
type WorkspaceRef struct {
	RunID  string `json:"runId"`
	Epoch  int64  `json:"epoch"`
	Worker string `json:"worker"`
	Nonce  string `json:"nonce"`
	Path   string `json:"path"`
	Device uint64 `json:"device"`
	Inode  uint64 `json:"inode"`
}

// WorkspaceError lists every problem of an invalid WorkspaceRef or a workspace that does
// not match its ref.
type WorkspaceError struct{ Problems []string }

func (e *WorkspaceError) Error() string {
	return "invalid workspace: " + strings.Join(e.Problems, "; ")
}

// attemptWorkspacePrefix names the directories ProvisionWorkspace creates.
const attemptWorkspacePrefix = "agentproof-attempt-"

// ProvisionWorkspace creates a new empty private directory (mode 0o700) under root for
// the attempt fence names and returns its ref. It returns a *FenceError for an invalid
// fence, and a wrapped error when root is missing or the directory cannot be made.
func ProvisionWorkspace(root string, fence FenceIdentity) (WorkspaceRef, error) {
	fence, err := ParseFenceIdentity(fence)
	if err != nil {
		return WorkspaceRef{}, err
	}
	final, err := createWorkspace(root, attemptWorkspacePrefix)
	if err != nil {
		return WorkspaceRef{}, err
	}
	id, err := lstatID(final)
	if err != nil {
		return WorkspaceRef{}, fmt.Errorf("workspace: %w", err)
	}
	return WorkspaceRef{RunID: fence.RunID, Epoch: fence.Epoch, Worker: fence.Worker, Nonce: fence.Nonce,
		Path: final, Device: id.dev, Inode: id.ino}, nil
}

// ParseWorkspaceRef validates ref's shape and returns a copy, or a *WorkspaceError listing
// every problem. It does not look at the filesystem (CheckWorkspace does).
func ParseWorkspaceRef(ref WorkspaceRef) (WorkspaceRef, error) {
	var p []string
	if !runIDPattern().MatchString(ref.RunID) {
		p = append(p, fmt.Sprintf("runId %q is not a run id", clipText(ref.RunID, 64)))
	}
	if ref.Epoch < 0 {
		p = append(p, fmt.Sprintf("epoch %d must be ≥ 0", ref.Epoch))
	}
	if !workerPattern().MatchString(ref.Worker) {
		p = append(p, fmt.Sprintf("worker %q is not a worker name", clipText(ref.Worker, 64)))
	}
	if !noncePattern().MatchString(ref.Nonce) {
		p = append(p, fmt.Sprintf("nonce %q must be 32 lower-case hexadecimal characters", clipText(ref.Nonce, 64)))
	}
	p = append(p, checkPath("path", ref.Path)...)
	if filepath.IsAbs(ref.Path) && filepath.Clean(ref.Path) != ref.Path {
		p = append(p, fmt.Sprintf("path %q must be clean", clipText(ref.Path, 64)))
	}
	if ref.Inode == 0 {
		p = append(p, "inode is required")
	}
	if len(p) > 0 {
		return WorkspaceRef{}, &WorkspaceError{Problems: p}
	}
	return ref, nil
}

// CheckWorkspace checks that ref.Path is still the directory ref was provisioned as: a
// directory (not a symbolic link) with ref's device and inode numbers. It returns a
// *WorkspaceError when it is not, or a wrapped error when it cannot be examined.
func CheckWorkspace(ref WorkspaceRef) error {
	fi, err := os.Lstat(ref.Path)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return &WorkspaceError{Problems: []string{fmt.Sprintf("%s is no longer a directory", ref.Path)}}
	}
	if id, ok := statID(fi); !ok || id != (fileID{dev: ref.Device, ino: ref.Inode}) {
		return &WorkspaceError{Problems: []string{fmt.Sprintf("%s was swapped: it is not the provisioned directory (device/inode changed)", ref.Path)}}
	}
	return nil
}

// IsWorkspaceEmpty reports whether ref.Path holds no entries, naming the first entry
// when it is not empty. It returns a wrapped error when the directory cannot be read.
func IsWorkspaceEmpty(ref WorkspaceRef) (bool, string, error) {
	f, err := os.Open(ref.Path)
	if err != nil {
		return false, "", fmt.Errorf("workspace: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return false, names[0], nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return false, "", fmt.Errorf("listing workspace: %w", err)
	}
	return true, "", nil
}

// DisposeWorkspace disposes of a provisioned workspace after a guarded run: it removes the directory non-recursively only when the
// process was confirmed gone, the controller hold is live, the directory is still the
// provisioned one and it is empty; otherwise it leaves it exactly as it is and reports it
// quarantined with the reason. lost reports that the removal was refused because
// ownership was lost (the caller then writes nothing more).
func DisposeWorkspace(ref WorkspaceRef, hold *FenceHold, confirmed bool, why string) (ws WorkspaceDisposition, lost bool) {
	if !confirmed {
		return quarantine(ref.Path, "process not confirmed gone: "+why), false
	}
	if problem := ControllerHoldProblem(hold); problem != "" {
		return quarantine(ref.Path, "ownership lost, not removed: "+problem), true
	}
	if err := CheckWorkspace(ref); err != nil {
		return quarantine(ref.Path, err.Error()), false
	}
	empty, first, err := IsWorkspaceEmpty(ref)
	switch {
	case err != nil:
		return quarantine(ref.Path, err.Error()), false
	case !empty:
		return quarantine(ref.Path, fmt.Sprintf("unexpected workspace content (first %q)", first)), false
	}
	// os.Remove on a directory is rmdir(2): it never removes content.
	if err := os.Remove(ref.Path); err != nil {
		return quarantine(ref.Path, fmt.Sprintf("removing workspace: %v", err)), false
	}
	return WorkspaceDisposition{State: evidence.WorkspaceRemoved}, false
}

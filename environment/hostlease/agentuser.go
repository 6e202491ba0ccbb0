package hostlease

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/environment"
)

// reservedDiskNames are the lease disk's own directories, which DiskDir never hands out.
var reservedDiskNames = []string{"home", "tmp", "shm", "runs", "workspace"}

// DiskDir returns the directory name on the lease disk disk, creating it owned by
// uid:gid (mode 0700) when it does not exist (environment.LeaseDisk). name is one path
// element of [A-Za-z0-9._-], not a reserved one. Errors: a *environment.SpecError for
// a bad name, a filesystem error.
func DiskDir(disk, name string, uid, gid int) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) || slices.Contains(reservedDiskNames, name) {
		return "", &environment.SpecError{What: "disk directory", Problems: []string{fmt.Sprintf("name %q must be one path element of [A-Za-z0-9._-] and not a reserved one", name)}}
	}
	dir := filepath.Join(disk, name)
	if err := MkdirOwned(dir, uid, gid); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return dir, nil
}

// Own gives path and everything under it (symbolic links themselves, never followed)
// to uid:gid (environment.LeaseDisk); path must lie on the lease disk disk or in l's
// workspace. what names the operation in the error ("sandbox own"). Errors: a
// *environment.SpecError for a path elsewhere, a filesystem error.
func Own(l *environment.Lease, disk, path string, uid, gid int, what string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path ||
		(!environment.Within(disk, path) && (l.Workspace == "" || !environment.Within(l.Workspace, path))) {
		return &environment.SpecError{What: what, Problems: []string{fmt.Sprintf("%q is neither on the lease disk %s nor in the workspace", path, disk)}}
	}
	return ChownTree(path, uid, gid)
}

// Workspace sets l's workspace: workspace, an existing directory given (with all it
// holds) to uid:gid, the lease's agent user (user names it in the error); or, when
// workspace is "", a new directory "workspace" on the lease disk disk owned by them.
// Errors name what failed.
func Workspace(l *environment.Lease, workspace, disk string, uid, gid int, user string) error {
	l.Workspace = workspace
	if l.Workspace == "" {
		l.Workspace = filepath.Join(disk, "workspace")
		return MkdirOwned(l.Workspace, uid, gid)
	}
	if fi, err := os.Stat(l.Workspace); err != nil || !fi.IsDir() {
		return fmt.Errorf("workspace %s must be an existing directory", l.Workspace)
	}
	// The agent user must own its workspace (content seeded before Setup included).
	if err := ChownTree(l.Workspace, uid, gid); err != nil {
		return fmt.Errorf("giving the workspace to the %s: %w", user, err)
	}
	return nil
}

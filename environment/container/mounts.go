package container

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/environment"
)

// reservedPaths are the container paths a workspace mount or a tmpfs must neither be
// nor lie inside: the image's system directories, HOME, /tmp, the bridge, /proc, /sys
// and /dev (the launch mounts them itself or the runtime does).
var reservedPaths = append(slices.Clone(imageDirs), Home, "/tmp", BridgeDir, "/proc", "/sys", "/dev", "/run")

// TmpfsBytes is the size of each of a lease's tmpfs mounts (64 MiB): they hold what a
// verifier writes for the harness (a reward file, a log), not a workspace.
const TmpfsBytes = 64 << 20

// MountProblems lists what is wrong with a lease's workspace mounts (container path →
// workspace-relative directory, "." for the whole workspace) and tmpfs paths: each
// container path absolute, clean, not "/", without ':' or ',', not one of or inside
// a reserved path and given once; each workspace directory relative, clean and not
// leaving the workspace. Nil when all are usable.
func MountProblems(mounts map[string]string, tmpfs []string) []string {
	var probs []string
	seen := map[string]bool{}
	check := func(what, p string) {
		switch {
		case !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" || strings.ContainsAny(p, ":,\x00"):
			probs = append(probs, fmt.Sprintf("%s %q must be an absolute, clean path other than / without ':' or ','", what, p))
		case slices.ContainsFunc(reservedPaths, func(r string) bool { return environment.Within(r, p) || environment.Within(p, r) }):
			probs = append(probs, fmt.Sprintf("%s %s is or holds a path the launch mounts itself (%s)", what, p, strings.Join(reservedPaths, ", ")))
		case seen[p]:
			probs = append(probs, fmt.Sprintf("%s %s is given twice", what, p))
		}
		seen[p] = true
	}
	for _, p := range slices.Sorted(maps.Keys(mounts)) {
		check("workspace mount", p)
		rel := mounts[p]
		if filepath.IsAbs(rel) || filepath.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") || strings.ContainsAny(rel, ":,\x00") {
			probs = append(probs, fmt.Sprintf("workspace mount %s: %q must be a clean directory of the workspace (\".\" for all of it)", p, rel))
		}
	}
	for _, p := range tmpfs {
		check("tmpfs", p)
	}
	return probs
}

// mountArgs are the engine's arguments for l's workspace mounts (each the workspace's
// directory read-write at its container path, shorter paths first) and tmpfs paths
// (each fresh, writable by anyone, TmpfsBytes, no devices, no set-uid).
func mountArgs(l *environment.Lease) []string {
	var a []string
	paths := slices.Sorted(maps.Keys(l.WorkspaceMounts))
	slices.SortStableFunc(paths, func(x, y string) int { return len(x) - len(y) })
	for _, p := range paths {
		a = append(a, "--volume", filepath.Join(l.Workspace, l.WorkspaceMounts[p])+":"+p)
	}
	for _, p := range l.Tmpfs {
		a = append(a, "--tmpfs", p+":rw,nodev,nosuid,mode=1777,size="+strconv.Itoa(TmpfsBytes))
	}
	return a
}

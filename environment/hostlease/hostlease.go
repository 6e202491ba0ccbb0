// Package hostlease makes and removes what a lease of a provider that runs on this
// machine (environment/sandbox, environment/container) holds on the host's file
// system, the same way for both:
//
//   - the lease directory <root>/<lease id> (mode 0711) holding lease.json (Make, Save);
//   - a short bridge socket directory /run/apf-<16 hex> (or under /tmp, /var/tmp, /dev/shm: the first writable) holding the
//     endpoints' sockets (MakeSocketDir), whatever the depth of the root;
//   - the lease's disk: a tmpfs of the pinned disk size at <lease dir>/disk owned by
//     the lease's agent user (MountDisk), with the directories the agent may keep
//     there (DiskDir) and the workspace when the caller gives none (Workspace);
//   - its removal, confirmed: the disk unmounted (Unmount) and the lease and socket
//     directories removed (RemoveDirs), what was found and what remains recorded in
//     the cleanup report.
//
// What differs between the providers (cgroups, containers, the launch itself) stays
// in their packages.
package hostlease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentproof/agentproof/environment"
)

// MaxSocketPath is the longest bridge socket path a sockaddr_un holds (108 bytes with
// the terminating NUL).
const MaxSocketPath = 107

// A lease's bridge sockets live in a short directory of their own,
// <base>/apf-<16 random hex digits> (mode 0711, root's; removed and confirmed gone by
// RemoveDirs), so that the socket path fits in MaxSocketPath whatever the depth of the
// lease root ($TMPDIR). The base is the first of socketBases that is a directory
// this process can write: /run (root's own tmpfs), else /tmp, /var/tmp or /dev/shm (a
// normal user's; /tmp is not world-writable everywhere). The longest socket path is
// 9+4+16+1+32+5 = 67 bytes.
const socketDirPrefix = "apf-"

var socketBases = []string{"/run", "/tmp", "/var/tmp", "/dev/shm"}

// ValidSocketDir reports whether dir has the shape MakeSocketDir gives.
func ValidSocketDir(dir string) bool {
	name, ok := strings.CutPrefix(filepath.Base(dir), socketDirPrefix)
	if !ok || len(name) != 16 || strings.Trim(name, "0123456789abcdef") != "" || filepath.Clean(dir) != dir {
		return false
	}
	return slices.Contains(socketBases, filepath.Dir(dir))
}

// SocketBase is the directory MakeSocketDir makes socket directories in: the first of
// socketBases this process can write. Errors: there is none.
func SocketBase() (string, error) {
	for _, b := range socketBases {
		if fi, err := os.Stat(b); err == nil && fi.IsDir() && unix.Access(b, unix.W_OK) == nil {
			return b, nil
		}
	}
	return "", fmt.Errorf("no writable directory for the bridge sockets (%s)", strings.Join(socketBases, ", "))
}

// MakeSocketDir creates a fresh lease socket directory (see socketDirPrefix), mode
// 0711. Errors: no base directory, or the directory's creation.
func MakeSocketDir() (string, error) {
	base, err := SocketBase()
	if err != nil {
		return "", err
	}
	id, err := environment.NewLeaseID() // 16 random hex digits after "lease-"
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, socketDirPrefix+strings.TrimPrefix(id, "lease-"))
	if err := os.Mkdir(dir, 0o700); err != nil { // fails on an existing name: never reuse one
		return "", fmt.Errorf("bridge socket directory: %w", err)
	}
	// The agent user must traverse it to reach its sockets (0600, its own); it can
	// neither list it nor create anything in it.
	if err := os.Chmod(dir, 0o711); err != nil {
		_ = os.Remove(dir)
		return "", fmt.Errorf("bridge socket directory: %w", err)
	}
	return dir, nil
}

// New returns the description of a new lease of provider for spec: a fresh id, spec's
// environment, shape, reuse and live flag, started now (UTC), its directory
// <spec.Root>/<id> (not made yet: Make). Errors: no random id.
func New(spec environment.LeaseSpec, provider environment.ProviderName, now time.Time) (*environment.Lease, error) {
	id, err := environment.NewLeaseID()
	if err != nil {
		return nil, err
	}
	return &environment.Lease{Schema: environment.LeaseSchema, ID: id, Provider: provider,
		EnvironmentID: spec.EnvironmentID, ConfigurationKey: spec.ConfigurationKey, Shape: spec.Shape, Reuse: spec.Reuse,
		StartedAt: now.UTC(), Dir: filepath.Join(spec.Root, id), Live: spec.Live}, nil
}

// SpecProblems lists what makes spec unusable for a lease of provider on this host:
// the spec's own problems with a lease root required (environment.LeaseSpec.Problems),
// and a shape that is not pinned (cpuCores, memoryBytes, pids, diskBytes) or not valid.
func SpecProblems(spec environment.LeaseSpec, provider environment.ProviderName) []string {
	probs := spec.Problems(true)
	if !spec.Shape.Pinned() {
		return append(probs, fmt.Sprintf("the %s needs a pinned shape (cpuCores, memoryBytes, pids, diskBytes)", provider))
	}
	return append(probs, spec.Shape.Problems()...)
}

// Build makes lease l on the host: its directories and endpoint sockets (Make), then
// the provider's own resources (provision, which records what it makes in the state
// st points at), then lease.json with that state (Save). When provision or Save
// fails, cleanup (the provider's Cleanup) destroys whatever was made, with the state
// as far as it got, before the error returns; when Make fails nothing was made.
func Build(ctx context.Context, l *environment.Lease, eps []environment.Endpoint, st any, provision func() error,
	cleanup func(context.Context, *environment.Lease) environment.CleanupReport) error {
	if err := Make(l, eps); err != nil {
		return err
	}
	err := provision()
	if err == nil {
		err = Save(l, st)
	}
	if err != nil {
		l.State, _ = json.Marshal(st)
		_ = cleanup(context.WithoutCancel(ctx), l)
		return err
	}
	return nil
}

// State decodes l's provider state (Lease.State) into st, a pointer to the provider's
// state type, when l is a lease of provider. Errors: a *environment.SpecError for a
// lease of another provider or a state that does not decode.
func State(l *environment.Lease, provider environment.ProviderName, st any) error {
	if l == nil || l.Provider != provider {
		return &environment.SpecError{What: "lease", Problems: []string{"not a " + string(provider) + " lease"}}
	}
	if err := json.Unmarshal(l.State, st); err != nil {
		return &environment.SpecError{What: "lease " + l.ID, Problems: []string{string(provider) + " state: " + err.Error()}}
	}
	return nil
}

// Make creates l's lease directory (l.Dir, mode 0711) and a fresh socket directory
// (l.SocketDir), and sets l.Endpoints to eps, each with its socket in the socket
// directory. On error neither directory remains.
func Make(l *environment.Lease, eps []environment.Endpoint) error {
	if err := os.Mkdir(l.Dir, 0o711); err != nil {
		return err
	}
	dir, err := MakeSocketDir()
	if err != nil {
		_ = os.Remove(l.Dir)
		return err
	}
	l.SocketDir = dir
	for _, e := range eps {
		e.Socket = filepath.Join(dir, e.Name+".sock")
		if len(e.Socket) > MaxSocketPath { // cannot happen with a valid endpoint name; kept as the invariant
			_ = os.RemoveAll(dir)
			_ = os.Remove(l.Dir)
			return fmt.Errorf("bridge socket path %s is longer than %d bytes", e.Socket, MaxSocketPath)
		}
		l.Endpoints = append(l.Endpoints, e)
	}
	return nil
}

// Save records st as l's provider state (Lease.State, JSON) and writes l's lease file
// (environment.WriteLeaseFile).
func Save(l *environment.Lease, st any) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	l.State = data
	return environment.WriteLeaseFile(l)
}

// Problems lists what makes l's host paths other than this package gives them: a disk
// that is not <l.Dir>/disk, a socket directory not of MakeSocketDir's shape, an
// endpoint whose socket is not <socket dir>/<name>.sock. nil when there is none.
func Problems(l *environment.Lease, disk string) []string {
	var p []string
	if disk != filepath.Join(l.Dir, "disk") {
		p = append(p, fmt.Sprintf("disk %q is not the lease directory's disk", disk))
	}
	if !ValidSocketDir(l.SocketDir) {
		p = append(p, fmt.Sprintf("socket directory %q is not a lease socket directory (%s/%s<16 hex>)", l.SocketDir, strings.Join(socketBases, " or "), socketDirPrefix))
	}
	for i, e := range l.Endpoints {
		if e.Socket != filepath.Join(l.SocketDir, e.Name+".sock") {
			p = append(p, fmt.Sprintf("endpoints[%d].socket %q is not %s/%s.sock", i, e.Socket, l.SocketDir, e.Name))
		}
	}
	return p
}

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

// NewLaunchDir creates the next free launch directory <l.Dir>/launches/<n>, n from 1
// (mode 0755: the agent user, or the container engine, reads the launch's generated
// files through it), and returns n and its path.
func NewLaunchDir(l *environment.Lease) (int, string, error) {
	root := filepath.Join(l.Dir, "launches")
	for n := 1; n < 1<<20; n++ {
		dir := filepath.Join(root, strconv.Itoa(n))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return n, dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return 0, "", err
		}
	}
	return 0, "", errors.New("too many launches")
}

// MakeScratch creates the scratch directories names (HOME's "home", /tmp's "tmp", …)
// under dir, each owned by uid:gid (mode 0700).
func MakeScratch(dir string, uid, gid int, names ...string) error {
	for _, name := range names {
		if err := MkdirOwned(filepath.Join(dir, name), uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// Scratch returns the scratch space of launch n of l (the directory holding its
// names, MakeScratch): the lease disk itself when the lease is reused (its scratch
// made at Setup), else a fresh <disk>/runs/<n> owned by uid:gid (runs/ made with mode
// runsMode when missing). Errors: the directories' creation.
func Scratch(l *environment.Lease, disk string, n int, runsMode os.FileMode, uid, gid int, names ...string) (string, error) {
	if l.Reuse {
		return disk, nil
	}
	scratch := filepath.Join(disk, "runs", strconv.Itoa(n))
	err := os.MkdirAll(filepath.Dir(scratch), runsMode)
	if err == nil {
		err = MkdirOwned(scratch, uid, gid)
	}
	if err == nil {
		err = MakeScratch(scratch, uid, gid, names...)
	}
	return scratch, err
}

// Unmount records in r what l's disk holds (its files) and the mounts under l.Dir
// (Found), then unmounts them, retrying busy ones until wait passes; the mounts that
// remain go to r.Remaining and an unmount error to r.Errors.
func Unmount(l *environment.Lease, disk string, wait time.Duration, r *environment.CleanupReport) {
	if ms, err := MountsUnder(l.Dir); err == nil {
		r.Found.Mounts = ms
	}
	inv := Inventory(disk)
	r.Found.Files, r.Found.FileCount, r.Found.FileBytes = inv.Files, inv.FileCount, inv.FileBytes
	remaining, err := UnmountAll(l.Dir, wait)
	r.Remaining.Mounts = remaining
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
}

// RemoveDirs removes l's lease directory (only once nothing is mounted under it,
// r.Remaining.Mounts empty: RemoveAll must never descend into a mounted filesystem it
// did not mean to empty) and its socket directory, and records in r what remains of
// either (the directory and the files under it) and the removals' errors.
func RemoveDirs(l *environment.Lease, r *environment.CleanupReport) {
	if len(r.Remaining.Mounts) == 0 {
		if err := os.RemoveAll(l.Dir); err != nil {
			r.Errors = append(r.Errors, err.Error())
		}
	}
	for _, dir := range []string{l.Dir, l.SocketDir} {
		// The socket directory holds only the bridge's sockets (the providers check its
		// shape, ValidSocketDir, before they clean up, so this never removes anything else).
		if dir == l.SocketDir {
			if err := os.RemoveAll(dir); err != nil {
				r.Errors = append(r.Errors, err.Error())
			}
		}
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			rest := Inventory(dir)
			r.Remaining.Files = append(append(r.Remaining.Files, dir), rest.Files...)
			r.Remaining.FileCount += rest.FileCount + 1
			r.Remaining.FileBytes += rest.FileBytes
		}
	}
}

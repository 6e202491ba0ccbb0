package sandbox

import (
	"os"
	"time"

	"github.com/agentproof/agentproof/environment"
)

// What the container provider (package environment/container) shares with the
// sandbox: the bridge (its host side, the init inside and the socket directory), the
// lease disk and init's exit report. Each is the sandbox's own function, exported
// unchanged.

// InitStatus is the exit report `agentproof sandbox-init` writes on its status fd.
type InitStatus = initStatus

// ReadInitStatus reads init's exit report from r (waiting at most two seconds after
// the writer closed); errors say the report is missing or malformed.
func ReadInitStatus(r *os.File) (InitStatus, error) { return readStatus(r) }

// MakeSocketDir creates a fresh short bridge socket directory (/run/apf-<16 hex>, or
// under /tmp), mode 0711.
func MakeSocketDir() (string, error) { return makeSocketDir() }

// ValidSocketDir reports whether dir has the shape MakeSocketDir gives.
func ValidSocketDir(dir string) bool { return validSocketDir(dir) }

// BridgeListens maps endpoints to init's --listen arguments (address=socket inside,
// under BridgeDir) and the /etc/hosts lines of the endpoints that have a DNS name.
func BridgeListens(eps []environment.Endpoint) (listens, hosts []string) {
	return bridgeListens(eps)
}

// MountDisk mounts a tmpfs of size bytes on dir owned by uid:gid (mode 0700).
func MountDisk(dir string, size int64, uid, gid int) error { return mountDisk(dir, size, uid, gid) }

// UnmountAll unmounts every mount at or under dir (never lazily), retrying busy ones
// until wait passes; it returns the mounts that remain.
func UnmountAll(dir string, wait time.Duration) ([]string, error) { return unmountAll(dir, wait) }

// MountsUnder lists the mount points at or under dir, deepest first.
func MountsUnder(dir string) ([]string, error) { return mountsUnder(dir) }

// Inventory counts the files under dir (links not followed).
func Inventory(dir string) environment.Inventory { return inventory(dir) }

// DiskFull reports whether the filesystem at dir has no block free.
func DiskFull(dir string) (bool, error) { return diskFull(dir) }

// ChownTree gives root and everything under it (links themselves) to uid:gid.
func ChownTree(root string, uid, gid int) error { return chownTree(root, uid, gid) }

// MkdirOwned creates path (mode 0700) owned by uid:gid.
func MkdirOwned(path string, uid, gid int) error { return mkdirOwned(path, uid, gid) }

// WritesOutside describes the files the agent left under scratch's tmp and shm
// directories (FactWritesOutside), "" when there are none.
func WritesOutside(scratch string, mountPoints []string) string {
	return writesOutside(scratch, mountPoints)
}

// DiskDir is the package function DiskDir (environment.LeaseDisk).
func (p *Provider) DiskDir(l *environment.Lease, name string) (string, error) {
	return DiskDir(l, name)
}

// Own is the package function Own (environment.LeaseDisk).
func (p *Provider) Own(l *environment.Lease, path string) error { return Own(l, path) }

// StartBridge is the package function StartBridge (environment.Bridged).
func (p *Provider) StartBridge(l *environment.Lease) (environment.Bridge, error) {
	b, err := StartBridge(l)
	if err != nil {
		return nil, err // never a nil *Bridge in a non-nil interface
	}
	return b, nil
}

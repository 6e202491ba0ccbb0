package sandbox

import (
	"os"

	"github.com/agentproof/agentproof/environment"
)

// What the container provider (package environment/container) shares with the
// sandbox: the bridge (its host side and the init inside), what the agent left in
// the scratch space, and init's exit report. Each is the sandbox's own function,
// exported unchanged (the lease's host directories and disk are package hostlease's).

// InitStatus is the exit report `agentproof sandbox-init` writes on its status fd.
type InitStatus = initStatus

// ReadInitStatus reads init's exit report from r (waiting at most two seconds after
// the writer closed); errors say the report is missing or malformed.
func ReadInitStatus(r *os.File) (InitStatus, error) { return readStatus(r) }

// BridgeListens maps endpoints to init's --listen arguments (address=socket inside,
// under BridgeDir) and the /etc/hosts lines of the endpoints that have a DNS name.
func BridgeListens(eps []environment.Endpoint) (listens, hosts []string) {
	return bridgeListens(eps)
}

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

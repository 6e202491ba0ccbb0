package sandbox

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/agentproof/agentproof/environment"
)

// What the container provider (package environment/container) shares with the
// sandbox: the bridge (its host side and the init inside), what the agent left in
// the scratch space, and init's exit report. Each is the sandbox's own function,
// exported unchanged (the lease's host directories and disk are package hostlease's).

// InitStatus is the exit report `agentproof sandbox-init` writes on its status fd.
type InitStatus = initStatus

// StatusReader is where init's exit report is read: the read end of its status pipe
// (*os.File) or the connection init made to its status socket (net.Conn).
type StatusReader interface {
	io.Reader
	SetReadDeadline(t time.Time) error
}

// ReadInitStatus reads init's exit report from r (waiting at most two seconds for the
// writer to close); errors say the report is missing or malformed.
func ReadInitStatus(r StatusReader) (InitStatus, error) { return readStatus(r) }

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

// SettleInit closes the write end of init's status pipe, reads init's exit report from
// its read end (ReadInitStatus; then closed) and, when the launch started
// (s.Outcome.Started), puts it into s: the agent's own exit into s.Outcome when both
// init and the supervisor saw the launch end, and the bridge's connection counts as
// facts "connections.<endpoint>". A missing report, or one naming an error of init's,
// is a problem of s naming init (who: "sandbox init") and, for a missing one, whose
// outcome stands instead (outcomeOf: "bubblewrap's"). It returns the report and the
// error reading it.
func SettleInit(s *environment.Settled, statusR, statusW *os.File, who, outcomeOf string) (InitStatus, error) {
	_ = statusW.Close()
	rep, err := readStatus(statusR)
	_ = statusR.Close()
	ApplyInitStatus(s, rep, err, who, outcomeOf)
	return rep, err
}

// ApplyInitStatus is SettleInit for a report read elsewhere (rep, or err when reading
// it failed): over a docker launch's status socket.
func ApplyInitStatus(s *environment.Settled, rep InitStatus, err error, who, outcomeOf string) {
	o := s.Outcome
	switch {
	case !o.Started:
	case err != nil:
		s.Problems = append(s.Problems, fmt.Sprintf("no exit report from the %s (%v); the outcome is %s", who, err, outcomeOf))
	case rep.Error != "":
		s.Problems = append(s.Problems, who+": "+rep.Error)
		fallthrough
	default:
		if o.Exited && rep.Exited {
			code := rep.ExitCode
			s.Outcome.ExitCode, s.Outcome.Signal = nil, rep.Signal
			if rep.Signal == "" {
				s.Outcome.ExitCode = &code
			}
		}
		for name, n := range rep.Connections {
			s.Facts["connections."+name] = strconv.FormatInt(n, 10)
		}
	}
}

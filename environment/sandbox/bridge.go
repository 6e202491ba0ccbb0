package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/sandbox/initproc"
)

// Bridge is the host side of a lease's network allowlist: for every endpoint, a
// listener on the endpoint's bridge socket (inside the lease directory, owned by the
// sandbox user, mode 0600) that connects each accepted connection to the endpoint's
// Dial address and copies both ways. The sandbox reaches the bridge sockets only
// through its init (package doc), and the address dialled is the lease owner's, never
// one the sandbox names.
//
// The lease's owner runs the bridge for the lease's whole life (the campaign, which
// outlives a serve-child restart; see docs/environments.md) and closes it before
// Cleanup.
type Bridge struct {
	lease *environment.Lease
	mu    sync.Mutex
	eps   []*hostEndpoint
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	done  bool
}

type hostEndpoint struct {
	name     string
	ln       net.Listener
	dial     atomic.Value // string
	accepted atomic.Int64
	failed   atomic.Int64
}

// dialTimeout bounds one forwarder's connect to its endpoint.
const dialTimeout = 10 * time.Second

// StartBridge listens on every endpoint socket of l. Errors: the lease is not a sandbox
// lease, a socket cannot be created; nothing is left listening on error.
func StartBridge(l *environment.Lease) (*Bridge, error) {
	st, err := leaseState(l)
	if err != nil {
		return nil, err
	}
	return StartBridgeAs(l, st.UID, st.GID)
}

// StartBridgeAs is StartBridge for a lease of any provider whose agent runs as
// uid:gid (the bridge sockets are given to that user, mode 0600): the container
// provider's leases use the sandbox's bridge.
func StartBridgeAs(l *environment.Lease, uid, gid int) (*Bridge, error) {
	b := &Bridge{lease: l, conns: map[net.Conn]struct{}{}}
	for _, e := range l.Endpoints {
		_ = os.Remove(e.Socket) // a stale socket of a crashed owner
		ln, err := net.Listen("unix", e.Socket)
		if err == nil {
			if err = os.Chown(e.Socket, uid, gid); err == nil {
				err = os.Chmod(e.Socket, 0o600)
			}
		}
		if err != nil {
			if ln != nil {
				_ = ln.Close()
			}
			_ = b.Close()
			return nil, fmt.Errorf("bridge endpoint %s: %w", e.Name, err)
		}
		he := &hostEndpoint{name: e.Name, ln: ln}
		he.dial.Store(e.Dial)
		b.eps = append(b.eps, he)
	}
	for _, he := range b.eps {
		b.wg.Go(func() { b.serve(he) })
	}
	return b, nil
}

func (b *Bridge) serve(he *hostEndpoint) {
	sem := make(chan struct{}, initproc.MaxBridgeConns)
	for {
		c, err := he.ln.Accept()
		if err != nil {
			return
		}
		select {
		case sem <- struct{}{}:
		default:
			_ = c.Close()
			he.failed.Add(1)
			continue
		}
		he.accepted.Add(1)
		if !b.track(c) {
			<-sem
			_ = c.Close()
			return
		}
		b.wg.Go(func() {
			defer func() { <-sem; b.untrack(c) }()
			out, err := net.DialTimeout("tcp", he.dial.Load().(string), dialTimeout)
			if err != nil {
				he.failed.Add(1)
				_ = c.Close()
				return
			}
			if !b.track(out) {
				_ = out.Close()
				_ = c.Close()
				return
			}
			defer b.untrack(out)
			initproc.Splice(c, out)
		})
	}
}

func (b *Bridge) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

func (b *Bridge) untrack(c net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.conns, c)
}

// Retarget points endpoint name at dial from now on (a restarted serve child listens
// on a new port): new connections go there, and the lease file gets the new address
// as both Dial and, for a loopback-IP listen, Listen, so the next launch listens on
// the port the agent is then configured with. Errors: unknown endpoint, an address
// the allowlist refuses, the lease file cannot be written.
func (b *Bridge) Retarget(name, dial string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, e := range b.lease.Endpoints {
		if e.Name != name {
			continue
		}
		next := append([]environment.Endpoint(nil), b.lease.Endpoints...)
		next[i].Dial = dial
		if host, _, err := environment.SplitHostPort(e.Listen); err == nil && net.ParseIP(host) != nil {
			next[i].Listen = dial
		}
		if p := environment.Allowlist(next).Problems(b.lease.Live); len(p) > 0 {
			return &environment.SpecError{What: "bridge retarget", Problems: p}
		}
		b.lease.Endpoints = next
		if err := environment.WriteLeaseFile(b.lease); err != nil {
			return err
		}
		for _, he := range b.eps {
			if he.name == name {
				he.dial.Store(dial)
			}
		}
		return nil
	}
	return fmt.Errorf("bridge: no endpoint %q", name)
}

// Accepted returns how many connections endpoint name accepted from the sandbox.
func (b *Bridge) Accepted(name string) int64 {
	for _, he := range b.eps {
		if he.name == name {
			return he.accepted.Load()
		}
	}
	return 0
}

// Close stops every listener, closes every live connection, waits for the
// forwarders and removes the sockets. It is idempotent.
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.done = true
	var errs []error
	for _, he := range b.eps {
		if err := he.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for c := range b.conns {
		_ = c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
	for _, e := range b.lease.Endpoints {
		if err := os.Remove(e.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

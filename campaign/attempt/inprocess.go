package attempt

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/controlplane/store"
)

// InProcessConfig is what an in-process control-plane instance is started with: the
// same things a serve child gets as flags (docs/ARCHITECTURE.md "Control-plane
// instances"). Home is the instance home (its own SQLite file, board token and master
// key, created by the instance); Marker the attempt's process marker every agent
// process carries (`serve --process-marker`); KnownDigests and Template what
// `--known-digest` and `--template-db` give (nil: none); ExecutableDigest the digest
// of the agentproof executable when `run` was still making it as the attempt started
// (nil: none; heartbeat.Config.ExecutableDigest: waited for only by a launch of that
// binary); Log where the instance writes what a serve child writes on its stderr (the
// HTTP server's error log, a template that was not used).
type InProcessConfig struct {
	Home             string
	Marker           string
	KnownDigests     []api.KnownDigest
	ExecutableDigest func() (api.KnownDigest, bool)
	Template         *store.Template
	Log              io.Writer
}

// InProcessServer is a running in-process control-plane instance: a listener on a
// loopback port (Addr, host:port) serving the board and agent API of its own home,
// with its own heartbeat runner. Shutdown stops its agents, drains its requests and
// closes its store (until ctx is done; the error says what did not finish).
type InProcessServer interface {
	Addr() string
	Shutdown(ctx context.Context) error
}

// InProcessStart starts a control-plane instance inside this process (package cli
// gives one over server.Serve). Errors: the instance could not be opened or listen.
type InProcessStart func(ctx context.Context, c InProcessConfig) (InProcessServer, error)

// InstanceMode says where an attempt's control-plane instance runs.
type InstanceMode string

// Instance modes (`agentproof run --instance`).
const (
	// InstanceChild runs every attempt's instance as an `agentproof serve` child
	// process (its own address space and process group).
	InstanceChild InstanceMode = "child"
	// InstanceInProcess runs the instance of every attempt that allows it
	// (inProcessAllowed) inside the `run` process, and the others as children.
	InstanceInProcess InstanceMode = "in-process"
)

// InstanceModes are the accepted modes, the default first.
var InstanceModes = []InstanceMode{InstanceInProcess, InstanceChild}

// inProcessAllowed reports whether plan's instance may run inside the `run` process,
// and if not, why not (for the flow log). Everything that needs a separate server
// process keeps the child: a case whose flow says why it needs one
// (flows.ServerProcess: the flow restarts or kills the server — the restart is a new
// process on the same home, a crash a SIGKILL of the server —, or kills the agent
// process, which the server must outlive as it does in production), a hostile agent (its attacks aim at the server process: its
// files, its environment through /proc), a sandbox cell (its lease's bridge and
// the sandbox's cgroup are set up around a server process), and a case that asks for
// a server process (catalog.Case.ServerProcess).
func inProcessAllowed(plan campaign.AttemptPlan) (bool, string) {
	c := plan.Cell.Case
	switch {
	case c == nil || plan.Cell.Environment == nil:
		return false, "no case or environment"
	case flows.ServerProcess(c) != "":
		return false, flows.ServerProcess(c)
	case c.ServerProcess:
		return false, "the case asks for a server process (serverProcess)"
	case isHostile(plan):
		return false, "a hostile agent attacks the server process"
	case needsLease(plan.Cell.Environment):
		return false, "a sandbox cell's lease is set up around a server process"
	}
	return true, ""
}

// inProcessChild is an in-process instance of an attempt with its log.
type inProcessChild struct {
	srv  InProcessServer
	addr string
	log  *boundedBuffer
}

// startInProcess starts an in-process instance on home with the attempt's marker and
// the shared serve flags' values (flags as serveFlags returns them), reads its board
// token from the home and checks its address is loopback. Errors classify as a
// serve child's ("server start failed: …").
func startInProcess(ctx context.Context, start InProcessStart, home, marker string, flags []string, digest func() (api.KnownDigest, bool)) (*inProcessChild, string, error) {
	c := InProcessConfig{Home: home, Marker: marker, ExecutableDigest: digest}
	for i := 0; i+1 < len(flags); i += 2 {
		switch flags[i] {
		case "--known-digest":
			if k, err := api.ParseKnownDigest(flags[i+1]); err == nil {
				c.KnownDigests = append(c.KnownDigests, k)
			}
		case "--template-db":
			if t, err := store.ParseTemplate(flags[i+1]); err == nil {
				c.Template = &t
			}
		}
	}
	log := &boundedBuffer{max: maxServeLog}
	c.Log = log
	srv, err := start(ctx, c)
	if err != nil {
		return nil, "", fmt.Errorf("server start failed: %w", err)
	}
	ip := &inProcessChild{srv: srv, addr: srv.Addr(), log: log}
	if !loopbackAddr(ip.addr) {
		_, _ = ip.stop()
		return nil, "", fmt.Errorf("server start failed: address %q is not a loopback address", ip.addr)
	}
	tok, err := os.ReadFile(filepath.Join(home, boardTokenFile))
	if err != nil {
		_, _ = ip.stop()
		return nil, "", fmt.Errorf("server start failed: reading the board token: %w", err)
	}
	return ip, strings.TrimSpace(string(tok)), nil
}

// stop shuts the instance down within StopGrace (what a serve child gets between
// SIGTERM and SIGKILL). timedOut says it did not finish in time (a harness note, like
// a killed serve child: the agent processes it may have left are the attempt's
// marker sweep's); any other error of its shutdown is returned.
func (ip *inProcessChild) stop() (timedOut bool, err error) { return ip.stopWithin(StopGrace) }

// stopWithin is stop with grace d.
func (ip *inProcessChild) stopWithin(d time.Duration) (timedOut bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err = ip.srv.Shutdown(ctx)
	if ctx.Err() != nil {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("the in-process server's shutdown failed: %w", err)
	}
	return false, nil
}

// loopbackAddr reports whether host:port names a loopback IP address.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && net.ParseIP(host).IsLoopback()
}

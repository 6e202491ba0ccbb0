package attempt

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/client"
)

// instance is the attempt's control-plane server on its instance home: a serve child,
// or an in-process instance (docs/ARCHITECTURE.md "Control-plane instances"), which a
// flow may restart (a new serve child on the same home). Only the attempt's flow
// goroutine restarts it; teardown stops it after the flow returned.
type instance struct {
	exe, home, root string
	marker          string          // the attempt's process marker every agent process carries
	flags           []string        // further serve flags (serveFlags), the same for every child
	canary          string          // the controller canary of every child's environment
	child           *serveChild     // nil after a restart whose new child did not start, or in-process
	inproc          *inProcessChild // the in-process instance until it is stopped (nil for a child)
	url, token      string          // the last server's, kept when it is gone
	// earlier holds the stderr logs of servers a restart stopped, oldest first.
	earlier [][]byte

	// mu guards the board client of url and token (board): one transport per server,
	// so that the stages' calls reuse its connections instead of opening new ones.
	mu                  sync.Mutex
	client              *client.Client
	clientURL, clientTk string
	transport           *http.Transport
}

// startInstance starts the first serve child with the attempt's process marker and
// controller canary (ControllerCanaryKey; "" for none) and the further serve flags
// (startServe's errors).
func startInstance(ctx context.Context, exe, home, root, marker, canary string, flags []string) (*instance, error) {
	child, err := startServe(ctx, exe, home, root, marker, canary, flags)
	if err != nil {
		return nil, err
	}
	return &instance{exe: exe, home: home, root: root, marker: marker, canary: canary, flags: flags, child: child, url: child.URL(), token: child.token}, nil
}

// startInstanceInProcess starts the attempt's instance inside this process
// (startInProcess's errors); a restart replaces it with a serve child of exe.
func startInstanceInProcess(ctx context.Context, start InProcessStart, exe, home, root, marker, canary string, flags []string, digest func() (api.KnownDigest, bool)) (*instance, error) {
	ip, token, err := startInProcess(ctx, start, home, marker, flags, digest)
	if err != nil {
		return nil, err
	}
	return &instance{exe: exe, home: home, root: root, marker: marker, canary: canary, flags: flags, inproc: ip, url: "http://" + ip.addr, token: token}, nil
}

// inProcess reports whether the instance runs inside this process now.
func (in *instance) inProcess() bool { return in.inproc != nil }

// pid is the running child's pid (0 when none runs or the instance is in-process).
func (in *instance) pid() int {
	if in.child == nil || in.child.cmd.Process == nil {
		return 0
	}
	return in.child.cmd.Process.Pid
}

// board returns a board client of the running child (of the last one when none runs:
// its calls then fail, refused, as they would against any server that is gone).
func (in *instance) board() *client.Client {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.client == nil || in.clientURL != in.url || in.clientTk != in.token {
		if in.transport != nil {
			in.transport.CloseIdleConnections() // the last server's
		}
		in.transport = &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
		in.client = client.New(in.url, in.token, &http.Client{Transport: in.transport})
		in.clientURL, in.clientTk = in.url, in.token
	}
	return in.client
}

// closeIdle closes the board client's idle connections (the server is gone).
func (in *instance) closeIdle() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.transport != nil {
		in.transport.CloseIdleConnections()
	}
}

// addr is the running (or last) child's address.
func (in *instance) addr() string { return strings.TrimPrefix(in.url, "http://") }

// restart stops the running child and starts a new one on the same home; killed says
// the old child had to be killed (a harness note). Errors: processes of the old
// child's group outlived it, or the new one did not start (the instance then has no
// running child; stop is a no-op).
func (in *instance) restart(ctx context.Context) (killed bool, err error) {
	if in.inproc != nil {
		// The in-process instance stops (as SIGTERM stops a serve child); the new
		// server is a serve child: a restart is a new process.
		killed, err = in.inproc.stop()
		in.earlier = append(in.earlier, in.inproc.log.Bytes())
		in.inproc = nil
	} else if in.child == nil {
		return false, errors.New("no server is running")
	} else {
		killed, err = in.child.stop()
		in.earlier = append(in.earlier, in.child.stderr.Bytes())
	}
	if err != nil {
		return killed, fmt.Errorf("stopping: %w", err)
	}
	child, err := startServe(ctx, in.exe, in.home, in.root, in.marker, in.canary, in.flags)
	if err != nil {
		in.child = nil
		return killed, err
	}
	in.child, in.url, in.token = child, child.URL(), child.token
	return killed, nil
}

// crash kills the running child with SIGKILL (serveChild.kill: a server crash, no
// shutdown) and starts a new one on the same home. Errors: the child was not running,
// processes of its group outlived it, or the new one did not start (the instance then
// has no running child).
func (in *instance) crash(ctx context.Context) error {
	if in.inproc != nil {
		return errors.New("an in-process server cannot be killed without killing the campaign (the flow needs a serve child)")
	}
	if in.child == nil {
		return errors.New("no server is running")
	}
	if err := in.child.kill(); err != nil {
		return fmt.Errorf("killing: %w", err)
	}
	in.earlier = append(in.earlier, in.child.stderr.Bytes())
	child, err := startServe(ctx, in.exe, in.home, in.root, in.marker, in.canary, in.flags)
	if err != nil {
		in.child = nil
		return err
	}
	in.child, in.url, in.token = child, child.URL(), child.token
	return nil
}

// died describes the running child's death when it exited before the harness stopped
// it (its control plane gone under the attempt: a harness fault, never the
// candidate's); "" while it runs, or for an in-process instance.
func (in *instance) died() string {
	if in.child == nil {
		return ""
	}
	if how := in.child.exited(); how != "" {
		return fmt.Sprintf("the control-plane server (pid %d) exited before the harness stopped it: %s", in.pid(), how)
	}
	return ""
}

// stop stops the running child (SIGTERM, SIGKILL after StopGrace) and returns its
// stderr log ("" when a restart left none running), those of the children a restart
// stopped, and whether it had to be killed. Error: its process group outlived it.
func (in *instance) stop() (current []byte, earlier [][]byte, killed bool, err error) {
	defer in.closeIdle()
	if in.inproc != nil {
		killed, err = in.inproc.stop()
		current, in.inproc = in.inproc.log.Bytes(), nil
		return current, in.earlier, killed, err
	}
	if in.child != nil {
		killed, err = in.child.stop()
		current = in.child.stderr.Bytes()
	}
	return current, in.earlier, killed, err
}

package attempt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/client"
)

// instance is the attempt's control-plane server: a serve child on its instance home,
// which the question flow may restart (a new child on the same home). Only the
// attempt's flow goroutine restarts it; teardown stops it after the flow returned.
type instance struct {
	exe, home, root string
	marker          string      // the attempt's process marker every agent process carries
	flags           []string    // further serve flags (serveFlags), the same for every child
	canary          string      // the controller canary of every child's environment
	child           *serveChild // nil after a restart whose new child did not start
	url, token      string      // the last child's, kept when it is gone
	// earlier holds the stderr logs of children a restart stopped, oldest first.
	earlier [][]byte
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

// pid is the running child's pid (0 when none runs).
func (in *instance) pid() int {
	if in.child == nil || in.child.cmd.Process == nil {
		return 0
	}
	return in.child.cmd.Process.Pid
}

// board returns a board client of the running child (of the last one when none runs:
// its calls then fail, refused, as they would against any server that is gone).
func (in *instance) board() *client.Client {
	return client.New(in.url, in.token, nil)
}

// addr is the running (or last) child's address.
func (in *instance) addr() string { return strings.TrimPrefix(in.url, "http://") }

// restart stops the running child and starts a new one on the same home; killed says
// the old child had to be killed (a harness note). Errors: processes of the old
// child's group outlived it, or the new one did not start (the instance then has no
// running child; stop is a no-op).
func (in *instance) restart(ctx context.Context) (killed bool, err error) {
	killed, err = in.child.stop()
	if err != nil {
		return killed, fmt.Errorf("stopping: %w", err)
	}
	in.earlier = append(in.earlier, in.child.stderr.Bytes())
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

// stop stops the running child (SIGTERM, SIGKILL after StopGrace) and returns its
// stderr log ("" when a restart left none running), those of the children a restart
// stopped, and whether it had to be killed. Error: its process group outlived it.
func (in *instance) stop() (current []byte, earlier [][]byte, killed bool, err error) {
	if in.child != nil {
		killed, err = in.child.stop()
		current = in.child.stderr.Bytes()
	}
	return current, in.earlier, killed, err
}

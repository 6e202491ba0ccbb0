package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/worker"
)

// The real agent runtimes run inside the sandbox: Node reaches the allowlisted
// control plane through the bridge with its own HTTP stack (what the Node/Bun CLIs
// use), and the pinned real CLIs start from their install directory in the root
// user's cache (a 0700 parent the sandbox user could never traverse: staging binds it).

// TestNodeThroughBridge: node's fetch reaches the allowlisted endpoint by port.
func TestNodeThroughBridge(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is missing (CI installs the agent CLIs with npm)")
		}
		t.Skip("node is not installed")
	}
	srv, requests := httpServer(t, "hello from the control plane")
	addr := srv.Listener.Addr().String()
	p := New(Options{})
	shape := smallShape
	shape.MemoryBytes, shape.PIDs = 1<<30, 512
	l := setup(t, p, environment.LeaseSpec{Shape: shape, Endpoints: []environment.Endpoint{{Name: "cp", Kind: environment.EndpointControlPlane, Listen: addr, Dial: addr}}})
	br, err := StartBridge(l)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	spec := worker.Spec{Path: node, Args: []string{"node", "-e", "fetch(process.argv[1]).then(r => r.text()).then(t => console.log('got: ' + t))", srv.URL + "/api"},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + Home}, Dir: l.Workspace, Timeout: 60 * time.Second, MaxOutputBytes: 1 << 20, NullStdin: true}
	r := launch(t, context.Background(), p, l, environment.LaunchRequest{Spec: spec})
	if exitCode(r.Outcome) != "0" || !strings.Contains(r.stdout, "got: hello from the control plane") || requests() != 1 {
		t.Errorf("node: exit %s, stdout %q, stderr %q, requests %d", exitCode(r.Outcome), r.stdout, r.stderr, requests())
	}
}

// TestRealCLIsStart: codex and opencode print their pinned versions from inside the
// sandbox, bound read-only from the CLI cache.
func TestRealCLIsStart(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	dir := os.Getenv("AGENTPROOF_AGENTS_DIR")
	if dir == "" {
		dir, _ = clis.DefaultDir()
	}
	p := New(Options{})
	shape := smallShape
	shape.MemoryBytes, shape.PIDs = 1<<30, 512
	for _, name := range []string{"codex", "opencode"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := clis.Lookup(name)
			in, err := clis.Locate(dir, c, clis.HostPlatform())
			if err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatal(err)
				}
				t.Skip(err)
			}
			l := setup(t, p, environment.LeaseSpec{Shape: shape})
			spec := worker.Spec{Path: in.Binary, Args: []string{name, "--version"}, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + Home, "TMPDIR=/tmp"},
				Dir: l.Workspace, Timeout: 60 * time.Second, MaxOutputBytes: 1 << 20, NullStdin: true}
			// The install directory itself is 0700 (agents install makes it so); its
			// node_modules is world-readable, and Launch says so for the former.
			if _, err := p.Launch(context.Background(), l, environment.LaunchRequest{Spec: spec, ReadOnly: []string{in.Dir}}); err == nil {
				if fi, _ := os.Stat(in.Dir); fi.Mode().Perm()&0o005 != 0o005 {
					t.Errorf("a read-only bind the sandbox user cannot enter (%s, %v) was accepted", in.Dir, fi.Mode())
				}
			}
			r := launch(t, context.Background(), p, l, environment.LaunchRequest{Spec: spec, ReadOnly: []string{filepath.Join(in.Dir, "node_modules")}})
			if exitCode(r.Outcome) != "0" || !strings.Contains(r.stdout, c.Version) {
				t.Errorf("%s --version: exit %s, stdout %q, stderr %q, problems %v", name, exitCode(r.Outcome), r.stdout, r.stderr, r.Problems)
			}
		})
	}
}

package sandbox

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/worker"
)

// These tests need no sandbox: they check the command lines and files the provider
// builds.

// TestPlan: the bwrap command line unshares every namespace, dies with its parent,
// makes init PID 1, never binds the host root, binds the workspace and the scratch
// space writable and everything else read-only, remounts / and /dev read-only last,
// and runs init with the endpoints' listen addresses (a DNS name on a loopback alias).
func TestPlan(t *testing.T) {
	t.Parallel()
	dir := "/r/lease-0123456789abcdef"
	st := state{UID: 65534, GID: 65534, Executable: "/opt/agentproof", Bwrap: "/usr/bin/bwrap", BwrapVersion: "0.8.0", Disk: dir + "/disk"}
	raw, _ := json.Marshal(st)
	l := &environment.Lease{Schema: environment.LeaseSchema, ID: filepath.Base(dir), Provider: environment.ProviderSandbox, EnvironmentID: "sandbox",
		Shape: smallShape, StartedAt: time.Now(), Dir: dir, Workspace: dir + "/disk/workspace", State: raw,
		Endpoints: []environment.Endpoint{
			{Name: "cp", Kind: environment.EndpointControlPlane, Listen: "127.0.0.1:4100", Dial: "127.0.0.1:4100"},
			{Name: "model", Kind: environment.EndpointModel, Listen: "model.test:8080", Dial: "127.0.0.1:5000"}}}
	listens, hosts := bridgeListens(l.Endpoints)
	if !slices.Equal(listens, []string{"127.0.0.1:4100=" + BridgeDir + "/cp.sock", "127.0.1.2:8080=" + BridgeDir + "/model.sock"}) || !slices.Equal(hosts, []string{"127.0.1.2 model.test"}) {
		t.Fatalf("listens %v hosts %v", listens, hosts)
	}
	req := environment.LaunchRequest{Spec: worker.Spec{Path: "/opt/cli/bin/agent", Args: []string{"agent", "--go"}, Dir: l.Workspace},
		Binds: []environment.Bind{{Path: dir + "/disk/state", Write: true}}, ReadOnly: []string{"/opt/cli"}}
	const stage = "/run/apf-stage-1"
	pl := (&Provider{}).plan(l, st, req, st.Disk, listens, planFDs{stageDir: stage, pass: 1, cgroups: 2, etc: []string{"/etc/passwd", "/etc/ld.so.cache"}})
	args := strings.Join(pl.args, " ")
	for _, want := range []string{"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup",
		"--disable-userns", "--die-with-parent", "--as-pid-1", "--ro-bind /usr /usr", "--proc /proc", "--dev /dev",
		"--perms 0644 --file 7 /etc/passwd --perms 0644 --file 8 /etc/ld.so.cache ",
		"--bind " + stage + "/0 /tmp ", "--bind " + stage + "/3 " + l.Workspace, "--bind " + stage + "/4 " + dir + "/disk/state",
		"--ro-bind " + stage + "/5 /opt/agentproof", "--ro-bind " + stage + "/6 /opt/cli ", "--ro-bind " + stage + "/7 " + BridgeDir,
		"--remount-ro /dev --remount-ro / --chdir " + l.Workspace,
		"-- /opt/agentproof sandbox-init --status-fd 4 --pass-fds 1 --cgroup-fd 5 --cgroup-fd 6 --listen 127.0.0.1:4100=" + BridgeDir + "/cp.sock",
		"-- /opt/cli/bin/agent agent --go"} {
		if !strings.Contains(args, want) {
			t.Errorf("plan lacks %q:\n%s", want, args)
		}
	}
	if strings.Contains(args, "--ro-bind / /") || strings.Contains(args, "--bind / ") || strings.Contains(args, "--ro-bind /opt/cli/bin/agent") {
		t.Errorf("plan binds too much:\n%s", args)
	}
	if pl.stage[3] != l.Workspace || pl.stage[0] != st.Disk+"/tmp" {
		t.Errorf("stage %v", pl.stage)
	}
}

func TestEtcFiles(t *testing.T) {
	t.Parallel()
	files := etcFiles(65534, 65534, []string{"127.0.1.1 api.example.com"})
	hosts, passwd := files["hosts"], files["passwd"]
	if len(files) != len(etcNames) {
		t.Errorf("files %v, names %v", files, etcNames)
	}
	if !strings.Contains(string(hosts), "127.0.0.1 localhost") || !strings.Contains(string(hosts), "127.0.1.1 api.example.com\n") ||
		string(passwd) != "agent:x:65534:65534:agentproof sandbox:/home/agent:/usr/sbin/nologin\n" {
		t.Errorf("hosts %q passwd %q", hosts, passwd)
	}
}

func TestMountinfoHelpers(t *testing.T) {
	t.Parallel()
	if !versionAtLeast("0.8.0", 0, 8) || versionAtLeast("0.7.9", 0, 8) || !versionAtLeast("1.0", 0, 8) || versionAtLeast("x", 0, 1) {
		t.Error("versionAtLeast")
	}
	if !limitMatches("memory.limit_in_bytes", "1000001", "999424") || limitMatches("pids.max", "5", "6") {
		t.Error("limitMatches")
	}
}

// TestBindAtRefused: the sandbox binds a path at its own path; a bind that asks to be
// mounted elsewhere (the container provider's At) is refused, named.
func TestBindAtRefused(t *testing.T) {
	t.Parallel()
	l := &environment.Lease{Workspace: "/w"}
	req := environment.LaunchRequest{Spec: worker.Spec{Path: "/bin/sh", Args: []string{"sh"}, Dir: "/w"},
		Binds: []environment.Bind{{Path: "/w/tests", At: "/tests"}}}
	probs := strings.Join(launchProblems(l, state{Disk: "/d"}, req), "; ")
	if !strings.Contains(probs, "binds[0] /w/tests: the sandbox binds a path at its own path, not at /tests") {
		t.Errorf("problems %q", probs)
	}
}

// TestBwrapVersionKeptOnSuccessOnly: the provider asks bubblewrap for its version until
// an answer comes, then keeps it (one provider serves every cell of a campaign: a
// failure, such as a cancelled context's, must not stay).
func TestBwrapVersionKeptOnSuccessOnly(t *testing.T) {
	t.Parallel()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed")
	}
	p := &Provider{opt: Options{Bwrap: "/nonexistent/bwrap"}}
	if _, err := p.bwrapVersion(context.Background()); err == nil {
		t.Fatal("a missing bwrap answered")
	}
	p.opt.Bwrap = bwrap
	v, err := p.bwrapVersion(context.Background())
	if err != nil || v == "" {
		t.Fatalf("after a failure: %q %v", v, err)
	}
	p.opt.Bwrap = "/nonexistent/bwrap"
	if again, err := p.bwrapVersion(context.Background()); err != nil || again != v {
		t.Errorf("the version was not kept: %q %v", again, err)
	}
}

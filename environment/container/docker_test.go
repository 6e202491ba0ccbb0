package container

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/worker"
)

// TestStatusSocketOneConnection: docker's status socket accepts init's connection (the
// first) and then no other — the agent, started after init connected, can neither
// connect nor forge a report — and the report init writes is read back; the socket's
// directory is removed after.
func TestStatusSocketOneConnection(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the status socket's directory is made under /run, which needs root")
	}
	s, err := listenStatus()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.dir, statusSocketName)
	initConn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Lstat(path); err == nil && time.Now().Before(deadline); _, err = os.Lstat(path) {
		time.Sleep(time.Millisecond) // accepted: the socket is unlinked
	}
	if _, err := net.Dial("unix", path); err == nil {
		t.Error("a second connection (the agent's) was accepted by the status socket")
	}
	want := sandbox.InitStatus{Schema: "agentproof.sandbox-init.v1", Exited: true, ExitCode: 9}
	data, _ := json.Marshal(want)
	if _, err := initConn.Write(data); err != nil {
		t.Fatal(err)
	}
	_ = initConn.Close()
	got, err := s.read()
	if err != nil || !got.Exited || got.ExitCode != 9 {
		t.Errorf("read %+v, %v; want init's report (exit 9)", got, err)
	}
	s.close()
	if _, err := os.Lstat(s.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the status directory %s is left: %v", s.dir, err)
	}
}

// TestStatusSocketNoInit: a launch whose init never connected reads no report, and
// says so, without waiting for a writer that does not exist.
func TestStatusSocketNoInit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the status socket's directory is made under /run, which needs root")
	}
	s, err := listenStatus()
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if _, err := s.read(); err == nil || !strings.Contains(err.Error(), "never connected") {
		t.Errorf("read without init: %v, want 'init never connected'", err)
	}
}

// TestDockerRunArgs: a docker launch passes no descriptor (no --preserve-fds), mounts
// its status directory read-only at InitDir and has init report there, runs the image
// by its id, keeps every guarantee of a podman launch (no network, no capability, a
// read-only root, the container user, the limits, the lease's labels and the status
// directory's), and a launch with extra descriptors is refused; podman's command
// line is unchanged.
func TestDockerRunArgs(t *testing.T) {
	t.Parallel()
	dir := "/r/lease-0123456789abcdef"
	id := "sha256:" + strings.Repeat("ab", 32)
	st := state{Engine: EngineDocker, EnginePath: "/usr/bin/docker", ImageID: id, UID: NobodyID, GID: NobodyID, Executable: "/opt/agentproof",
		Disk: dir + "/disk", OwnerPID: 1, OwnerStart: "1"}
	l := &environment.Lease{ID: filepath.Base(dir), Dir: dir, Workspace: dir + "/disk/workspace", SocketDir: "/run/apf-0123456789abcdef",
		Shape: smallShape, Image: "localhost/x@" + id}
	req := environment.LaunchRequest{Spec: worker.Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "true"}, Dir: l.Workspace}}
	const statusDir = "/run/apf-fedcba9876543210"
	args := runArgs(l, st, req, "apf-0123456789abcdef-1", dir+"/launches/1", dir+"/disk", statusDir, nil)
	line := strings.Join(args, " ")
	for _, want := range []string{"--network none", "--cap-drop all", "--read-only", "--user 65534:65534", "--memory 100663296", "--pids-limit 64",
		"--cpus 0.5", "--pull never", "--label agentproof.lease=" + l.ID, "--label agentproof.status-dir=" + statusDir,
		"--volume " + statusDir + ":" + InitDir + ":ro", "--entrypoint /opt/agentproof " + id + " sandbox-init --status-socket " + InitDir + "/status.sock --pass-fds 0 --counters -- /bin/sh sh -c true"} {
		if !strings.Contains(line, want) {
			t.Errorf("docker's run lacks %q:\n%s", want, line)
		}
	}
	if slices.Contains(args, "--preserve-fds") || slices.Contains(args, "--no-hosts") || slices.Contains(args, l.Image) {
		t.Errorf("docker's run has a podman flag or the image by name:\n%s", line)
	}
	req.Spec.ExtraFiles = []*os.File{os.Stdin}
	if probs := launchProblems(l, st, req); !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, "docker's CLI passes none") }) {
		t.Errorf("a docker launch with an extra descriptor: problems %v, want it refused", probs)
	}
	st.Engine, st.EnginePath = EnginePodman, "/usr/bin/podman"
	podman := strings.Join(runArgs(l, st, req, "apf-0123456789abcdef-1", dir+"/launches/1", dir+"/disk", "", nil), " ")
	if !strings.Contains(podman, "--preserve-fds 2 --no-hosts") || !strings.Contains(podman, l.Image+" sandbox-init --status-fd 4 --pass-fds 1 --counters") ||
		strings.Contains(podman, InitDir) {
		t.Errorf("podman's run changed:\n%s", podman)
	}
}

// TestProbe: on each engine present the probe runs a trial container (its init's
// report passed through or over the status socket) and names the engine it drives and
// why.
func TestProbe(t *testing.T) {
	forEngines(t, func(t *testing.T, p *Provider, fx *fixture) {
		r := p.Probe(context.Background())
		var engine, trial string
		for _, c := range r.Checks {
			switch c.Name {
			case "engine":
				engine = c.Detail
			case "trial":
				trial = c.Detail
			}
		}
		t.Logf("engine: %s\ntrial: %s", engine, trial)
		if !r.Available || !strings.HasPrefix(engine, string(fx.eng.Name)+" ") || !strings.Contains(engine, "picked") && !strings.Contains(engine, "given") ||
			!strings.Contains(trial, "a trial container ran on "+string(fx.eng.Name)) {
			t.Errorf("probe: available %t, engine %q, trial %q; want the engine named with why, and its trial run", r.Available, engine, trial)
		}
	})
}

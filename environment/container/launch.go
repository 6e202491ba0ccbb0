package container

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/worker"
)

// Launch prepares req.Spec as one `podman run` in the lease (see the package doc).
// The spec's working directory must be the workspace or a writable bind; writable
// binds must lie in the workspace or on the lease's disk. Errors: a
// *environment.SpecError naming every problem; filesystem errors preparing the launch
// directory. Nothing is started: the returned Spec is the engine's command.
func (p *Provider) Launch(_ context.Context, l *environment.Lease, req environment.LaunchRequest) (environment.Launched, error) {
	st, err := leaseState(l)
	if err != nil {
		return nil, err
	}
	if probs := launchProblems(l, st, req); len(probs) > 0 {
		return nil, &environment.SpecError{What: "container launch", Problems: probs}
	}
	n, dir, scratch, err := hostlease.NewLaunch(l, st.Disk, 0o711, st.UID, st.GID, scratchNames...)
	if err != nil {
		return nil, fmt.Errorf("container launch: %w", err)
	}
	listens, hosts := sandbox.BridgeListens(l.Endpoints)
	if err := writeEtc(dir, hosts); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("container launch: %w", err)
	}
	x := &launched{lease: l, st: st, n: n, name: containerName(l.ID, n), dir: dir, scratch: scratch, mountPoints: readOnlyMounts(l, st, req)}
	if err := x.openStatus(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("container launch: %w", err)
	}
	spec := req.Spec
	statusDir := ""
	x.spec = spec
	x.spec.ExtraFiles = slices.Clone(spec.ExtraFiles)
	if x.status != nil {
		statusDir = x.status.dir
	} else {
		x.spec.ExtraFiles = append(x.spec.ExtraFiles, x.statusW)
	}
	x.spec.Path = st.EnginePath
	x.spec.Args = append([]string{string(st.Engine)}, st.engine().args(runArgs(l, st, req, x.name, dir, scratch, statusDir, listens)...)...)
	x.spec.Env = engineProcessEnv(spec.Env)
	x.spec.TerminateGrace = max(spec.TerminateGrace, TerminateGrace)
	return x, nil
}

// openStatus makes where the launch's init reports the agent's exit: a pipe whose
// write end podman passes into the container, or docker's status socket.
func (x *launched) openStatus() error {
	if x.st.Engine == EngineDocker {
		s, err := listenStatus()
		x.status = s
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("status pipe: %w", err)
	}
	x.statusR, x.statusW = r, w
	return nil
}

// TerminateGrace is the least wait between SIGTERM and SIGKILL of a launch's engine
// process: the engine relays SIGTERM to the container's init, which forwards it to the
// agent; the agent's exit, init's report and the container's teardown all come before
// the engine exits. A SIGKILL sooner kills the engine alone and leaves no report (a
// Node.js CLI that exits on SIGTERM took over 2 s for that chain under load).
const TerminateGrace = 5 * time.Second

// containerName is the engine's name of launch n of lease id: apf-<16 hex>-<n>.
func containerName(leaseID string, n int) string {
	return "apf-" + strings.TrimPrefix(leaseID, "lease-") + "-" + strconv.Itoa(n)
}

// runArgs is the engine's `run` command line of one launch (the engine removes the
// container when it exits; Settle confirms it). With a workdir, the workspace is
// mounted there too and a launch in the workspace starts there; a bind with At is
// mounted at At. The rest: the lease's labels, its
// limits, no network, no capability, a read-only root as the container user, the
// mounts, the agent's environment variables by name (their values stay in the engine
// process's environment, never on a command line), and init with the agent's command.
func runArgs(l *environment.Lease, st state, req environment.LaunchRequest, name, dir, scratch, statusDir string, listens []string) []string {
	spec := req.Spec
	a := []string{"run", "--rm", "--name", name, "--pull", "never", "--interactive",
		"--label", labelProvider + "=" + string(environment.ProviderContainer), "--label", labelLease + "=" + l.ID,
		"--label", labelOwnerPID + "=" + strconv.Itoa(st.OwnerPID), "--label", labelOwnerStart + "=" + st.OwnerStart,
		"--label", labelLeaseDir + "=" + l.Dir, "--label", labelSocketDir + "=" + l.SocketDir}
	if st.Owner != "" {
		a = append(a, "--label", labelOwner+"="+st.Owner)
	}
	a = append(a, "--network", "none", "--cap-drop", "all", "--security-opt", "no-new-privileges", "--read-only",
		"--user", strconv.Itoa(st.UID)+":"+strconv.Itoa(st.GID), "--hostname", "agentproof-container",
		"--cpus", strconv.FormatFloat(l.Shape.CPUCores, 'f', -1, 64),
		"--memory", strconv.FormatInt(l.Shape.MemoryBytes, 10), "--memory-swap", strconv.FormatInt(l.Shape.MemoryBytes, 10),
		"--pids-limit", strconv.FormatInt(l.Shape.PIDs, 10), "--log-driver", "none")
	a = append(a, ulimits()...)
	if st.Engine != EngineDocker { // docker mounts no hosts file of its own where one is mounted
		a = append(a, "--preserve-fds", strconv.Itoa(len(spec.ExtraFiles)+1), "--no-hosts")
	}
	a = append(a, "--volume", filepath.Join(dir, "hosts")+":/etc/hosts:ro", "--volume", filepath.Join(dir, "resolv.conf")+":/etc/resolv.conf:ro",
		"--volume", filepath.Join(scratch, "tmp")+":/tmp", "--volume", filepath.Join(scratch, "home")+":"+Home,
		"--volume", l.Workspace+":"+l.Workspace)
	workdir := spec.Dir
	if l.Workdir != "" {
		a = append(a, "--volume", l.Workspace+":"+l.Workdir)
		if spec.Dir == l.Workspace {
			workdir = l.Workdir
		}
	}
	a = append(a, mountArgs(l)...)
	binds := slices.Clone(req.Binds)
	at := func(b environment.Bind) string { return cmp.Or(b.At, b.Path) }
	slices.SortStableFunc(binds, func(x, y environment.Bind) int { return len(at(x)) - len(at(y)) })
	for _, b := range binds {
		opt := ":ro"
		if b.Write {
			opt = ""
		}
		a = append(a, "--volume", b.Path+":"+at(b)+opt)
	}
	for _, r := range readOnlyMounts(l, st, req) {
		src := r
		if real, err := filepath.EvalSymlinks(r); err == nil {
			src = real
		}
		a = append(a, "--volume", src+":"+r+":ro")
	}
	a = append(a, "--volume", l.SocketDir+":"+BridgeDir+":ro", "--workdir", workdir)
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			a = append(a, "--env", k)
		}
	}
	a = append(a, initArgs(l, st, len(spec.ExtraFiles), statusDir)...)
	for _, ls := range listens {
		a = append(a, "--listen", ls)
	}
	a = append(a, "--", spec.Path)
	return append(a, spec.Args...)
}

// initArgs are the run's entry point, image and init's report flags: podman passes
// the status pipe after the pass descriptors (--status-fd); docker, which passes no
// descriptor, mounts the launch's status directory read-only at InitDir, where init
// connects to the status socket (--status-socket), and runs the image by its id (a
// local docker image has no manifest digest to name it by).
func initArgs(l *environment.Lease, st state, pass int, statusDir string) []string {
	if st.Engine == EngineDocker {
		return []string{"--label", labelStatusDir + "=" + statusDir, "--volume", statusDir + ":" + InitDir + ":ro",
			"--entrypoint", st.Executable, st.ImageID, sandbox.InitCommand,
			"--status-socket", InitDir + "/" + statusSocketName, "--pass-fds", "0", "--counters"}
	}
	return []string{"--entrypoint", st.Executable, l.Image, sandbox.InitCommand,
		"--status-fd", strconv.Itoa(3 + pass), "--pass-fds", strconv.Itoa(pass), "--counters"}
}

// imageDirs are the image's own system directories: a program under one of them (the
// driver's /bin/sh, /usr/bin/env) is the image's, never the host's.
var imageDirs = []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// readOnlyMounts are the host paths mounted read-only at their own path: the agentproof
// executable (the init), the request's read-only paths and the agent's program when it
// lies elsewhere than the workspace, those paths and the image's system directories.
// Sorted, each once.
func readOnlyMounts(l *environment.Lease, st state, req environment.LaunchRequest) []string {
	ro := append([]string{st.Executable}, req.ReadOnly...)
	path := req.Spec.Path
	inImage := slices.ContainsFunc(imageDirs, func(d string) bool { return environment.Within(d, path) })
	if !inImage && !environment.Within(l.Workspace, path) && !slices.ContainsFunc(ro, func(r string) bool { return environment.Within(r, path) }) {
		ro = append(ro, path)
	}
	slices.Sort(ro)
	return slices.Compact(ro)
}

// ulimits are the open-file and process limits of a container: 4096 each, or this
// process's hard limit when it is lower. The runtime refuses a value above the limits
// it inherits (podman's defaults are higher than many machines give; on a machine
// with a hard nproc of 96553, 65536 was refused and 4096 taken); the pids cgroup is
// the real process limit.
func ulimits() []string {
	var out []string
	for _, u := range []struct {
		name     string
		resource int
	}{{"nofile", syscall.RLIMIT_NOFILE}, {"nproc", 6 /* RLIMIT_NPROC */}} {
		var lim syscall.Rlimit
		v := uint64(1024)
		if err := syscall.Getrlimit(u.resource, &lim); err == nil {
			v = min(lim.Max, 4096)
		}
		out = append(out, "--ulimit", fmt.Sprintf("%s=%d:%d", u.name, v, v))
	}
	return out
}

// engineProcessEnv is the engine process's environment: the agent's variables (the
// engine hands each to the container by name) and, where the agent sets none, what the
// engine itself needs (engineEnv).
func engineProcessEnv(agentEnv []string) []string {
	env := slices.Clone(agentEnv)
	for _, kv := range engineEnv() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") }) {
			env = append(env, kv)
		}
	}
	return env
}

// launchProblems checks a launch request against its lease: an absolute program and
// an argv, writable binds only in the workspace or on the lease disk, read-only binds
// that exist and cover no writable place, and a working directory in a writable
// place. It returns every problem (none: nil).
func launchProblems(l *environment.Lease, st state, req environment.LaunchRequest) []string {
	spec := req.Spec
	var probs []string
	if !filepath.IsAbs(spec.Path) || len(spec.Args) == 0 {
		probs = append(probs, "spec needs an absolute path and argv")
	}
	writable := []string{l.Workspace}
	for i, b := range req.Binds {
		switch {
		case !filepath.IsAbs(b.Path) || filepath.Clean(b.Path) != b.Path || strings.ContainsAny(b.Path, ":,"):
			probs = append(probs, fmt.Sprintf("binds[%d] %q must be an absolute, clean path without ':' or ','", i, b.Path))
		case b.Write && !environment.Within(l.Workspace, b.Path) && !environment.Within(st.Disk, b.Path):
			probs = append(probs, fmt.Sprintf("binds[%d] %s is writable but outside the workspace and the lease disk %s", i, b.Path, st.Disk))
		case b.At != "" && insidePathProblem("at", b.At) != "":
			probs = append(probs, fmt.Sprintf("binds[%d]: %s", i, insidePathProblem("at", b.At)))
		case b.Write:
			writable = append(writable, b.Path)
		}
	}
	for i, ro := range req.ReadOnly {
		if !filepath.IsAbs(ro) || filepath.Clean(ro) != ro || strings.ContainsAny(ro, ":,") {
			probs = append(probs, fmt.Sprintf("readOnly[%d] %q must be an absolute, clean path without ':' or ','", i, ro))
			continue
		}
		if _, err := os.Stat(ro); err != nil {
			probs = append(probs, fmt.Sprintf("readOnly[%d]: %v", i, err))
		}
		for _, w := range writable {
			if environment.Within(ro, w) {
				probs = append(probs, fmt.Sprintf("readOnly[%d] %s would cover the writable %s", i, ro, w))
			}
		}
	}
	if !slices.ContainsFunc(writable, func(w string) bool { return environment.Within(w, spec.Dir) }) {
		probs = append(probs, fmt.Sprintf("dir %s must be the workspace %s or inside a writable bind", spec.Dir, l.Workspace))
	}
	if st.Engine == EngineDocker && len(spec.ExtraFiles) > 0 {
		probs = append(probs, fmt.Sprintf("%d extra descriptor(s): docker's CLI passes none into a container (podman does)", len(spec.ExtraFiles)))
	}
	if strings.ContainsAny(l.Workspace, ":,") {
		probs = append(probs, fmt.Sprintf("the workspace %s holds ':' or ',', which a volume cannot name", l.Workspace))
	}
	return append(probs, MountProblems(l.WorkspaceMounts, l.Tmpfs)...)
}

// writeEtc writes a launch's /etc/hosts (localhost and the endpoints' names) and an
// empty /etc/resolv.conf (there is no DNS: the reachable names are the allowlist).
func writeEtc(dir string, hosts []string) error {
	files := map[string]string{
		"hosts":       "127.0.0.1 localhost agentproof-container\n" + strings.Join(append(hosts, ""), "\n"),
		"resolv.conf": "# agentproof container: no DNS; reachable names are in /etc/hosts\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// launched is one prepared container launch.
type launched struct {
	spec             worker.Spec
	lease            *environment.Lease
	st               state
	n                int
	name             string
	dir, scratch     string
	statusR, statusW *os.File      // podman's status pipe
	status           *statusSocket // docker's status socket
	// mountPoints are the container paths of the read-only mounts: the engine makes a
	// mount point under /tmp (the scratch's) for one that lies there, which is not the
	// agent's write.
	mountPoints []string
}

func (x *launched) Spec() worker.Spec { return x.spec }

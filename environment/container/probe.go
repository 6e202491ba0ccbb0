package container

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/sandbox"
)

// What a failed check of the container probe needs, in a few words (Check.Needs).
const (
	needsLinux   = "needs Linux"
	needsEngine  = "podman is not installed"
	needsPodman  = "podman is needed (docker's CLI cannot pass the init's descriptors)"
	needsRoot    = "needs root for the container lease (rootless podman is not supported yet)"
	needsStatic  = "the agentproof executable is not static"
	needsTrial   = "a trial container did not run"
	needsVersion = "the container engine does not answer"
)

// Probe checks, on this machine and for real, what a container lease needs: Linux, the
// engine (podman first, docker where podman is missing: which one was found and why it
// cannot serve), its version and OCI runtime, root (the lease disk is a tmpfs mounted on
// the host), a static agentproof executable (the containers' init), and a trial
// container from an empty root file system with the provider's limits, no network and
// the executable as init, which must report its exit over the passed descriptor. It
// takes about as long as one container start; it leaves nothing behind.
func (p *Provider) Probe(ctx context.Context) environment.ProbeReport {
	var checks []environment.Check
	add := func(name string, ok bool, needs, format string, a ...any) {
		if ok {
			needs = ""
		}
		checks = append(checks, environment.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...), Needs: needs})
	}
	if runtime.GOOS != "linux" {
		add("os", false, needsLinux, "%s: the container provider runs Linux containers on this machine", runtime.GOOS)
		return environment.NewProbeReport(environment.ProviderContainer, checks)
	}
	eng := p.opt.Engine
	switch {
	case eng == nil:
		add("engine", false, needsEngine, "neither podman nor docker is on PATH (Debian/Ubuntu: apt-get install podman runc)")
	case eng.Name != EnginePodman:
		add("engine", false, needsPodman, "%s found at %s, but this provider drives podman: docker's CLI has no --preserve-fds for the init's exit report (Debian/Ubuntu: apt-get install podman runc)", eng.Name, eng.Path)
	default:
		v, err := eng.Version(ctx)
		add("engine", err == nil, needsVersion, "%s %s%s", eng, v, errSuffix(err))
	}
	root := os.Geteuid() == 0
	if root {
		add("privileges", true, "", "root: the lease disk is mounted on the host; containers run as uid %d without capabilities", NobodyID)
	} else {
		add("privileges", false, needsRoot, "uid %d: %s", os.Geteuid(), rootlessDetail())
	}
	msg := staticProblem(p.opt.Executable)
	add("executable", msg == "", needsStatic, "%s", firstNonEmpty(msg, p.opt.Executable+" (static: the containers' init, read-only inside)"))
	if eng != nil && eng.Name == EnginePodman && root && msg == "" {
		out, err := p.trial(ctx)
		add("trial", err == nil, needsTrial, "%s", out)
	}
	return environment.NewProbeReport(environment.ProviderContainer, checks)
}

// rootlessDetail says why a normal user gets no container cells — the provider needs
// root (its lease disk is a host mount; rootless podman is not supported yet), the
// same reason run gives — and whether this user has subordinate ids in /etc/subuid,
// which a rootless engine would also need.
func rootlessDetail() string {
	name := os.Getenv("USER")
	data, _ := os.ReadFile("/etc/subuid")
	has := false
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		has = has || (len(f) == 3 && (f[0] == name || f[0] == fmt.Sprint(os.Getuid())))
	}
	sub := "this user also has no subordinate ids in /etc/subuid, which rootless podman would need"
	if has {
		sub = "this user has subordinate ids in /etc/subuid"
	}
	return "the container provider needs root: its lease disk is a host mount and rootless podman is not supported yet (" + sub + "); run agentproof as root for the container cells"
}

// trial runs `agentproof version` as the init's agent in a container of an empty root
// file system, with the launch's limits, user and network, as a launch would.
func (p *Provider) trial(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rootfs, err := os.MkdirTemp("", "agentproof-probe-rootfs-")
	if err != nil {
		return "a trial root file system: " + err.Error(), err
	}
	defer os.RemoveAll(rootfs)
	if err := os.Chmod(rootfs, 0o755); err != nil { // the container user traverses its root
		return "a trial root file system: " + err.Error(), err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return "a status pipe: " + err.Error(), err
	}
	defer r.Close()
	exe := p.opt.Executable
	args := []string{"run", "--rm", "--network", "none", "--cap-drop", "all", "--security-opt", "no-new-privileges",
		"--user", fmt.Sprintf("%d:%d", NobodyID, NobodyID), "--memory", "67108864", "--pids-limit", "32", "--log-driver", "none"}
	args = append(args, ulimits()...)
	args = append(args, "--preserve-fds", "1", "--volume", exe+":"+exe+":ro", "--entrypoint", exe, "--rootfs", rootfs,
		sandbox.InitCommand, "--status-fd", "3", "--pass-fds", "0", "--", exe, "agentproof", "version")
	cmd := exec.CommandContext(ctx, p.opt.Engine.Path, p.opt.Engine.args(args...)...)
	cmd.Env = engineEnv()
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	_ = w.Close()
	took := time.Since(start)
	if err != nil {
		return fmt.Sprintf("a trial container failed: %v: %s", err, strings.TrimSpace(out.String())), err
	}
	rep, err := sandbox.ReadInitStatus(r)
	if err != nil || !rep.Exited || rep.ExitCode != 0 {
		if err == nil {
			err = fmt.Errorf("init reported %+v", rep)
		}
		return "the trial container's init did not report the agent's exit: " + err.Error(), err
	}
	return fmt.Sprintf("a trial container ran (no network, no capability, uid %d, memory and pids limits, init's exit report passed through) in %d ms",
		NobodyID, took.Milliseconds()), nil
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

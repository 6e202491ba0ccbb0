package container

import (
	"bytes"
	"cmp"
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
	"github.com/agentproof/agentproof/worker"
)

// What a failed check of the container probe needs, in a few words (Check.Needs).
const (
	needsLinux   = "needs Linux"
	needsEngine  = "neither podman nor docker is installed"
	needsRoot    = "needs root for the container lease (rootless podman is not supported yet)"
	needsStatic  = "the agentproof executable is not static"
	needsTrial   = "a trial container did not run"
	needsVersion = "the container engine does not answer (docker: is its daemon running?)"
)

// Probe checks, on this machine and for real, what a container lease needs: Linux, the
// engine (podman first, docker where podman is missing: which one it picked and why),
// its version (docker's daemon must answer) and OCI runtime, root (the lease disk is a
// tmpfs mounted on the host), a static agentproof executable (the containers' init),
// and a trial container from an empty root file system with the provider's limits, no
// network and the executable as init, which must report its exit (over the passed
// descriptor with podman, over the status socket with docker). It takes about as long
// as one container start; it leaves nothing behind but docker's empty trial image
// (kept for the next probe).
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
	answers := false
	if eng == nil {
		add("engine", false, needsEngine, "neither podman nor docker is on PATH (Debian/Ubuntu: apt-get install podman runc)")
	} else {
		v, err := eng.Version(ctx)
		answers = err == nil
		add("engine", answers, needsVersion, "%s %s, %s%s", eng, v, engineChoice(*eng), errSuffix(err))
	}
	root := os.Geteuid() == 0
	if root {
		add("privileges", true, "", "root: the lease disk is mounted on the host; containers run as uid %d without capabilities", NobodyID)
	} else {
		add("privileges", false, needsRoot, "uid %d: %s", os.Geteuid(), rootlessDetail())
	}
	msg := staticProblem(p.opt.Executable)
	add("executable", msg == "", needsStatic, "%s", cmp.Or(msg, p.opt.Executable+" (static: the containers' init, read-only inside)"))
	if answers && root && msg == "" {
		out, err := p.trial(ctx)
		add("trial", err == nil, needsTrial, "%s", out)
	}
	return environment.NewProbeReport(environment.ProviderContainer, checks)
}

// engineChoice says why the provider drives eng: podman when it is installed (docker
// beside it is not used), docker where podman is not.
func engineChoice(eng Engine) string {
	_, podman := exec.LookPath("podman")
	_, docker := exec.LookPath("docker")
	switch {
	case eng.Name == EngineDocker && podman != nil:
		return "picked because podman is not installed (docker passes no descriptor: init reports over a status socket)"
	case eng.Name == EngineDocker:
		return "given to the provider although podman, its first choice, is installed (init reports over a status socket)"
	case docker == nil:
		return "picked first (docker is installed too, not used)"
	}
	return "picked first"
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
// file system, with the launch's limits, user and network, as a launch would: podman's
// from a fresh directory (--rootfs), docker's from an empty image imported once and
// kept (docker runs no directory as a root file system).
func (p *Provider) trial(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	eng := *p.opt.Engine
	exe := p.opt.Executable
	args := []string{"run", "--rm", "--network", "none", "--cap-drop", "all", "--security-opt", "no-new-privileges", "--read-only",
		"--user", fmt.Sprintf("%d:%d", NobodyID, NobodyID), "--memory", "67108864", "--pids-limit", "32", "--log-driver", "none"}
	args = append(args, ulimits()...)
	args = append(args, "--volume", exe+":"+exe+":ro", "--entrypoint", exe)
	var status *statusSocket
	var statusR, statusW *os.File
	if eng.Name == EngineDocker {
		img, err := eng.emptyImage(ctx)
		if err != nil {
			return "the trial's empty image: " + err.Error(), err
		}
		if status, err = listenStatus(); err != nil {
			return err.Error(), err
		}
		defer status.close()
		args = append(args, "--volume", status.dir+":"+InitDir+":ro", img.ID, sandbox.InitCommand, "--status-socket", InitDir+"/"+statusSocketName)
	} else {
		rootfs, err := os.MkdirTemp("", "agentproof-probe-rootfs-")
		if err == nil {
			defer os.RemoveAll(rootfs)
			err = os.Chmod(rootfs, 0o755) // the container user traverses its root
		}
		if err != nil {
			return "a trial root file system: " + err.Error(), err
		}
		if statusR, statusW, err = os.Pipe(); err != nil {
			return "a status pipe: " + err.Error(), err
		}
		defer statusR.Close()
		args = append(args, "--preserve-fds", "1", "--rootfs", rootfs, sandbox.InitCommand, "--status-fd", "3")
	}
	args = append(args, "--pass-fds", "0", "--", exe, "agentproof", "version")
	cmd := exec.CommandContext(ctx, eng.Path, eng.args(args...)...)
	cmd.Env = engineEnv()
	if statusW != nil {
		cmd.ExtraFiles = []*os.File{statusW}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	// Forked from the fork thread: the parent-death signal follows the forking
	// thread, which a concurrent sandbox launch may otherwise end mid-probe.
	err := worker.OnForkThread(cmd.Start)
	if err == nil {
		err = cmd.Wait()
	}
	took := time.Since(start)
	if statusW != nil {
		_ = statusW.Close()
	}
	if err != nil {
		return fmt.Sprintf("a trial container failed: %v: %s", err, strings.TrimSpace(out.String())), err
	}
	var rep sandbox.InitStatus
	if status != nil {
		rep, err = status.read()
	} else {
		rep, err = sandbox.ReadInitStatus(statusR)
	}
	if err != nil || !rep.Exited || rep.ExitCode != 0 {
		if err == nil {
			err = fmt.Errorf("init reported %+v", rep)
		}
		return "the trial container's init did not report the agent's exit: " + err.Error(), err
	}
	how := "passed through"
	if status != nil {
		how = "over the status socket"
	}
	return fmt.Sprintf("a trial container ran on %s (no network, no capability, uid %d, read-only root, memory and pids limits, init's exit report %s) in %d ms",
		eng.Name, NobodyID, how, took.Milliseconds()), nil
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/worker"
)

// Probe checks, on this machine and for real, everything a sandbox lease needs:
// Linux, the bubblewrap binary and its version, that a trial sandbox with every
// namespace runs as the sandbox user (for a normal user: whether unprivileged user
// namespaces work), the cgroups (as root: a writable cgroup for each of memory, pids
// and cpu, which hierarchy serves it; for a normal user: the cgroup version and
// whether a cgroup v2 subtree is delegated to them), how a lease is killed, OOM
// detection, that a tmpfs can be mounted (root), and the agentproof executable. Its
// Limits say which declared limits this machine can enforce (a normal user's: cpu,
// memory and pids through a delegated cgroup v2 subtree, never disk). Every failed
// check says what is missing in a few words (Check.Needs: the reason of the cells not
// run here) and in Detail how to get it. A probe takes a few milliseconds; it leaves
// nothing behind.
func (p *Provider) Probe(ctx context.Context) environment.ProbeReport {
	pr := &probe{}
	if runtime.GOOS != "linux" {
		pr.fail("os", needsLinux, "%s: the sandbox provider needs Linux namespaces and cgroups", runtime.GOOS)
		return environment.NewProbeReport(environment.ProviderSandbox, pr.checks)
	}
	var uts syscall.Utsname
	_ = syscall.Uname(&uts)
	pr.pass("kernel", "Linux %s", utsString(uts.Release[:]))
	version := p.probeBwrap(ctx, pr)
	root := os.Geteuid() == 0
	if root {
		pr.pass("privileges", "root: cgroups and the lease disk are set up on the host; agents run as uid %d, gid %d", p.opt.UID, p.opt.GID)
	} else {
		pr.pass("privileges", "uid %d (not root): the rootless sandbox (bubblewrap in a user namespace of its own; agents run as this user, "+
			"the lease disk is a plain directory); an environment declaring a limit this machine cannot enforce (limits below) is not run here", os.Geteuid())
	}
	if version != "" {
		out, err := p.trial(ctx)
		pr.check("namespaces", err == nil, needsUserns, "%s", out)
	}
	var limits []environment.Limit
	if root {
		limits = p.probeCgroups(pr)
	} else {
		limits = probeRootlessCgroups(pr)
	}
	if base, err := hostlease.SocketBase(); err != nil {
		pr.fail("sockets", "no writable directory for the bridge sockets", "%v", err)
	} else {
		pr.pass("sockets", "the bridge sockets in a directory of the lease's own under %s", base)
	}
	if fi, err := os.Stat(p.opt.Executable); err != nil || fi.IsDir() {
		pr.fail("executable", "the agentproof executable is missing", "the agentproof executable %q is missing", p.opt.Executable)
	} else {
		pr.pass("executable", "%s (init and `agentproof mcp` inside)", p.opt.Executable)
	}
	r := environment.NewProbeReport(environment.ProviderSandbox, pr.checks)
	r.Limits = limits
	return r
}

// What a failed check of the sandbox probe needs, in a few words (Check.Needs).
const (
	needsLinux  = "needs Linux"
	needsBwrap  = "bubblewrap is not installed"
	needsBwrap8 = "bubblewrap 0.8 or later is needed"
	needsUserns = "user namespaces are not available"
	needsCgroup = "cannot create the lease's cgroups"
)

// probe collects the checks of one Probe.
type probe struct{ checks []environment.Check }

func (pr *probe) pass(name, format string, a ...any) { pr.check(name, true, "", format, a...) }

func (pr *probe) fail(name, needs, format string, a ...any) {
	pr.check(name, false, needs, format, a...)
}

// check adds a check; needs is kept for a failed one only.
func (pr *probe) check(name string, ok bool, needs, format string, a ...any) {
	if ok {
		needs = ""
	}
	pr.checks = append(pr.checks, environment.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...), Needs: needs})
}

// probeBwrap checks the bubblewrap binary and its version; it returns the version, ""
// when bubblewrap is missing or unusable.
func (p *Provider) probeBwrap(ctx context.Context, pr *probe) string {
	if p.opt.Bwrap == "" {
		pr.fail("bwrap", needsBwrap, "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
		return ""
	}
	v, err := bwrapVersion(ctx, p.opt.Bwrap)
	if err != nil {
		needs := needsBwrap8
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			needs = needsBwrap
		}
		pr.fail("bwrap", needs, "%s: %v (Debian/Ubuntu: apt-get install bubblewrap)", p.opt.Bwrap, err)
		return ""
	}
	ok := versionAtLeast(v, 0, 8)
	pr.check("bwrap", ok, needsBwrap8, "%s, bubblewrap %s%s", p.opt.Bwrap, v, map[bool]string{true: "", false: " (0.8 or later needed for --disable-userns)"}[ok])
	return v
}

// probeCgroups checks, as root, a writable cgroup for each lease controller, how a
// lease is killed, OOM detection and the lease disk's tmpfs; it returns the limits
// root's sandbox enforces here.
func (p *Provider) probeCgroups(pr *probe) []environment.Limit {
	ok := map[string]bool{}
	sys, err := discoverCgroups()
	if err != nil {
		pr.fail("cgroups", needsCgroup, "%v", err)
	} else {
		for _, c := range leaseControllers {
			h := sys.Serve[c]
			if h == nil {
				pr.fail("cgroup "+c, needsCgroup, "no mounted hierarchy serves %s (%s)", c, strings.Join(sys.Notes, "; "))
				continue
			}
			err := probeCgroup(h.ownDir())
			ok[c] = err == nil
			pr.check("cgroup "+c, err == nil, needsCgroup, "cgroup v%d at %s%s", h.Version, h.ownDir(), errSuffix(err))
		}
		if sys.V2 != nil && !p.opt.NoCgroupKill && probeCgroupKill(sys.V2.ownDir()) {
			pr.pass("kill", "cgroup2 cgroup.kill under %s (the whole tree at once), then confirmed empty", sys.V2.ownDir())
		} else {
			pr.pass("kill", "SIGKILL rounds over the lease's cgroup.procs until empty (no cgroup.kill); the pids limit bounds a fork race")
		}
		probeOOM(pr, sys)
	}
	diskErr := probeTmpfs()
	pr.check("disk", diskErr == nil, "cannot mount the lease disk (a tmpfs)", "size-capped tmpfs per lease%s", errSuffix(diskErr))
	return rootLimits(sys, ok, diskErr)
}

// probeOOM checks that an OOM kill in the memory hierarchy of sys can be detected.
func probeOOM(pr *probe, sys cgroupSystem) {
	if h := sys.Serve[ctrlMemory]; h != nil {
		file := "memory.oom_control (oom_kill)"
		ok := h.Version == 2 || strings.Contains(readTrim(filepath.Join(h.ownDir(), "memory.oom_control")), "oom_kill ")
		if h.Version == 2 {
			file = "memory.events (oom_kill)"
		}
		pr.check("oom detection", ok, "cannot detect an out-of-memory kill", "%s", file)
	}
}

// probeRootlessCgroups states, for a normal user, the cgroup facts (version, the
// hierarchies, delegation) and how a launch's processes are reaped without a cgroup;
// it returns the limits this user's sandbox can enforce here (rootlessLimits).
func probeRootlessCgroups(pr *probe) []environment.Limit {
	sys, err := discoverCgroups()
	limits := rootlessLimits(sys, err)
	var facts []string
	switch {
	case err != nil:
		facts = append(facts, "unreadable: "+err.Error())
	case sys.V2 == nil:
		facts = append(facts, "cgroup v1 (no cgroup2 hierarchy mounted): only root creates cgroups, nothing is delegated to uid "+strconv.Itoa(os.Geteuid()))
	case len(sys.V2.Controllers) == 0 && !slices.ContainsFunc(leaseControllers, func(c string) bool { return sys.Serve[c] == sys.V2 }):
		facts = append(facts, fmt.Sprintf("cgroup v1 for cpu, memory and pids (hybrid: the cgroup2 hierarchy at %s serves none of them): only root creates cgroups there, nothing is delegated to uid %d", sys.V2.Mount, os.Geteuid()))
	default:
		del := "not delegated to this user"
		if limits[0].Enforced || limits[1].Enforced || limits[2].Enforced {
			del = "delegated to this user"
		}
		facts = append(facts, fmt.Sprintf("cgroup v2 at %s, own cgroup %s: %s", sys.V2.Mount, sys.V2.Own, del))
	}
	pr.pass("cgroups", "%s; %s", strings.Join(facts, "; "), "a launch's processes are reaped through its PID namespace (init is PID 1: its end kills every process left)")
	return limits
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func utsString(b []int8) string {
	var s []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

// trial runs /usr/bin/true in a sandbox with every namespace, as the sandbox user.
func (p *Provider) trial(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	truePath := "/usr/bin/true"
	args := []string{"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--as-pid-1", "--ro-bind", "/usr", "/usr"}
	for _, d := range topLinks {
		if target, err := os.Readlink(d); err == nil {
			args = append(args, "--symlink", target, d)
		}
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--", truePath)
	cmd := exec.CommandContext(ctx, p.opt.Bwrap, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(p.opt.UID), Gid: uint32(p.opt.GID), Groups: []uint32{}}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	sysctls := usernsSysctls()
	// Forked from the fork thread: the parent-death signal follows the forking
	// thread, which a concurrent sandbox launch may otherwise end mid-probe.
	err := worker.OnForkThread(cmd.Start)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		how := ""
		if os.Geteuid() != 0 {
			how = "; unprivileged user namespaces are needed without root: sysctl user.max_user_namespaces > 0 " +
				"(and kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0 where the kernel has them), or run agentproof as root"
		}
		return fmt.Sprintf("a trial sandbox (user, mount, pid, ipc, uts, net, cgroup namespaces) failed: %v: %s (%s)%s",
			err, strings.TrimSpace(out.String()), sysctls, how), err
	}
	who := "user"
	if os.Geteuid() != 0 {
		who = "unprivileged user"
	}
	return fmt.Sprintf("%s, mount, pid, ipc, uts, net and cgroup namespaces: a trial sandbox ran as uid %d (%s)", who, p.opt.UID, sysctls), nil
}

// usernsSysctls states the kernel settings that allow unprivileged user namespaces
// ("user.max_user_namespaces = 96553", and the Debian and AppArmor switches where the
// kernel has them).
func usernsSysctls() string {
	out := []string{"user.max_user_namespaces = " + readTrim("/proc/sys/user/max_user_namespaces")}
	for _, k := range []string{"kernel/unprivileged_userns_clone", "kernel/apparmor_restrict_unprivileged_userns"} {
		if v := readTrim("/proc/sys/" + k); v != "" {
			out = append(out, strings.ReplaceAll(k, "/", ".")+" = "+v)
		}
	}
	return strings.Join(out, ", ")
}

// probeCgroup creates and removes a child cgroup of dir.
func probeCgroup(dir string) error {
	id, err := environment.NewLeaseID()
	if err != nil {
		return err
	}
	d := filepath.Join(dir, cgroupPrefix+"probe-"+id)
	if err := os.Mkdir(d, 0o755); err != nil {
		return err
	}
	return syscall.Rmdir(d)
}

// probeCgroupKill reports whether a child cgroup of the cgroup2 directory dir has
// cgroup.kill (Linux 5.14 and later).
func probeCgroupKill(dir string) bool {
	id, err := environment.NewLeaseID()
	if err != nil {
		return false
	}
	d := filepath.Join(dir, cgroupPrefix+"probe-"+id)
	if os.Mkdir(d, 0o755) != nil {
		return false
	}
	defer syscall.Rmdir(d)
	return exists(filepath.Join(d, "cgroup.kill"))
}

// probeTmpfs mounts and unmounts a 1 MiB tmpfs in a temporary directory.
func probeTmpfs() error {
	dir, err := os.MkdirTemp("", "agentproof-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := syscall.Mount("agentproof-probe", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m"); err != nil {
		return err
	}
	return syscall.Unmount(dir, 0)
}

// bwrapVersion runs `bwrap --version` and returns the version ("0.8.0").
func bwrapVersion(ctx context.Context, bwrap string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bwrap, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bwrap, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 || f[0] != "bubblewrap" {
		return "", errors.New(bwrap + " --version: unexpected output " + strconv.Quote(strings.TrimSpace(string(out))))
	}
	return f[1], nil
}

// versionAtLeast reports whether a dotted version is ≥ major.minor.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/environment"
)

// Probe checks, on this machine and for real, everything a sandbox lease needs:
// Linux, the bubblewrap binary and its version, root (cgroup limits and the lease
// disk are set up on the host), that a trial sandbox with every namespace runs as the
// sandbox user (for a normal user too: whether unprivileged user namespaces work), a
// writable cgroup for each of memory, pids and cpu (which hierarchy serves it, and
// for a normal user whether a cgroup v2 subtree is delegated to them), how a lease is
// killed (cgroup.kill or SIGKILL rounds), OOM detection, that a tmpfs can be mounted,
// and the agentproof executable. Every failed check says what is missing in a few
// words (Check.Needs: the reason of the cells not run here) and in Detail how to get
// it. A probe takes a few milliseconds; it leaves nothing behind.
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
		pr.fail("privileges", needsRoot, "uid %d: the sandbox needs root on this machine to create cgroup limits and mount the lease disk "+
			"(its agents run unprivileged either way); run agentproof as root for the sandbox cells", os.Geteuid())
	}
	if version != "" {
		out, err := p.trial(ctx)
		pr.check("namespaces", err == nil, needsUserns, "%s", out)
	}
	p.probeCgroups(pr, root)
	if root {
		err := probeTmpfs()
		pr.check("disk", err == nil, "cannot mount the lease disk (a tmpfs)", "size-capped tmpfs per lease%s", errSuffix(err))
	}
	if fi, err := os.Stat(p.opt.Executable); err != nil || fi.IsDir() {
		pr.fail("executable", "the agentproof executable is missing", "the agentproof executable %q is missing", p.opt.Executable)
	} else {
		pr.pass("executable", "%s (init and `agentproof mcp` inside)", p.opt.Executable)
	}
	return environment.NewProbeReport(environment.ProviderSandbox, pr.checks)
}

// What a failed check of the sandbox probe needs, in a few words (Check.Needs).
const (
	needsLinux  = "needs Linux"
	needsBwrap  = "bubblewrap is not installed"
	needsBwrap8 = "bubblewrap 0.8 or later is needed"
	needsRoot   = "needs root for the cgroup limits and the lease disk"
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

// probeCgroups checks a writable cgroup for each lease controller, how a lease is
// killed and OOM detection. Without root it says whether a cgroup v2 subtree is
// delegated to this user (the only way a normal user could get the limits) and that
// the provider uses none.
func (p *Provider) probeCgroups(pr *probe, root bool) {
	sys, err := discoverCgroups()
	if err != nil {
		pr.fail("cgroups", needsCgroup, "%v", err)
		return
	}
	for _, c := range leaseControllers {
		h := sys.Serve[c]
		if h == nil {
			pr.fail("cgroup "+c, needsCgroup, "no mounted hierarchy serves %s (%s)", c, strings.Join(sys.Notes, "; "))
			continue
		}
		where := fmt.Sprintf("cgroup v%d at %s", h.Version, h.ownDir())
		if !root {
			pr.fail("cgroup "+c, needsRoot, "%s: not writable without root (%s)", where, delegation(h))
			continue
		}
		err := probeCgroup(h.ownDir())
		pr.check("cgroup "+c, err == nil, needsCgroup, "%s%s", where, errSuffix(err))
	}
	if sys.V2 != nil && root && !p.opt.NoCgroupKill && probeCgroupKill(sys.V2.ownDir()) {
		pr.pass("kill", "cgroup2 cgroup.kill under %s (the whole tree at once), then confirmed empty", sys.V2.ownDir())
	} else {
		pr.pass("kill", "SIGKILL rounds over the lease's cgroup.procs until empty (no cgroup.kill); the pids limit bounds a fork race")
	}
	if h := sys.Serve[ctrlMemory]; h != nil {
		file := "memory.oom_control (oom_kill)"
		ok := h.Version == 2 || strings.Contains(readTrim(filepath.Join(h.ownDir(), "memory.oom_control")), "oom_kill ")
		if h.Version == 2 {
			file = "memory.events (oom_kill)"
		}
		pr.check("oom detection", ok, "cannot detect an out-of-memory kill", "%s", file)
	}
}

// delegation says, for a normal user, why the hierarchy h serving a lease controller
// gives them no limits: cgroup v1 (only root creates cgroups there), or a cgroup v2
// subtree that is not theirs, or one delegated to them, which the sandbox does not
// use (it also mounts its lease disk on the host, which needs root). The sandbox
// never runs without its limits.
func delegation(h *hierarchy) string {
	const never = "the sandbox never runs without its limits"
	if h.Version == 1 {
		return "cgroup v1: only root creates cgroups there; " + never
	}
	var st syscall.Stat_t
	if syscall.Stat(h.ownDir(), &st) == nil && int(st.Uid) == os.Geteuid() {
		return "this cgroup v2 subtree is delegated to this user, but the sandbox does not use a delegated subtree and mounts its lease disk on the host, which needs root; " + never
	}
	return "this cgroup v2 subtree is not delegated to this user; " + never
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
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("a trial sandbox (user, mount, pid, ipc, uts, net, cgroup namespaces) failed: %v: %s (user.max_user_namespaces = %s)",
			err, strings.TrimSpace(out.String()), readTrim("/proc/sys/user/max_user_namespaces")), err
	}
	return "user, mount, pid, ipc, uts, net and cgroup namespaces: a trial sandbox ran as uid " + strconv.Itoa(p.opt.UID), nil
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

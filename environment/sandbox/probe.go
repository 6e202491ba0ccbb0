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
)

// Probe checks, on this machine and for real, everything a sandbox lease needs:
// Linux, the bubblewrap binary and its version, root (cgroup limits and the lease
// disk are set up on the host), that a trial sandbox with every namespace runs as the
// sandbox user, a writable cgroup for each of memory, pids and cpu (which hierarchy
// serves it), how a lease is killed (cgroup.kill or SIGKILL rounds), OOM detection,
// that a tmpfs can be mounted, and the agentproof executable. A probe takes a few
// milliseconds; it leaves nothing behind.
func (p *Provider) Probe(ctx context.Context) environment.ProbeReport {
	var cs []environment.Check
	add := func(name string, ok bool, format string, a ...any) {
		cs = append(cs, environment.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)})
	}
	if runtime.GOOS != "linux" {
		add("os", false, "%s: the sandbox provider needs Linux namespaces and cgroups", runtime.GOOS)
		return environment.NewProbeReport(environment.ProviderSandbox, cs)
	}
	var uts syscall.Utsname
	_ = syscall.Uname(&uts)
	add("kernel", true, "Linux %s", utsString(uts.Release[:]))

	version := ""
	if p.opt.Bwrap == "" {
		add("bwrap", false, "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
	} else if v, err := bwrapVersion(ctx, p.opt.Bwrap); err != nil {
		add("bwrap", false, "%s: %v", p.opt.Bwrap, err)
	} else {
		version = v
		ok := versionAtLeast(v, 0, 8)
		add("bwrap", ok, "%s, bubblewrap %s%s", p.opt.Bwrap, v, map[bool]string{true: "", false: " (0.8 or later needed for --disable-userns)"}[ok])
	}
	root := os.Geteuid() == 0
	if root {
		add("privileges", true, "root: cgroups and the lease disk are set up on the host; agents run as uid %d, gid %d", p.opt.UID, p.opt.GID)
	} else {
		add("privileges", false, "uid %d: the sandbox needs root on this machine to create cgroup limits and mount the lease disk", os.Geteuid())
	}
	if version != "" {
		out, err := p.trial(ctx)
		add("namespaces", err == nil, "%s", out)
	}
	sys, err := discoverCgroups()
	if err != nil {
		add("cgroups", false, "%v", err)
	} else {
		for _, c := range leaseControllers {
			h := sys.Serve[c]
			if h == nil {
				add("cgroup "+c, false, "no mounted hierarchy serves %s (%s)", c, strings.Join(sys.Notes, "; "))
				continue
			}
			where := fmt.Sprintf("cgroup v%d at %s", h.Version, h.ownDir())
			if !root {
				add("cgroup "+c, false, "%s (not writable without root)", where)
				continue
			}
			err := probeCgroup(h.ownDir())
			add("cgroup "+c, err == nil, "%s%s", where, errSuffix(err))
		}
		if sys.V2 != nil && root && !p.opt.NoCgroupKill && probeCgroupKill(sys.V2.ownDir()) {
			add("kill", true, "cgroup2 cgroup.kill under %s (the whole tree at once), then confirmed empty", sys.V2.ownDir())
		} else {
			add("kill", true, "SIGKILL rounds over the lease's cgroup.procs until empty (no cgroup.kill); the pids limit bounds a fork race")
		}
		if h := sys.Serve[ctrlMemory]; h != nil {
			file := "memory.oom_control (oom_kill)"
			ok := h.Version == 2 || strings.Contains(readTrim(filepath.Join(h.ownDir(), "memory.oom_control")), "oom_kill ")
			if h.Version == 2 {
				file = "memory.events (oom_kill)"
			}
			add("oom detection", ok, "%s", file)
		}
	}
	if root {
		err := probeTmpfs()
		add("disk", err == nil, "size-capped tmpfs per lease%s", errSuffix(err))
	}
	if fi, err := os.Stat(p.opt.Executable); err != nil || fi.IsDir() {
		add("executable", false, "the agentproof executable %q is missing", p.opt.Executable)
	} else {
		add("executable", true, "%s (trampoline, init and `agentproof mcp` inside)", p.opt.Executable)
	}
	return environment.NewProbeReport(environment.ProviderSandbox, cs)
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

// NotRunReason says in a few words why a probe found the sandbox provider unavailable,
// for the cells not run here ("bubblewrap is not installed; needs root for the
// cgroup limits and the lease disk"): one phrase per kind of failed check, in check
// order; "" when r is available.
func NotRunReason(r environment.ProbeReport) string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, c := range r.Checks {
		if c.OK {
			continue
		}
		switch name := c.Name; {
		case name == "os":
			add("needs Linux")
		case name == "bwrap" && (strings.Contains(c.Detail, "not installed") || strings.Contains(c.Detail, "no such file")):
			add("bubblewrap is not installed")
		case name == "bwrap":
			add("bubblewrap 0.8 or later is needed")
		case name == "privileges":
			add("needs root for the cgroup limits and the lease disk")
		case name == "namespaces":
			add("user namespaces are not available")
		case strings.HasPrefix(name, "cgroup") && strings.Contains(c.Detail, "without root"):
			add("needs root for the cgroup limits and the lease disk")
		case strings.HasPrefix(name, "cgroup"):
			add("cannot create the lease's cgroups")
		case name == "disk":
			add("cannot mount the lease disk")
		case name == "executable":
			add("the agentproof executable is missing")
		default:
			add(name + ": " + c.Detail)
		}
	}
	return strings.Join(out, "; ")
}

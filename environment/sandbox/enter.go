package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Exit codes of the hidden sandbox commands when they fail before the agent runs
// (the agent's own exit codes are passed through unchanged).
const (
	// ExitEnterFailed: the trampoline could not join the cgroups, stage the binds, drop
	// privileges or start bubblewrap.
	ExitEnterFailed = 121
	// ExitInitFailed: init could not bring up the bridge or start the agent.
	ExitInitFailed = 122
)

// enterArgs is the trampoline's command line:
//
//	sandbox-enter --uid U --gid G [--cgroup DIR]... [--stage PATH]... -- BWRAP ARGS...
type enterArgs struct {
	uid, gid int
	cgroups  []string
	stage    []string
	argv     []string // bwrap path and its arguments
}

func parseEnter(args []string) (enterArgs, error) {
	e := enterArgs{uid: -1, gid: -1}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			e.argv = args[i+1:]
			break
		}
		if i+1 >= len(args) {
			return e, fmt.Errorf("flag %s needs a value", a)
		}
		v := args[i+1]
		i++
		switch a {
		case "--uid", "--gid":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return e, fmt.Errorf("%s %q is not an id", a, v)
			}
			if a == "--uid" {
				e.uid = n
			} else {
				e.gid = n
			}
		case "--cgroup":
			if !filepath.IsAbs(v) || filepath.Clean(v) != v || !strings.HasPrefix(filepath.Base(v), cgroupPrefix) || !onCgroupFS(v) {
				return e, fmt.Errorf("--cgroup %q is not a lease cgroup (%s* on a cgroup filesystem)", v, cgroupPrefix)
			}
			e.cgroups = append(e.cgroups, v)
		case "--stage":
			if !filepath.IsAbs(v) || filepath.Clean(v) != v {
				return e, fmt.Errorf("--stage %q must be an absolute, clean path", v)
			}
			e.stage = append(e.stage, v)
		default:
			return e, fmt.Errorf("unknown flag %q", a)
		}
	}
	switch {
	case e.uid < 0 || e.gid < 0:
		return e, errors.New("--uid and --gid are required")
	case len(e.argv) == 0 || !filepath.IsAbs(e.argv[0]):
		return e, errors.New("the bubblewrap path after -- must be absolute")
	}
	return e, nil
}

// onCgroupFS reports whether path is on a cgroup or cgroup2 filesystem.
func onCgroupFS(path string) bool {
	const cgroupMagic, cgroup2Magic = 0x27e0eb, 0x63677270
	var st syscall.Statfs_t
	if syscall.Statfs(path, &st) != nil {
		return false
	}
	return st.Type == cgroupMagic || st.Type == cgroup2Magic
}

// RunEnter is the trampoline `agentproof sandbox-enter` (the worker's supervised
// process of a sandbox launch). On the host, as the controller's user, it
//
//  1. moves itself into the lease's cgroups, so bubblewrap and everything it starts
//     are born inside them (cgroup v1 cannot place a child at fork);
//  2. makes a private mount namespace for its own thread and stages every --stage
//     path at /tmp/<i> of a fresh tmpfs there: the sources are opened as root before
//     privileges are dropped, so bubblewrap, running as the sandbox user, can bind
//     directories whose host parents it could not traverse (a 0700 attempt root, the
//     root user's CLI cache). A stage path is opened without following any symbolic
//     link, so an agent cannot turn a workspace directory into a link to a host file
//     between two launches;
//  3. drops to --uid/--gid (no supplementary groups), ignores SIGTERM, SIGINT and
//     SIGHUP (so bubblewrap outlives a stop signal and the agent, which gets it from
//     the process group, has its grace period), sets SIGKILL as its parent-death
//     signal again (a credential change clears it) and
//  4. executes bubblewrap with the remaining arguments and its own environment.
//
// It returns only on failure, with ExitEnterFailed (64 for a malformed command line),
// after writing the reason to stderr.
func RunEnter(args []string, stderr io.Writer) int {
	e, err := parseEnter(args)
	if err != nil {
		fmt.Fprintf(stderr, "agentproof %s: %v\n", EnterCommand, err)
		return 64
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "agentproof %s: %s\n", EnterCommand, fmt.Sprintf(format, a...))
		return ExitEnterFailed
	}
	ppid := os.Getppid()
	if err := joinCgroups(e.cgroups, os.Getpid()); err != nil {
		return fail("%v", err)
	}
	// The namespace, the parent-death signal and execve all belong to this thread.
	runtime.LockOSThread()
	if len(e.stage) > 0 {
		if err := stage(e.stage); err != nil {
			return fail("staging the binds: %v", err)
		}
	}
	if e.uid != os.Geteuid() || e.gid != os.Getegid() {
		if err := syscall.Setgroups([]int{}); err != nil {
			return fail("dropping supplementary groups: %v", err)
		}
		if err := syscall.Setresgid(e.gid, e.gid, e.gid); err != nil {
			return fail("setting gid %d: %v", e.gid, err)
		}
		if err := syscall.Setresuid(e.uid, e.uid, e.uid); err != nil {
			return fail("setting uid %d: %v", e.uid, err)
		}
	}
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	const prSetPdeathsig = 1
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetPdeathsig, uintptr(syscall.SIGKILL), 0); errno != 0 {
		return fail("setting the parent-death signal: %v", errno)
	}
	if os.Getppid() != ppid {
		return fail("the supervising process is gone")
	}
	err = syscall.Exec(e.argv[0], e.argv, os.Environ())
	return fail("executing %s: %v", e.argv[0], err)
}

// stage unshares this thread's mount namespace (private propagation, so nothing
// reaches the host) and binds each path at stageDir/<i> of a new tmpfs.
func stage(paths []string) error {
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		return fmt.Errorf("private mount namespace: %w", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mount propagation: %w", err)
	}
	fds := make([]int, 0, len(paths))
	defer func() {
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
	}()
	for _, p := range paths {
		fd, err := openNoSymlinks(p)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
	}
	if err := syscall.Mount("agentproof-stage", stageDir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=64k,mode=0755"); err != nil {
		return fmt.Errorf("staging tmpfs: %w", err)
	}
	for i, fd := range fds {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return fmt.Errorf("%s: %w", paths[i], err)
		}
		target := filepath.Join(stageDir, strconv.Itoa(i))
		if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			err := os.Mkdir(target, 0o755)
			if err != nil {
				return err
			}
		} else {
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			_ = f.Close()
		}
		if err := syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", paths[i], err)
		}
	}
	return nil
}

// openNoSymlinks opens path as an O_PATH descriptor, walking it one component at a
// time without following any symbolic link (the final component included). Errors
// name the path and the component that is a link.
func openNoSymlinks(path string) (int, error) {
	fd, err := syscall.Open("/", unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if c == "" {
			continue
		}
		next, err := syscall.Openat(fd, c, unix.O_PATH|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		_ = syscall.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("opening %s at %q: %w", path, c, err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(next, &st); err != nil {
			_ = syscall.Close(next)
			return -1, err
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			_ = syscall.Close(next)
			return -1, fmt.Errorf("%s: %q is a symbolic link (stage paths never follow links)", path, c)
		}
		fd = next
	}
	return fd, nil
}

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentproof/agentproof/environment/sandbox/initproc"
)

// ExitInitFailed is init's exit code when it fails before the agent runs: it could
// not join the lease's cgroups, bring up the bridge or start the agent (the agent's
// own exit codes are passed through unchanged).
const ExitInitFailed = initproc.ExitFailed

// RunInit is `agentproof sandbox-init`, the sandbox's PID 1 (initproc.Run): stderr
// gets its failure, the result is its exit code.
func RunInit(args []string, stderr io.Writer) int { return initproc.Run(args, stderr) }

// Counter names of InitStatus.Counters.
const (
	// CounterOOMKills counts the processes the kernel killed at the memory limit.
	CounterOOMKills = initproc.CounterOOMKills
	// CounterForkRefusals counts the forks the pids limit refused.
	CounterForkRefusals = initproc.CounterForkRefusals
)

// fork is the launch's worker.Spec.Fork: on an OS thread of its own (locked, never
// unlocked, so it ends with its goroutine) it
//
//  1. makes a private mount namespace for that thread and stages every bind source
//     at <stage dir>/<i> of a fresh tmpfs there: the sources are opened as root, so
//     bubblewrap, running as the sandbox user, can bind directories whose host
//     parents it could not traverse (a 0700 attempt root, the root user's CLI cache).
//     A source is opened without following any symbolic link, so an agent cannot turn
//     a workspace directory into a link to a host file between two launches;
//  2. forks bubblewrap from that thread (start: the supervisor's fork, with the
//     sandbox user's credentials and SIGKILL as parent-death signal) and moves it
//     into the lease's cgroups, and
//  3. keeps the thread until bubblewrap has exited: the parent-death signal follows
//     the forking thread, not the process, and the staged binds live in its namespace.
//
// bubblewrap runs init, which joins the lease's cgroups before anything of the agent
// runs (RunInit). Errors: staging (the source that failed, a link met) or the fork's.
func (x *launched) fork(start func() (int, error)) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != os.Getpid() {
			x.forkHere(start, done) // returns locked: the thread ends with it
			return
		}
		// The main thread: /proc/self shows its mount namespace, which must stay the
		// host's. Held here, it cannot run the goroutine below, which so gets
		// another thread.
		finished := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			x.forkHere(start, done)
			close(finished)
		}()
		<-finished
		runtime.UnlockOSThread()
	}()
	return <-done
}

// forkHere is fork's work on the current, locked thread (never the main one), which
// it leaves in a private mount namespace: the goroutine must end locked.
func (x *launched) forkHere(start func() (int, error), done chan<- error) {
	if x.stageDir != "" { // rootless: nothing staged, the host's mount namespace kept
		if err := stage(x.stageDir, x.stage); err != nil {
			done <- fmt.Errorf("sandbox launch: staging the binds: %w", err)
			return
		}
		detachSys()
	}
	pid, err := start()
	if err != nil {
		done <- err
		return
	}
	// bubblewrap itself joins the lease's cgroups too, as the process the lease's
	// cleanup kills with the rest (init joins on its own before the agent starts, so
	// nothing depends on this write: a bubblewrap that ended already is no loss).
	for _, f := range x.cgroupFiles {
		_, _ = f.Write([]byte(strconv.Itoa(pid)))
	}
	// Opened before the supervisor can reap it (it waits for done), so the pidfd
	// names bubblewrap, never a later process with the same pid.
	pidfd, perr := unix.PidfdOpen(pid, 0)
	done <- nil
	if perr != nil {
		<-x.released
		return
	}
	waitReadable(pidfd)
	_ = unix.Close(pidfd)
}

// detachSys lazily detaches /sys (with the cgroup hierarchies under it) in this
// thread's private mount namespace (staged: its propagation is private, so nothing
// reaches the host). bubblewrap never reads it, and it reads the whole mount table
// once per mount it makes. Best effort: a mount left costs time, never isolation.
func detachSys() {
	_ = syscall.Unmount("/sys", syscall.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
}

// waitReadable blocks until fd (a pidfd: the process exited) is readable.
func waitReadable(fd int) {
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
		if n > 0 || !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// stopInit is the launch's worker.Spec.Stop: it sends sig (the stop signal) to the
// sandbox's init, bubblewrap's child, which forwards it to the agent's process group;
// bubblewrap itself must outlive it (its death would SIGKILL init through
// --die-with-parent, taking the agent's grace period). Before init runs there is
// nothing to stop gently: the error says so and SIGKILL follows.
func stopInit(pid int, sig syscall.Signal) error {
	child, err := childOf(pid)
	if err != nil {
		return err
	}
	return syscall.Kill(child, sig)
}

// childOf returns the pid of a child of process pid (bubblewrap has one: the
// sandbox's PID 1), found in /proc. Errors: none found, /proc unreadable.
func childOf(pid int) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold anything, so read after its last ')'.
		rest := string(data)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return n, nil
		}
	}
	return 0, fmt.Errorf("process %d has no child yet", pid)
}

// stage unshares this thread's mount namespace (private propagation, so nothing
// reaches the host) and binds each path at dir/<i> of a new tmpfs mounted on dir.
func stage(dir string, paths []string) error {
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
	if err := syscall.Mount("agentproof-stage", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=64k,mode=0755"); err != nil {
		return fmt.Errorf("staging tmpfs: %w", err)
	}
	for i, fd := range fds {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return fmt.Errorf("%s: %w", paths[i], err)
		}
		target := filepath.Join(dir, strconv.Itoa(i))
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

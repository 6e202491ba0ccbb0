package worker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Orphan reaping (docs/processes.md "Reaping"). A process that is a child subreaper
// (PR_SET_CHILD_SUBREAPER) or PID 1 of a PID namespace inherits every orphaned
// descendant; when such an orphan exits it stays a zombie until its new parent waits
// for it. The reaper waits for exactly those zombies and never for a child that
// os/exec started and will wait for itself: a blanket wait4(-1) would steal the exit
// status of an exec.Cmd and make its Wait fail.
//
// How the two are told apart: since Go 1.23, os.StartProcess on Linux creates every
// child with clone(CLONE_PIDFD) and keeps that pidfd open until Process.Wait (or
// Release) has reaped it. So a zombie child of this process for which this process
// holds no pidfd (found in /proc/self/fdinfo, "Pid:") is not os/exec's: it is an
// adopted orphan (or a child someone released), and nobody else will ever wait for
// it. The reaper opens its own pidfd on the zombie first and reaps through that pidfd
// (waitid P_PIDFD), so it can only ever reap the very process it checked, never a
// newer process that reuses the pid. BecomeSubreaper verifies at start that the Go
// runtime really holds pidfds for its children (a probe child); if it does not, the
// reaper is not started and the error says so.

// reapPoll is how often the reaper looks for zombies when no SIGCHLD arrived (a
// backstop: signals of exits that happen together are merged).
const reapPoll = time.Second

// Reaper reaps the orphans adopted by this process. There is at most one per process
// (BecomeSubreaper); it runs until the process exits.
type Reaper struct {
	reaped atomic.Int64
	kick   chan struct{}
}

var (
	reaperOnce sync.Once
	reaper     atomic.Pointer[Reaper]
	reaperErr  error
)

// BecomeSubreaper makes this process a child subreaper (prctl PR_SET_CHILD_SUBREAPER):
// orphaned descendants are re-parented to it instead of to init. It then starts the
// process's one reaper goroutine, which reaps every adopted orphan as it exits (on
// SIGCHLD, and every reapPoll as a backstop) without touching the children os/exec
// waits for. Calling it again returns the same Reaper and error. Errors: the prctl
// failed, or the Go runtime holds no pidfd for its children (then orphans are not
// reaped: telling them from exec.Cmd children would be guesswork).
func BecomeSubreaper() (*Reaper, error) {
	reaperOnce.Do(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			reaperErr = fmt.Errorf("becoming a child subreaper: %w", err)
			return
		}
		if err := probePidfdChildren(); err != nil {
			reaperErr = fmt.Errorf("orphans are not reaped: %w", err)
			return
		}
		r := &Reaper{kick: make(chan struct{}, 1)}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGCHLD)
		go r.loop(sig)
		reaper.Store(r)
	})
	return reaper.Load(), reaperErr
}

// Reaped returns how many orphans the reaper has reaped so far.
func (r *Reaper) Reaped() int64 {
	if r == nil {
		return 0
	}
	return r.reaped.Load()
}

// Kick makes the reaper look for zombies now (after a sweep killed adopted processes).
// A nil Reaper ignores it.
func (r *Reaper) Kick() {
	if r == nil {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// kickReaper kicks the process's reaper, if there is one.
func kickReaper() { reaper.Load().Kick() }

func (r *Reaper) loop(sig <-chan os.Signal) {
	t := time.NewTicker(reapPoll)
	defer t.Stop()
	for {
		select {
		case <-sig:
		case <-r.kick:
		case <-t.C:
		}
		r.reaped.Add(int64(reapAdopted()))
	}
}

// reapAdopted reaps every zombie child of this process that os/exec does not own and
// returns how many it reaped. When no child of this process is a zombie (anyZombie)
// it reads nothing of /proc.
func reapAdopted() int {
	if !anyZombie() {
		return 0
	}
	self := os.Getpid()
	var zombies []int
	for _, pid := range childPIDs() {
		if state, ppid, ok := procState(pid); ok && state == 'Z' && ppid == self {
			zombies = append(zombies, pid)
		}
	}
	if len(zombies) == 0 {
		return 0
	}
	// Our own pidfds first: each pins the process we checked (a reused pid is another
	// process, which a pidfd never refers to).
	mine := map[int]int{} // pid → our pidfd
	for _, pid := range zombies {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			mine[pid] = fd
		}
	}
	ours := map[int]bool{}
	for _, fd := range mine {
		ours[fd] = true
	}
	held := heldPidfds(ours)
	n := 0
	for pid, fd := range mine {
		if !held[pid] {
			// Not an os/exec child (os/exec holds its pidfd until it has reaped it):
			// an adopted orphan. A child os/exec reaped meanwhile gives ECHILD here.
			var info unix.Siginfo
			for {
				err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
				if err == unix.EINTR {
					continue
				}
				if err == nil && info.Signo != 0 {
					n++
				}
				break
			}
		}
		_ = unix.Close(fd)
	}
	return n
}

// anyZombie reports whether some child of this process (of any of its threads) has
// exited and not been waited for: waitid(P_ALL, WEXITED|WNOHANG|WNOWAIT) reports one
// without reaping it, so the exit status stays for whoever waits for it (os/exec, or
// the reaper's pidfd wait). No child at all (ECHILD) is false; any other error is true,
// so that the reaper looks rather than misses an orphan.
func anyZombie() bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		switch err {
		case unix.EINTR:
			continue
		case unix.ECHILD:
			return false
		case nil:
			return info.Signo != 0
		default:
			return true
		}
	}
}

// childPIDs lists this process's children (every thread's /proc children list: the
// thread that forked a child, or the one an orphan was handed to, is its parent).
func childPIDs() []int {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(s); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// procState reads the state letter and parent pid of pid from /proc/<pid>/stat.
func procState(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	f, ok := statFields(b)
	if !ok || len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0][0], ppid, err == nil
}

// statFields returns the fields of a /proc/<pid>/stat line after the command name
// (which may hold spaces and parentheses): state, ppid, pgrp, session, …
func statFields(b []byte) ([]string, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

// heldPidfds returns the pids of the pidfds this process holds open, except the file
// descriptors in skip.
func heldPidfds(skip map[int]bool) map[int]bool {
	out := map[int]bool{}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return out
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || skip[fd] {
			continue
		}
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || !strings.Contains(link, "pidfd") {
			continue
		}
		if pid, ok := pidfdPID("/proc/self/fdinfo/" + e.Name()); ok {
			out[pid] = true
		}
	}
	return out
}

// pidfdPID reads the "Pid:" line of a pidfd's fdinfo.
func pidfdPID(fdinfo string) (int, bool) {
	b, err := os.ReadFile(fdinfo)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			return pid, err == nil && pid > 0
		}
	}
	return 0, false
}

// probePidfdChildren starts a short-lived child through os/exec and checks that this
// process holds a pidfd for it until it is waited for: the property the reaper's
// distinction rests on.
func probePidfdChildren() error {
	var prog string
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			prog = p
			break
		}
	}
	if prog == "" {
		return errors.New("no /bin/true to check that the Go runtime holds pidfds for its children")
	}
	cmd := &exec.Cmd{Path: prog, Args: []string{"true"}, Env: []string{}}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("checking that the Go runtime holds pidfds for its children: %w", err)
	}
	held := heldPidfds(nil)[cmd.Process.Pid]
	_ = cmd.Wait()
	if !held {
		return errors.New("the Go runtime holds no pidfd for its children (kernel without pidfd support?), so adopted orphans cannot be told from exec.Cmd children")
	}
	return nil
}

// GroupAlive reports whether process group pgid has a member that is not a zombie.
// A zombie is dead and only waits for its parent (or, once orphaned, for PID 1, which
// may reap on a timer of its own) to collect it, so it keeps kill(-pgid, 0) succeeding
// without being a survivor. The fast path is that signal 0 finds no member at all.
func GroupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		f, ok := statFields(b)
		if !ok || len(f) < 3 || f[2] != want {
			continue
		}
		if f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

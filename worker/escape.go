package worker

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Escaped descendants (docs/processes.md "Escaped descendants"). A process group
// reaches the children that stay in it; a descendant that calls setsid or setpgid
// leaves it and outlives every kill(-pgid). In the local environment such escapers are
// found by a marker: Supervise puts MarkerVar into the environment of a process whose
// Spec has a Marker, every descendant inherits it, and after the process ended
// SweepMarked scans /proc/*/environ for the marker and kills what it finds. A
// descendant that scrubs its environment before exec escapes this scan; a cgroup
// (the sandbox environment) is the mechanism that catches those too.

// MarkerVar is the environment variable that carries a supervised process's markers:
// a comma-separated list of tokens (NewMarker), the process's own first.
const MarkerVar = "AGENTPROOF_PROCESS_MARKER"

// markerRE is the grammar of one marker token.
var markerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{7,63}$`) })

// NewMarker returns a fresh random marker token: "apm-" and 32 hex digits.
func NewMarker() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return "apm-" + hex.EncodeToString(b)
}

// ValidMarker reports whether s is a well-formed marker token (8–64 characters of
// [a-z0-9-], starting with a letter or digit).
func ValidMarker(s string) bool { return markerRE().MatchString(s) }

// EscapedProcess is one process found carrying a marker after the process it descends
// from ended: PID (in this process's PID namespace), Command (its /proc comm name, at
// most 15 bytes: never its arguments or environment) and Killed (SIGKILL was delivered
// and its exit confirmed within the sweep's confirmation time).
type EscapedProcess struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Killed  bool   `json:"killed"`
}

// sweepRounds bounds how often SweepMarked rescans: a process forking as fast as it is
// killed cannot keep the sweep busy forever.
const sweepRounds = 8

// SweepConfirm is how long SweepMarked waits for the exit of the processes it killed.
const SweepConfirm = 2 * time.Second

// SweepMarked finds every process other than this one whose environment carries
// marker in MarkerVar, kills it with SIGKILL (through a pidfd opened before the marker
// is checked, so a pid reused meanwhile is never signalled), waits up to confirm for
// the exits, and rescans until a scan finds nothing new (at most sweepRounds scans).
// It returns every process found, sorted by pid; Killed is false for one whose exit
// was not confirmed. Zombies are not found (a zombie has no environment: it is dead
// already). The caller's reaper, if any, is kicked to reap the adopted ones. Errors:
// an invalid marker, /proc not readable; a process that vanishes mid-scan is not one.
func SweepMarked(marker string, confirm time.Duration) ([]EscapedProcess, error) {
	if !ValidMarker(marker) {
		return nil, fmt.Errorf("worker: invalid process marker %q", clipText(marker, 80))
	}
	return sweep(marker, nil, confirm)
}

// SweepMarkedExcept is SweepMarked for a caller that already accounts for some of the
// marked processes: skip(pid, pgid) true leaves a found process out of the result (it
// is killed and its exit awaited all the same). The ACP driver uses it for the
// descendants it snapshotted and killed itself (its agent's own children, such as the
// MCP server an adapter starts in a group of its own, still exiting): those are not
// escapes. Errors: as SweepMarked.
func SweepMarkedExcept(marker string, skip func(pid, pgid int) bool, confirm time.Duration) ([]EscapedProcess, error) {
	if !ValidMarker(marker) {
		return nil, fmt.Errorf("worker: invalid process marker %q", clipText(marker, 80))
	}
	return sweep(marker, skip, confirm)
}

// sweep is SweepMarked; skip(pid, pgid) true leaves a found process out of the result
// (it is killed all the same).
func sweep(marker string, skip func(pid, pgid int) bool, confirm time.Duration) ([]EscapedProcess, error) {
	found := map[int]*EscapedProcess{}
	defer kickReaper()
	for round := 0; round < sweepRounds; round++ {
		procs, err := markedProcesses(marker)
		if err != nil {
			return sorted(found), err
		}
		fresh := map[int]int{} // pidfd → pid of the processes killed this round
		for _, p := range procs {
			// The pidfd pins the process; the marker is checked again through it.
			fd, err := unix.PidfdOpen(p.pid, 0)
			if err != nil {
				continue // gone
			}
			if !carriesMarker(p.pid, marker) {
				_ = unix.Close(fd)
				continue
			}
			if (skip == nil || !skip(p.pid, p.pgid)) && found[p.pid] == nil {
				found[p.pid] = &EscapedProcess{PID: p.pid, Command: p.comm}
			}
			if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
				_ = unix.Close(fd)
				continue
			}
			fresh[fd] = p.pid
		}
		if len(fresh) == 0 {
			break
		}
		confirmed := waitPidfds(slices.Collect(maps.Keys(fresh)), confirm)
		for fd, pid := range fresh {
			if e := found[pid]; e != nil && confirmed[fd] {
				e.Killed = true
			}
			_ = unix.Close(fd)
		}
	}
	return sorted(found), nil
}

func sorted(m map[int]*EscapedProcess) []EscapedProcess {
	out := make([]EscapedProcess, 0, len(m))
	for _, e := range m {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b EscapedProcess) int { return a.PID - b.PID })
	return out
}

// waitPidfds polls fds until each is readable (its process exited) or d passes, and
// returns the fds whose exit was seen.
func waitPidfds(fds []int, d time.Duration) map[int]bool {
	done := map[int]bool{}
	deadline := time.Now().Add(d)
	for len(done) < len(fds) {
		var pfds []unix.PollFd
		for _, fd := range fds {
			if !done[fd] {
				pfds = append(pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		n, err := unix.Poll(pfds, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		for _, p := range pfds {
			if p.Revents != 0 {
				done[int(p.Fd)] = true
			}
		}
	}
	return done
}

// markedProcess is one /proc entry whose environment carries a marker.
type markedProcess struct {
	pid, pgid int
	comm      string
}

// markedProcesses scans /proc for live processes (not this one) carrying marker. It
// reads /proc's names unsorted (a sweep runs at the end of every run and attempt, and
// every process's environment is read: the common case is none matching).
func markedProcesses(marker string) ([]markedProcess, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("worker: scanning /proc for marked processes: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("worker: scanning /proc for marked processes: %w", err)
	}
	self := os.Getpid()
	buf := environBuf.Get().(*[]byte)
	defer environBuf.Put(buf)
	var out []markedProcess
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		if !carriesMarkerBuf(pid, marker, buf) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", name, "stat"))
		if err != nil {
			continue
		}
		f, ok := statFields(b)
		if !ok || len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pgid, _ := strconv.Atoi(f[2])
		comm, _ := os.ReadFile(filepath.Join("/proc", name, "comm"))
		out = append(out, markedProcess{pid: pid, pgid: pgid, comm: strings.TrimSpace(string(comm))})
	}
	return out, nil
}

// carriesMarker reports whether the environment of pid holds MarkerVar with marker
// among its tokens. An unreadable environment (a process of another user, a kernel
// thread, a zombie) carries nothing.
func carriesMarker(pid int, marker string) bool {
	buf := environBuf.Get().(*[]byte)
	defer environBuf.Put(buf)
	return carriesMarkerBuf(pid, marker, buf)
}

// environBuf holds buffers for reading /proc/<pid>/environ (*[]byte, grown as needed).
var environBuf = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// carriesMarkerBuf is carriesMarker reading the environment into *buf (raw open, read
// and close: no stat, no new buffer per process).
func carriesMarkerBuf(pid int, marker string, buf *[]byte) bool {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/environ", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	env := (*buf)[:0]
	for {
		if len(env) == cap(env) {
			env = append(env, 0)[:len(env)]
		}
		n, err := unix.Read(fd, env[len(env):cap(env)])
		if n <= 0 || err != nil {
			break
		}
		env = env[:len(env)+n]
	}
	unix.Close(fd)
	*buf = env
	if !bytes.Contains(env, []byte(marker)) {
		return false
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		v, ok := bytes.CutPrefix(kv, []byte(MarkerVar+"="))
		if !ok {
			continue
		}
		for tok := range bytes.SplitSeq(v, []byte{','}) {
			if string(tok) == marker {
				return true
			}
		}
	}
	return false
}

// markerEnv is the MarkerVar entry of a process with markers (own first), or "".
func markerEnv(own string, extra []string) string {
	if own == "" {
		return ""
	}
	return MarkerVar + "=" + strings.Join(append([]string{own}, extra...), ",")
}

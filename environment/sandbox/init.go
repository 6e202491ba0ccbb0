package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/agentproof/agentproof/worker"
)

// initArgs is init's command line:
//
//	sandbox-init --status-fd N --pass-fds K [--cgroup-fd FD]... [--counters] [--listen ADDR=SOCKET]... -- PATH ARGV0 ARGS...
type initArgs struct {
	statusFD, passFDs int
	cgroupFDs         []int
	counters          bool
	listens           []initListen
	path              string
	argv              []string
}

type initListen struct {
	name, addr, socket string
}

func parseInit(args []string) (initArgs, error) {
	a := initArgs{statusFD: -1, passFDs: -1}
	for i := 0; i < len(args); i++ {
		f := args[i]
		if f == "--" {
			rest := args[i+1:]
			if len(rest) < 2 || !filepath.IsAbs(rest[0]) {
				return a, errors.New("after -- come the agent's absolute path and its argv (argv[0] included)")
			}
			a.path, a.argv = rest[0], rest[1:]
			break
		}
		if f == "--counters" {
			a.counters = true
			continue
		}
		if i+1 >= len(args) {
			return a, fmt.Errorf("flag %s needs a value", f)
		}
		v := args[i+1]
		i++
		switch f {
		case "--status-fd", "--pass-fds":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 64 {
				return a, fmt.Errorf("%s %q is not a small number", f, v)
			}
			if f == "--status-fd" {
				a.statusFD = n
			} else {
				a.passFDs = n
			}
		case "--cgroup-fd":
			n, err := strconv.Atoi(v)
			if err != nil || n < 4 || n > 128 {
				return a, fmt.Errorf("--cgroup-fd %q is not a descriptor after the status fd", v)
			}
			a.cgroupFDs = append(a.cgroupFDs, n)
		case "--listen":
			addr, sock, ok := strings.Cut(v, "=")
			host, _, err := net.SplitHostPort(addr)
			ip := net.ParseIP(host)
			if !ok || err != nil || ip == nil || !ip.IsLoopback() || ip.To4() == nil || !strings.HasPrefix(sock, BridgeDir+"/") || !strings.HasSuffix(sock, ".sock") {
				return a, fmt.Errorf("--listen %q must be <loopback IPv4>:<port>=%s/<name>.sock", v, BridgeDir)
			}
			a.listens = append(a.listens, initListen{name: strings.TrimSuffix(filepath.Base(sock), ".sock"), addr: addr, socket: sock})
		default:
			return a, fmt.Errorf("unknown flag %q", f)
		}
	}
	switch {
	case a.path == "":
		return a, errors.New("the agent's command is missing (after --)")
	case a.statusFD < 3 || a.passFDs < 0 || a.statusFD != 3+a.passFDs:
		return a, fmt.Errorf("--status-fd must be 3 + --pass-fds (got %d and %d)", a.statusFD, a.passFDs)
	}
	for _, fd := range a.cgroupFDs {
		if fd <= a.statusFD {
			return a, fmt.Errorf("--cgroup-fd %d must come after the status fd %d", fd, a.statusFD)
		}
	}
	return a, nil
}

// RunInit is `agentproof sandbox-init`, PID 1 of a sandbox (started by bubblewrap with
// --as-pid-1, as the sandbox user, without capabilities). It
//
//  0. moves itself into the lease's cgroups by writing 0 to each --cgroup-fd (the
//     lease's cgroup.procs files, opened for writing by the controller, which the
//     sandbox cannot reach otherwise), so the agent and everything it starts are born
//     inside them, and closes them;
//  1. makes itself not dumpable and closes every inherited descriptor but stdio, the --pass-fds descriptors (fds
//     3…, the worker's extra files) and the status fd, so the agent can reach nothing
//     of the host through one;
//  2. checks that loopback is up in its network namespace (bringing it up when it is
//     down and it may);
//  3. listens on every --listen address and carries each connection over the bridge
//     socket bound at BridgeDir to the host, where the lease owner's Bridge dials the
//     allowlisted endpoint (package doc; docs/environments.md "Network");
//  4. starts the agent in its own process group with init's environment and the
//     passed descriptors, forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and
//     SIGUSR2 to that group, and reaps every process that ends (orphans included);
//  5. when the agent ends, writes its exit report (JSON, initStatus) on the status fd
//     and exits with the agent's exit code, or 128+signal when a signal ended it. The
//     kernel then kills whatever is left in the PID namespace.
//
// Failures before the agent runs exit ExitInitFailed (64 for a malformed command
// line; 127 when the agent's program does not exist, 126 when it cannot be run), with
// the reason in the report and on stderr.
func RunInit(args []string, stderr io.Writer) int {
	a, err := parseInit(args)
	if err != nil {
		fmt.Fprintf(stderr, "agentproof %s: %v\n", InitCommand, err)
		return 64
	}
	// Not dumpable: the agent (the same user) can neither ptrace init nor open its
	// descriptors through /proc/1/fd.
	const prSetDumpable = 4
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	status := os.NewFile(uintptr(a.statusFD), "status")
	rep := initStatus{Schema: initStatusSchema}
	finish := func(code int) int {
		if rep.Error != "" {
			fmt.Fprintf(stderr, "agentproof %s: %s\n", InitCommand, rep.Error)
		}
		if data, err := json.Marshal(rep); err == nil {
			_, _ = status.Write(data)
		}
		_ = status.Close()
		return code
	}
	cgErr := joinLeaseCgroups(a.cgroupFDs)
	closeStrayFDs(3+a.passFDs, a.statusFD)
	syscall.CloseOnExec(a.statusFD)
	if cgErr != nil {
		rep.Error = cgErr.Error()
		return finish(ExitInitFailed)
	}
	if err := loopbackUp(); err != nil {
		rep.Error = err.Error()
		return finish(ExitInitFailed)
	}
	br, err := startInsideBridge(a.listens)
	if err != nil {
		rep.Error = err.Error()
		return finish(ExitInitFailed)
	}
	defer br.close()
	sigs := make(chan os.Signal, 16)
	forwarded := []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}
	signal.Notify(sigs, forwarded...)
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i := range a.passFDs {
		files = append(files, os.NewFile(uintptr(3+i), "pass"))
	}
	proc, err := os.StartProcess(a.path, a.argv, &os.ProcAttr{Env: os.Environ(), Files: files, Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		rep.Error = fmt.Sprintf("starting the agent %s: %v", a.path, err)
		code := 126
		if errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return finish(code)
	}
	rep.PID = proc.Pid
	go func(pgid int) {
		for s := range sigs {
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(-pgid, sig)
			}
		}
	}(proc.Pid)
	code := reapUntil(proc.Pid, &rep)
	rep.Connections = br.counts()
	if a.counters {
		rep.Counters = ownCgroupCounters()
	}
	return finish(code)
}

// joinLeaseCgroups moves this process into the cgroup of each fd (a cgroup.procs file
// open for writing: "0" names the writer) and closes them all. Errors name the fd.
func joinLeaseCgroups(fds []int) error {
	var first error
	for _, fd := range fds {
		if _, err := syscall.Write(fd, []byte("0")); err != nil && first == nil {
			first = fmt.Errorf("joining the lease cgroup of fd %d: %w", fd, err)
		}
		_ = syscall.Close(fd)
	}
	return first
}

// reapUntil reaps every child that ends until pid does, records pid's end in rep and
// returns init's exit code for it.
func reapUntil(pid int, rep *initStatus) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			rep.Error = "waiting for the agent: " + err.Error()
			return ExitInitFailed
		}
		if got != pid {
			continue // an orphan: reaped, nothing more
		}
		rep.Exited = true
		switch {
		case ws.Exited():
			rep.ExitCode = ws.ExitStatus()
			return rep.ExitCode
		case ws.Signaled():
			rep.Signal = worker.SignalName(ws.Signal())
			rep.ExitCode = 128 + int(ws.Signal())
			return rep.ExitCode
		}
	}
}

// closeStrayFDs closes every open descriptor ≥ first except keep (they would give the
// agent handles on host objects: an inherited directory is a way out of any mount
// namespace).
func closeStrayFDs(first, keep int) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	var fds []int
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first && fd != keep {
			fds = append(fds, fd)
		}
	}
	for _, fd := range fds {
		// The directory listing's own descriptor is closed by ReadDir already; closing
		// an fd the Go runtime owns (its epoll, its pipes) would break it, so only
		// descriptors that are not close-on-exec — inherited ones — are closed.
		if flags, err := fcntl(fd, syscall.F_GETFD); err == nil && flags&syscall.FD_CLOEXEC == 0 {
			_ = syscall.Close(fd)
		}
	}
}

func fcntl(fd, cmd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// loopbackUp checks that lo is up, and tries to bring it up when it is not (bubblewrap
// normally has, before it dropped the capability to).
func loopbackUp() error {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return fmt.Errorf("no loopback interface in the sandbox: %w", err)
	}
	if lo.Flags&net.FlagUp != 0 {
		return nil
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback is down: %w", err)
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [16]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return fmt.Errorf("loopback is down: %w", e)
	}
	ifr.flags |= syscall.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return fmt.Errorf("loopback is down and cannot be brought up: %w", e)
	}
	return nil
}

// maxBridgeConns bounds the connections one endpoint carries at once (in the sandbox
// and on the host), so that an agent cannot exhaust descriptors through the bridge.
const maxBridgeConns = 256

// insideBridge is init's side of the bridge: one TCP listener per endpoint.
type insideBridge struct {
	lns   []net.Listener
	names []string
	n     []atomic.Int64
	wg    sync.WaitGroup
}

func startInsideBridge(ls []initListen) (*insideBridge, error) {
	b := &insideBridge{n: make([]atomic.Int64, len(ls))}
	for _, l := range ls {
		ln, err := net.Listen("tcp4", l.addr)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("bridge endpoint %s: %w", l.name, err)
		}
		b.lns = append(b.lns, ln)
		b.names = append(b.names, l.name)
	}
	for i, ln := range b.lns {
		sock := ls[i].socket
		b.wg.Go(func() {
			sem := make(chan struct{}, maxBridgeConns)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				select {
				case sem <- struct{}{}:
				default:
					_ = c.Close() // over the bound: refused
					continue
				}
				b.n[i].Add(1)
				go func() {
					defer func() { <-sem }()
					u, err := net.Dial("unix", sock)
					if err != nil {
						_ = c.Close()
						return
					}
					splice(c, u)
				}()
			}
		})
	}
	return b, nil
}

func (b *insideBridge) counts() map[string]int64 {
	out := map[string]int64{}
	for i, name := range b.names {
		out[name] = b.n[i].Load()
	}
	return out
}

func (b *insideBridge) close() {
	for _, ln := range b.lns {
		_ = ln.Close()
	}
}

// splice copies both ways between a and b until both directions ended, passing each
// end-of-stream on as a half close, then closes both.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	one := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go one(a, b)
	go one(b, a)
	wg.Wait()
	_ = a.Close()
	_ = b.Close()
}

// Package initproc is `agentproof sandbox-init`, PID 1 of every sandbox (and of every
// container launch: package environment/container): Run, its command line, and its
// exit report (Status).
//
// It starts once per launch, so its start-up is part of every sandbox attempt's cost.
// It therefore imports only the standard library's low-level packages (os, os/signal,
// syscall, strings, strconv, net/netip, io, sync) and the leaf signame — neither fmt,
// encoding/json, reflect nor net — so that internal/earlycmd, which imports nothing
// else, runs it before Go initialises the rest of agentproof's packages (the order of
// package initialisation: docs/ARCHITECTURE.md). Its exit report is written by hand
// (Status.AppendJSON, checked against encoding/json by its tests) and its bridge uses
// sockets through the runtime's poller (bridge.go).
package initproc

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/agentproof/agentproof/signame"
)

// Command is the hidden agentproof command that runs Run.
const Command = "sandbox-init"

// ExitFailed is init's exit code when it fails before the agent runs: it could not
// join the lease's cgroups, bring up the bridge or start the agent (the agent's own
// exit codes are passed through unchanged).
const ExitFailed = 122

// BridgeDir is where the lease's bridge sockets are mounted inside the sandbox.
const BridgeDir = "/run/agentproof/bridge"

// args is init's command line:
//
//	sandbox-init (--status-fd N | --status-socket PATH) --pass-fds K [--cgroup-fd FD]... [--counters] [--listen ADDR=SOCKET]... -- PATH ARGV0 ARGS...
//
// --status-socket is for an engine that passes no descriptor into its container
// (docker): init connects to the unix socket PATH before the agent exists, and the
// host side, which accepts exactly one connection, reads the report there.
type args struct {
	statusFD, passFDs int
	statusSocket      string
	cgroupFDs         []int
	counters          bool
	listens           []listen
	path              string
	argv              []string
}

type listen struct {
	name, socket string
	addr         addrPort
}

func parse(argv []string) (args, error) {
	a := args{statusFD: -1, passFDs: -1}
	for i := 0; i < len(argv); i++ {
		f := argv[i]
		if f == "--" {
			rest := argv[i+1:]
			if len(rest) < 2 || !hasPrefix(rest[0], "/") {
				return a, errors.New("after -- come the agent's absolute path and its argv (argv[0] included)")
			}
			a.path, a.argv = rest[0], rest[1:]
			break
		}
		if f == "--counters" {
			a.counters = true
			continue
		}
		if i+1 >= len(argv) {
			return a, errors.New("flag " + f + " needs a value")
		}
		v := argv[i+1]
		i++
		if err := a.flag(f, v); err != nil {
			return a, err
		}
	}
	return a, a.check()
}

// check says what is missing or inconsistent in a parsed command line: the agent's
// command, one status (a descriptor right after the passed ones, or a socket) and
// cgroup descriptors after them all.
func (a args) check() error {
	switch {
	case a.path == "":
		return errors.New("the agent's command is missing (after --)")
	case a.statusSocket != "" && (a.statusFD != -1 || a.passFDs < 0):
		return errors.New("--status-socket comes instead of --status-fd, with --pass-fds")
	case a.statusSocket == "" && (a.statusFD < 3 || a.passFDs < 0 || a.statusFD != 3+a.passFDs):
		return errors.New("--status-fd must be 3 + --pass-fds (got " + strconv.Itoa(a.statusFD) + " and " + strconv.Itoa(a.passFDs) + ")")
	}
	last := max(a.statusFD, 2+a.passFDs)
	for _, fd := range a.cgroupFDs {
		if fd <= last {
			return errors.New("--cgroup-fd " + strconv.Itoa(fd) + " must come after the status and passed descriptors (up to " + strconv.Itoa(last) + ")")
		}
	}
	return nil
}

// flag records flag f with value v.
func (a *args) flag(f, v string) error {
	switch f {
	case "--status-fd", "--pass-fds":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 64 {
			return errors.New(f + " " + strconv.Quote(v) + " is not a small number")
		}
		if f == "--status-fd" {
			a.statusFD = n
		} else {
			a.passFDs = n
		}
	case "--cgroup-fd":
		n, err := strconv.Atoi(v)
		if err != nil || n < 4 || n > 128 {
			return errors.New("--cgroup-fd " + strconv.Quote(v) + " is not a descriptor after the status fd")
		}
		a.cgroupFDs = append(a.cgroupFDs, n)
	case "--status-socket":
		if !hasPrefix(v, "/") || !hasSuffix(v, ".sock") || !cleanPath(v) {
			return errors.New("--status-socket " + strconv.Quote(v) + " must be an absolute, clean path of a .sock file")
		}
		a.statusSocket = v
	case "--listen":
		addr, sock, ok := cut(v, '=')
		ap, err := parseAddrPort(addr)
		base, _, deeper := cut(sock[min(len(sock), len(BridgeDir)+1):], '/')
		if !ok || err != nil || ap.ip[0] != 127 || !hasPrefix(sock, BridgeDir+"/") || deeper ||
			!hasSuffix(base, ".sock") || base == ".sock" {
			return errors.New("--listen " + strconv.Quote(v) + " must be <loopback IPv4>:<port>=" + BridgeDir + "/<name>.sock")
		}
		a.listens = append(a.listens, listen{name: base[:len(base)-len(".sock")], addr: ap, socket: sock})
	default:
		return errors.New("unknown flag " + strconv.Quote(f))
	}
	return nil
}

// addrPort is an IPv4 address and a port.
type addrPort struct {
	ip   [4]byte
	port int
}

func (a addrPort) String() string {
	return strconv.Itoa(int(a.ip[0])) + "." + strconv.Itoa(int(a.ip[1])) + "." + strconv.Itoa(int(a.ip[2])) + "." +
		strconv.Itoa(int(a.ip[3])) + ":" + strconv.Itoa(a.port)
}

// parseAddrPort parses "a.b.c.d:port": four decimal octets (0–255, no leading zero)
// and a decimal port (0–65535). (Package net/netip would do, but its initialisation
// comes late in the program's order: package doc.)
func parseAddrPort(s string) (addrPort, error) {
	var a addrPort
	bad := errors.New(strconv.Quote(s) + " is not <IPv4 address>:<port>")
	host, port, ok := cut(s, ':')
	p, err := decimal(port, 65535)
	if !ok || err != nil {
		return a, bad
	}
	a.port = p
	for i := range a.ip {
		octet, rest, more := cut(host, '.')
		n, err := decimal(octet, 255)
		if err != nil || more != (i < 3) {
			return a, bad
		}
		a.ip[i], host = byte(n), rest
	}
	return a, nil
}

// decimal parses s, digits only without a leading zero, as a number ≤ limit.
func decimal(s string, limit int) (int, error) {
	if !allDigits(s) || len(s) > 5 || (len(s) > 1 && s[0] == '0') {
		return 0, errors.New("not a decimal number")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > limit {
		return 0, errors.New("out of range")
	}
	return n, nil
}

// Run is `agentproof sandbox-init`, PID 1 of a sandbox (started by bubblewrap with
// --as-pid-1, as the sandbox user, without capabilities). It
//
//  0. moves itself into the lease's cgroups by writing 0 to each --cgroup-fd (the
//     lease's cgroup.procs files, opened for writing by the controller, which the
//     sandbox cannot reach otherwise), so the agent and everything it starts are born
//     inside them, and closes them;
//  1. makes itself not dumpable and closes every inherited descriptor but stdio, the
//     --pass-fds descriptors (fds 3…, the worker's extra files) and the status fd, so
//     the agent can reach nothing of the host through one;
//  2. checks that loopback is up in its network namespace (bringing it up when it is
//     down and it may);
//  3. listens on every --listen address and carries each connection over the bridge
//     socket bound at BridgeDir to the host, where the lease owner's bridge dials the
//     allowlisted endpoint (docs/environments.md "Network");
//  4. starts the agent in its own process group with init's environment and the
//     passed descriptors, forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and
//     SIGUSR2 to that group, and reaps every process that ends (orphans included);
//  5. when the agent ends, writes its exit report (JSON, Status) on the status fd
//     and exits with the agent's exit code, or 128+signal when a signal ended it. The
//     kernel then kills whatever is left in the PID namespace.
//
// Failures before the agent runs exit ExitFailed (64 for a malformed command line;
// 127 when the agent's program does not exist, 126 when it cannot be run), with the
// reason in the report and on stderr.
func Run(argv []string, stderr io.Writer) int {
	a, err := parse(argv)
	if err != nil {
		_, _ = io.WriteString(stderr, "agentproof "+Command+": "+err.Error()+"\n")
		return 64
	}
	// Not dumpable: the agent (the same user) can neither ptrace init nor open its
	// descriptors through /proc/1/fd.
	const prSetDumpable = 4
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	rep := Status{Schema: StatusSchema}
	cgErr := joinLeaseCgroups(a.cgroupFDs)
	closeStrayFDs(3+a.passFDs, a.statusFD)
	status, statusErr := openStatus(a)
	finish := func(code int) int {
		if rep.Error != "" {
			_, _ = io.WriteString(stderr, "agentproof "+Command+": "+rep.Error+"\n")
		}
		if status != nil {
			_, _ = status.Write(rep.AppendJSON(nil))
			_ = status.Close()
		}
		return code
	}
	if statusErr != nil {
		rep.Error = statusErr.Error()
		return finish(ExitFailed)
	}
	if cgErr != nil {
		rep.Error = cgErr.Error()
		return finish(ExitFailed)
	}
	if err := loopbackUp(); err != nil {
		rep.Error = err.Error()
		return finish(ExitFailed)
	}
	br, err := startBridge(a.listens)
	if err != nil {
		rep.Error = err.Error()
		return finish(ExitFailed)
	}
	defer br.close()
	code := runAgent(a, &rep)
	rep.Connections = br.counts()
	if a.counters {
		rep.Counters = OwnCgroupCounters()
	}
	return finish(code)
}

// openStatus is where init writes its exit report: the --status-fd descriptor (made
// close-on-exec, so the agent never holds it), or a connection to --status-socket made
// now, before the agent exists (close-on-exec too). Errors: the socket cannot be
// reached.
func openStatus(a args) (*os.File, error) {
	if a.statusSocket == "" {
		syscall.CloseOnExec(a.statusFD)
		return os.NewFile(uintptr(a.statusFD), "status"), nil
	}
	f, err := dialUnix(a.statusSocket)
	if err != nil {
		return nil, errors.New("the exit report's socket: " + err.Error())
	}
	return f, nil
}

// runAgent starts the agent, forwards the stop signals to its process group and reaps
// until it ends, recording its pid and end in rep; it returns init's exit code.
func runAgent(a args, rep *Status) int {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i := range a.passFDs {
		files = append(files, os.NewFile(uintptr(3+i), "pass"))
	}
	proc, err := os.StartProcess(a.path, a.argv, &os.ProcAttr{Env: os.Environ(), Files: files, Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		rep.Error = "starting the agent " + a.path + ": " + err.Error()
		if errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	rep.PID = proc.Pid
	go func(pgid int) {
		for s := range sigs {
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(-pgid, sig)
			}
		}
	}(proc.Pid)
	return reapUntil(proc.Pid, rep)
}

// joinLeaseCgroups moves this process into the cgroup of each fd (a cgroup.procs file
// open for writing: "0" names the writer) and closes them all. Errors name the fd.
func joinLeaseCgroups(fds []int) error {
	var first error
	for _, fd := range fds {
		if _, err := syscall.Write(fd, []byte("0")); err != nil && first == nil {
			first = errors.New("joining the lease cgroup of fd " + strconv.Itoa(fd) + ": " + err.Error())
		}
		_ = syscall.Close(fd)
	}
	return first
}

// reapUntil reaps every child that ends until pid does, records pid's end in rep and
// returns init's exit code for it.
func reapUntil(pid int, rep *Status) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			rep.Error = "waiting for the agent: " + err.Error()
			return ExitFailed
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
			rep.Signal = signame.Of(ws.Signal())
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
		// an fd the Go runtime owns (its epoll, its pipes, its cgroup CPU limit file)
		// would break it, so only descriptors that are not close-on-exec — inherited
		// ones — are closed.
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
// normally has, before it dropped the capability to). Errors: no loopback interface,
// loopback down and not brought up.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return errors.New("no loopback interface in the sandbox: " + err.Error())
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [16]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return errors.New("no loopback interface in the sandbox: " + e.Error())
	}
	if ifr.flags&syscall.IFF_UP != 0 {
		return nil
	}
	ifr.flags |= syscall.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return errors.New("loopback is down and cannot be brought up: " + e.Error())
	}
	return nil
}

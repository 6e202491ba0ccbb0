package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/worker"
)

// A session's agent process (docs/acp.md "Process"): unlike the exec drivers, whose one
// process per run goes through worker.Supervise with its output captured, a session's
// agent is a long-lived peer: agentproof holds its stdin and stdout (the protocol's
// stream) and keeps the head of its stderr. It is started from an explicit worker.Spec (no
// inherited environment, no shell, its own process group, SIGKILL when agentproof
// dies), its stdout is bounded (MaxOutputBytes; one byte more kills it), its lifetime
// is bounded (Timeout), and teardown kills its process group and every descendant found
// below it.

// ProcessIdentity names one agent process unambiguously on this host: its process id
// and its start time in clock ticks since boot (/proc/<pid>/stat field 22), which
// together survive pid reuse. The warm lifecycle's oracle compares them across turns.
type ProcessIdentity struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
}

// String renders "pid 123 (start 4567)".
func (p ProcessIdentity) String() string {
	return fmt.Sprintf("pid %d (start %d)", p.PID, p.StartTime)
}

// ProcStartTime reads field 22 (starttime, clock ticks after boot) of /proc/<pid>/stat.
// Errors: the process does not exist (any more) or the file does not parse.
func ProcStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("agent: reading the start time of pid %d: %w", pid, err)
	}
	st, err := ParseProcStat(b)
	if err != nil {
		return 0, fmt.Errorf("agent: /proc/%d/stat: %w", pid, err)
	}
	return st.StartTime, nil
}

// ProcStat is what agentproof reads from a /proc/<pid>/stat line: the parent's pid
// (field 4), the process group (field 5), the CPU time in clock ticks (fields 14–17:
// user, system, and those of reaped children) and the start time (field 22, clock
// ticks after boot).
type ProcStat struct {
	PPID      int
	PGID      int
	CPUTicks  uint64
	StartTime uint64
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on every Linux ABI
// agentproof runs on).
const clockTicks = 100

// ParseProcStat parses one /proc/<pid>/stat line. The command name (field 2) is
// parenthesised and may itself contain spaces and parentheses (the process chooses it:
// untrusted), so fields are counted after the last ')'. Errors: no ')' or too few or
// malformed fields.
func ParseProcStat(b []byte) (ProcStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcStat{}, errors.New("no command name")
	}
	// After ")": field 3 (state) onwards.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ProcStat{}, fmt.Errorf("%d fields after the command name, want at least 20", len(f))
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	var cpu uint64
	var errs []error
	for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
		n, err := strconv.ParseInt(f[i], 10, 64)
		errs = append(errs, err)
		if n > 0 {
			cpu += uint64(n)
		}
	}
	if err := errors.Join(append(errs, err1, err2, err3)...); err != nil {
		return ProcStat{}, fmt.Errorf("malformed field: %w", err)
	}
	return ProcStat{PPID: ppid, PGID: pgid, CPUTicks: cpu, StartTime: start}, nil
}

// zombie reports whether pid has exited but is not reaped yet (state Z).
func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// descendants lists the pids below pid (children, grandchildren, …) found by walking
// /proc, including those that left pid's process group. Unreadable entries are skipped.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		st, err := ParseProcStat(b)
		if err != nil {
			continue
		}
		children[st.PPID] = append(children[st.PPID], p)
	}
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// ProcessExit is how a session's agent process ended: the exit code (nil unless it exited
// normally), the terminating signal's name, the escalation signals agentproof sent, and
// whether it was stopped for exceeding its time (TimedOut) or output (OutputExceeded)
// budget, how many descendants of the tree snapshot were killed (Descendants) and the
// processes found carrying the session's marker after the exit (Escaped: descendants
// that left the process group, worker.SweepMarked), and CPU times (ms): UserCPUMS and SystemCPUMS of the process and the
// descendants it reaped (from wait4), TreeCPUMS of the whole process tree when the
// teardown began (user + system, with reaped children, from /proc: it also counts
// descendants that are killed rather than reaped; the agent's side of the
// harness-share figure). Stderr is the kept head of its standard error (at most MaxStderrBytes),
// StderrBytes every byte it wrote there, StdoutBytes every byte of its protocol stream.
type ProcessExit struct {
	ExitCode       *int                    `json:"exitCode"`
	Signal         string                  `json:"signal,omitempty"`
	SignalsSent    []string                `json:"signalsSent,omitempty"`
	TimedOut       bool                    `json:"timedOut,omitempty"`
	OutputExceeded bool                    `json:"outputExceeded,omitempty"`
	Descendants    int                     `json:"descendantsKilled,omitempty"`
	Escaped        []worker.EscapedProcess `json:"escaped,omitempty"`
	DurationMS     int64                   `json:"durationMs"`
	UserCPUMS      int64                   `json:"userCpuMs"`
	SystemCPUMS    int64                   `json:"systemCpuMs"`
	TreeCPUMS      int64                   `json:"treeCpuMs"`
	StdoutBytes    int64                   `json:"stdoutBytes"`
	StderrBytes    int64                   `json:"stderrBytes"`
	Stderr         []byte                  `json:"-"`
	Error          string                  `json:"error,omitempty"`
	// NotSpawned: the process was never started (the exit a LaunchFunc's settle
	// gets when the spawn failed).
	NotSpawned bool `json:"-"`
}

// Summary renders the exit in one line, for example "exited with code 0 after 1.2s".
func (e ProcessExit) Summary() string {
	var parts []string
	switch {
	case e.TimedOut:
		parts = append(parts, "timed out")
	case e.OutputExceeded:
		parts = append(parts, fmt.Sprintf("output exceeded its budget (%d bytes on stdout)", e.StdoutBytes))
	}
	if len(e.SignalsSent) > 0 {
		parts = append(parts, "sent "+strings.Join(e.SignalsSent, ", "))
	}
	d := (time.Duration(e.DurationMS) * time.Millisecond).String()
	switch {
	case e.ExitCode != nil:
		parts = append(parts, fmt.Sprintf("exited with code %d after %s", *e.ExitCode, d))
	case e.Signal != "":
		parts = append(parts, "killed by "+e.Signal+" after "+d)
	default:
		parts = append(parts, "exit not confirmed")
	}
	if e.Descendants > 0 {
		parts = append(parts, fmt.Sprintf("%d descendant process(es) killed", e.Descendants))
	}
	if len(e.Escaped) > 0 {
		parts = append(parts, fmt.Sprintf("%d escaped descendant(s) found by the marker", len(e.Escaped)))
	}
	if e.Error != "" {
		parts = append(parts, e.Error)
	}
	return strings.Join(parts, "; ")
}

// MaxStderrBytes bounds the kept head of a session agent's stderr (bytes); the rest is
// counted and drained so the agent never blocks on a full pipe.
const MaxStderrBytes = 256 << 10

// Grace periods of a session agent process's teardown: after its stdin is closed it has
// CloseGrace to exit by itself, then SIGTERM and TerminateGrace, then SIGKILL and
// KillConfirm.
const (
	CloseGrace = 3 * time.Second
	// CloseGraceIgnoringEOF replaces CloseGrace for agents known not to exit when
	// their stdin closes (codex-acp, the Claude adapter, Gemini CLI): waiting longer
	// only delays the SIGTERM they need.
	CloseGraceIgnoringEOF = 250 * time.Millisecond
	TerminateGrace        = 2 * time.Second
	KillConfirm           = 5 * time.Second
)

// agentProcess is one running session agent process.
type agentProcess struct {
	cmd      *exec.Cmd
	identity ProcessIdentity
	start    time.Time
	stdin    io.WriteCloser
	stdout   *boundedReader
	stderr   *headBuffer

	exitSeen   chan struct{} // closed once the exit is observed (not yet reaped)
	closeGrace time.Duration
	termGrace  time.Duration // worker.Spec.TerminateGrace (0: TerminateGrace)
	marker     string        // worker.MarkerVar token of the process and its descendants
	// stop delivers SIGTERM instead of the process group (worker.Spec.Stop); nil: the group.
	stopHook func(pid int, sig syscall.Signal) error
	// settle turns the exit the host saw into the agent's own (LaunchFunc; nil on
	// the host); called once by stop.
	settle  func(ProcessExit) ProcessExit
	waitErr error // set before exitSeen closes

	mu       sync.Mutex
	signals  []string
	timedOut bool
	done     bool
	exit     ProcessExit
	timer    *time.Timer
}

// startProcess starts spec with piped stdin and stdout. The spec's Timeout bounds the
// process's whole life (the warm session), MaxOutputBytes its stdout. Errors: an invalid
// spec or a failed spawn (nothing is left running).
func startProcess(spec worker.Spec, closeGrace time.Duration) (*agentProcess, error) {
	var p []string
	if !filepath.IsAbs(spec.Path) {
		p = append(p, fmt.Sprintf("path %q must be absolute", spec.Path))
	}
	if len(spec.Args) == 0 {
		p = append(p, "args must hold at least argv[0]")
	}
	if !filepath.IsAbs(spec.Dir) {
		p = append(p, fmt.Sprintf("dir %q must be absolute", spec.Dir))
	}
	if spec.Timeout <= 0 || spec.MaxOutputBytes <= 0 {
		p = append(p, "timeout and max output must be > 0")
	}
	for i, e := range spec.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" || strings.ContainsRune(e, 0) {
			p = append(p, fmt.Sprintf("env[%d] must be KEY=VALUE without NUL", i))
		}
	}
	if len(p) > 0 {
		return nil, &worker.SpecError{Problems: p}
	}
	env := append([]string{}, spec.Env...)
	if spec.Marker != "" {
		if !worker.ValidMarker(spec.Marker) {
			return nil, &worker.SpecError{Problems: []string{"marker is not a marker token"}}
		}
		env = append(env, worker.MarkerVar+"="+strings.Join(append([]string{spec.Marker}, spec.ExtraMarkers...), ","))
	}
	cmd := &exec.Cmd{
		Path: spec.Path, Args: spec.Args, Env: env, Dir: spec.Dir,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: spec.Credential},
		// A sandbox init's status pipe and cgroup files (fd 3 onwards); none on the host.
		ExtraFiles: spec.ExtraFiles,
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("agent: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW)
		return nil, fmt.Errorf("agent: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW, outR, outW)
		return nil, fmt.Errorf("agent: stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	ap := &agentProcess{cmd: cmd, stdin: inW, stderr: &headBuffer{max: MaxStderrBytes}, exitSeen: make(chan struct{}), closeGrace: closeGrace, termGrace: spec.TerminateGrace, marker: spec.Marker, stopHook: spec.Stop}
	ap.start = time.Now()
	err = startCmd(cmd, spec.Fork)
	closeFiles(inR, outW, errW)
	if err != nil {
		closeFiles(inW, outR, errR)
		return nil, fmt.Errorf("agent: starting %s: %w", spec.Path, err)
	}
	pid := cmd.Process.Pid
	ap.identity.PID = pid
	// The child exists until we reap it, so its stat is readable now.
	ap.identity.StartTime, _ = ProcStartTime(pid)
	ap.stdout = &boundedReader{r: outR, max: spec.MaxOutputBytes, onExceed: func() { ap.kill("SIGKILL") }}
	go func() {
		_, _ = io.Copy(ap.stderr, errR)
		_ = errR.Close()
	}()
	go func() {
		ap.waitErr = worker.WaitNoReap(pid)
		close(ap.exitSeen)
	}()
	ap.timer = time.AfterFunc(spec.Timeout, func() {
		ap.mu.Lock()
		ap.timedOut = true
		ap.mu.Unlock()
		ap.escalate()
	})
	return ap, nil
}

// startCmd starts cmd, through fork when it is set (the lease forks it on its own
// thread: worker.Spec.Fork).
func startCmd(cmd *exec.Cmd, fork func(start func() (int, error)) error) error {
	if fork == nil {
		return worker.OnForkThread(cmd.Start) // its parent-death signal outlives any other thread
	}
	err := fork(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err == nil && cmd.Process == nil {
		err = errors.New("the lease's fork started nothing")
	}
	return err
}

// exited reports whether the process's exit has been observed.
func (ap *agentProcess) exited() bool {
	select {
	case <-ap.exitSeen:
		return true
	default:
		return false
	}
}

// kill sends sig ("SIGTERM" or "SIGKILL") to the process group while no exit was seen
// (afterwards the group id may no longer be ours).
func (ap *agentProcess) kill(name string) {
	sig := syscall.SIGKILL
	if name == "SIGTERM" {
		sig = syscall.SIGTERM
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if ap.done {
		return
	}
	send := func() error { return syscall.Kill(-ap.identity.PID, sig) }
	if sig != syscall.SIGKILL && ap.stopHook != nil {
		send = func() error { return ap.stopHook(ap.identity.PID, sig) }
	}
	if err := send(); err == nil {
		ap.signals = append(ap.signals, name)
	}
}

// escalate sends SIGTERM, waits TerminateGrace (or the spec's longer
// worker.Spec.TerminateGrace: a container's engine relays the signal), then SIGKILL,
// and waits KillConfirm for the exit.
func (ap *agentProcess) escalate() {
	for _, s := range []struct {
		name string
		wait time.Duration
	}{{"SIGTERM", max(TerminateGrace, ap.termGrace)}, {"SIGKILL", KillConfirm}} {
		if ap.exited() {
			return
		}
		ap.kill(s.name)
		select {
		case <-ap.exitSeen:
			return
		case <-time.After(s.wait):
		}
	}
}

// stop retires the process: it snapshots the process tree below it, closes stdin and
// gives the process its close grace (CloseGrace, or CloseGraceIgnoringEOF) to exit (an
// agent exits when its client goes away), escalates if it does not, kills what is left
// (the process group, and every process of the snapshot still alive, also those that
// left the group), reaps the process, then kills every process still carrying the
// process's marker (worker.SweepMarked: descendants born after the snapshot that left
// the group), and returns how it ended. It is idempotent.
func (ap *agentProcess) stop() ProcessExit {
	ap.mu.Lock()
	if ap.done {
		e := ap.exit
		ap.mu.Unlock()
		return e
	}
	ap.mu.Unlock()
	// Snapshot the process tree while the leader lives: once it exits, its children are
	// reparented and can no longer be found below it.
	tree, treeTicks := ap.snapshot()
	_ = ap.stdin.Close()
	select {
	case <-ap.exitSeen:
	case <-time.After(ap.closeGrace):
		ap.escalate()
	}
	ap.timer.Stop()
	exit := ProcessExit{TreeCPUMS: int64(treeTicks) * 1000 / clockTicks}
	switch {
	case !ap.exited():
		exit.Error = fmt.Sprintf("exit not confirmed %v after SIGKILL", KillConfirm)
		go func() { <-ap.exitSeen; _ = ap.cmd.Wait() }()
	case ap.waitErr != nil:
		exit.Error = fmt.Sprintf("observing the exit: %v", ap.waitErr)
	default:
		ap.reap(&exit, tree)
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	exit.SignalsSent = append([]string(nil), ap.signals...)
	exit.TimedOut = ap.timedOut
	exit.OutputExceeded = ap.stdout.exceeded()
	exit.DurationMS = time.Since(ap.start).Milliseconds()
	exit.StdoutBytes = ap.stdout.count()
	exit.Stderr, exit.StderrBytes = ap.stderr.snapshot()
	if ap.settle != nil {
		exit = ap.settle(exit)
	}
	ap.done, ap.exit = true, exit
	return exit
}

// snapshot returns the descendants of a live process (pid → start time) and the CPU
// ticks of the whole tree, the process included; nothing once it exited.
func (ap *agentProcess) snapshot() (map[int]uint64, uint64) {
	tree := map[int]uint64{}
	var ticks uint64
	if ap.exited() {
		return tree, 0
	}
	for _, d := range append([]int{ap.identity.PID}, descendants(ap.identity.PID)...) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d), "stat"))
		if err != nil {
			continue
		}
		if st, err := ParseProcStat(b); err == nil {
			ticks += st.CPUTicks
			if d != ap.identity.PID {
				tree[d] = st.StartTime
			}
		}
	}
	return tree, ticks
}

// reap finishes an exited, unreaped process into exit: its pid and group are still
// ours, so what is left of the group is killed, and every process of the snapshot
// tree that is still the same process (same start time: no pid reuse), also those
// that left the group (setsid); then it is reaped, its marker swept and its status
// read.
func (ap *agentProcess) reap(exit *ProcessExit, tree map[int]uint64) {
	_ = syscall.Kill(-ap.identity.PID, syscall.SIGKILL)
	for d, st := range tree {
		if cur, err := ProcStartTime(d); err == nil && cur == st && !zombie(d) && syscall.Kill(d, syscall.SIGKILL) == nil {
			exit.Descendants++
		}
	}
	err := ap.cmd.Wait()
	ap.sweep(exit, tree)
	if ps := ap.cmd.ProcessState; ps != nil {
		exit.UserCPUMS, exit.SystemCPUMS = ps.UserTime().Milliseconds(), ps.SystemTime().Milliseconds()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		code := 0
		exit.ExitCode = &code
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			exit.Signal = worker.SignalName(ws.Signal())
		} else {
			code := ee.ExitCode()
			exit.ExitCode = &code
		}
	default:
		exit.Error = fmt.Sprintf("reaping the process: %v", err)
	}
}

// sweep kills the descendants that left the group after the snapshot: they still
// carry the marker. The snapshot's own members (killed by reap, perhaps still
// exiting) are the agent's descendants, not escapes: only processes born after it
// count.
func (ap *agentProcess) sweep(exit *ProcessExit, tree map[int]uint64) {
	if ap.marker == "" {
		return
	}
	known := func(pid, _ int) bool {
		st, ok := tree[pid]
		if !ok {
			return false
		}
		cur, err := ProcStartTime(pid)
		return err == nil && cur == st
	}
	esc, err := worker.SweepMarkedExcept(ap.marker, known, worker.SweepConfirm)
	exit.Escaped = esc
	if err != nil {
		exit.Error = "sweeping escaped descendants: " + err.Error()
	}
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// boundedReader counts the bytes read from r and calls onExceed once (and then reports
// end-of-file) when more than max bytes arrive.
type boundedReader struct {
	r        io.Reader
	max      int64
	onExceed func()

	mu   sync.Mutex
	n    int64
	over bool
}

func (b *boundedReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.over {
		b.mu.Unlock()
		return 0, io.EOF
	}
	b.mu.Unlock()
	n, err := b.r.Read(p)
	b.mu.Lock()
	b.n += int64(n)
	exceeded := b.n > b.max && !b.over
	if exceeded {
		b.over = true
		n -= int(b.n - b.max)
		n = max(n, 0)
	}
	b.mu.Unlock()
	if exceeded {
		b.onExceed()
		return n, io.EOF
	}
	return n, err
}

func (b *boundedReader) count() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *boundedReader) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

// headBuffer keeps the first max bytes written to it and counts all of them.
type headBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
	n   int64
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n += int64(len(p))
	if room := h.max - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) snapshot() ([]byte, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return bytes.Clone(h.buf), h.n
}

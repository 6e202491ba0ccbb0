package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/agentproof/agentproof/signame"
)

// Spec describes one bounded child process for Supervise. Nothing is inherited from the
// calling process: the environment, arguments and working directory are exactly these.
//
//   - Path: absolute path of the executable (never looked up in PATH, never a shell).
//   - Args: the complete argv, Args[0] included (it need not equal Path).
//   - Env: the complete environment, "KEY=VALUE" entries; may be empty.
//   - Dir: absolute working directory, which must exist.
//   - Timeout: > 0; at the deadline the process group gets SIGTERM, then SIGKILL after
//     TerminateGrace, and the run settles KillConfirm later if no exit was seen.
//   - MaxOutputBytes: > 0; the combined stdout+stderr budget. The first MaxOutputBytes
//     bytes (in arrival order) are kept; one byte more stops the process like a timeout.
//   - TerminateGrace, KillConfirm, CloseGrace: zero means the package defaults.
//   - ExtraFiles: passed to the child as fds 3, 4, … (reserved for the guarded path's
//     control pipe); Supervise does not close them.
//   - BeforeStart: when set, called synchronously immediately before the process is
//     started, after every other preparation (the guarded path's launch window: its last
//     ownership and workspace checks). A non-nil error starts nothing: the Outcome has
//     Refused set to it and Started false.
//   - AfterStart: when set, called synchronously right after the process started, with
//     its pid, before the supervisor waits for anything. The process is not reaped
//     before AfterStart returns, so /proc/<pid> names it (alive or a zombie); it must
//     return promptly (the timeout runs from the start).
//   - Credential: when set, the process runs as that user and group, with exactly
//     Credential.Groups as supplementary groups (the caller must be allowed to set
//     them: root); nil runs it as the caller.
//   - Fork: when set, Supervise calls Fork with a start function and Fork must call
//     it once, on the OS thread the process has to be forked from (one in a private
//     mount namespace, say), and return its error (or its own, having not called it).
//     start runs BeforeStart and forks, and returns the new process's pid. Fork must
//     return once the process started; whatever the thread holds stays the caller's.
//   - Stop: when set, the stop signal of a timeout, an output overflow, an abort or
//     an overrun result grace (SIGTERM) is delivered by Stop(pid, SIGTERM) instead of
//     to the process group (pid is the supervised process's); SIGKILL always goes to
//     the group. For a wrapper whose own process must outlive the stop signal while
//     the process it carries gets it (the sandbox's bubblewrap and its init).
//   - NullStdin: the child's stdin is /dev/null instead of a pipe the supervisor holds
//     open until the child settles. Real agent CLIs read a piped stdin to its end
//     before they start, so their drivers set it.
//   - Marker, ExtraMarkers: when Marker is set (a NewMarker token), the environment
//     gets MarkerVar=<Marker>[,<ExtraMarkers>…] (Env must not set MarkerVar itself),
//     and once the process has ended Supervise sweeps every process still carrying
//     Marker — descendants that left the process group (setsid) — kills them and lists
//     them in Outcome.Escaped (docs/processes.md). ExtraMarkers (for example an
//     attempt's) are only carried, for a caller's own SweepMarked.
//   - ResultLine, ResultGrace: when ResultLine is set, it is called with every
//     complete stdout line (without the newline; lines over MaxWatchedLineBytes are
//     skipped) until it returns true — the process emitted its terminal result. The
//     process then has ResultGrace (zero: DefaultResultGrace) to exit on its own;
//     after that it is stopped like a timeout (SIGTERM, SIGKILL) and
//     Outcome.StoppedAfterResult is set. ResultLine runs on the reader goroutine: it
//     must be fast and must not keep the slice.
type Spec struct {
	Path           string
	Args           []string
	Env            []string
	Dir            string
	Timeout        time.Duration
	MaxOutputBytes int64
	TerminateGrace time.Duration
	KillConfirm    time.Duration
	CloseGrace     time.Duration
	ExtraFiles     []*os.File
	BeforeStart    func() error
	AfterStart     func(pid int)
	Credential     *syscall.Credential
	Fork           func(start func() (int, error)) error
	Stop           func(pid int, sig syscall.Signal) error
	NullStdin      bool
	Marker         string
	ExtraMarkers   []string
	ResultLine     func(line []byte) bool
	ResultGrace    time.Duration
}

// DefaultResultGrace is how long a process that emitted its terminal result line
// (Spec.ResultLine) may take to exit before it is stopped.
const DefaultResultGrace = 5 * time.Second

// MaxWatchedLineBytes bounds a stdout line that Spec.ResultLine is shown (bytes).
const MaxWatchedLineBytes = 8 << 20

// Outcome is what Supervise observed of one child process. It records, never judges.
//
//   - Started: a process was created (it had a pid). When false, SpawnError, Refused or
//     Aborted says why and every other field is zero.
//   - ExitCode: nil unless a normal exit was observed. Signal: the terminating signal's
//     name ("SIGKILL") when it was killed by one, else "".
//   - Exited: the exit was observed and the process reaped. StdioClosed: stdout and
//     stderr reached end-of-file within CloseGrace of settling.
//   - SignalsSent: escalation signals sent to the process group, in order.
//   - OutputBytes: every byte received; CapturedBytes = len(Output.Stdout()) +
//     len(Output.Stderr()) ≤ MaxOutputBytes.
//   - Output: the kept head of each stream.
//   - CollectorError: "" when the observation is complete; otherwise the reasons it is
//     not (output overflow, abort, unconfirmed exit, unclosed stdio, a sweep that
//     could not complete or an escaped process that survived SIGKILL), "; "-separated.
//     A timeout alone sets TimedOut, not CollectorError.
//   - ResultSeen: Spec.ResultLine returned true for a stdout line.
//     StoppedAfterResult: the process did not exit within Spec.ResultGrace of that
//     line and was stopped (SIGTERM, then SIGKILL; SignalsSent lists them).
//   - Escaped: the processes found carrying Spec.Marker after the process ended that
//     were not members of its process group (descendants that escaped it), each killed;
//     nil when none was found or Spec.Marker is unset.
type Outcome struct {
	Started            bool
	PID                int
	ExitCode           *int
	Signal             string
	Exited             bool
	StdioClosed        bool
	TimedOut           bool
	OutputExceeded     bool
	Aborted            bool
	SignalsSent        []string
	Duration           time.Duration
	OutputBytes        int64
	CapturedBytes      int64
	Output             Captured
	CollectorError     string
	SpawnError         error
	Refused            error
	ResultSeen         bool
	StoppedAfterResult bool
	Escaped            []EscapedProcess
}

// SpecError lists every problem of an invalid Spec; Supervise returns it before anything
// is created.
type SpecError struct {
	Problems []string
}

func (e *SpecError) Error() string {
	return "invalid process spec: " + strings.Join(e.Problems, "; ")
}

func validateSpec(s *Spec) error {
	var p []string
	if !filepath.IsAbs(s.Path) {
		p = append(p, fmt.Sprintf("path %q must be absolute", s.Path))
	}
	if len(s.Args) == 0 {
		p = append(p, "args must hold at least argv[0]")
	}
	for i, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			p = append(p, fmt.Sprintf("args[%d] contains NUL", i))
		}
	}
	for i, e := range s.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" || strings.ContainsRune(e, 0) {
			p = append(p, fmt.Sprintf("env[%d] %q must be KEY=VALUE without NUL", i, e))
		}
	}
	if !filepath.IsAbs(s.Dir) {
		p = append(p, fmt.Sprintf("dir %q must be absolute", s.Dir))
	}
	for _, x := range []string{s.Path, s.Dir} {
		if strings.ContainsRune(x, 0) {
			p = append(p, "path and dir must not contain NUL")
			break
		}
	}
	if s.Timeout <= 0 {
		p = append(p, fmt.Sprintf("timeout %v must be > 0", s.Timeout))
	}
	if s.MaxOutputBytes <= 0 {
		p = append(p, fmt.Sprintf("max output %d bytes must be > 0", s.MaxOutputBytes))
	}
	if s.TerminateGrace < 0 || s.KillConfirm < 0 || s.CloseGrace < 0 || s.ResultGrace < 0 {
		p = append(p, "grace periods must not be negative")
	}
	if s.Marker != "" || len(s.ExtraMarkers) > 0 {
		if !ValidMarker(s.Marker) {
			p = append(p, fmt.Sprintf("marker %q is not a marker token", clipText(s.Marker, 80)))
		}
		for _, m := range s.ExtraMarkers {
			if !ValidMarker(m) {
				p = append(p, fmt.Sprintf("extra marker %q is not a marker token", clipText(m, 80)))
			}
		}
		for _, e := range s.Env {
			if strings.HasPrefix(e, MarkerVar+"=") {
				p = append(p, "env must not set "+MarkerVar+" (Spec.Marker does)")
			}
		}
	}
	if len(p) > 0 {
		return &SpecError{Problems: p}
	}
	return nil
}

// capture keeps the head of the combined output within the budget and counts every
// byte. Kept bytes go into fixed-size chunks (no re-copying as output grows) that are
// joined once at the end.
type capture struct {
	mu       sync.Mutex
	budget   int64
	received int64
	kept     int64
	chunks   [2][][]byte
	exceeded bool
	overflow chan struct{}
	watch    *lineWatch // stdout lines for Spec.ResultLine, or nil
}

// lineWatch shows complete stdout lines to a Spec.ResultLine until it returns true,
// then closes fired. Only the stdout reader goroutine touches it before fired closes.
type lineWatch struct {
	fn       func([]byte) bool
	partial  []byte
	skipping bool
	done     bool
	fired    chan struct{}
}

// feed passes the complete lines of b (with the partial line kept from before) to fn.
func (w *lineWatch) feed(b []byte) {
	for !w.done && len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !w.skipping {
				if len(w.partial)+len(b) > MaxWatchedLineBytes {
					w.partial, w.skipping = w.partial[:0], true
				} else {
					w.partial = append(w.partial, b...)
				}
			}
			return
		}
		line := b[:i]
		b = b[i+1:]
		if w.skipping {
			w.skipping = false
			continue
		}
		if len(w.partial) > 0 {
			if len(w.partial)+len(line) > MaxWatchedLineBytes {
				w.partial = w.partial[:0]
				continue
			}
			w.partial = append(w.partial, line...)
			line = w.partial
		}
		if w.fn(line) {
			w.done = true
			w.partial = nil
			close(w.fired)
			return
		}
		w.partial = w.partial[:0]
	}
}

// seen reports whether fn returned true for a line.
func (w *lineWatch) seen() bool {
	if w == nil {
		return false
	}
	select {
	case <-w.fired:
		return true
	default:
		return false
	}
}

const captureChunk = 1 << 20

// room returns how many more bytes may be kept.
func (c *capture) room() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.budget - c.kept
}

// account records n bytes just read by stream, of which at most the remaining budget
// is kept, and returns how many were kept.
func (c *capture) account(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.received += int64(n)
	keep := min(c.budget-c.kept, int64(n))
	c.kept += keep
	if c.received > c.budget && !c.exceeded {
		c.exceeded = true
		close(c.overflow)
	}
	return int(keep)
}

// read drains f until end-of-file or error. Only this goroutine touches
// c.chunks[stream] until the readers are done, so it reads straight into the chunk's
// free space and keeps as much of each read as the shared budget allows; once the
// budget is spent it keeps reading into a scratch buffer so the child never blocks on
// a full pipe.
func (c *capture) read(stream int, f *os.File, done *sync.WaitGroup) {
	defer done.Done()
	var scratch []byte
	for {
		var dst []byte
		intoChunk := false
		chunks := c.chunks[stream]
		if room := c.room(); room > 0 {
			if len(chunks) == 0 || len(chunks[len(chunks)-1]) == cap(chunks[len(chunks)-1]) {
				size := int64(captureChunk)
				if len(chunks) == 0 {
					size = 64 << 10 // small outputs stay small
				}
				chunks = append(chunks, make([]byte, 0, min(size, room)))
				c.chunks[stream] = chunks
			}
			last := chunks[len(chunks)-1]
			dst, intoChunk = last[len(last):cap(last)], true
		} else {
			if scratch == nil {
				scratch = make([]byte, 256<<10)
			}
			dst = scratch
		}
		n, err := f.Read(dst)
		if n > 0 {
			if stream == 0 && c.watch != nil {
				c.watch.feed(dst[:n])
			}
			if kept := c.account(n); kept > 0 && intoChunk {
				last := &chunks[len(chunks)-1]
				*last = (*last)[:len(*last)+kept]
			}
		}
		if err != nil {
			return
		}
	}
}

// Captured is the kept head of a child's stdout and stderr. Bytes are held in the
// chunks they were read into, so capturing up to MaxOutputBytes never re-copies; Stdout
// and Stderr join them on request. The zero value is empty output.
type Captured struct {
	chunks [2][][]byte
}

// Stdout returns the kept stdout bytes as one new slice (never nil).
func (c Captured) Stdout() []byte { return join(c.chunks[0]) }

// Stderr returns the kept stderr bytes as one new slice (never nil).
func (c Captured) Stderr() []byte { return join(c.chunks[1]) }

func join(chunks [][]byte) []byte {
	var n int
	for _, ch := range chunks {
		n += len(ch)
	}
	out := make([]byte, 0, n)
	for _, ch := range chunks {
		out = append(out, ch...)
	}
	return out
}

// Supervise runs spec as one bounded child process and returns what it observed. An
// invalid spec returns a *SpecError before anything is created; every runtime outcome
// (spawn failure, timeout, overflow, abort, unconfirmed exit) is an Outcome with a nil
// error. Cancelling ctx before the spawn starts nothing (Outcome.Aborted, !Started);
// cancelling it during the run stops the process group like a timeout (Aborted); after
// the exit was observed it has no effect. Supervise returns once the process is reaped
// and its pipes closed, or — when that cannot be confirmed — after at most Timeout +
// TerminateGrace + KillConfirm + CloseGrace.
func Supervise(ctx context.Context, spec Spec) (Outcome, error) {
	if ctx == nil {
		return Outcome{}, &SpecError{Problems: []string{"context must not be nil"}}
	}
	spec.Args = append([]string(nil), spec.Args...)
	spec.Env = append([]string{}, spec.Env...)
	if err := validateSpec(&spec); err != nil {
		return Outcome{}, err
	}
	if spec.TerminateGrace == 0 {
		spec.TerminateGrace = TerminateGrace
	}
	if spec.KillConfirm == 0 {
		spec.KillConfirm = KillConfirm
	}
	if spec.CloseGrace == 0 {
		spec.CloseGrace = CloseGrace
	}
	if spec.ResultGrace == 0 {
		spec.ResultGrace = DefaultResultGrace
	}
	if kv := markerEnv(spec.Marker, spec.ExtraMarkers); kv != "" {
		spec.Env = append(spec.Env, kv)
	}
	return supervise(ctx, spec), nil
}

// supervise runs a validated spec with its defaults filled in (see Supervise): it
// opens the child's stdio, starts the child, waits for its exit or a stop condition,
// stops and reaps it, and settles its output into the Outcome.
func supervise(ctx context.Context, spec Spec) Outcome {
	var o Outcome
	io, err := openStdio(spec)
	if err != nil {
		o.SpawnError = err
		return o
	}
	ch := startChild(ctx, spec, io, &o)
	if ch == nil {
		return o
	}
	ch.watch()
	exited := ch.wait(ctx, &o)
	if !exited {
		exited = escalate(&o, ch.pid, ch.exitSeen, spec)
	}
	var reasons []string
	if o.OutputExceeded {
		reasons = append(reasons, fmt.Sprintf("output exceeded the %d-byte budget; the process was stopped", spec.MaxOutputBytes))
	}
	if o.Aborted {
		reasons = append(reasons, "aborted by the caller during the run")
	}
	reasons = append(reasons, ch.reap(&o, exited)...)
	reasons = append(reasons, ch.settle(&o)...)
	o.CollectorError = clipText(strings.Join(reasons, "; "), 1024)
	return o
}

// childStdio is the supervisor's and the child's ends of the child's stdin, stdout and
// stderr. inW is nil with Spec.NullStdin (closing nil is a harmless error).
type childStdio struct {
	inR, inW, outR, outW, errR, errW *os.File
}

func (s childStdio) closeAll() { closeAll(s.inR, s.inW, s.outR, s.outW, s.errR, s.errW) }

// openStdio opens the child's stdio: /dev/null or a pipe for stdin, a pipe each for
// stdout and stderr (grown up to 1 MiB for a large output budget, best effort).
// Errors name the stream that could not be created; nothing is left open then.
func openStdio(spec Spec) (childStdio, error) {
	var s childStdio
	var err error
	if spec.NullStdin {
		s.inR, err = os.Open(os.DevNull)
	} else {
		s.inR, s.inW, err = os.Pipe()
	}
	if err != nil {
		return s, fmt.Errorf("creating stdin: %w", err)
	}
	if s.outR, s.outW, err = os.Pipe(); err != nil {
		closeAll(s.inR, s.inW)
		return s, fmt.Errorf("creating stdout pipe: %w", err)
	}
	if s.errR, s.errW, err = os.Pipe(); err != nil {
		closeAll(s.inR, s.inW, s.outR, s.outW)
		return s, fmt.Errorf("creating stderr pipe: %w", err)
	}
	// Larger pipes mean fewer context switches for chatty children (best effort: the
	// kernel caps the size at /proc/sys/fs/pipe-max-size).
	if spec.MaxOutputBytes > 64<<10 {
		growPipe(s.outR, min(spec.MaxOutputBytes, 1<<20))
		growPipe(s.errR, min(spec.MaxOutputBytes, 1<<20))
	}
	return s, nil
}

// child is one started child process under supervision: its command and pid, the
// supervisor's ends of its stdio, the capture its output is read into, and the
// channels closed when both readers are done and when its exit is observed.
type child struct {
	spec        Spec
	cmd         *exec.Cmd
	pid         int
	start       time.Time
	inW         *os.File
	outR, errR  *os.File
	c           *capture
	readersDone chan struct{}
	exitSeen    chan struct{}
	waitErr     error // written before exitSeen is closed
}

// startChild starts spec's process in its own process group (SIGKILLed if the
// supervisor dies) on stdio io, calling spec.BeforeStart just before and
// spec.AfterStart just after. It returns nil when nothing was started: ctx already
// cancelled (o.Aborted), BeforeStart refused (o.Refused) or the start failed
// (o.SpawnError); io is closed then. Otherwise o.Started and o.PID are set and the
// child's ends of io are closed.
func startChild(ctx context.Context, spec Spec, io childStdio, o *Outcome) *child {
	cmd := &exec.Cmd{
		Path:       spec.Path,
		Args:       spec.Args,
		Env:        spec.Env,
		Dir:        spec.Dir,
		Stdin:      io.inR,
		Stdout:     io.outW,
		Stderr:     io.errW,
		ExtraFiles: spec.ExtraFiles,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
			Credential: spec.Credential,
		},
	}
	if ctx.Err() != nil {
		io.closeAll()
		o.Aborted = true
		return nil
	}
	start := time.Now()
	var refused error
	begin := func() (pid int, err error) {
		if spec.BeforeStart != nil {
			if refused = spec.BeforeStart(); refused != nil {
				return 0, refused
			}
		}
		// Nothing blocks, yields or releases a lock between BeforeStart and the fork.
		err = cmd.Start()
		if err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}
	var err error
	if spec.Fork != nil {
		err = spec.Fork(begin)
	} else {
		err = OnForkThread(func() error { _, err := begin(); return err })
	}
	if refused != nil {
		io.closeAll()
		o.Refused = refused
		return nil
	}
	closeAll(io.inR, io.outW, io.errW) // the child holds its own copies
	if err != nil || cmd.Process == nil || cmd.Process.Pid <= 0 {
		closeAll(io.inW, io.outR, io.errR)
		if err == nil {
			err = errors.New("no pid assigned")
		}
		o.SpawnError = err
		return nil
	}
	o.Started = true
	o.PID = cmd.Process.Pid
	if spec.AfterStart != nil {
		spec.AfterStart(o.PID)
	}
	return &child{spec: spec, cmd: cmd, pid: o.PID, start: start, inW: io.inW, outR: io.outR, errR: io.errR}
}

// watch starts reading the child's stdout and stderr into its capture (watching
// stdout lines for spec.ResultLine) and observing its exit without reaping it.
func (ch *child) watch() {
	ch.c = &capture{budget: ch.spec.MaxOutputBytes, overflow: make(chan struct{})}
	if ch.spec.ResultLine != nil {
		ch.c.watch = &lineWatch{fn: ch.spec.ResultLine, fired: make(chan struct{})}
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go ch.c.read(0, ch.outR, &readers)
	go ch.c.read(1, ch.errR, &readers)
	ch.readersDone = make(chan struct{})
	go func() { readers.Wait(); close(ch.readersDone) }()
	ch.exitSeen = make(chan struct{})
	go func() {
		// Observe the exit without reaping: until we reap, the pid and the process
		// group id stay ours, so signalling the group cannot hit a stranger.
		ch.waitErr = WaitNoReap(ch.pid)
		close(ch.exitSeen)
	}()
}

// wait blocks until the child's exit is seen (it returns true) or a stop condition
// holds, which it records in o and returns false for: the timeout (TimedOut), the
// output budget exceeded (OutputExceeded), ctx cancelled (Aborted), or the result
// line seen and ResultGrace over without an exit (StoppedAfterResult).
func (ch *child) wait(ctx context.Context, o *Outcome) bool {
	var resultC <-chan struct{}
	if ch.c.watch != nil {
		resultC = ch.c.watch.fired
	}
	timer := time.NewTimer(ch.spec.Timeout)
	defer timer.Stop()
	var graceC <-chan time.Time
	for {
		select {
		case <-ch.exitSeen:
			return true
		case <-timer.C:
			o.TimedOut = true
			return false
		case <-ch.c.overflow:
			o.OutputExceeded = true
			return false
		case <-ctx.Done():
			o.Aborted = true
			return false
		case <-resultC:
			// The terminal result is out: the process gets ResultGrace to exit.
			resultC = nil
			grace := time.NewTimer(ch.spec.ResultGrace)
			defer grace.Stop()
			graceC = grace.C
		case <-graceC:
			o.StoppedAfterResult = true
			return false
		}
	}
}

// reap finishes the child after wait and escalate (exited: its exit was seen). An
// exit seen is reaped after the rest of its process group is killed, recording
// o.Exited and its exit code or signal; an unconfirmed exit is reaped later in the
// background; a failed exit observation sends nothing more. In each case escaped
// descendants are swept. It returns the problems met, for CollectorError.
func (ch *child) reap(o *Outcome, exited bool) []string {
	var reasons []string
	switch {
	case !exited:
		reasons = append(reasons, fmt.Sprintf("exit not confirmed %v after SIGKILL", ch.spec.KillConfirm))
		reasons = append(reasons, ch.sweepEscapees(o)...)
		// Reap it whenever it does exit, so it never lingers as a zombie of ours.
		go func() {
			<-ch.exitSeen
			if ch.waitErr == nil {
				_, _ = ch.cmd.Process.Wait()
			}
		}()
	case ch.waitErr != nil:
		// waitid failed (e.g. someone else reaped the child): nothing proves the pid is
		// still ours, so send nothing more and claim no exit.
		reasons = append(reasons, fmt.Sprintf("observing the exit: %v", ch.waitErr))
		reasons = append(reasons, ch.sweepEscapees(o)...)
	default:
		// Members left in the group after the leader's exit would keep the pipes open
		// (escaped output holders): the group id is still ours because the leader is not
		// reaped yet.
		_ = syscall.Kill(-ch.pid, syscall.SIGKILL)
		reasons = append(reasons, ch.sweepEscapees(o)...)
		state, err := ch.cmd.Process.Wait()
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("reaping the process: %v", err))
			break
		}
		o.Exited = true
		ws, _ := state.Sys().(syscall.WaitStatus)
		switch {
		case ws.Exited():
			code := ws.ExitStatus()
			o.ExitCode = &code
		case ws.Signaled():
			o.Signal = SignalName(ws.Signal())
		}
	}
	return reasons
}

// sweepEscapees finds the descendants that left the process group by the spec's
// marker and kills them, while the leader is still unreaped (its pid and group id
// stay ours, so a group member is told apart by its pgid); found ones go to
// o.Escaped. It returns the problems met (a failed sweep, a survivor); nothing
// without a marker.
func (ch *child) sweepEscapees(o *Outcome) []string {
	if ch.spec.Marker == "" {
		return nil
	}
	pid := ch.pid
	var reasons []string
	found, err := sweep(ch.spec.Marker, func(p, pgid int) bool { return p == pid || pgid == pid }, SweepConfirm)
	if err != nil {
		reasons = append(reasons, "sweeping escaped descendants: "+err.Error())
	}
	for _, e := range found {
		if !e.Killed {
			reasons = append(reasons, fmt.Sprintf("escaped descendant %d (%s) survived SIGKILL", e.PID, e.Command))
		}
	}
	if len(found) > 0 {
		o.Escaped = found
	}
	return reasons
}

// settle closes the child's stdin (its end-of-file tells a live child to exit), waits
// up to CloseGrace for stdout and stderr to close (o.StdioClosed) before closing the
// supervisor's ends, and records the duration, whether the result line was seen, and
// the captured output. It returns the problem met (stdio still open), if any.
func (ch *child) settle(o *Outcome) []string {
	var reasons []string
	// Settle: stdin was never written; its end-of-file tells a live child to exit.
	_ = ch.inW.Close()
	closeTimer := time.NewTimer(ch.spec.CloseGrace)
	select {
	case <-ch.readersDone:
		o.StdioClosed = true
		closeTimer.Stop()
	case <-closeTimer.C:
		reasons = append(reasons, fmt.Sprintf("stdout/stderr still open %v after settling (a descendant outside the process group may hold them)", ch.spec.CloseGrace))
		closeAll(ch.outR, ch.errR)
		<-ch.readersDone
	}
	if o.StdioClosed {
		closeAll(ch.outR, ch.errR)
	}
	o.Duration = time.Since(ch.start)
	c := ch.c
	o.ResultSeen = c.watch.seen()
	c.mu.Lock()
	o.OutputBytes, o.CapturedBytes = c.received, c.kept
	o.Output = Captured{chunks: c.chunks}
	c.mu.Unlock()
	return reasons
}

// escalate sends SIGTERM, then SIGKILL, to the process group, and reports whether the
// exit was seen. Signals are sent only while no exit has been seen.
func escalate(o *Outcome, pid int, exitSeen <-chan struct{}, spec Spec) bool {
	for _, step := range []struct {
		sig  syscall.Signal
		name string
		wait time.Duration
	}{{syscall.SIGTERM, "SIGTERM", spec.TerminateGrace}, {syscall.SIGKILL, "SIGKILL", spec.KillConfirm}} {
		select {
		case <-exitSeen:
			return true
		default:
		}
		if err := signalStop(spec, pid, step.sig); err == nil {
			o.SignalsSent = append(o.SignalsSent, step.name)
		}
		t := time.NewTimer(step.wait)
		select {
		case <-exitSeen:
			t.Stop()
			return true
		case <-t.C:
		}
	}
	return false
}

// signalStop sends sig to the process group of pid, or SIGTERM through spec.Stop
// when it is set.
func signalStop(spec Spec, pid int, sig syscall.Signal) error {
	if sig != syscall.SIGKILL && spec.Stop != nil {
		return spec.Stop(pid, sig)
	}
	return syscall.Kill(-pid, sig)
}

// WaitNoReap blocks until process pid, a child of this process, has exited, leaving it
// unreaped (waitid with WNOWAIT), so that its pid and process group id cannot be reused
// meanwhile. Errors: waitid's (ECHILD when pid is not a child).
func WaitNoReap(pid int) error {
	const pPID = 1
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// SignalName names a signal as the kill(1) list spells it ("SIGTERM"), or "SIG<n>" for
// one without a name here.
func SignalName(s syscall.Signal) string { return signame.Of(s) }

// growPipe asks the kernel for a pipe buffer of size bytes; failure is harmless.
func growPipe(f *os.File, size int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETPIPE_SZ, uintptr(size))
	})
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// clipText shortens s to at most n runes, marking the cut with "…".
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Package worker owns agentproof's bounded child processes and the local fixture worker
// (docs/fixture-worker.md): the legacy path Worker.Run and the guarded path
// Worker.RunGuarded.
//
// Two layers, and the guarded path on top:
//
//   - Supervise (supervise.go) runs any program as a bounded child: explicit argv and
//     environment (nothing inherited), no shell, an explicit working directory, its own
//     process group (Setpgid) with Pdeathsig as a backstop, a stdin pipe that is never
//     written and is closed at settle, one combined stdout+stderr byte budget that keeps
//     the head, and a timeout that escalates SIGTERM → SIGKILL to the process group. It
//     returns an Outcome, never panics, and never claims an exit it did not observe.
//
//   - Worker.Run (fixture.go) is the unguarded path: it validates and copies a fixture
//     Request, creates a private workspace under the workspace root (workspace.go),
//     spawns the fixed fixture program `<program> fixture-child <fixture> <lifetime-ms>`
//     through Supervise, removes the workspace non-recursively only when the exit and
//     stdio close were confirmed and it is empty, quarantines it otherwise
//     (quarantine.go), and stores exactly one evidence record. It never judges: the
//     assurance package classifies records.
//
//   - Worker.RunGuarded (guarded.go) is the guarded path: the same bounded run
//     under an Attempt fence (fence.go: the controller hold is an flock on
//     <fence>-journal, the execution lock an flock on <fence>), in a provisioned
//     workspace identified by device and inode (workspace.go), admitted by the gate
//     (gate.go: the child takes the fence and reports admission and payload records on
//     fd 3 before any fixture code runs), with the program pinned by an execution
//     manifest (manifest.go: the executable plus the embedded module sources it is built
//     from) and refused on drift. Ownership is checked at call start, in the launch
//     window right before the fork (Spec.BeforeStart), after the exit and before return;
//     a controller that lost ownership removes and stores nothing.
//
// The fixture programs themselves live in child.go (RunChild), reached through the hidden
// command `agentproof fixture-child` (with `--gate`, RunGate first).
//
// Go adaptations of the Node.js original (docs/fixture-worker.md): process.execPath
// becomes os.Executable() (Options.Program overrides it, for tests and embedders); the
// process group is signalled with kill(-pgid) only while the group leader is unreaped,
// which keeps the pgid ours (no PID files, no signal after the reap); after
// the leader's exit is observed (waitid WNOWAIT) and before it is reaped, the group is
// sent SIGKILL once more so that members left behind cannot hold the pipes. A descendant that left the group (setsid) is not reachable that way: if
// it keeps stdout/stderr open, the run reports stdioClosed=false with a collector error
// and the workspace is quarantined (an escaper is at least reported as a leak); a
// subreaper or cgroup sweep that also kills such escapers is not done here.
//
// Pdeathsig in Go: Linux delivers it when the *thread* that forked the child exits,
// and the Go runtime ends a thread when a goroutine exits while locked to it
// (runtime.LockOSThread without Unlock, as the sandbox provider's launches do). A child
// forked from such a thread would be SIGKILLed in the middle of its run, so every
// child without a Spec.Fork of its own is forked from one thread that lives as long as
// the process (OnForkThread, forkthread.go).
package worker

import "time"

var fixtures = [...]string{"pass", "fail", "hang", "noisy"}

// Fixtures returns the fixture names in their fixed order, as a new
// slice: the set itself cannot be changed.
func Fixtures() []string { return append([]string(nil), fixtures[:]...) }

// IsFixture reports whether name is one of Fixtures.
func IsFixture(name string) bool {
	for _, f := range fixtures {
		if f == name {
			return true
		}
	}
	return false
}

// Exit codes of the fixture programs.
const (
	ExitPass        = 0
	ExitFail        = 1
	ExitUsage       = 64
	ExitOutputError = 74
	ExitWatchdog    = 124
	ExitParentLost  = 125
)

// Limits and timings.
const (
	// MaxChildLifetimeMS caps a fixture program's own lifetime.
	MaxChildLifetimeMS = 300_000
	// WatchdogMarginMS is added to the request timeout to give the child's own lifetime,
	// so the worker's timeout acts first.
	WatchdogMarginMS = 5_000
	// MaxTimeoutMS is the largest request timeout: the child's lifetime must stay within
	// MaxChildLifetimeMS.
	MaxTimeoutMS = MaxChildLifetimeMS - WatchdogMarginMS
	// MaxOutputBytes is the largest combined stdout+stderr budget of one run (64 MiB).
	MaxOutputBytes = 64 << 20
	// FlushLimitMS bounds how long pass and fail wait for their output to be written
	// before exiting regardless.
	FlushLimitMS = 2_000
)

// Default escalation timings used when a Spec leaves them zero.
const (
	// TerminateGrace is the wait between SIGTERM and SIGKILL (TERMINATE_GRACE_MS).
	TerminateGrace = 500 * time.Millisecond
	// KillConfirm is the wait after SIGKILL for the exit before settling unconfirmed
	// (KILL_CONFIRM_MS). Generous, because a SIGKILLed process with a large address space
	// can take over a second to be torn down on a loaded machine; a prompt exit is seen at
	// once, so this only bounds the pathological case.
	KillConfirm = 3_000 * time.Millisecond
	// CloseGrace bounds the wait for stdout/stderr end-of-file after settling
	// (CLOSE_GRACE_MS): a bounded drain of about 2 s.
	CloseGrace = 2_000 * time.Millisecond
)

// ChildEnvironment returns the complete environment of a fixture child: nothing is
// inherited from the controller. GOMEMLIMIT=64MiB bounds its heap, and
// GOMAXPROCS=1 gives the fixture's few goroutines one processor, as a Node.js child has
// one JavaScript thread (and spares the Go runtime's start its look at the cgroup's CPU
// limit and its idle processors: about 1 ms of CPU of a fixture process's 6;
// docs/performance.md). It returns a new slice each time: the environment itself cannot
// be changed.
func ChildEnvironment() []string {
	return []string{"GOMAXPROCS=1", "GOMEMLIMIT=64MiB", "LANG=C", "PATH=/usr/bin:/bin", "TZ=UTC"}
}

// Scope is the result scope of the unguarded path.
const Scope = "local-fixture"

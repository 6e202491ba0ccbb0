package worker

import (
	"runtime"
	"sync"
)

// The parent-death signal (Pdeathsig) of a child follows the OS thread that forked it,
// not the process: Linux sends it when that thread ends, and the Go runtime ends a
// thread whenever a goroutine exits while locked to it. The sandbox provider's
// launches do exactly that (they fork bubblewrap from a locked thread left in a private
// mount namespace), and that thread may be one that forked another child earlier: a
// container engine process, a verifier step or an agent was then SIGKILLed in the
// middle of its run, its output lost. So every child without a Fork of its own is
// forked from one thread that is locked for the process's whole life and never ends.

var (
	forkOnce sync.Once
	forkReqs chan func()
)

// OnForkThread runs start on the process's fork thread (an OS thread that never ends
// before the process does) and returns start's error: a child start forks keeps its
// parent-death signal until this process dies. start must not block for long (every
// fork of the process waits for it).
func OnForkThread(start func() error) error {
	forkOnce.Do(func() {
		forkReqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked and never returns
			for f := range forkReqs {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	forkReqs <- func() { errc <- start() }
	return <-errc
}

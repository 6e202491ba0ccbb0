package worker

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestChildOutlivesEndedThreads: children started while other goroutines end locked
// OS threads (as the sandbox provider's launches do) are never killed by the
// parent-death signal of the thread that forked them: each runs to its own exit.
func TestChildOutlivesEndedThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 40 processes (-short skips it)")
	}
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(1)
	go func() {
		defer churn.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			done := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				close(done) // returns locked: the runtime ends this thread
			}()
			<-done
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	killed := 0
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := Supervise(context.Background(), Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "sleep 0.3; echo ok"},
				Dir: "/", Timeout: time.Minute, MaxOutputBytes: 1 << 10, NullStdin: true})
			if err != nil || o.ExitCode == nil || *o.ExitCode != 0 || string(o.Output.Stdout()) != "ok\n" {
				mu.Lock()
				killed++
				mu.Unlock()
				t.Logf("exit %v signal %q stdout %q err %v", o.ExitCode, o.Signal, o.Output.Stdout(), err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	churn.Wait()
	if killed > 0 {
		t.Errorf("%d of 40 children did not run to their own exit", killed)
	}
}

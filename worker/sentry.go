package worker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// The process sentry (docs/processes.md "When the controller is killed"). Every agent
// process of a local attempt dies with its parent (a parent-death signal), but what the
// agent started lives on when the controller (`agentproof run`, or a serve child) is
// killed with SIGKILL: its children and its setsid daemons are re-parented to whoever
// adopts orphans above the dead controller. The sentry is a small process of its own
// that the controller starts once and tells, over a pipe, the markers of the attempts
// running now. When the pipe reaches its end — the controller closed it when it was
// done, or died — the sentry sweeps every process still carrying one of those markers
// (SweepMarked) and exits: the killed controller's agents' descendants go within the
// sweep's confirmation time. A descendant that scrubbed its environment is not found
// (as for every marker sweep).

// SentryCommand is the hidden agentproof command that runs the sentry (RunSentry).
const SentryCommand = "process-sentry"

// Sentry is the controller's side of a process sentry: Watch and Done tell it which
// markers to sweep should the controller die; Close ends it. Safe for concurrent use;
// a nil *Sentry does nothing.
type Sentry struct {
	mu  sync.Mutex
	w   *os.File
	cmd *exec.Cmd
}

// StartSentry starts `<exe> process-sentry` in a process group of its own (terminal
// signals aimed at the controller's group do not reach it), with no parent-death
// signal (it must outlive the controller), its working directory "/" and an empty
// environment, reading the pipe whose writing end only this process holds
// (close-on-exec: no child inherits it). Error: the sentry could not be started.
func StartSentry(exe string) (*Sentry, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker: process sentry pipe: %w", err)
	}
	cmd := &exec.Cmd{Path: exe, Args: []string{"agentproof", SentryCommand}, Dir: "/", Env: []string{},
		Stdin: r, SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("worker: starting the process sentry: %w", err)
	}
	g := &Sentry{w: w, cmd: cmd}
	go func() { _ = cmd.Wait() }() // reaped when it ends (after Close)
	return g, nil
}

// Watch tells the sentry to sweep marker should the controller die. Error: the sentry
// is gone (it can no longer protect anything).
func (g *Sentry) Watch(marker string) error { return g.send('+', marker) }

// Done tells the sentry that marker's processes were swept by the controller itself.
func (g *Sentry) Done(marker string) error { return g.send('-', marker) }

func (g *Sentry) send(op byte, marker string) error {
	if g == nil {
		return nil
	}
	if !ValidMarker(marker) {
		return fmt.Errorf("worker: invalid process marker %q", clipText(marker, 80))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w == nil {
		return errors.New("worker: the process sentry is closed")
	}
	if _, err := g.w.WriteString(string(op) + marker + "\n"); err != nil {
		return fmt.Errorf("worker: telling the process sentry: %w", err)
	}
	return nil
}

// Close ends the sentry: it sweeps the markers still watched and exits.
func (g *Sentry) Close() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w == nil {
		return nil
	}
	err := g.w.Close()
	g.w = nil
	return err
}

// RunSentry is the sentry process: it reads "+<marker>" and "-<marker>" lines from in
// until its end, then sweeps every marker still watched (SweepMarked, each confirmed
// within SweepConfirm) and returns 0; 64 for a line it does not understand (it still
// sweeps what it was told).
func RunSentry(in io.Reader, stderr io.Writer) int {
	watched := map[string]bool{}
	code := 0
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		m := strings.TrimSpace(line[min(1, len(line)):])
		switch {
		case strings.HasPrefix(line, "+") && ValidMarker(m):
			watched[m] = true
		case strings.HasPrefix(line, "-") && ValidMarker(m):
			delete(watched, m)
		default:
			fmt.Fprintf(stderr, "agentproof %s: ignoring %q\n", SentryCommand, clipText(line, 80))
			code = 64
		}
	}
	for m := range watched {
		if _, err := SweepMarked(m, SweepConfirm); err != nil {
			fmt.Fprintf(stderr, "agentproof %s: %v\n", SentryCommand, err)
		}
	}
	return code
}

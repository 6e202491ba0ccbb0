// Package watch records every mutation of a workspace while an agent may act on it
// (docs/acp.md "Observing nothing happened"): an inotify watcher over the workspace
// and every directory below it — including the directories created while it runs —
// that records each create, write, close after writing, move and delete with its
// workspace-relative path and time. The deny and Stop cases grade "no mutation
// observed" from this record, beside the one stat of file_absent at the end: a file
// written and deleted again between two looks is still seen.
//
// A directory created while the watcher runs is watched as soon as its creation is
// read, and then scanned: whatever was created in it before its watch existed is
// recorded too (Found). The kernel's queue can overflow (IN_Q_OVERFLOW): the record
// then says so (Overflow), and events were lost — a grader must treat such a record as
// incomplete. Events past MaxEvents are counted, not kept.
package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Schema is the schema of a Record.
const Schema = "agentproof.workspace-watch/v1"

// MaxEvents bounds the events a Record keeps (the rest are counted in Dropped).
const MaxEvents = 10000

// Op is what happened to a path.
type Op string

// Ops.
const (
	OpCreate     Op = "create"
	OpWrite      Op = "write"       // IN_MODIFY
	OpCloseWrite Op = "close_write" // closed after being opened for writing
	OpMoveFrom   Op = "move_from"
	OpMoveTo     Op = "move_to"
	OpDelete     Op = "delete"
)

// Event is one observed mutation: its order, time (RFC 3339 UTC, µs: when the watcher
// read it, just after it happened), op, the
// workspace-relative slash-separated path, whether it is a directory, and whether it was
// found by scanning a directory created before its watch existed (Found).
type Event struct {
	Seq   int    `json:"seq"`
	At    string `json:"at"`
	Op    Op     `json:"op"`
	Path  string `json:"path"`
	Dir   bool   `json:"dir,omitempty"`
	Found bool   `json:"found,omitempty"`
}

// Record is what a watcher observed from Start to Stop: the events in order, how many
// did not fit (Dropped), whether the kernel's queue overflowed (events were lost), and
// the problems of the watch itself (a directory that could not be watched). Complete
// reports whether the record can be trusted to hold every mutation.
type Record struct {
	Schema    string   `json:"schema"`
	StartedAt string   `json:"startedAt"`
	StoppedAt string   `json:"stoppedAt"`
	Events    []Event  `json:"events"`
	Dropped   int      `json:"dropped,omitempty"`
	Overflow  bool     `json:"overflow,omitempty"`
	Problems  []string `json:"problems,omitempty"`
}

// Complete reports whether the record holds every mutation: no overflow, nothing
// dropped, no directory left unwatched.
func (r Record) Complete() bool { return !r.Overflow && r.Dropped == 0 && len(r.Problems) == 0 }

// Touched returns the events on path or below it (path workspace-relative,
// slash-separated).
func (r Record) Touched(path string) []Event {
	path = strings.Trim(filepath.ToSlash(filepath.Clean(path)), "/")
	var out []Event
	for _, e := range r.Events {
		if e.Path == path || strings.HasPrefix(e.Path, path+"/") {
			out = append(out, e)
		}
	}
	return out
}

const mask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// Watcher is a running watch of one workspace. Stop it exactly once.
type Watcher struct {
	root string
	fd   int
	wake [2]int // a pipe: Stop writes to end the reader

	mu   sync.Mutex
	dirs map[int32]string // watch descriptor → workspace-relative directory ("" = root)
	rec  Record
	done chan struct{}

	// rmu serializes the reads of the kernel's queue (the reader's and Sync's), so
	// events are recorded in the order the kernel queued them; stopped (under rmu)
	// is set once Stop closed the descriptors.
	rmu     sync.Mutex
	stopped bool
}

// Start watches root (an absolute directory) and every directory below it; events are
// recorded from the moment Start returns. Errors: root is not a directory, inotify is
// unavailable. A subdirectory that cannot be watched is a problem of the record, not an
// error.
func Start(root string) (*Watcher, error) {
	w, err := start(root)
	if err == nil {
		go w.read()
	}
	return w, err
}

// start is Start without the reader goroutine: nothing is recorded until Sync or Stop
// (a test of Sync holds the reader back with it).
func start(root string) (*Watcher, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("watch: workspace %q must be an absolute path", root)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("watch: workspace %s is not a directory: %v", root, err)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watch: inotify: %w", err)
	}
	w := &Watcher{root: root, fd: fd, dirs: map[int32]string{}, done: make(chan struct{}),
		rec: Record{Schema: Schema, StartedAt: stamp(time.Now()), Events: []Event{}}}
	if err := unix.Pipe2(w.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch: pipe: %w", err)
	}
	if err := w.add(""); err != nil {
		w.closeFDs()
		return nil, err
	}
	w.mu.Lock()
	w.scan("", false)
	w.mu.Unlock()
	return w, nil
}

// add watches the workspace-relative directory rel. The caller holds w.mu, except in
// Start.
func (w *Watcher) add(rel string) error {
	wd, err := unix.InotifyAddWatch(w.fd, filepath.Join(w.root, filepath.FromSlash(rel)), mask)
	if err != nil {
		return fmt.Errorf("watch: watching %s: %w", displayPath(rel), err)
	}
	w.dirs[int32(wd)] = rel
	return nil
}

// scan watches every directory below rel; with record set it records every entry it
// finds as created (a directory created before its watch existed). The caller holds
// w.mu.
func (w *Watcher) scan(rel string, record bool) {
	base := filepath.Join(w.root, filepath.FromSlash(rel))
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == base {
			return nil
		}
		r, _ := filepath.Rel(w.root, p)
		r = filepath.ToSlash(r)
		if record {
			w.note(Event{Op: OpCreate, Path: r, Dir: d.IsDir(), Found: true})
		}
		if d.IsDir() {
			if err := w.add(r); err != nil {
				w.rec.Problems = append(w.rec.Problems, err.Error())
				return fs.SkipDir
			}
		}
		return nil
	})
}

// note appends e (the caller holds w.mu).
func (w *Watcher) note(e Event) {
	if len(w.rec.Events) >= MaxEvents {
		w.rec.Dropped++
		return
	}
	e.Seq, e.At = len(w.rec.Events)+1, stamp(time.Now())
	w.rec.Events = append(w.rec.Events, e)
}

// read reads events until Stop wakes it, then drains what is queued.
func (w *Watcher) read() {
	defer close(w.done)
	buf := make([]byte, 64*1024)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wake[0]), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			w.mu.Lock()
			w.rec.Problems = append(w.rec.Problems, "watch: poll: "+err.Error())
			w.mu.Unlock()
			return
		}
		stopping := fds[1].Revents != 0
		w.rmu.Lock()
		for w.drain(buf) {
		}
		w.rmu.Unlock()
		if stopping {
			return
		}
	}
}

// drain reads one buffer of events; false when none was queued.
func (w *Watcher) drain(buf []byte) bool {
	n, err := unix.Read(w.fd, buf)
	if err != nil || n <= 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		nameLen := int(ev.Len)
		name := ""
		if nameLen > 0 {
			raw := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+nameLen]
			name = strings.TrimRight(string(raw), "\x00")
		}
		off += unix.SizeofInotifyEvent + nameLen
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			w.rec.Overflow = true
			continue
		}
		dir, known := w.dirs[ev.Wd]
		if ev.Mask&unix.IN_IGNORED != 0 {
			delete(w.dirs, ev.Wd)
			continue
		}
		if !known || name == "" {
			continue
		}
		rel := name
		if dir != "" {
			rel = dir + "/" + name
		}
		isDir := ev.Mask&unix.IN_ISDIR != 0
		for _, op := range ops(ev.Mask) {
			w.note(Event{Op: op, Path: rel, Dir: isDir})
		}
		if isDir && ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			if err := w.add(rel); err != nil {
				w.rec.Problems = append(w.rec.Problems, err.Error())
				continue
			}
			w.scan(rel, true)
		}
	}
	return true
}

// ops are the Ops of an event mask, in a fixed order.
func ops(m uint32) []Op {
	var out []Op
	for _, o := range []struct {
		bit uint32
		op  Op
	}{{unix.IN_CREATE, OpCreate}, {unix.IN_MOVED_TO, OpMoveTo}, {unix.IN_MODIFY, OpWrite}, {unix.IN_CLOSE_WRITE, OpCloseWrite},
		{unix.IN_MOVED_FROM, OpMoveFrom}, {unix.IN_DELETE, OpDelete}} {
		if m&o.bit != 0 {
			out = append(out, o.op)
		}
	}
	return out
}

// Sync records every event the kernel has queued when it is called before it returns:
// a mutation that completed before the call is stamped no later than Sync's return
// (the reader goroutine alone stamps an event when it gets to read it, which under
// load can be well after it happened). The session runner syncs when an agent asks a
// permission, so a write made before asking is stamped before the question — the
// order the permission_order matcher grades. Sync after Stop does nothing.
func (w *Watcher) Sync() {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	if w.stopped {
		return
	}
	buf := make([]byte, 64*1024)
	for w.drain(buf) {
	}
}

// Stop ends the watch, reads what the kernel still had queued and returns the record.
func (w *Watcher) Stop() Record {
	_, _ = unix.Write(w.wake[1], []byte{1})
	<-w.done
	w.rmu.Lock()
	w.stopped = true
	w.closeFDs()
	w.rmu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rec.StoppedAt = stamp(time.Now())
	return w.rec
}

func (w *Watcher) closeFDs() {
	unix.Close(w.fd)
	unix.Close(w.wake[0])
	unix.Close(w.wake[1])
}

func displayPath(rel string) string {
	if rel == "" {
		return "the workspace"
	}
	return rel
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

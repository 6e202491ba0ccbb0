package server

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentproof/agentproof/api"
)

// changeFeed is the instance's change sequence number (api.Changes) and the waits on
// it (GET /api/changes): bump wakes every wait; close ends every wait at once (the
// server is shutting down) and makes later waits answer at once.
type changeFeed struct {
	mu     sync.Mutex
	seq    uint64
	moved  chan struct{} // closed and replaced by bump
	closed bool
}

func newChangeFeed() *changeFeed { return &changeFeed{seq: 1, moved: make(chan struct{})} }

// bump records one change.
func (f *changeFeed) bump() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	if !f.closed {
		close(f.moved)
		f.moved = make(chan struct{})
	}
}

// close ends every wait.
func (f *changeFeed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.moved)
	}
}

// wait returns the sequence number once it is above after, or when d passed, ctx
// ended or the feed closed (whichever is first).
func (f *changeFeed) wait(ctx context.Context, after uint64, d time.Duration) uint64 {
	var timer *time.Timer
	for {
		f.mu.Lock()
		seq, moved, closed := f.seq, f.moved, f.closed
		f.mu.Unlock()
		if seq > after || closed || d <= 0 {
			return seq
		}
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		}
		select {
		case <-moved:
		case <-timer.C:
			return f.current()
		case <-ctx.Done():
			return f.current()
		}
	}
}

func (f *changeFeed) current() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seq
}

// changes serves GET /api/changes (api.Changes): query after (default 0) and waitMs (0
// to api.MaxChangesWaitMs, default 0). Errors: invalid_request naming the parameter.
func (s *Server) changes(ctx context.Context, r *http.Request, _ principal) (any, error) {
	q := r.URL.Query()
	var after uint64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, invalid("after must be a non-negative integer")
		}
		after = n
	}
	var wait time.Duration
	if v := q.Get("waitMs"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > api.MaxChangesWaitMs {
			return nil, invalid("waitMs must be an integer from 0 to " + strconv.Itoa(api.MaxChangesWaitMs))
		}
		wait = time.Duration(n) * time.Millisecond
	}
	return api.Changes{Seq: s.feed.wait(ctx, after, wait)}, nil
}

// NoteChange records a change the HTTP routes did not make (the heartbeat runner's
// record updates): every GET /api/changes wait ends.
func (s *Server) NoteChange() { s.feed.bump() }

package server_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
)

// TestChangesLongPoll: GET /api/changes answers the change sequence number at once
// without a wait; a wait after the current number ends when a board or agent write
// lands (not when its time passes), and without a write it answers the same number
// once waitMs passed; a bad parameter is 400 naming it; an agent token is refused
// (board only); closing the server ends a waiting request at once.
func TestChangesLongPoll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	seq, err := w.co.WaitChanges(ctx, 0, 0)
	if err != nil || seq == 0 {
		t.Fatalf("WaitChanges(0, 0) = %d, %v", seq, err)
	}
	if again, err := w.co.WaitChanges(ctx, seq, 20*time.Millisecond); err != nil || again != seq {
		t.Fatalf("a wait without a change = %d, %v; want %d", again, err, seq)
	}
	got := make(chan uint64, 1)
	go func() {
		n, err := w.co.WaitChanges(ctx, seq, api.MaxChangesWaitMs*time.Millisecond)
		if err != nil {
			t.Error(err)
		}
		got <- n
	}()
	if _, err := w.co.Comment(ctx, w.issue, "a change"); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n <= seq {
			t.Errorf("the wait ended with %d after a write, want above %d", n, seq)
		}
	case <-time.After(api.MaxChangesWaitMs * time.Millisecond):
		t.Fatal("a write did not end the wait")
	}
	for _, q := range []string{"after=-1", "after=x", "waitMs=-1", "waitMs=" + strconv.Itoa(api.MaxChangesWaitMs+1), "waitMs=1.5"} {
		if status, code, _ := call(t, w.base, "GET", "/api/changes?"+q, w.boardTk, nil); status != http.StatusBadRequest || code != "invalid_request" {
			t.Errorf("?%s: %d %s, want 400 invalid_request", q, status, code)
		}
	}
	if status, _, _ := call(t, w.base, "GET", "/api/changes", w.runTok, nil); status != http.StatusForbidden {
		t.Errorf("an agent token read the change feed: %d", status)
	}
	// Shutdown ends a waiting request at once (it does not hold the drain).
	now, _ := w.co.WaitChanges(ctx, 0, 0)
	ended := make(chan error, 1)
	go func() {
		_, err := w.co.WaitChanges(ctx, now, api.MaxChangesWaitMs*time.Millisecond)
		ended <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the request reach its wait (a later one answers at once anyway)
	start := time.Now()
	if _, err := w.in.restart(ctx); err != nil { // shuts the server down first
		t.Fatal(err)
	}
	<-ended
	if d := time.Since(start); d >= api.MaxChangesWaitMs*time.Millisecond {
		t.Errorf("shutdown waited %s for a change wait", d)
	}
}

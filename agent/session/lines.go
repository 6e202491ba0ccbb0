package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// Helpers of the protocols whose wire is newline-delimited JSON that they read
// themselves (Pi's RPC mode, Codex's app-server): reading the lines of the agent's
// stream, writing lines to its stdin, and matching requests to their answers.

// LineWriter writes JSON values to an agent's stdin, one per line; it is safe for
// concurrent use (a line is never interleaved with another).
type LineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLineWriter returns a LineWriter writing to w.
func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{w: w} }

// Send writes v as one JSON line. Errors: v does not encode, the write failed.
func (l *LineWriter) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}

// ReadLines reads r line by line until it ends and calls f with each line (without its
// line end) in order; a line longer than max bytes is cut to its head and f gets
// oversized true. It returns when r ends (the stream closed or failed).
func ReadLines(r io.Reader, max int, f func(line []byte, oversized bool)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	size := 0
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if room := max - len(line); room > 0 {
			line = append(line, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if size > 0 {
			f(bytes.TrimRight(line, "\r\n"), size > max)
		}
		line, size = line[:0], 0
		if err != nil {
			return
		}
	}
}

// Calls matches the requests a client sends to the answers the agent gives, by id;
// R is an answer. The zero Calls is ready to use; it is safe for concurrent use.
type Calls[R any] struct {
	mu      sync.Mutex
	seq     int
	waiting map[string]chan R
}

// Open returns a fresh id (prefix and a sequence number) and the channel its answer
// will arrive on; done forgets the id (call it once the answer arrived or the wait
// ended).
func (c *Calls[R]) Open(prefix string) (id string, answer <-chan R, done func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	id = prefix + strconv.Itoa(c.seq)
	ch := make(chan R, 1)
	if c.waiting == nil {
		c.waiting = map[string]chan R{}
	}
	c.waiting[id] = ch
	return id, ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.waiting, id)
	}
}

// Deliver hands answer r to the request with id, and reports whether one was waiting.
func (c *Calls[R]) Deliver(id string, r R) bool {
	c.mu.Lock()
	ch := c.waiting[id]
	c.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case ch <- r:
	default: // answered twice: the first answer counts
	}
	return true
}

// Await waits for the answer to request what: until answer delivers it, ctx ends,
// limit passes or gone is closed (the agent's stream ended: the error wraps ErrGone).
func Await[R any](ctx context.Context, what string, limit time.Duration, answer <-chan R, gone <-chan struct{}) (R, error) {
	var zero R
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case r := <-answer:
		return r, nil
	case <-ctx.Done():
		return zero, fmt.Errorf("waiting for the answer to %s: %w", what, context.Cause(ctx))
	case <-t.C:
		return zero, fmt.Errorf("agent: no answer to %s within %v", what, limit)
	case <-gone:
		return zero, fmt.Errorf("%w before it answered %s", ErrGone, what)
	}
}

// Running makes t the running turn of a line-protocol connection (*slot, guarded by
// mu) and returns the function that ends it (the slot back to nil), which the
// connection's Prompt defers.
func Running[T any](mu *sync.Mutex, slot **T, t *T) (end func()) {
	mu.Lock()
	*slot = t
	mu.Unlock()
	return func() {
		mu.Lock()
		*slot = nil
		mu.Unlock()
	}
}

// TurnEnd is the end of a line-protocol connection's running turn, guarded by the
// connection's mutex (embedded in the connection's turn): End ends it, once, either
// completed (the agent's own end message arrived) or not (the agent's stream ended
// first); Await waits for it.
type TurnEnd struct {
	done      chan struct{}
	ended     bool
	completed bool
}

// NewTurnEnd returns the end of a turn that is running.
func NewTurnEnd() TurnEnd { return TurnEnd{done: make(chan struct{})} }

// Ended reports whether the turn has ended (the connection's mutex held).
func (e *TurnEnd) Ended() bool { return e.ended }

// End ends the turn, completed by the agent's end message or not (its stream ended);
// a turn already ended stays as it ended. The connection's mutex must be held.
func (e *TurnEnd) End(completed bool) {
	if e.ended {
		return
	}
	e.ended, e.completed = true, completed
	close(e.done)
}

// Await waits until the turn ended or ctx ends (its cause). Errors: ctx's cause, or,
// wrapping ErrGone, the turn ended without the agent's end message ("<gone> during
// the turn", gone saying whose stream closed); mu is the connection's mutex.
func (e *TurnEnd) Await(ctx context.Context, mu *sync.Mutex, gone string) error {
	if err := AwaitTurn(ctx, e.done); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if !e.completed {
		return fmt.Errorf("%w: %s during the turn", ErrGone, gone)
	}
	return nil
}

// AwaitTurn waits until a turn's done is closed (the connection read its end) or ctx
// ends (its cause).
func AwaitTurn(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

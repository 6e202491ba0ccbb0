package session

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/agentproof/agentproof/redact"
)

// The session log (docs/acp.md "Evidence"): every line of the protocol's stream, in
// both directions and in wire order, one JSON line each, plus the layer's own notes
// (process start and exit, permission decisions, questions, file operations a protocol
// performed for the agent, cancellation). Each line is redacted with the session's
// secret set before it is kept. What the agent writes is untrusted: a line that is not
// JSON is kept as text, a line longer than MaxLineBytes is cut (its head kept, its size
// recorded), and the log stops growing at MaxLogBytes (later lines are counted, never
// silently lost). The protocol names the log's schema and reads each line's envelope
// (Protocol.LogSchema, Protocol.Classify).

// Bounds of the session log (bytes).
const (
	// MaxLineBytes is the most of one wire line the log keeps.
	MaxLineBytes = 1 << 20
	// MaxLogBytes bounds the whole session log; MaxTurnLogBytes one turn's share of it
	// (TurnResult.Log).
	MaxLogBytes     = 32 << 20
	MaxTurnLogBytes = 8 << 20
)

// Directions of a log entry.
const (
	// DirAgent is a line the agent sent.
	DirAgent = "agent"
	// DirClient is a line agentproof (the protocol's client) sent.
	DirClient = "client"
	// DirDriver is a note of the layer or the protocol itself (not on the wire).
	DirDriver = "driver"
)

// LogEntry is one line of a session log:
//
//   - Schema (the protocol's), Seq (1-based), Time (RFC 3339 with nanoseconds, UTC),
//     Turn (the prompt turn it belongs to, 1-based; 0 before the first prompt), Dir
//     (DirAgent, DirClient or DirDriver).
//   - For a wire line: Method and ID as the protocol's Classify reads them (JSON-RPC:
//     a response has an ID and no method), Update (a sub-kind: an ACP session/update's
//     sessionUpdate, a Pi message event's type, …), Message (the redacted line) or Text
//     (a line that is not a JSON object), Bytes (the line's size on the wire, without
//     its newline) and Truncated (only the head of the line was kept).
//   - For a note: Event (process_start, process_exit, turn_start, turn_end,
//     permission_decision, question_answer, fs_read, fs_write, cancel, log_overflow,
//     sdk_log) and Data.
type LogEntry struct {
	Schema    string          `json:"schema"`
	Seq       int64           `json:"seq"`
	Time      string          `json:"time"`
	Turn      int             `json:"turn"`
	Dir       string          `json:"dir"`
	Method    string          `json:"method,omitempty"`
	ID        json.RawMessage `json:"id,omitempty"`
	Update    string          `json:"update,omitempty"`
	Message   json.RawMessage `json:"message,omitempty"`
	Text      string          `json:"text,omitempty"`
	Bytes     int             `json:"bytes,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
	Event     string          `json:"event,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// WireLine is one line of a protocol's stream as its Classify reads it.
type WireLine struct {
	// Method, ID and Update as LogEntry names them.
	Method string
	ID     json.RawMessage
	Update string
	// Object is whether the line is one JSON object (else it is kept as text).
	Object bool
}

// DecodeObject decodes line (untrusted bytes) into v when the line is one JSON object
// and reports whether it was: a protocol's Classify reads a line's envelope with it.
func DecodeObject(line []byte, v any) bool {
	trimmed := bytes.TrimSpace(line)
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, v) == nil
}

// wireLog writes a session log: to out (the whole session, may be nil) and to the
// current turn's buffer. It is safe for concurrent use.
type wireLog struct {
	mu      sync.Mutex
	out     io.Writer
	secrets *redact.Set // guarded by mu (see set, addSecrets)
	now     func() time.Time
	// schema tags every line and classify reads a wire line's envelope (the
	// protocol's).
	schema   string
	classify func([]byte) WireLine
	seq      int64
	turn     int
	written  int64
	dropped  int64
	turnBuf  bytes.Buffer
	turnCut  int64
	err      error
}

func newWireLog(out io.Writer, secrets *redact.Set, now func() time.Time, schema string, classify func([]byte) WireLine) *wireLog {
	if now == nil {
		now = time.Now
	}
	return &wireLog{out: out, secrets: secrets, now: now, schema: schema, classify: classify}
}

// set returns the log's current secret set.
func (l *wireLog) set() *redact.Set {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.secrets
}

// addSecrets adds values (credential forms included) to what the log redacts from now
// on (a warm session's later runs bring new run tokens).
func (l *wireLog) addSecrets(values ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.secrets = l.secrets.WithCredentials(values...)
}

// beginTurn starts turn n's buffer and returns the previous one's.
func (l *wireLog) beginTurn(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turn = n
	l.turnBuf.Reset()
	l.turnCut = 0
}

// turnEvidence returns the current turn's log lines and how many were cut.
func (l *wireLog) turnEvidence() ([]byte, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.turnBuf.Bytes()), l.turnCut
}

// wire records one line seen on the wire in direction dir; size is its full length
// (line may be only its head).
func (l *wireLog) wire(dir string, line []byte, size int) {
	e := LogEntry{Dir: dir, Bytes: size, Truncated: size > len(line)}
	secrets := l.set()
	red := []byte(secrets.RedactText(string(line)))
	c := l.classify(line)
	// Every field taken from the line is redacted: a method name is agent text too.
	e.Method, e.Update = clip(secrets.RedactText(c.Method), 200), clip(secrets.RedactText(c.Update), 200)
	if c.Object && !e.Truncated && json.Valid(red) {
		e.Message = compactJSON(red)
		if len(c.ID) > 0 && json.Valid([]byte(secrets.RedactText(string(c.ID)))) {
			e.ID = json.RawMessage(secrets.RedactText(string(c.ID)))
		}
	} else {
		e.Text = string(bytes.ToValidUTF8(red, []byte("\uFFFD")))
	}
	l.put(e)
}

// note records a driver event with data (marshalled to JSON and redacted).
func (l *wireLog) note(event string, data any) {
	e := LogEntry{Dir: DirDriver, Event: event}
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			red := []byte(l.set().RedactText(string(b)))
			if json.Valid(red) {
				e.Data = red
			}
		}
	}
	l.put(e)
}

func compactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return nil
	}
	return buf.Bytes()
}

func (l *wireLog) put(e LogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Schema, e.Seq, e.Turn = l.schema, l.seq, l.turn
	e.Time = l.now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	b = append(b, '\n')
	if l.written+int64(len(b)) > MaxLogBytes {
		l.dropped++
		return
	}
	l.written += int64(len(b))
	if l.turnBuf.Len()+len(b) <= MaxTurnLogBytes {
		l.turnBuf.Write(b)
	} else {
		l.turnCut++
	}
	if l.out != nil && l.err == nil {
		_, l.err = l.out.Write(b)
	}
}

// close writes a last note with the number of dropped lines, if any, and returns the
// first write error.
func (l *wireLog) close() error {
	l.mu.Lock()
	dropped := l.dropped
	l.mu.Unlock()
	if dropped > 0 {
		l.mu.Lock()
		l.dropped = 0
		l.written = 0 // room for the overflow note itself
		l.mu.Unlock()
		l.note("log_overflow", map[string]int64{"droppedLines": dropped})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// lineTap splits a byte stream into lines for the log: complete lines go to emit with
// their full size; only the first MaxLineBytes of a line are kept. The bytes
// themselves pass through untouched (see tapReader, tapWriter).
type lineTap struct {
	emit    func(line []byte, size int)
	buf     []byte
	size    int
	maxLine int
}

func (t *lineTap) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		t.size += len(chunk)
		if room := t.maxLine - len(t.buf); room > 0 {
			t.buf = append(t.buf, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			return
		}
		if t.size > 0 || len(t.buf) > 0 {
			t.emit(t.buf, t.size)
		}
		t.buf, t.size = t.buf[:0], 0
		p = p[i+1:]
	}
}

// flush emits a final line without newline, if any.
func (t *lineTap) flush() {
	if t.size > 0 {
		t.emit(t.buf, t.size)
	}
	t.buf, t.size = t.buf[:0], 0
}

// tapReader passes reads of r through and feeds them to tap.
type tapReader struct {
	r   io.Reader
	tap *lineTap
	mu  sync.Mutex
}

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.mu.Lock()
	if n > 0 {
		t.tap.feed(p[:n])
	}
	if err != nil {
		t.tap.flush()
	}
	t.mu.Unlock()
	return n, err
}

// tapWriter passes writes to w through and feeds what was written to tap.
type tapWriter struct {
	w   io.Writer
	tap *lineTap
	mu  sync.Mutex
}

func (t *tapWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.w.Write(p)
	if n > 0 {
		t.tap.feed(p[:n])
	}
	return n, err
}

package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/agentproof/agentproof/redact"
)

// The ACP session log (docs/acp.md "Evidence"): every JSON-RPC message on the wire, in
// both directions and in wire order, one JSON line each, plus the driver's own notes
// (process start and exit, permission decisions, file operations it performed for the
// agent, cancellation). Each line is redacted with the session's secret set before it
// is kept. What the agent writes is untrusted: a line that is not JSON is kept as text,
// a line longer than MaxACPLineBytes is cut (its head kept, its size recorded), and the
// log stops growing at MaxACPLogBytes (later lines are counted, never silently lost).

// ACPLogSchema tags every line of an ACP session log.
const ACPLogSchema = "agentproof.acp-log/v1"

// Bounds of the ACP session log (bytes).
const (
	// MaxACPLineBytes is the most of one wire line the log keeps; the ACP SDK itself
	// refuses lines over 10 MiB.
	MaxACPLineBytes = 1 << 20
	// MaxACPLogBytes bounds the whole session log; MaxACPTurnLogBytes one turn's share
	// of it (TurnResult.Evidence).
	MaxACPLogBytes     = 32 << 20
	MaxACPTurnLogBytes = 8 << 20
)

// Directions of an ACP log entry.
const (
	// DirAgent is a message the agent sent.
	DirAgent = "agent"
	// DirClient is a message agentproof (the ACP client) sent.
	DirClient = "client"
	// DirDriver is a note of the driver itself (not on the wire).
	DirDriver = "driver"
)

// ACPLogEntry is one line of an ACP session log:
//
//   - Seq (1-based), Time (RFC 3339 with nanoseconds, UTC), Turn (the prompt turn it
//     belongs to, 1-based; 0 before the first prompt), Dir (DirAgent, DirClient or
//     DirDriver).
//   - For a wire line: Method and ID (JSON-RPC; a response has an ID and no method),
//     Update (the sessionUpdate kind of a session/update notification: agent_message_chunk,
//     tool_call, tool_call_update, plan, …), Message (the redacted message) or Text
//     (a line that is not a JSON object), Bytes (the line's size on the wire) and
//     Truncated (only the head of the line was kept).
//   - For a driver note: Event (process_start, process_exit, permission_decision, fs_read,
//     fs_write, cancel, turn_end, log_overflow, sdk_log) and Data.
type ACPLogEntry struct {
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

// WireLine is one line of the JSON-RPC stream as ClassifyWireLine reads it.
type WireLine struct {
	// Method and ID as in the message; Update the sessionUpdate kind of a session/update.
	Method string
	ID     json.RawMessage
	Update string
	// Object is whether the line is one JSON object (else it is kept as text).
	Object bool
}

// ClassifyWireLine reads the JSON-RPC envelope of one line (untrusted: any bytes). It
// never fails: a line that is not a JSON object has Object false.
func ClassifyWireLine(line []byte) WireLine {
	var env struct {
		Method *string          `json:"method"`
		ID     json.RawMessage  `json:"id"`
		Params *json.RawMessage `json:"params"`
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &env) != nil {
		return WireLine{}
	}
	w := WireLine{Object: true, ID: env.ID}
	if env.Method != nil {
		w.Method = *env.Method
	}
	if w.Method == "session/update" && env.Params != nil {
		var p struct {
			Update struct {
				Kind string `json:"sessionUpdate"`
			} `json:"update"`
		}
		if json.Unmarshal(*env.Params, &p) == nil {
			w.Update = p.Update.Kind
		}
	}
	return w
}

// acpLog writes an ACP session log: to out (the whole session, may be nil) and to the
// current turn's buffer. It is safe for concurrent use.
type acpLog struct {
	mu      sync.Mutex
	out     io.Writer
	secrets *redact.Set // guarded by mu (see set, addSecrets)
	now     func() time.Time
	// schema tags every line (ACPLogSchema unless set) and classify reads a wire line's
	// envelope (ClassifyWireLine unless set); the Pi driver sets both.
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

func newACPLog(out io.Writer, secrets *redact.Set, now func() time.Time) *acpLog {
	if now == nil {
		now = time.Now
	}
	return &acpLog{out: out, secrets: secrets, now: now, schema: ACPLogSchema, classify: ClassifyWireLine}
}

// set returns the log's current secret set.
func (l *acpLog) set() *redact.Set {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.secrets
}

// addSecrets adds values (credential forms included) to what the log redacts from now
// on (a warm session's later runs bring new run tokens).
func (l *acpLog) addSecrets(values ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.secrets = l.secrets.WithCredentials(values...)
}

// beginTurn starts turn n's buffer and returns the previous one's.
func (l *acpLog) beginTurn(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turn = n
	l.turnBuf.Reset()
	l.turnCut = 0
}

// turnEvidence returns the current turn's log lines and how many were cut.
func (l *acpLog) turnEvidence() ([]byte, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.turnBuf.Bytes()), l.turnCut
}

// wire records one line seen on the wire in direction dir; size is its full length
// (line may be only its head).
func (l *acpLog) wire(dir string, line []byte, size int) {
	e := ACPLogEntry{Dir: dir, Bytes: size, Truncated: size > len(line)}
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
func (l *acpLog) note(event string, data any) {
	e := ACPLogEntry{Dir: DirDriver, Event: event}
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

func (l *acpLog) put(e ACPLogEntry) {
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
	if l.written+int64(len(b)) > MaxACPLogBytes {
		l.dropped++
		return
	}
	l.written += int64(len(b))
	if l.turnBuf.Len()+len(b) <= MaxACPTurnLogBytes {
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
func (l *acpLog) close() error {
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
// their full size; only the first MaxACPLineBytes of a line are kept. The bytes
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

// tapReader passes reads of r through and feeds them to tap. When open is set, every
// Read first waits for it to be closed.
type tapReader struct {
	r    io.Reader
	tap  *lineTap
	open chan struct{}
	mu   sync.Mutex
}

func (t *tapReader) Read(p []byte) (int, error) {
	if t.open != nil {
		<-t.open
	}
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

package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/redact"
)

const fuzzSecret = "fuzz-secret-0123456789abcdef"

// testSchema tags the lines of the tests' logs.
const testSchema = "agentproof.test-log/v1"

// classifyEnvelope reads a JSON-RPC envelope (method, id) of a line, as a protocol's
// Classify does.
func classifyEnvelope(line []byte) WireLine {
	var env struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &env) != nil {
		return WireLine{}
	}
	return WireLine{Object: true, Method: env.Method, ID: env.ID}
}

// FuzzWireLog feeds an arbitrary agent stream, cut into arbitrary pieces, through the
// line tap and the session log: the tap must give back exactly the stream's lines
// (heads of at most the line bound, with their true sizes), and every log line must be
// one JSON LogEntry without the secret, whose Message (when set) is valid JSON.
func FuzzWireLog(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t"}}}`+"\n"), uint8(3))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`+"\nnot json\n\n"+`{"id":"`+fuzzSecret+`","method":"x"}`), uint8(1))
	f.Add([]byte("\xff\xfe{\"method\":\""+fuzzSecret+"\"}\n"+strings.Repeat("a", 200)+"\n"), uint8(7))
	f.Add([]byte(`{"method":"session/update","params":{"update":{"sessionUpdate":{"x":1}}}}`), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, piece uint8) {
		const maxLine = 64
		type got struct {
			line []byte
			size int
		}
		var lines []got
		tap := &lineTap{maxLine: maxLine, emit: func(b []byte, n int) { lines = append(lines, got{bytes.Clone(b), n}) }}
		step := int(piece%16) + 1
		for i := 0; i < len(data); i += step {
			tap.feed(data[min(i, len(data)):min(i+step, len(data))])
		}
		tap.flush()
		var want [][]byte
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(l) > 0 {
				want = append(want, l)
			}
		}
		if len(lines) != len(want) {
			t.Fatalf("%d lines emitted, the stream has %d", len(lines), len(want))
		}
		for i, l := range lines {
			if l.size != len(want[i]) || !bytes.Equal(l.line, want[i][:min(len(want[i]), maxLine)]) {
				t.Fatalf("line %d = %q (size %d), want the head of %q", i, l.line, l.size, want[i])
			}
		}
		var out bytes.Buffer
		log := newWireLog(&out, redact.NewSet(fuzzSecret), func() time.Time { return time.Unix(0, 0) }, testSchema, classifyEnvelope)
		for _, l := range lines {
			log.wire(DirAgent, l.line, l.size)
		}
		if bytes.Contains(out.Bytes(), []byte(fuzzSecret)) {
			t.Fatal("the secret reached the log")
		}
		for _, raw := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
			if len(raw) == 0 {
				continue
			}
			var e LogEntry
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("log line is not JSON: %v: %q", err, raw)
			}
			if len(e.Message) > 0 && !json.Valid(e.Message) {
				t.Fatalf("message is not JSON: %q", e.Message)
			}
			if e.Schema != testSchema || e.Dir != DirAgent {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}

// FuzzParseProcStat: the command name is chosen by the process (untrusted) and may hold
// spaces and parentheses; the fields after it must still parse.
func FuzzParseProcStat(f *testing.F) {
	f.Add("bash", 1, 2, uint64(3))
	f.Add("a) S 9 9 9 (b", 100, 100, uint64(77))
	f.Add(") ) )", 0, 0, uint64(0))
	f.Fuzz(func(t *testing.T, comm string, ppid, pgid int, start uint64) {
		ppid, pgid = abs(ppid), abs(pgid)
		line := fmt.Sprintf("4242 (%s) S %d %d 0 0 -1 4194560 100 0 0 0 1 2 3 4 20 0 1 0 %d 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n", comm, ppid, pgid, start)
		st, err := ParseProcStat([]byte(line))
		if strings.ContainsAny(comm, "\n") {
			return // not a kernel-made line
		}
		if err != nil || st.PPID != ppid || st.PGID != pgid || st.StartTime != start || st.CPUTicks != 10 {
			t.Fatalf("ParseProcStat(%q) = %+v, %v", line, st, err)
		}
		_, _ = ParseProcStat([]byte(comm)) // anything else must not panic
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // the smallest int
			return 0
		}
		return -n
	}
	return n
}

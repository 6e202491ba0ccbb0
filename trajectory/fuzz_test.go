package trajectory

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/controlplane"
)

// fuzzFormats are the stream formats a fuzz input is fed to, by its first byte.
// (New formats go at the end: the committed corpus names a format by its index.)
var fuzzFormats = []string{FormatCodex, FormatOpenCode, FormatClaude, FormatACP, FormatCopilot, FormatPi, FormatClaudeApp, FormatCodexApp}

// checkFuzzed asserts what every converter owes any input: the ATIF it writes
// validates, its texts are bounded valid UTF-8, partial exactly when gaps are listed.
func checkFuzzed(t *testing.T, tr Trajectory) {
	t.Helper()
	b, err := ATIF(tr)
	if err != nil {
		t.Fatalf("ATIF: %v", err)
	}
	if err := validateATIF(t, b); err != nil {
		t.Fatalf("ATIF does not validate: %v\n%s", err, b)
	}
	if len(tr.Steps) > MaxSteps {
		t.Fatalf("%d steps kept, more than MaxSteps", len(tr.Steps))
	}
	for _, s := range tr.Steps {
		for _, x := range []Text{s.Message, s.Reasoning} {
			if len(x.S) > MaxTextBytes || !utf8.ValidString(x.S) {
				t.Fatalf("unbounded or invalid text %q", x.S)
			}
		}
	}
}

// FuzzStreams feeds any bytes to the CLI stream converters: they never panic and always
// write valid ATIF (the seeds are the recorded streams, damaged as the table tests do).
func FuzzStreams(f *testing.F) {
	for i, name := range []string{"codex-ask-question.jsonl", "opencode-ask-question.jsonl", "claude-ask-question.jsonl", "acp-codex-acp-permission-approve-write.jsonl",
		"copilot-message-marker.jsonl", "pi-pi-follow-up.jsonl"} {
		b := readStream(f, name)
		f.Add(byte(i), b, false)
		f.Add(byte(i), b[:len(b)/2], true)
	}
	f.Add(byte(0), []byte(`{"type":"item.started","item":{"id":"1","type":"mcp_tool_call","arguments":"{"}}`), false)
	f.Add(byte(1), []byte(`{"type":"tool_use","part":{"state":{"status":"error","input":[1]}}}`), false)
	f.Add(byte(2), []byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"image"}]}]}}`), false)
	f.Add(byte(3), []byte(`{"dir":"agent","method":"session/update","message":{"params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"z","status":"failed"}}}}`), false)
	f.Add(byte(4), []byte(`{"type":"assistant.message","data":{"toolRequests":[{"toolCallId":"a","arguments":"{"}]}}`), false)
	f.Add(byte(5), []byte(`{"dir":"agent","message":{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","arguments":[1]}],"usage":{"input":-1}}}}`), false)
	f.Fuzz(func(t *testing.T, which byte, stream []byte, cut bool) {
		name := fuzzFormats[int(which)%len(fuzzFormats)]
		tr, ok := Convert(name, Input{RunID: "run-1", Stream: stream, Cut: cut})
		if !ok {
			t.Fatalf("no format %s", name)
		}
		if cut && !tr.Partial() {
			t.Fatal("a cut stream is not partial")
		}
		checkFuzzed(t, tr)
	})
}

// FuzzModelLog feeds any bytes to the model request log converter.
func FuzzModelLog(f *testing.F) {
	for _, name := range []string{"model-requests-codex.jsonl", "model-requests-opencode.jsonl", "model-requests-claude.jsonl"} {
		b := readStream(f, name)
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	f.Add([]byte(`{"seq":1,"run":-3,"step":1,"format":"chat","body":{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"[]"}}]}]}}`))
	f.Fuzz(func(t *testing.T, log []byte) {
		for _, tr := range ModelLog(log, false) {
			if tr.Ordinal < 1 {
				t.Fatalf("ordinal %d", tr.Ordinal)
			}
			if !tr.Partial() {
				t.Fatal("a model log trajectory is never whole: the last reply is not in the log")
			}
			checkFuzzed(t, tr)
		}
	})
}

// FuzzBoard feeds any control-plane state (that decodes) to the board converter.
func FuzzBoard(f *testing.F) {
	for _, dir := range []string{"board-reference-warm-three-turn", "board-wrong-plan-revise-accept"} {
		f.Add(readStream(f, dir+"/api-state.json"), "hb-company-0001-fixture-wake-0002", "reference")
	}
	f.Add([]byte(`{"runs":[{"id":"r","taskId":"t"},null],"tasks":[null],"idempotency":[{"scope":"r:semantic-command","inputCanonical":"[]"}]}`), "r", "exec:codex")
	f.Fuzz(func(t *testing.T, state []byte, run, drv string) {
		var st controlplane.State
		if json.Unmarshal(state, &st) != nil {
			return
		}
		d, _ := driver.Parse(drv) // the zero Name for a string that is no driver
		tr := fromBoard(Input{RunID: run, Driver: d, State: &st, Stdout: []byte(strings.Repeat("x", 3))})
		checkFuzzed(t, tr)
	})
}

package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"
)

var (
	goldenMeta = Meta{ID: "ap_1", Created: 1764460800, Model: "scripted-model", Usage: Usage{InputTokens: 120, OutputTokens: 9}}
	callReply  = Reply{Step: 0, ToolName: "exec_command", Arguments: `{"cmd":"echo café > f.txt"}`, CallID: "call_ap_1"}
	textReply  = Reply{Step: 1, Text: "DONE café"}
)

// TestGoldenStreams pins the exact bytes of every wire format's stream and body for a
// tool call and a text answer (the framing each real agent CLI was verified with,
// docs/clis.md).
func TestGoldenStreams(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{FormatResponses, FormatChat, FormatMessages} {
		for kind, r := range map[string]Reply{"call": callReply, "text": textReply} {
			var b bytes.Buffer
			for _, fr := range StreamFrames(f, r, goldenMeta, true) {
				b.Write(fr.Bytes())
			}
			golden.Assert(t, b.String(), fmt.Sprintf("golden/%s-%s.sse", f, kind))
			var body bytes.Buffer
			if err := json.Indent(&body, Body(f, r, goldenMeta), "", "  "); err != nil {
				t.Fatalf("%s %s body is not JSON: %v", f, kind, err)
			}
			golden.Assert(t, body.String()+"\n", fmt.Sprintf("golden/%s-%s.json", f, kind))
		}
	}
}

// TestStreamConformance decodes every emitted frame with a strict per-format reader
// (a client rejects a frame of the wrong shape): named events carry a "type" equal to the event name; Responses
// lifecycle events carry a response object, and the stream ends with
// response.completed holding the output and usage; Chat chunks are data-only and end
// with [DONE]; Messages streams run message_start … message_stop.
func TestStreamConformance(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{FormatResponses, FormatChat, FormatMessages} {
		for kind, r := range map[string]Reply{"call": callReply, "text": textReply} {
			var b bytes.Buffer
			for _, fr := range StreamFrames(f, r, goldenMeta, true) {
				b.Write(fr.Bytes())
			}
			events, err := ReadEvents(&b)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s/%s", f, kind)
			checkConformance(t, name, f, r, events)
		}
	}
}

func checkConformance(t *testing.T, name string, f Format, r Reply, events []Event) {
	t.Helper()
	if len(events) == 0 {
		t.Fatalf("%s: no events", name)
	}
	var objs []map[string]any
	for i, ev := range events {
		if f == FormatChat && i == len(events)-1 {
			if ev.Data != "[DONE]" || ev.Name != "" {
				t.Errorf("%s: last chat frame = %+v, want data [DONE]", name, ev)
			}
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(ev.Data), &m); err != nil {
			t.Fatalf("%s: event %d data is not a JSON object: %q", name, i, ev.Data)
		}
		objs = append(objs, m)
		switch f {
		case FormatChat:
			if ev.Name != "" || m["object"] != "chat.completion.chunk" {
				t.Errorf("%s: chunk %d = %+v, want a data-only chat.completion.chunk", name, i, ev)
			}
		default:
			if ev.Name == "" || m["type"] != ev.Name {
				t.Errorf("%s: event %d named %q has type %v", name, i, ev.Name, m["type"])
			}
		}
		if f == FormatResponses {
			switch ev.Name {
			case "response.created", "response.in_progress", "response.completed":
				if _, ok := m["response"].(map[string]any); !ok {
					t.Errorf("%s: %s lacks a response object", name, ev.Name)
				}
			}
			if _, ok := m["sequence_number"].(float64); !ok {
				t.Errorf("%s: %s lacks sequence_number", name, ev.Name)
			}
		}
	}
	switch f {
	case FormatResponses:
		last := objs[len(objs)-1]
		resp, _ := last["response"].(map[string]any)
		out, _ := resp["output"].([]any)
		if last["type"] != "response.completed" || resp["usage"] == nil || len(out) != 1 {
			t.Errorf("%s: last event = %v, want response.completed with one output item and usage", name, last)
		}
		if !r.IsCall() {
			var seen []string
			for _, o := range objs {
				seen = append(seen, o["type"].(string))
			}
			// The AI SDK needs output_item.added and output_text.delta before
			// output_item.done for text.
			idx := func(s string) int {
				for i, x := range seen {
					if x == s {
						return i
					}
				}
				return -1
			}
			if !(idx("response.output_item.added") >= 0 && idx("response.output_item.added") < idx("response.output_text.delta") && idx("response.output_text.delta") < idx("response.output_item.done")) {
				t.Errorf("%s: text events out of order: %v", name, seen)
			}
		}
	case FormatMessages:
		if objs[0]["type"] != "message_start" || objs[len(objs)-1]["type"] != "message_stop" {
			t.Errorf("%s: stream runs %v … %v", name, objs[0]["type"], objs[len(objs)-1]["type"])
		}
	case FormatChat:
		usage := objs[len(objs)-1]["usage"]
		if usage == nil {
			t.Errorf("%s: no usage chunk although include_usage was asked", name)
		}
	}
}

// splitReader returns b in the given pieces, one per Read.
type splitReader struct{ pieces [][]byte }

func (s *splitReader) Read(p []byte) (int, error) {
	for len(s.pieces) > 0 && len(s.pieces[0]) == 0 {
		s.pieces = s.pieces[1:]
	}
	if len(s.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.pieces[0])
	s.pieces[0] = s.pieces[0][n:]
	return n, nil
}

// TestReadEventsEverySplit: a stream split at any byte, including inside the UTF-8 of
// "é" and between the CR and LF of CRLF line ends, decodes to the same events with the
// text "café" intact.
func TestReadEventsEverySplit(t *testing.T) {
	t.Parallel()
	var lf bytes.Buffer
	lf.WriteString(": keepalive\n\n")
	for _, fr := range StreamFrames(FormatMessages, textReply, goldenMeta, false) {
		lf.Write(fr.Bytes())
	}
	crlf := bytes.ReplaceAll(lf.Bytes(), []byte("\n"), []byte("\r\n"))
	cr := bytes.ReplaceAll(lf.Bytes(), []byte("\n"), []byte("\r"))
	want, err := ReadEvents(bytes.NewReader(lf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 6 || !strings.Contains(want[2].Data, `"text":"DONE café"`) {
		t.Fatalf("unsplit events = %+v", want)
	}
	for name, stream := range map[string][]byte{"lf": lf.Bytes(), "crlf": crlf, "cr": cr} {
		for i := 0; i <= len(stream); i++ {
			got, err := ReadEvents(&splitReader{pieces: [][]byte{bytes.Clone(stream[:i]), bytes.Clone(stream[i:])}})
			if err != nil {
				t.Fatalf("%s split at %d: %v", name, i, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%s split at %d (-want +got):\n%s", name, i, diff)
			}
		}
		// And one byte per read.
		var pieces [][]byte
		for _, c := range stream {
			pieces = append(pieces, []byte{c})
		}
		got, err := ReadEvents(&splitReader{pieces: pieces})
		if err != nil || !cmp.Equal(want, got) {
			t.Fatalf("%s byte by byte: %v %v", name, err, cmp.Diff(want, got))
		}
	}
}

func TestReadEventsRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []Event
	}{
		{"data: a\ndata: b\n\n", []Event{{Data: "a\nb"}}},
		{"event: x\n\n", nil},                            // no data: dropped
		{"data:nospace\n\n", []Event{{Data: "nospace"}}}, // optional space
		{"data:  two\n\n", []Event{{Data: " two"}}},      // only one space removed
		{"data: a\n", nil},                               // unterminated: dropped
		{": c\nid: 1\nretry: 5\ndata: x\n\n", []Event{{Data: "x"}}},
		{"event: e\ndata\n\n", []Event{{Name: "e", Data: ""}}}, // field without colon
	}
	for _, tc := range tests {
		got, err := ReadEvents(strings.NewReader(tc.in))
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, diff)
		}
	}
	if _, err := ReadEvents(strings.NewReader("data: \xff\n\n")); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}

// FuzzReadEvents: never panics; splitting the input in two never changes the events.
func FuzzReadEvents(f *testing.F) {
	f.Add("event: a\ndata: {\"type\":\"a\"}\n\n: keep\r\n\r\ndata: café\r\rdata: x\n\n", 5)
	f.Fuzz(func(t *testing.T, in string, split int) {
		whole, err1 := ReadEvents(strings.NewReader(in))
		if split < 0 {
			split = -split
		}
		if len(in) > 0 {
			split %= len(in) + 1
		} else {
			split = 0
		}
		parts, err2 := ReadEvents(&splitReader{pieces: [][]byte{[]byte(in[:split]), []byte(in[split:])}})
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v / %v", err1, err2)
		}
		if err1 == nil && !cmp.Equal(whole, parts) {
			t.Fatalf("split at %d changes events: %s", split, cmp.Diff(whole, parts))
		}
	})
}

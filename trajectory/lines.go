package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"time"
)

// MaxLineBytes bounds one line of a JSON-lines stream (bytes); a longer line is
// counted as a gap, never parsed.
const MaxLineBytes = 8 << 20

// eachObject calls f with every line of stream that is one JSON object, in order, and
// records in t a gap for the lines that are not (or are longer than MaxLineBytes) and
// for a stream that was cut. It never fails.
func eachObject(t *Trajectory, stream []byte, cut bool, f func(m map[string]any)) {
	eachObjectLine(t, stream, cut, func(line []byte) bool {
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			return false
		}
		f(m)
		return true
	})
}

// eachObjectLine is eachObject for a caller that decodes each line into its own type:
// f gets every line (trimmed) that begins like a JSON object and reports whether it
// was one JSON object (false: the line counts as not JSON, as in eachObject).
func eachObjectLine(t *Trajectory, stream []byte, cut bool, f func(line []byte) bool) {
	notJSON, oversized := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	for {
		if !sc.Scan() {
			if sc.Err() == bufio.ErrTooLong {
				oversized++
			}
			break
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' || !f(line) {
			notJSON++
		}
	}
	if notJSON > 0 {
		t.Gap("%d line(s) of the stream are not JSON objects and were not read", notJSON)
	}
	if oversized > 0 {
		t.Gap("the stream has a line longer than %d bytes; it and the rest of the stream were not read", MaxLineBytes)
	}
	if cut {
		t.Gap("the stream was cut at its bound: its tail is missing")
	}
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func list(v any) []any {
	s, _ := v.([]any)
	return s
}

// count reads a token count: a non-negative finite JSON number, else 0.
func count(v any) int64 {
	f, ok := v.(float64)
	if !ok || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > math.MaxInt64/2 {
		return 0
	}
	return int64(f)
}

// millis renders a Unix time in milliseconds as RFC 3339 (UTC, ms), "" when v is not a
// plausible one.
func millis(v any) string {
	f, ok := v.(float64)
	if !ok || f <= 0 || f > 1e15 {
		return ""
	}
	return time.UnixMilli(int64(f)).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// rfc3339 keeps a time that parses as RFC 3339, else "".
func rfc3339(s string) string {
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return ""
	}
	return s
}

// contentText flattens a tool result's content: a string, or the text of an array of
// {"type":"text","text":…} blocks, one per line (other blocks are named by type).
func contentText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return joinBlocks(v, "\n", " content")
}

// joinBlocks is the text of an array of content blocks: each {"type":"text","text":…}
// block's text, another block as "[<type><named>]", sep between two once some text is
// written; it stops after the block that passes MaxTextBytes.
func joinBlocks(v any, sep, named string) string {
	var b strings.Builder
	for _, c := range list(v) {
		cm := obj(c)
		if cm == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(sep)
		}
		if t, ok := cm["text"].(string); ok {
			b.WriteString(t)
		} else {
			b.WriteString("[" + str(cm["type"]) + named + "]")
		}
		if b.Len() > MaxTextBytes {
			break
		}
	}
	return b.String()
}

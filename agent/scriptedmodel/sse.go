package scriptedmodel

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxEventBytes bounds one server-sent event ReadEvents accepts (bytes).
const MaxEventBytes = 4 << 20

// Event is one decoded server-sent event: its `event:` name ("" when absent) and its
// data lines joined with "\n". Comment lines (": keepalive") are not events.
type Event struct {
	Name string
	Data string
}

// ReadEvents decodes a text/event-stream from r (W3C EventSource rules: lines end in
// LF, CRLF or CR; a blank line dispatches; "field: value" with one optional space; lines
// starting with ':' are comments; an event with no data is dropped). It buffers across
// reads, so an event or a UTF-8 sequence split over any number of reads decodes the same
// (a provider may split frames anywhere). It returns the events read so far and an error when the stream
// is not valid UTF-8, an event is larger than MaxEventBytes, or reading fails; an
// unterminated last event is dropped, as EventSource does.
func ReadEvents(r io.Reader) ([]Event, error) {
	br := bufio.NewReader(r)
	var out []Event
	var name string
	var data bytes.Buffer
	hasData := false
	size := 0
	for {
		line, err := readLine(br)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		size += len(line)
		if size > MaxEventBytes {
			return out, fmt.Errorf("server-sent event larger than %d bytes", MaxEventBytes)
		}
		if !utf8.Valid(line) {
			return out, fmt.Errorf("server-sent event line is not valid UTF-8")
		}
		if len(line) == 0 {
			if hasData {
				out = append(out, Event{Name: name, Data: data.String()})
			}
			name, hasData, size = "", false, 0
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		}
	}
}

// readLine reads one line ending in LF, CRLF or CR (the terminator removed). It returns
// io.EOF at the end of the stream, also for an unterminated last line (dropped).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			return nil, err
		}
		switch b {
		case '\n':
			return line, nil
		case '\r':
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				_, _ = br.ReadByte()
			}
			return line, nil
		}
		line = append(line, b)
		if len(line) > MaxEventBytes {
			return nil, fmt.Errorf("server-sent event line larger than %d bytes", MaxEventBytes)
		}
	}
}

package evidence

import (
	"bytes"
	"fmt"
	"strconv"
)

// LocalFixtureBody is the content of a local-fixture evidence body
// (docs/fixture-worker.md, "Evidence body"): the captured head of stdout and of stderr, and the budget at which capture was
// truncated (0 when it was not).
type LocalFixtureBody struct {
	Fixture     string
	Stdout      []byte
	Stderr      []byte
	TruncatedAt int64
}

// Format returns the body bytes in their fixed layout:
//
//	sf-local-fixture/1 fixture=<name>\n
//	== stdout: N bytes ==\n<N bytes>\n
//	== stderr: M bytes ==\n<M bytes>\n
//	== end ==\n                                  (complete capture), or
//	== output truncated at <maxOutputBytes> bytes ==\n
//
// N and M count the captured bytes of each stream; the newline after each stream's
// bytes is framing, always present.
func (b LocalFixtureBody) Format() []byte {
	var buf bytes.Buffer
	buf.Grow(len(b.Stdout) + len(b.Stderr) + 128)
	fmt.Fprintf(&buf, "%s fixture=%s\n", LocalFixtureBodyTag, b.Fixture)
	fmt.Fprintf(&buf, "== stdout: %d bytes ==\n", len(b.Stdout))
	buf.Write(b.Stdout)
	buf.WriteByte('\n')
	fmt.Fprintf(&buf, "== stderr: %d bytes ==\n", len(b.Stderr))
	buf.Write(b.Stderr)
	buf.WriteByte('\n')
	if b.TruncatedAt > 0 {
		fmt.Fprintf(&buf, "== output truncated at %d bytes ==\n", b.TruncatedAt)
	} else {
		buf.WriteString("== end ==\n")
	}
	return buf.Bytes()
}

// ParseLocalFixtureBody parses bytes produced by LocalFixtureBody.Format. The input is
// untrusted (read back from disk): any deviation from the layout is an error, never a
// panic.
func ParseLocalFixtureBody(data []byte) (LocalFixtureBody, error) {
	var b LocalFixtureBody
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return b, fmt.Errorf("body: no header line")
	}
	name, ok := bytes.CutPrefix(line, []byte(LocalFixtureBodyTag+" fixture="))
	if !ok || len(name) == 0 {
		return b, fmt.Errorf("body: header %q is not %q", clip(string(line)), LocalFixtureBodyTag+" fixture=<name>")
	}
	b.Fixture = string(name)
	var err error
	if b.Stdout, rest, err = section(rest, "stdout"); err != nil {
		return LocalFixtureBody{}, err
	}
	if b.Stderr, rest, err = section(rest, "stderr"); err != nil {
		return LocalFixtureBody{}, err
	}
	switch {
	case string(rest) == "== end ==\n":
	default:
		n, ok := bytes.CutPrefix(rest, []byte("== output truncated at "))
		n, ok2 := bytes.CutSuffix(n, []byte(" bytes ==\n"))
		v, err := strconv.ParseInt(string(n), 10, 64)
		if !ok || !ok2 || err != nil || v <= 0 || strconv.FormatInt(v, 10) != string(n) {
			return LocalFixtureBody{}, fmt.Errorf("body: trailer %q is neither \"== end ==\" nor a truncation marker", clip(string(rest)))
		}
		b.TruncatedAt = v
	}
	return b, nil
}

func section(data []byte, stream string) (content, rest []byte, err error) {
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil, nil, fmt.Errorf("body: missing %s section", stream)
	}
	n, ok := bytes.CutPrefix(line, []byte("== "+stream+": "))
	n, ok2 := bytes.CutSuffix(n, []byte(" bytes =="))
	v, perr := strconv.Atoi(string(n))
	if !ok || !ok2 || perr != nil || v < 0 || strconv.Itoa(v) != string(n) {
		return nil, nil, fmt.Errorf("body: bad %s section header %q", stream, clip(string(line)))
	}
	if len(rest) < v+1 || rest[v] != '\n' {
		return nil, nil, fmt.Errorf("body: %s section shorter than its %d bytes", stream, v)
	}
	return rest[:v], rest[v+1:], nil
}

package redact

import "fmt"

// shapeBreaks are the bytes no secret shape can hold where it matters: none is in a
// shape's literals or character classes, and none is a word byte, so a shape match
// never spans one (the private key block's body may, but whether that shape matches at
// all is decided by its header, which cannot). TestShapeBreaks checks every shape's
// syntax against this set.
const shapeBreaks = "<>{}[](),;|"

// isShapeBreak reports whether c is one of shapeBreaks.
func isShapeBreak(c byte) bool {
	switch c {
	case '<', '>', '{', '}', '[', ']', '(', ')', ',', ';', '|':
		return true
	}
	return false
}

// StreamScanner finds whether a stream written to it in pieces holds a leak, with the
// same answer as FindLeak over the whole stream, in bounded memory: exact values and
// their forms are looked for with Overlap() bytes carried between writes (no form is
// longer), secret shapes over the text up to the last shape break seen (a match never
// spans one; see shapeBreaks), so memory is a write plus Overlap() plus the longest
// stretch without a break byte. A StreamScanner is not safe for concurrent use; its
// zero value is unusable (NewStreamScanner).
type StreamScanner struct {
	s       *Set
	shapes  bool
	overlap int
	exact   []byte // the stream's last bytes, not yet scanned for exact values beyond overlap
	pending []byte // the stream's bytes since the last shape break, not yet scanned for shapes
	base    int64  // stream offset of exact[0]
	pbase   int64  // stream offset of pending[0]
	leak    Leak
	found   bool
}

// NewStreamScanner returns a scanner for exact values of s (nil: none) and, when shapes
// is true, secret shapes.
func (s *Set) NewStreamScanner(shapes bool) *StreamScanner {
	return &StreamScanner{s: s, shapes: shapes, overlap: s.Overlap()}
}

// Write scans p as the stream's next bytes; it never fails and always consumes p.
// Once a leak is found the rest is not scanned.
func (sc *StreamScanner) Write(p []byte) (int, error) {
	if sc.found || len(p) == 0 {
		return len(p), nil
	}
	sc.exact = append(sc.exact, p...)
	if i, enc := sc.s.findForm(sc.exact); i >= 0 {
		sc.report(Leak{Reason: ReasonExact}, enc, sc.base+int64(i))
		return len(p), nil
	}
	if drop := len(sc.exact) - sc.overlap; drop > 0 {
		sc.base += int64(drop)
		sc.exact = append(sc.exact[:0], sc.exact[drop:]...)
	}
	if !sc.shapes {
		return len(p), nil
	}
	k := -1
	for i := len(p) - 1; i >= 0; i-- {
		if isShapeBreak(p[i]) {
			k = i
			break
		}
	}
	if k < 0 {
		sc.pending = append(sc.pending, p...)
		return len(p), nil
	}
	sc.pending = append(sc.pending, p[:k+1]...)
	if name, i, ok := findShape(sc.pending); ok {
		sc.report(Leak{Reason: ReasonShape, Shape: name}, "", sc.pbase+int64(i))
		return len(p), nil
	}
	sc.pbase += int64(len(sc.pending))
	sc.pending = append(sc.pending[:0], p[k+1:]...)
	return len(p), nil
}

func (sc *StreamScanner) report(l Leak, enc Encoding, at int64) {
	if enc != "" {
		l.Reason, l.Encoding = ReasonEncoded, enc
	}
	l.Where = fmt.Sprintf("byte %d", at)
	sc.leak, sc.found = l, true
	sc.exact, sc.pending = nil, nil
}

// Leak scans what is still pending (the stream has ended) and reports the first leak
// found, if any: its Where is a byte offset in the stream. Which leak is reported may
// differ from FindLeak's when there are several; whether there is one never does.
func (sc *StreamScanner) Leak() (Leak, bool) {
	if !sc.found && sc.shapes && len(sc.pending) > 0 {
		if name, i, ok := findShape(sc.pending); ok {
			sc.report(Leak{Reason: ReasonShape, Shape: name}, "", sc.pbase+int64(i))
		}
		sc.pending = nil
	}
	return sc.leak, sc.found
}

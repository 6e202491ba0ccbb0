// Package redact keeps secrets out of everything agentproof writes: the per-attempt
// secret set, exact and shape-based leak detection over text, bytes, JSON values, streams
// and directory trees, and sanitisers that redact text and JSON while keeping JSON valid
// (no raw credentials anywhere, evidence passes a sanitizer, a leak fails the cell;
// docs/secrets.md).
//
// Nothing in this package ever returns, logs or formats a secret value: a Leak names the
// reason, the shape and where it was found, never what was found.
package redact

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Redaction markers.
const (
	// Redacted replaces an exact secret value or the value of a sensitive JSON key.
	Redacted = "[REDACTED]"
	// RedactedShape replaces a value that has the shape of a secret (a provider key, a
	// bearer token, a JWT, a private key block).
	RedactedShape = "[REDACTED_SECRET_SHAPE]"
)

// Reason says why a Leak was reported.
type Reason string

// Leak reasons.
const (
	// ReasonExact: a value of the secret set occurs verbatim.
	ReasonExact Reason = "exact secret value"
	// ReasonEncoded: an encoded copy of a value of the secret set occurs (Leak.Encoding
	// says which encoding; see EncodedForms).
	ReasonEncoded Reason = "encoded secret value"
	// ReasonShape: a value has the shape of a secret (see Shape).
	ReasonShape Reason = "secret-shaped value"
	// ReasonUninspectable: content that could not be inspected (a corrupt or encrypted
	// archive) and therefore cannot be proved secret-free.
	ReasonUninspectable Reason = "uninspectable content"
)

// Leak describes one finding without its value. Shape is set for ReasonShape (for
// example "openai-key"), Encoding for ReasonEncoded (for example "base64"); Where is a location: a byte offset, a JSON path, or a file path
// relative to the scanned root (for archive members, "archive.zip!member").
type Leak struct {
	Reason   Reason   `json:"reason"`
	Shape    string   `json:"shape,omitempty"`
	Encoding Encoding `json:"encoding,omitempty"`
	Where    string   `json:"where,omitempty"`
}

// String formats the leak as "<reason> at <where>" (never containing the value).
func (l Leak) String() string {
	s := string(l.Reason)
	if l.Shape != "" {
		s += " (" + l.Shape + ")"
	}
	if l.Encoding != "" {
		s += " (" + string(l.Encoding) + ")"
	}
	if l.Where != "" {
		s += " at " + l.Where
	}
	return s
}

// LeakError is returned when content about to be written still contains a secret after
// sanitising. It names the leaks, never the values.
type LeakError struct {
	Label string
	Leaks []Leak
}

func (e *LeakError) Error() string {
	parts := make([]string, len(e.Leaks))
	for i, l := range e.Leaks {
		parts[i] = l.String()
	}
	return fmt.Sprintf("secret leak in %s: %s", e.Label, strings.Join(parts, "; "))
}

// ErrLeak matches every *LeakError with errors.Is.
var ErrLeak = errors.New("secret leak")

// Is reports whether target is ErrLeak.
func (e *LeakError) Is(target error) bool { return target == ErrLeak }

// Set is an attempt's secret set: every credential value the attempt loaded plus the
// instance's own generated secrets, trimmed, without empty values or duplicates, longest
// first. Besides each value itself, a Set detects and redacts its encoded
// copies (EncodedForms: JSON-escaped, hex, percent-encoded and base64, also inside a
// larger base64 blob), so that a secret written in any of these forms is a leak too.
// All forms are searched at once (see needleIndex), so the cost of a scan grows with
// the size of the text, not with the number of forms. A Set is immutable and safe for
// concurrent use. The zero value and nil are empty sets.
type Set struct {
	values []string

	once  sync.Once
	index *needleIndex // every form of every value; built on first use
}

// NewSet builds a secret set from values.
func NewSet(values ...string) *Set {
	return (&Set{}).With(values...)
}

// With returns a new set holding s's values and values.
func (s *Set) With(values ...string) *Set {
	seen := map[string]bool{}
	var out []string
	for _, v := range append(s.Values(), values...) {
		v = strings.TrimSpace(v)
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return &Set{values: out}
}

// needles returns the set's index, building it on first use (so that a chain of With
// calls builds it once): every value, then every value's encoded forms, without
// duplicates. nil for a nil set.
func (s *Set) needles() *needleIndex {
	if s == nil {
		return nil
	}
	s.once.Do(func() {
		seen := make(map[string]bool, len(s.values)*16)
		needles := make([]needle, 0, len(s.values)*16)
		for _, v := range s.values {
			seen[v] = true
			needles = append(needles, needle{text: v})
		}
		for _, v := range s.values {
			for _, f := range EncodedForms(v) {
				if !seen[f.Text] {
					seen[f.Text] = true
					needles = append(needles, needle{text: f.Text, enc: f.Encoding})
				}
			}
		}
		s.index = newNeedleIndex(needles)
	})
	return s.index
}

// Values returns a copy of the set's values, longest first (not their encoded forms:
// see Forms). Callers must treat them as secrets: never print, log or store them.
func (s *Set) Values() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.values...)
}

// Forms returns every text the set looks for: each value, then each value's encoded
// forms (EncodedForms), without duplicates. Callers must treat them as secrets.
func (s *Set) Forms() []Form {
	ix := s.needles()
	if ix == nil {
		return nil
	}
	out := make([]Form, len(ix.needles))
	for i, n := range ix.needles {
		out[i] = Form{Text: n.text, Encoding: n.enc}
	}
	return out
}

// Len is the number of distinct secrets.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.values)
}

// Overlap is the number of bytes a streaming scan keeps between chunks so that a secret
// split across them is still found: max(256, longest form + 16) (with the
// encoded forms, which can be three times as long as the value).
func (s *Set) Overlap() int {
	n := 256
	if ix := s.needles(); ix != nil && ix.longest+16 > n {
		n = ix.longest + 16
	}
	return n
}

// FindExact returns the offset of the first secret in b, in any of its forms, or -1.
func (s *Set) FindExact(b []byte) int {
	i, _ := s.findForm(b)
	return i
}

// findForm returns the offset of the first secret form in b and its encoding, or -1.
func (s *Set) findForm(b []byte) (int, Encoding) {
	ix := s.needles()
	i, n := ix.first(b)
	if i < 0 {
		return -1, ""
	}
	return i, ix.needles[n].enc
}

// FindLeak reports the first leak in b: a secret in any of its forms first (ReasonExact
// for the value itself, ReasonEncoded with Encoding set for an encoded copy), then (when
// shapes is true) a secret-shaped value. Where is the byte offset.
func (s *Set) FindLeak(b []byte, shapes bool) (Leak, bool) {
	l, i, ok := s.find(b, shapes)
	if ok {
		l.Where = fmt.Sprintf("byte %d", i)
	}
	return l, ok
}

// find is FindLeak returning the offset as a number.
func (s *Set) find(b []byte, shapes bool) (Leak, int, bool) {
	if i, enc := s.findForm(b); i >= 0 {
		if enc != "" {
			return Leak{Reason: ReasonEncoded, Encoding: enc}, i, true
		}
		return Leak{Reason: ReasonExact}, i, true
	}
	if shapes {
		if name, i, ok := findShape(b); ok {
			return Leak{Reason: ReasonShape, Shape: name}, i, true
		}
	}
	return Leak{}, 0, false
}

// RedactText redacts text for logs, Markdown, HTML, XML and plain text: every
// occurrence of every form of every secret becomes Redacted (overlapping occurrences
// are redacted together as one span, so no part of either survives), then secret shapes become RedactedShape (a bearer
// token keeps its "Bearer " prefix, a provider key assignment keeps its key name).
func (s *Set) RedactText(text string) string {
	if s != nil && s.FindExact([]byte(text)) < 0 && !HasShape(text) {
		return text // the common case: nothing to redact, no copy
	}
	if s != nil {
		if spans := s.needles().all([]byte(text)); len(spans) > 0 {
			var b strings.Builder
			b.Grow(len(text))
			prev := 0
			for _, sp := range spans {
				b.WriteString(text[prev:sp.start])
				b.WriteString(Redacted)
				prev = sp.end
			}
			b.WriteString(text[prev:])
			text = b.String()
		}
	}
	return redactShapes(text)
}

// Check returns a *LeakError naming every leak kind found in b (exact values, and shapes
// when shapes is true), or nil when b is clean. label names the content in the error
// (for example a file's relative path).
func (s *Set) Check(label string, b []byte, shapes bool) error {
	if l, ok := s.FindLeak(b, shapes); ok {
		return &LeakError{Label: label, Leaks: []Leak{l}}
	}
	return nil
}

// WithCredentials returns a new set holding s's values and, for every credential value,
// the forms in which it may appear in a file (CredentialForms), so that an exact scan
// still finds a credential that was JSON-escaped or cut into its parts.
func (s *Set) WithCredentials(values ...string) *Set {
	var all []string
	for _, v := range values {
		all = append(all, CredentialForms(v)...)
	}
	return s.With(all...)
}

// minFragment is the shortest part of a credential value that CredentialForms adds as
// a secret of its own, in bytes: shorter runs (a "Bearer" prefix, a key name) are not
// secret and would make false positives.
const minFragment = 16

// CredentialForms returns v (trimmed) and the forms in which a credential value shows
// up in files besides itself: its JSON string encoding without the quotes (when that
// differs: a value with a newline, a quote or a backslash), and, for a value made of
// several parts (a "Bearer <token>" header, a NAME=value assignment, a PEM block's
// lines), every run of at least 16 token characters [A-Za-z0-9._~+/=-] — the part
// that is the secret. Empty for an empty value.
func CredentialForms(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	out := []string{v}
	if b, err := json.Marshal(v); err == nil {
		if esc := string(b[1 : len(b)-1]); esc != v {
			out = append(out, esc)
		}
	}
	parts := strings.FieldsFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._~+/=-", r))
	})
	if len(parts) > 1 || strings.Contains(v, "=") {
		for _, p := range parts {
			// an assignment's value is the part after its last '='
			if i := strings.LastIndexByte(p, '='); i >= 0 && i < len(p)-1 && !strings.HasSuffix(p, "=") {
				p = p[i+1:]
			}
			if len(p) >= minFragment && p != v {
				out = append(out, p)
			}
		}
	}
	return out
}

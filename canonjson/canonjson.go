// Package canonjson holds agentproof's two canonical JSON encodings.
//
//   - Sorted (RFC 8785, JSON Canonicalization Scheme): object keys sorted by UTF-16 code
//     units, ES2015 number formatting, minimal string escaping, no whitespace. Used for
//     control-plane state serialization and idempotency comparisons, and
//     wherever a value must hash the same however it was built.
//   - Ordered (JavaScript JSON.stringify-compatible): object members in insertion order
//     (Go struct fields in declaration order; Object keeps its members' order), ES2015
//     number formatting, no HTML escaping, U+2028/U+2029 left literal as JSON.stringify
//     does. Used for the suite definition fingerprint and content hashes that must match
//     JavaScript's JSON.stringify byte for byte (docs/harness.md, "Suite fingerprint").
//
// Go maps have no order; Ordered sorts their keys (as encoding/json does), so a value
// whose order matters must use a struct or Object.
package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Sorted returns the RFC 8785 canonical encoding of v, which is first encoded with
// encoding/json (so struct tags and MarshalJSON apply). It returns an error when v
// cannot be encoded (channels, functions, NaN or ±Inf numbers).
func Sorted(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonjson: encoding value: %w", err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonjson: canonicalizing: %w", err)
	}
	return out, nil
}

// SortedJSON returns the RFC 8785 canonical encoding of the JSON text raw without
// decoding it into Go values first (the same bytes Sorted gives for the decoded value).
// It returns an error when raw is not valid JSON.
func SortedJSON(raw []byte) ([]byte, error) {
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonjson: canonicalizing: %w", err)
	}
	return out, nil
}

// Ordered returns the JSON.stringify-compatible encoding of v: members in insertion
// order, no insignificant whitespace, no HTML escaping (<, >, & stay literal), and
// U+2028/U+2029 unescaped. Numbers use Go's float formatting, which follows ES2015
// Number.prototype.toString for float64 values. It returns an error when v cannot be
// encoded.
func Ordered(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonjson: encoding value: %w", err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	// encoding/json escapes the JavaScript line terminators; JSON.stringify does not.
	if bytes.Contains(out, []byte(`\u202`)) {
		out = unescapeLineTerminators(out)
	}
	return out, nil
}

// unescapeLineTerminators turns the escapes \u2028 and \u2029 that encoding/json writes
// back into the literal characters, leaving an escaped backslash followed by "u2028"
// (a string that really contains those six characters) alone.
func unescapeLineTerminators(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' || i+1 >= len(in) {
			out = append(out, c)
			continue
		}
		if in[i+1] == 'u' && i+6 <= len(in) && (string(in[i+2:i+6]) == "2028" || string(in[i+2:i+6]) == "2029") {
			if in[i+5] == '8' {
				out = append(out, "\u2028"...)
			} else {
				out = append(out, "\u2029"...)
			}
			i += 5
			continue
		}
		out = append(out, c, in[i+1])
		i++
	}
	return out
}

// SHA256Hex returns the lower-case hex SHA-256 of b (64 characters).
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Member is one key/value pair of an Object.
type Member struct {
	Key   string
	Value any
}

// Object is a JSON object whose members encode in slice order (insertion order), as a
// JavaScript object literal would under JSON.stringify. A later member with the same
// key as an earlier one is encoded too; callers must not add duplicates.
type Object []Member

// MarshalJSON encodes o with its members in order and no HTML escaping.
func (o Object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := Ordered(m.Key)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		v, err := Ordered(m.Value)
		if err != nil {
			return nil, fmt.Errorf("canonjson: member %q: %w", m.Key, err)
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

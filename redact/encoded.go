package redact

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Encoding names the form in which a secret was found: "" for the value itself, else
// one of the Encoding constants (a secret is never printed, logged or stored in any
// form; docs/secrets.md "Encoded copies").
type Encoding string

// Encodings of a secret that a Set detects and redacts besides the value itself.
const (
	// EncodingJSON: the value as a JSON string body (quotes, backslashes, control
	// characters escaped; also the variants with <, > and & escaped as Go does,
	// with every non-ASCII character as \uXXXX as Python's json.dumps does, and with
	// "/" written "\/").
	EncodingJSON Encoding = "json-escaped"
	// EncodingHex: the value's bytes in hexadecimal, lower or upper case.
	EncodingHex Encoding = "hex"
	// EncodingPercent: the value percent-encoded as a URL query value (space as "+"
	// or "%20"), a path segment, or by JavaScript's encodeURIComponent, with upper-
	// or lower-case hexadecimal digits.
	EncodingPercent Encoding = "percent-encoded"
	// EncodingBase64: the value in standard or URL-safe base64, padded or not, alone
	// or inside a larger encoded blob (see base64Forms).
	EncodingBase64 Encoding = "base64"
	// EncodingBase64JSON: a standard base64 form written inside a JSON string with
	// "/" escaped as "\/".
	EncodingBase64JSON Encoding = "base64, json-escaped"
)

// minEncodedForm is the shortest encoded form a Set looks for, in bytes: a shorter one
// (the hex of a five-byte value, the base64 of a few bytes) would match unrelated text.
const minEncodedForm = 16

// Form is one form of a secret: its text and how it was derived from the value.
type Form struct {
	Text     string
	Encoding Encoding
}

// EncodedForms returns the encoded forms of v (not v itself) that a Set detects, each
// at least 16 bytes long, without duplicates and without forms equal to v:
//
//   - json-escaped: the JSON string body of v as Go (with and without HTML escaping),
//     JavaScript and Python (ensure_ascii, lower and upper case \u digits) write it,
//     each also with "/" as "\/" — only those that differ from v;
//   - hex: lower and upper case;
//   - percent-encoded: url.QueryEscape (space as "+", and as "%20"), url.PathEscape and
//     encodeURIComponent, each with upper- and lower-case digits — those that differ
//     from v;
//   - base64: for each of the standard and URL-safe alphabets, the whole value encoded
//     alone (padded and unpadded), and for the value starting at byte offset 0, 1 or 2
//     (mod 3) of a larger plaintext, the stable inner substring: the encoding of the
//     value's bytes that fill whole 3-byte groups at that offset. The one or two
//     characters at either end of an embedded copy also depend on the neighbouring
//     bytes and are not part of the form (they carry less than two bytes of the value);
//     standard forms holding "/" also appear with "\/" (base64, json-escaped).
//
// v is used as given (callers trim it). An empty v has no forms.
func EncodedForms(v string) []Form {
	if v == "" {
		return nil
	}
	var out []Form
	seen := map[string]bool{v: true}
	add := func(text string, enc Encoding) {
		if len(text) < minEncodedForm || seen[text] {
			return
		}
		seen[text] = true
		out = append(out, Form{Text: text, Encoding: enc})
	}
	for _, j := range jsonForms(v) {
		add(j, EncodingJSON)
	}
	add(hex.EncodeToString([]byte(v)), EncodingHex)
	add(strings.ToUpper(hex.EncodeToString([]byte(v))), EncodingHex)
	for _, p := range percentForms(v) {
		add(p, EncodingPercent)
	}
	for _, b := range base64Forms(v) {
		add(b, EncodingBase64)
		if strings.Contains(b, "/") {
			add(strings.ReplaceAll(b, "/", `\/`), EncodingBase64JSON)
		}
	}
	return out
}

// jsonForms returns the JSON string bodies of v written by the common encoders (see
// EncodingJSON), possibly equal to v or to each other.
func jsonForms(v string) []string {
	minimal := jsonEscape(v, false, false, false)
	goHTML := jsonEscape(v, true, false, false)
	ascii := jsonEscape(v, false, true, false)
	asciiUpper := jsonEscape(v, false, true, true)
	forms := []string{minimal, goHTML, ascii, asciiUpper}
	for _, f := range forms[:4] {
		if strings.Contains(f, "/") {
			forms = append(forms, strings.ReplaceAll(f, "/", `\/`))
		}
	}
	return forms
}

// jsonEscape writes v as a JSON string body: '"' and '\' escaped, \b \f \n \r \t by
// name and other control characters as \u00xx; html also escapes <, > and & (and
// U+2028, U+2029) as Go's encoding/json does; ascii writes every non-ASCII character as
// \uxxxx (a UTF-16 surrogate pair above U+FFFF), with upper-case digits when upper.
// Invalid UTF-8 becomes \ufffd as encoding/json writes it.
func jsonEscape(v string, html, ascii, upper bool) string {
	u := func(r rune) string {
		if upper {
			return fmt.Sprintf(`\u%04X`, r)
		}
		return fmt.Sprintf(`\u%04x`, r)
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRuneInString(v[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			b.WriteString(u(r))
		case html && (r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029):
			b.WriteString(u(r))
		case r == utf8.RuneError && size == 1:
			b.WriteString(u(utf8.RuneError))
		case ascii && r >= 0x80:
			if r > 0xFFFF {
				r -= 0x10000
				b.WriteString(u(0xD800 + (r >> 10)))
				b.WriteString(u(0xDC00 + (r & 0x3FF)))
			} else {
				b.WriteString(u(r))
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// percentForms returns v percent-encoded by the common encoders (see EncodingPercent),
// possibly equal to v or to each other.
func percentForms(v string) []string {
	query := url.QueryEscape(v)
	forms := []string{query, strings.ReplaceAll(query, "+", "%20"), url.PathEscape(v), encodeURIComponent(v)}
	for _, f := range forms[:4] {
		forms = append(forms, lowerPercent(f))
	}
	return forms
}

// encodeURIComponent is JavaScript's encodeURIComponent: every byte but A-Z a-z 0-9
// and - _ . ! ~ * ' ( ) as %XX.
func encodeURIComponent(v string) string {
	const keep = "-_.!~*'()"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// lowerPercent lower-cases the hexadecimal digits of every %XX escape in s.
func lowerPercent(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if b[j] >= 'A' && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			i += 2
		}
	}
	return string(b)
}

// base64Forms returns, for the standard and URL-safe alphabets, the encoding of v alone
// (padded, unpadded) and the stable inner substrings of v embedded at byte offset 0, 1
// and 2 (mod 3) of a larger plaintext: at offset k the first (3-k)%3 bytes of v share a
// group with the bytes before it, so the stable part encodes v[(3-k)%3:] cut to whole
// groups (its trailing bytes share a group with the bytes after it).
func base64Forms(v string) []string {
	var forms []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		raw := enc.WithPadding(base64.NoPadding)
		forms = append(forms, enc.EncodeToString([]byte(v)), raw.EncodeToString([]byte(v)))
		for skip := range 3 {
			if skip >= len(v) {
				break
			}
			inner := v[skip:]
			inner = inner[:len(inner)/3*3]
			if inner != "" {
				forms = append(forms, raw.EncodeToString([]byte(inner)))
			}
		}
	}
	return forms
}

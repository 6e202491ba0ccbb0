package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// sensitiveKeys are JSON keys whose value is always redacted, whatever its type, compared
// case-insensitively on the whole key with '_', '-', '.' and spaces removed.
var sensitiveKeys = map[string]bool{
	"apikey": true, "xapikey": true, "accesstoken": true, "refreshtoken": true, "idtoken": true,
	"auth": true, "authorization": true, "proxyauthorization": true, "bearer": true,
	"clientsecret": true, "cookie": true, "setcookie": true, "password": true, "passwd": true,
	"secret": true, "token": true, "privatekey": true, "masterkey": true, "sessiontoken": true,
}

// SensitiveKey reports whether a JSON object key names a secret (api key, token, secret,
// password, authorization, cookie, …) so that its value must be redacted.
func SensitiveKey(key string) bool { return sensitiveKeys[FoldKey(key)] }

// FoldKey is the form in which a key is compared with the names of secrets: lower
// case, without "_", "-", "." and spaces (OPENAI_API_KEY and openai-api-key are both
// "openaiapikey").
func FoldKey(key string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))
}

// ScanJSON walks a decoded JSON value (as encoding/json produces, with or without
// UseNumber; json.Number values are scanned for exact secrets) and reports every key and
// string value that holds an exact secret or (when
// shapes is true) a secret shape. Keys and values are scanned one by one, never the
// serialised document, so that no match can span punctuation. Where is a JSONPath-like
// location; a leaking key is reported at its parent's path with "(key)".
func (s *Set) ScanJSON(v any, shapes bool) []Leak {
	var leaks []Leak
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for i, k := range keys {
				childPath := path + "." + safeKey(k, i)
				if l, ok := s.FindLeak([]byte(k), shapes); ok {
					l.Where = path + " (key #" + strconv.Itoa(i) + ")"
					leaks = append(leaks, l)
					childPath = path + ".<key #" + strconv.Itoa(i) + ">"
				}
				walk(childPath, t[k])
			}
		case []any:
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			if l, ok := s.FindLeak([]byte(t), shapes); ok {
				l.Where = path
				leaks = append(leaks, l)
			}
		case json.Number:
			if l, ok := s.FindLeak([]byte(t), false); ok {
				l.Where = path
				leaks = append(leaks, l)
			}
		}
	}
	walk("$", v)
	return leaks
}

// CleanJSON reports whether b is one valid JSON value in which nothing leaks: a true
// answer means ScanJSON of b's decoded value (with shapes) and FindLeak of b's bytes
// (exact values) both find nothing, which it decides without decoding b into a tree.
// A false answer means only "look closer" (b may be clean: a secret shape can match
// across a key and its value in the bytes, which ScanJSON, scanning them one by one,
// does not report).
//
// Why it is exact in that direction: every key and string of the decoded value is a
// string token of b, unescaped (encoding/json also replaces invalid UTF-8 with
// U+FFFD), and every json.Number is a number token's text. A token without an escape
// and with valid UTF-8 decodes to its own bytes, so whatever matches inside it —
// a secret's form, or a shape, whose expressions need nothing after the match and
// take the byte before a token (its quote) as a word boundary, as the start of a
// separate string is — matches in b at the same place; one search of b (exact forms
// and shapes) covers them all. Tokens with an escape or invalid UTF-8 are decoded as
// encoding/json decodes them and searched one by one.
func (s *Set) CleanJSON(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	if _, _, found := s.find(b, true); found {
		return false
	}
	if bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		return true // every token is its own bytes
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue // outside strings (valid JSON): punctuation, numbers, literals
		}
		j, plain := i+1, true
		for b[j] != '"' {
			if b[j] == '\\' {
				plain = false
				j++
			}
			j++
		}
		if tok := b[i+1 : j]; !plain || !utf8.Valid(tok) {
			var str string
			if json.Unmarshal(b[i:j+1], &str) != nil {
				return false
			}
			if _, _, found := s.find([]byte(str), true); found {
				return false
			}
		}
		i = j
	}
	return true
}

// safeKey renders a key for a path; keys that are not plain identifiers are shown by
// position so that a path never reproduces arbitrary content.
func safeKey(k string, i int) string {
	if len(k) > 0 && len(k) <= 64 && strings.IndexFunc(k, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return k
	}
	return "<key #" + strconv.Itoa(i) + ">"
}

// SanitizeJSON returns a sanitised deep copy of a decoded JSON value: the value of every
// sensitive key becomes Redacted whatever its type; every other string and every key has
// exact secrets and secret shapes redacted (RedactText); a json.Number that contains an
// exact secret becomes Redacted. Other numbers, booleans and null are kept, so the result
// stays valid JSON.
func (s *Set) SanitizeJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			nk := s.RedactText(k)
			if SensitiveKey(k) && e != nil {
				out[nk] = Redacted
				continue
			}
			out[nk] = s.SanitizeJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = s.SanitizeJSON(e)
		}
		return out
	case string:
		return s.RedactText(t)
	case json.Number:
		// A number that spells a secret (a numeric token) cannot stay a number.
		if s.FindExact([]byte(t)) >= 0 {
			return Redacted
		}
		return t
	default:
		return v
	}
}

// SanitizeJSONBytes parses a JSON document (numbers kept exactly), sanitises it, encodes
// it with two-space indentation and re-scans the result (exact and shapes). It returns an
// error naming label when b is not JSON, and a *LeakError when the sanitised document
// still leaks (which would be a bug in the sanitiser; nothing must be written then).
func (s *Set) SanitizeJSONBytes(label string, b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("sanitising %s: not JSON: %w", label, err)
	}
	clean := s.SanitizeJSON(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(clean); err != nil {
		return nil, fmt.Errorf("sanitising %s: %w", label, err)
	}
	if leaks := s.ScanJSON(clean, true); len(leaks) > 0 {
		return nil, &LeakError{Label: label, Leaks: leaks}
	}
	return buf.Bytes(), nil
}

package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// sensitiveKeys are JSON keys whose value is always redacted, whatever its type, compared
// case-insensitively on the whole key with '_', '-', '.' and spaces removed (spec §10.2).
var sensitiveKeys = map[string]bool{
	"apikey": true, "xapikey": true, "accesstoken": true, "refreshtoken": true, "idtoken": true,
	"auth": true, "authorization": true, "proxyauthorization": true, "bearer": true,
	"clientsecret": true, "cookie": true, "setcookie": true, "password": true, "passwd": true,
	"secret": true, "token": true, "privatekey": true, "masterkey": true, "sessiontoken": true,
}

// SensitiveKey reports whether a JSON object key names a secret (api key, token, secret,
// password, authorization, cookie, …) so that its value must be redacted.
func SensitiveKey(key string) bool {
	k := strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))
	return sensitiveKeys[k]
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

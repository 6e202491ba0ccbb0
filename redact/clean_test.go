package redact

import (
	"bytes"
	"encoding/json"
	"testing"
)

// scanDecoded is what the evidence guard does without CleanJSON: ScanJSON of the decoded
// value with shapes, then FindLeak of the bytes for exact values. It reports whether
// either found something (false for a document that does not decode: the guard's
// error, not a leak).
func scanDecoded(s *Set, b []byte) bool {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return false
	}
	if len(s.ScanJSON(v, true)) > 0 {
		return true
	}
	_, found := s.FindLeak(b, false)
	return found
}

// TestCleanJSON: CleanJSON answers clean only when the decoded scan finds nothing, and
// answers clean for clean documents of every kind (escapes, invalid UTF-8, numbers,
// nesting), so that the guard's fast path is taken; every way a secret can hide in a
// document (a key, a value, a JSON escape, a number, an encoded form, U+FFFD standing
// for invalid UTF-8, a shape) is caught.
func TestCleanJSON(t *testing.T) {
	t.Parallel()
	const secret = "guard-secret-0123456789"
	s := NewSet(secret, "ab\uFFFDcd-secret-value", "31415926535897932384")
	tests := []struct {
		name, doc string
		clean     bool
	}{
		{"plain", `{"a":"b","n":[1,2.5,-3e4,true,false,null],"o":{"k":"v"}}`, true},
		{"escapes without a secret", `{"a":"line\nnext \u00e9 \"quoted\" \\ back"}`, true},
		{"invalid UTF-8 without a secret", "{\"a\":\"x\xffy\"}", true},
		{"empty", `{}`, true},
		{"scalar", `"just text"`, true},
		{"value", `{"a":"` + secret + `"}`, false},
		{"key", `{"` + secret + `":1}`, false},
		{"escaped value", `{"a":"\u0067uard-secret-0123456789"}`, false},
		{"escaped key", `{"\u0067uard-secret-0123456789":1}`, false},
		{"number", `{"pi":31415926535897932384}`, false},
		{"base64 form", `{"a":"Z3VhcmQtc2VjcmV0LTAxMjM0NTY3ODk="}`, false},
		{"U+FFFD for invalid UTF-8", "{\"a\":\"ab\xffcd-secret-value\"}", false},
		{"shape", `{"a":"sk-ant-api03-FAKEfakeFAKEfake0123456789"}`, false},
		{"escaped shape", `{"a":"\u0073k-ant-api03-FAKEfakeFAKEfake0123456789"}`, false},
		{"not JSON", `{"a":`, false},
		{"two values", `{} {}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := s.CleanJSON([]byte(tt.doc))
			if got != tt.clean {
				t.Errorf("CleanJSON(%q) = %v, want %v", tt.doc, got, tt.clean)
			}
			if got && scanDecoded(s, []byte(tt.doc)) {
				t.Errorf("CleanJSON(%q) says clean; the decoded scan finds a leak", tt.doc)
			}
		})
	}
	if !NewSet().CleanJSON([]byte(`{"a":"b"}`)) || (*Set)(nil).CleanJSON([]byte(`{"k":"sk-ant-api03-FAKEfakeFAKEfake0123456789"}`)) {
		t.Error("a set without values must still look for shapes, and pass clean documents")
	}
}

// FuzzCleanJSON: whenever CleanJSON says a document is clean, the decoded scan (what
// the guard did before it) finds nothing either.
func FuzzCleanJSON(f *testing.F) {
	f.Add(`{"a":"xSECRETSECRETx","SECRETSECRET":1}`, "SECRETSECRET")
	f.Add(`{"a":"\u0053ECRETSECRET"}`, "SECRETSECRET")
	f.Add("{\"a\":\"S\xffCRETSECRET\"}", "S\uFFFDCRETSECRET")
	f.Add(`["bearer abcdefghijklmnopqrstu", {"openai_key": "abcdefghijklmnop"}]`, "zzzzzzzz")
	f.Add(`{"n":123456789012345678901234567890}`, "1234567890123")
	f.Fuzz(func(t *testing.T, doc, secret string) {
		s := NewSet(secret)
		if s.CleanJSON([]byte(doc)) && scanDecoded(s, []byte(doc)) {
			t.Fatalf("CleanJSON(%q) with secret %q says clean; the decoded scan finds a leak", doc, secret)
		}
	})
}

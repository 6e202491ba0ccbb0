package match

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzEvaluate compiles a spec decoded from JSON and evaluates it against an observation
// built from the other inputs. It checks: Compile errors are *SpecError; evaluation does
// not panic; two evaluations agree (determinism); an outcome is never both passed and not
// reached; details are "matched", "not reached: …" or "expected …; observed …" within
// DetailLimit bytes; and a secret never appears in a detail.
func FuzzEvaluate(f *testing.F) {
	seeds := []struct {
		spec, message, doc, file, secret string
		evidence                         uint8
	}{
		{`{"kind":"message_exact","expected":"PAPERCLIP_E2E_OK_1"}`, "PAPERCLIP\\_E2E\\_OK\\_1", `{}`, "x", "", 0xff},
		{`{"kind":"message_occurrences","expected":"aa","count":1}`, "aaa", ``, "", "aa", 0x01},
		{`{"kind":"message_regex","pattern":"(?i)^a.b$","flags":"ms"}`, "a\r\nB", ``, "", "", 0x01},
		{`{"kind":"message_ordered","expected":["a","b"],"turn":1}`, "b a", ``, "", "", 0x01},
		{`{"kind":"issue_status","expected":"done"}`, "", ``, "", "done", 0x02},
		{`{"kind":"file_exact","path":"a/b.txt","expected":"T1\n"}`, "", ``, "T1\n", "T1", 0x04},
		{`{"kind":"artifact_exists","name":"log","mimeType":"text/plain"}`, "", ``, "", "", 0x08},
		{`{"kind":"json_path","path":"runs.0.status","expected":"succeeded"}`, "", `{"runs":[{"status":"succeeded"}]}`, "", "succeeded", 0x10},
		{`{"kind":"json_path","path":"$..status","expected":{"a":[1,2.5e3,null]}}`, "", `{"status":{"a":[1,2500,null]}}`, "", "", 0x10},
		{`{"kind":"json_schema","schema":{"type":"object","required":["zz"],"properties":{"a":{"pattern":"^x"}}}}`, "", `{"a":"secretvalue9"}`, "", "secretvalue9", 0x10},
		{`{"kind":"message_contains","expected":"sk-proj-ABCDEFGHIJKLMNOP"}`, "key sk-proj-ABCDEFGHIJKLMNOP", ``, "", "sk-proj-ABCDEFGHIJKLMNOP", 0x01},
		{`{"kind":"message_exact","expected":"hello, world","normalize":"none"}`, "hello,\u00a0world", ``, "", "", 0x01},
		{`{"kind":"file_contains","path":"a/b.txt","expected":"file","normalize":"nfkc"}`, "", ``, "\ufb01le \xff", "", 0x04},
	}
	for _, s := range seeds {
		f.Add(s.spec, s.message, s.doc, s.file, s.secret, s.evidence)
	}
	f.Fuzz(func(t *testing.T, specJSON, message, doc, file, secret string, evidence uint8) {
		var spec Spec
		if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
			return
		}
		m, err := Compile(spec)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || se.Field == "" || se.Message == "" {
				t.Fatalf("Compile error %T %v is not a complete *SpecError", err, err)
			}
			return
		}
		obs := &Observation{
			Message:              message,
			HasMessage:           evidence&0x01 != 0,
			Turns:                []string{message, file},
			Secrets:              []string{secret},
			HasWorkspaceSnapshot: evidence&0x04 != 0,
			HasArtifacts:         evidence&0x08 != 0,
		}
		if evidence&0x02 != 0 {
			obs.IssueStatus, obs.RunStatus, obs.RuntimeMode, obs.Environment = message, message, message, message
		}
		if obs.HasWorkspaceSnapshot {
			obs.Files = map[string][]byte{spec.Path: []byte(file), "f": []byte(message)}
		}
		if obs.HasArtifacts {
			obs.Artifacts = []Artifact{{Name: file, MimeType: message}, {Name: spec.Name, MimeType: spec.MimeType}}
		}
		if evidence&0x10 != 0 {
			obs.JSON = []byte(doc)
		}
		first := Evaluate([]Matcher{m, m}, obs)
		second := Evaluate([]Matcher{m}, obs)
		if !reflect.DeepEqual(first[0], first[1]) || !reflect.DeepEqual(first[0], second[0]) {
			t.Fatalf("non-deterministic outcome:\n%#v\n%#v\n%#v", first[0], first[1], second[0])
		}
		o := first[0]
		if o.Passed && o.NotReached {
			t.Fatalf("outcome both passed and not reached: %#v", o)
		}
		if len(o.Detail) > DetailLimit {
			t.Fatalf("detail is %d bytes", len(o.Detail))
		}
		// Redaction works on the rendered detail too (a safety net for secrets in numbers
		// or spanning values), so a secret that is also framing text ("{", "kind")
		// legitimately rewrites the framing; check the shape for realistic secrets only.
		s := strings.TrimSpace(secret)
		realistic := s == "" || tokenShaped(s)
		switch {
		case !realistic:
		case o.Passed && o.Detail != "matched",
			o.NotReached && !strings.HasPrefix(o.Detail, "not reached: "),
			!o.Passed && !o.NotReached && !strings.HasPrefix(o.Detail, "expected {"):
			t.Fatalf("detail %q does not fit the outcome %#v", o.Detail, o)
		}
		// Every piece of observation data in a detail is redacted; the fixed framing
		// ("expected ", "; observed ", reasons) is not data. Check secrets shaped like
		// real ones (random tokens), which the framing cannot contain.
		if tokenShaped(s) && strings.Contains(o.Detail, s) {
			t.Fatalf("detail contains secret %q: %s", s, o.Detail)
		}
	})
}

// tokenShaped reports whether s looks like a generated secret: at least 8 characters of
// [A-Za-z0-9_-] with at least one letter and one digit.
func tokenShaped(s string) bool {
	if len(s) < 8 {
		return false
	}
	letter, digit := false, false
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letter = true
		case r == '_' || r == '-':
		default:
			return false
		}
	}
	return letter && digit
}

// FuzzUnicodeHint: the hint of any failed comparison never panics, is valid UTF-8 when
// its inputs are, names only characters outside printable ASCII, and is empty for two
// printable-ASCII texts.
func FuzzUnicodeHint(f *testing.F) {
	f.Add("hello, world", "hello,\u00a0world", 0, true)
	f.Add("PAPERCLIP_OK", "done: PAPER\u200bCLIP_OK", 0, false)
	f.Add("café", "cafe\u0301", 0, true)
	f.Add("paypal", "p\u0430ypal", 0, true)
	f.Add("x", "\xff\xfe x", 1, false)
	f.Fuzz(func(t *testing.T, expected, observed string, from int, exact bool) {
		if from < 0 || from > len(observed) {
			return
		}
		h := unicodeHint(expected, observed, from, exact)
		if h == "" {
			return
		}
		if !strings.HasPrefix(h, "the texts differ") || !strings.Contains(h, "U+") {
			t.Fatalf("hint %q", h)
		}
		ascii := func(s string) bool {
			for _, r := range s {
				if unusual(r) {
					return false
				}
			}
			return true
		}
		if ascii(expected) && ascii(observed[from:]) && (!exact || ascii(observed)) {
			t.Fatalf("hint for printable-ASCII texts: %q", h)
		}
	})
}

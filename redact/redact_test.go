package redact

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// Fake secrets of every shape; none is a real credential.
const (
	fakeAnthropic = "sk-ant-api03-FAKEfakeFAKEfake0123456789"
	fakeOpenAI    = "sk-FAKEfakeFAKEfake01234567"
	fakeProj      = "sk-proj-FAKEfakeFAKEfake_-0123"
	fakeJWT       = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlLWZha2U"
	exactSecret   = "canary-7f3a9c2e-exact-value"
)

func TestSetNormalises(t *testing.T) {
	t.Parallel()
	s := NewSet("  abc ", "", "abcdef", "abc", "\t", "zz")
	got := s.Values()
	want := []string{"abcdef", "abc", "zz"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Values = %q, want %q", got, want)
	}
	if s.Overlap() != 256 {
		t.Errorf("Overlap = %d, want 256", s.Overlap())
	}
	long := strings.Repeat("x", 300)
	if got := NewSet(long).Overlap(); got != 616 {
		t.Errorf("Overlap(300-byte secret) = %d, want 616 (its hex form, 600 bytes, + 16)", got)
	}
	var nilSet *Set
	if nilSet.Len() != 0 || nilSet.RedactText("a") != "a" {
		t.Error("nil set must be empty")
	}
}

func TestShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, shape, redacted string
	}{
		{"anthropic", "key " + fakeAnthropic + " end", "anthropic-key", "key " + RedactedShape + " end"},
		{"openai", "x=" + fakeOpenAI, "openai-key", "x=" + RedactedShape},
		{"openai project", `"` + fakeProj + `"`, "openai-key", `"` + RedactedShape + `"`},
		{"openrouter assignment", "OPENROUTER_API_KEY=or-v1-abcdef123456789", "provider-key-assignment", "OPENROUTER_API_KEY=" + RedactedShape},
		{"daytona assignment", `daytonaKey: "dtn_0123456789abcdef"`, "provider-key-assignment", `daytonaKey: "` + RedactedShape + `"`},
		{"bearer", "Authorization: Bearer abcdefghijklmnop0123", "bearer-token", "Authorization: Bearer " + RedactedShape},
		{"jwt", "token " + fakeJWT, "jwt", "token " + RedactedShape},
		{"private key", "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\nb", "private-key-block", "a\n" + RedactedShape + "\nb"},
		{"unterminated private key", "-----BEGIN PRIVATE KEY-----\nMIIE", "private-key-block", RedactedShape},
	}
	s := NewSet()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, ok := s.FindLeak([]byte(tt.text), true)
			if !ok || l.Reason != ReasonShape || l.Shape != tt.shape {
				t.Fatalf("FindLeak = %+v, %v; want shape %s", l, ok, tt.shape)
			}
			if _, ok := s.FindLeak([]byte(tt.text), false); ok {
				t.Error("shape reported with shapes disabled")
			}
			if got := s.RedactText(tt.text); got != tt.redacted {
				t.Errorf("RedactText = %q, want %q", got, tt.redacted)
			}
			if !HasShape(tt.text) || HasShape(tt.redacted) {
				t.Error("HasShape disagrees")
			}
		})
	}
	for _, benign := range []string{"sk-short", "task-1234567890abcdefghij", "Bearer of news", "schema.token.refresh", "PAPERCLIP_E2E_OK_42", "eyJ.eyJ.x"} {
		if l, ok := s.FindLeak([]byte(benign), true); ok {
			t.Errorf("false positive on %q: %v", benign, l)
		}
	}
}

func TestExactRedactionLongestFirst(t *testing.T) {
	t.Parallel()
	s := NewSet("abc123456", "abc123456-longer")
	got := s.RedactText("x abc123456-longer y abc123456 z")
	if got != "x [REDACTED] y [REDACTED] z" {
		t.Errorf("RedactText = %q", got)
	}
	err := s.Check("out.txt", []byte("…abc123456…"), false)
	var le *LeakError
	if !errors.As(err, &le) || !errors.Is(err, ErrLeak) || strings.Contains(err.Error(), "abc123456") || !strings.Contains(err.Error(), "out.txt") {
		t.Errorf("Check error = %v", err)
	}
	if s.Check("x", []byte("clean"), true) != nil {
		t.Error("clean content reported")
	}
}

func TestScanReaderSplitAcrossChunks(t *testing.T) {
	t.Parallel()
	s := NewSet(exactSecret)
	for _, at := range []int{0, chunkSize - 10, chunkSize - 1, chunkSize, 3*chunkSize - 5} {
		data := bytes.Repeat([]byte{'.'}, 4*chunkSize)
		copy(data[at:], exactSecret)
		// OneByteReader forces many tiny reads; HalfReader odd ones.
		for name, r := range map[string]io.Reader{
			"plain": bytes.NewReader(data),
			"half":  iotest.HalfReader(bytes.NewReader(data)),
			"byte":  iotest.OneByteReader(bytes.NewReader(data)),
		} {
			l, ok, err := s.ScanReader(r, false)
			if err != nil || !ok || l.Reason != ReasonExact {
				t.Fatalf("at %d (%s): %+v %v %v", at, name, l, ok, err)
			}
			if want := "byte " + itoa(at); l.Where != want {
				t.Errorf("at %d (%s): Where = %q, want %q", at, name, l.Where, want)
			}
		}
	}
	if _, ok, _ := s.ScanReader(strings.NewReader(strings.Repeat("y", 3*chunkSize)), true); ok {
		t.Error("clean stream reported")
	}
	if _, _, err := s.ScanReader(iotest.ErrReader(errors.New("boom")), true); err == nil {
		t.Error("reader error swallowed")
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestScanJSON(t *testing.T) {
	t.Parallel()
	s := NewSet(exactSecret)
	var doc any
	raw := `{"a":{"list":["ok",{"deep":"x` + exactSecret + `y"}]},"` + exactSecret + `":1,"n":12,"shape":"` + fakeOpenAI + `"}`
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	leaks := s.ScanJSON(doc, true)
	if len(leaks) != 3 {
		t.Fatalf("leaks = %+v, want 3", leaks)
	}
	for _, l := range leaks {
		if strings.Contains(l.Where, exactSecret) {
			t.Errorf("location reveals the secret: %q", l.Where)
		}
	}
	if leaks[0].Where != "$.a.list[1].deep" || leaks[1].Where != "$ (key #1)" || leaks[2].Shape != "openai-key" {
		t.Errorf("locations: %+v", leaks)
	}
	// Only values and keys: a secret spanning punctuation is not a finding.
	split := NewSet(`b":"c`)
	if got := split.ScanJSON(map[string]any{"a": "b", "x": "c"}, false); len(got) != 0 {
		t.Errorf("cross-token match: %+v", got)
	}
}

func TestSanitizeJSON(t *testing.T) {
	t.Parallel()
	s := NewSet(exactSecret)
	in := `{"apiKey":{"nested":1},"Authorization":"Bearer abc","password":42,"X-Api-Key":"v","token":null,` +
		`"inputTokens":7,"secretId":"sec-1","note":"see ` + exactSecret + ` and ` + fakeAnthropic + `",` +
		`"` + exactSecret + `":"k","schema":"paperclip.capability.mock-state.v1","big":12345678901234567890}`
	out, err := s.SanitizeJSONBytes("result.json", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("sanitised output is not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"apiKey", "Authorization", "password", "X-Api-Key"} {
		if got[k] != Redacted {
			t.Errorf("%s = %v, want %s", k, got[k], Redacted)
		}
	}
	if got["token"] != nil || got["inputTokens"] != float64(7) || got["secretId"] != "sec-1" || got["schema"] != "paperclip.capability.mock-state.v1" {
		t.Errorf("non-secret values changed: %v", got)
	}
	if got["note"] != "see "+Redacted+" and "+RedactedShape {
		t.Errorf("note = %v", got["note"])
	}
	if got[Redacted] != "k" {
		t.Errorf("secret key not redacted: %v", got)
	}
	if !strings.Contains(string(out), "12345678901234567890") {
		t.Error("large number not kept exactly")
	}
	if bytes.Contains(out, []byte(exactSecret)) {
		t.Error("secret survived")
	}
	if _, err := s.SanitizeJSONBytes("bad.json", []byte("{nope")); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("bad JSON error = %v", err)
	}
}

func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestScanTree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := NewSet(exactSecret)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "clean.txt"), []byte("nothing here"), 0o644))
	must(os.WriteFile(filepath.Join(root, "a", "b", "leak.log"), []byte("x"+exactSecret), 0o644))
	writeZip(t, filepath.Join(root, "bundle.zip"), map[string]string{"inner/report.txt": "..." + exactSecret, "ok.txt": "fine"})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("compressed " + exactSecret))
	zw.Close()
	must(os.WriteFile(filepath.Join(root, "trace.json.gz"), gz.Bytes(), 0o644))
	must(os.WriteFile(filepath.Join(root, "broken.zip"), []byte("PK\x03\x04 not really"), 0o644))
	must(os.Symlink(filepath.Join("/nonexistent", exactSecret), filepath.Join(root, "link")))

	leaks, err := s.ScanTree(root, false)
	must(err)
	got := map[string]Reason{}
	for _, l := range leaks {
		got[l.Path] = l.Leak.Reason
	}
	want := map[string]Reason{
		"a/b/leak.log":                ReasonExact,
		"bundle.zip!inner/report.txt": ReasonExact,
		"trace.json.gz!gunzip":        ReasonExact,
		"broken.zip":                  ReasonUninspectable,
		"link":                        ReasonExact,
	}
	if len(got) != len(want) {
		t.Errorf("leaks = %+v, want %v", leaks, want)
	}
	for p, r := range want {
		if got[p] != r {
			t.Errorf("%s: reason %q, want %q (all: %+v)", p, got[p], r, leaks)
		}
	}
	if _, err := s.ScanTree(filepath.Join(root, "missing"), false); err == nil {
		t.Error("missing root: want error")
	}
}

// FuzzSanitizeJSON: for any document and secret, the sanitised output is valid JSON and
// never contains the secret.
func FuzzSanitizeJSON(f *testing.F) {
	f.Add(`{"a":"xSECRETSECRETx","SECRETSECRET":1}`, "SECRETSECRET")
	f.Add(`["sk-aaaaaaaaaaaaaaaaaaaa", {"token": {"x": 1}}]`, "zz")
	f.Add(`"plain text here"`, "text here")
	f.Fuzz(func(t *testing.T, doc, secret string) {
		if !json.Valid([]byte(doc)) || len(strings.TrimSpace(secret)) < 8 || strings.ContainsAny(secret, "[]") {
			return
		}
		s := NewSet(secret)
		out, err := s.SanitizeJSONBytes("fuzz.json", []byte(doc))
		if err != nil {
			var le *LeakError
			if errors.As(err, &le) {
				// The sanitiser must never leave a leak behind.
				t.Fatalf("sanitised document still leaks: %v", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output is not JSON: %s", out)
		}
		for _, v := range s.Values() {
			if bytes.Contains(out, []byte(v)) {
				t.Fatalf("secret %q survived in %s", v, out)
			}
		}
		// Nor in decoded form: a secret JSON escapes (quotes, control characters)
		// must not survive as a decoded key or string either.
		var back any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&back); err != nil {
			t.Fatalf("output does not decode: %v", err)
		}
		if leaks := s.ScanJSON(back, false); len(leaks) > 0 {
			t.Fatalf("decoded output still holds the secret: %+v", leaks)
		}
	})
}

// FuzzRedactText: redacted text never contains a secret of the set.
func FuzzRedactText(f *testing.F) {
	f.Add("abc SECRET99 def", "SECRET99")
	f.Add("SESECRET99CRET", "SECRET99")
	f.Fuzz(func(t *testing.T, text, secret string) {
		// Real secrets are long and never contain the markers' brackets.
		if len(strings.TrimSpace(secret)) < 8 || strings.ContainsAny(secret, "[]") {
			return
		}
		s := NewSet(secret)
		out := s.RedactText(text)
		for _, v := range s.Values() {
			if strings.Contains(out, v) {
				t.Fatalf("secret %q survived redaction of %q: %q", v, text, out)
			}
		}
	})
}

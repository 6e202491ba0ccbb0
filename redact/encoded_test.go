package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// encoders are the ways an agent could write a whole blob (plaintext with a secret
// inside it): each must leave an encoded copy of the secret that a Set finds.
var encoders = []struct {
	name string
	enc  Encoding
	f    func([]byte) string
}{
	{"base64 std", EncodingBase64, base64.StdEncoding.EncodeToString},
	{"base64 std raw", EncodingBase64, base64.RawStdEncoding.EncodeToString},
	{"base64 url", EncodingBase64, base64.URLEncoding.EncodeToString},
	{"base64 url raw", EncodingBase64, base64.RawURLEncoding.EncodeToString},
	{"hex", EncodingHex, hex.EncodeToString},
	{"HEX", EncodingHex, func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }},
	{"query", EncodingPercent, func(b []byte) string { return url.QueryEscape(string(b)) }},
	{"path", EncodingPercent, func(b []byte) string { return url.PathEscape(string(b)) }},
	{"json go", EncodingJSON, func(b []byte) string { j, _ := json.Marshal(string(b)); return string(j) }},
	{"json python", EncodingJSON, func(b []byte) string { return `"` + jsonEscape(string(b), false, true, false) + `"` }},
}

// TestEncodedCopiesFound: a secret written base64 (both alphabets, padded or not, at
// each of the three byte offsets inside a larger blob), hex (both cases),
// percent-encoded or JSON-escaped is found as an encoded leak, and RedactText leaves
// no form of it behind. Today's main finds none of them.
func TestEncodedCopiesFound(t *testing.T) {
	t.Parallel()
	secrets := []string{
		exactSecret,
		"tok/en+with=special&chars<>\"quoted\" and é — ünïcode 🔑",
	}
	for _, secret := range secrets {
		s := NewSet(secret)
		for _, e := range encoders {
			for offset := range 3 {
				blob := []byte(strings.Repeat("p", offset) + "prefix:" + secret + ":suffix")
				blob = append([]byte(strings.Repeat("x", offset)), blob...)
				text := "the agent wrote " + e.f(blob) + " here"
				l, ok := s.FindLeak([]byte(text), false)
				if strings.Contains(e.f([]byte(secret)), secret) {
					// the encoding leaves this value as it is: an exact leak
					if !ok || l.Reason != ReasonExact {
						t.Errorf("%s of %.8q…: FindLeak = %+v, %v; want an exact leak", e.name, secret, l, ok)
					}
					continue
				}
				if !ok || l.Reason != ReasonEncoded {
					t.Errorf("%s at offset %d of %.8q…: FindLeak = %+v, %v; want an encoded leak", e.name, offset, secret, l, ok)
					continue
				}
				if l.Encoding != e.enc && !(e.enc == EncodingJSON && l.Encoding == EncodingPercent) {
					t.Errorf("%s: Encoding = %q, want %q", e.name, l.Encoding, e.enc)
				}
				if strings.Contains(l.String(), secret) || !strings.Contains(l.String(), string(l.Encoding)) {
					t.Errorf("leak text %q", l.String())
				}
				out := s.RedactText(text)
				if s.FindExact([]byte(out)) >= 0 || !strings.Contains(out, Redacted) || !strings.HasPrefix(out, "the agent wrote ") {
					t.Errorf("%s at offset %d: redacted text %q still holds a form", e.name, offset, out)
				}
			}
		}
		// JSON-escaped forms of the base64 forms: "/" written as "\/".
		b64 := base64.StdEncoding.EncodeToString([]byte(secret))
		if strings.Contains(b64, "/") {
			if l, ok := s.FindLeak([]byte(strings.ReplaceAll(b64, "/", `\/`)), false); !ok || l.Encoding != EncodingBase64JSON {
				t.Errorf(`base64 with \/ not found: %+v`, l)
			}
		}
	}
	// Clean text and a short secret's would-be forms are not leaks.
	s := NewSet(exactSecret, "short")
	for _, clean := range []string{"", "nothing to see", hex.EncodeToString([]byte("short")), base64.StdEncoding.EncodeToString([]byte("short"))} {
		if l, ok := s.FindLeak([]byte(clean), true); ok {
			t.Errorf("clean %q reported: %+v", clean, l)
		}
	}
	if forms := EncodedForms("short"); len(forms) != 0 {
		t.Errorf("a five-byte value has encoded forms %v (each must be at least %d bytes)", forms, minEncodedForm)
	}
}

// TestEncodedForms: the forms of a value are distinct, never the value itself, at least
// minEncodedForm bytes, and include each encoding's stable substrings.
func TestEncodedForms(t *testing.T) {
	t.Parallel()
	v := "secret-value/with+plus 0123"
	forms := EncodedForms(v)
	seen := map[string]bool{}
	byEnc := map[Encoding]int{}
	for _, f := range forms {
		if f.Text == v || seen[f.Text] || len(f.Text) < minEncodedForm {
			t.Errorf("bad form %+v", f)
		}
		seen[f.Text] = true
		byEnc[f.Encoding]++
	}
	for _, want := range []string{
		hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v))),
		url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(url.QueryEscape(v), "+", "%20"),
		base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)),
		base64.RawStdEncoding.EncodeToString([]byte(v[1:25])), base64.RawStdEncoding.EncodeToString([]byte(v[2:26])),
	} {
		if !seen[want] {
			t.Errorf("form %q missing", want)
		}
	}
	if byEnc[EncodingJSON] != 1 { // only `\/` differs from v
		t.Errorf("json forms = %d, want 1", byEnc[EncodingJSON])
	}
	if EncodedForms("") != nil {
		t.Error("empty value has forms")
	}
}

// TestScanReaderEncodedSplit: an encoded copy (three times the value's length) split
// across the scanner's chunks is found: the overlap covers the longest form.
func TestScanReaderEncodedSplit(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("Q&", 100) // percent-encoded: 400 bytes
	s := NewSet(secret)
	enc := url.QueryEscape(secret)
	data := append(bytes.Repeat([]byte{'.'}, chunkSize-len(enc)/2), enc...)
	l, ok, err := s.ScanReader(bytes.NewReader(data), false)
	if err != nil || !ok || l.Encoding != EncodingPercent {
		t.Fatalf("split percent-encoded copy: %+v %v %v", l, ok, err)
	}
}

// TestRedactOverlapping: overlapping occurrences of two secrets are redacted as one
// span, so no tail of either survives; touching ones stay two markers.
func TestRedactOverlapping(t *testing.T) {
	t.Parallel()
	s := NewSet("AAAABBBBCCCCDDDD", "CCCCDDDDEEEEFFFF")
	if got := s.RedactText("x AAAABBBBCCCCDDDDEEEEFFFF y"); got != "x "+Redacted+" y" {
		t.Errorf("overlap: %q", got)
	}
	if got := s.RedactText("AAAABBBBCCCCDDDDCCCCDDDDEEEEFFFF"); got != Redacted+Redacted {
		t.Errorf("touching: %q", got)
	}
}

// FuzzEncodedCopies: a secret inside any plaintext, written whole in any of the
// encodings an agent might use, is found, and RedactText removes every form.
func FuzzEncodedCopies(f *testing.F) {
	f.Add("0123456789abcdef-secret", "pre", "post", uint8(0))
	f.Add("tok/en+with=special&chars", "a", "", uint8(2))
	f.Add("ünïcode secret value ✓✓", "", "zz", uint8(9))
	f.Add("line one\nline \"two\" value", "{", "}", uint8(8))
	f.Fuzz(func(t *testing.T, secret, prefix, suffix string, which uint8) {
		secret = strings.TrimSpace(secret)
		if len(secret) < 16 || len(secret) > 256 || len(prefix) > 64 || len(suffix) > 64 ||
			!utf8.ValidString(secret+prefix+suffix) || strings.ContainsAny(secret, "[]") {
			return
		}
		e := encoders[int(which)%len(encoders)]
		s := NewSet(secret)
		text := e.f([]byte(prefix + secret + suffix))
		l, ok := s.FindLeak([]byte(text), false)
		if !ok {
			t.Fatalf("%s copy of %q (prefix %q) not found in %q", e.name, secret, prefix, text)
		}
		out := s.RedactText(text)
		if i := s.FindExact([]byte(out)); i >= 0 {
			t.Fatalf("%s: a form survives redaction at %d: %q (leak %+v)", e.name, i, out, l)
		}
	})
}

// FuzzNeedleIndex: the index finds exactly what a naive search finds: the leftmost
// occurrence of any needle, and the union of all occurrences.
func FuzzNeedleIndex(f *testing.F) {
	f.Add("hello world, hello there", "hello world!", "o there", "lo")
	f.Add("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaa", "b")
	f.Fuzz(func(t *testing.T, hay, n1, n2, n3 string) {
		var needles []needle
		seen := map[string]bool{}
		for _, n := range []string{n1, n2, n3} {
			if n != "" && !seen[n] {
				seen[n] = true
				needles = append(needles, needle{text: n})
			}
		}
		ix := newNeedleIndex(needles)
		b := []byte(hay)
		wantAt, wantLen := -1, 0
		covered := make([]bool, len(b))
		for _, n := range needles {
			for i := 0; i+len(n.text) <= len(b); i++ {
				if string(b[i:i+len(n.text)]) != n.text {
					continue
				}
				for j := i; j < i+len(n.text); j++ {
					covered[j] = true
				}
				if wantAt < 0 || i < wantAt || i == wantAt && len(n.text) > wantLen {
					wantAt, wantLen = i, len(n.text)
				}
			}
		}
		at, which := ix.first(b)
		if at != wantAt || (at >= 0 && len(needles[which].text) != wantLen) {
			t.Fatalf("first = %d (needle %d), want %d (length %d)", at, which, wantAt, wantLen)
		}
		got := make([]bool, len(b))
		for _, sp := range ix.all(b) {
			for j := sp.start; j < sp.end; j++ {
				got[j] = true
			}
		}
		for j := range b {
			if got[j] != covered[j] {
				t.Fatalf("byte %d: covered %v, index says %v", j, covered[j], got[j])
			}
		}
	})
}

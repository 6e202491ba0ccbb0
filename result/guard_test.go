package result

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/redact"
)

func TestEvidenceKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ours bool
		kind FileKind
		ok   bool
	}{
		{"result.json", false, KindJSON, true},
		{"logs/agent/stdout.log", false, KindText, true},
		{"logs/agent/runs/r1/events.jsonl", false, KindText, true},
		{"notes.TXT", false, KindText, true},
		{"summary.md", true, KindText, true},
		{"junit.xml", true, KindText, true},
		{"junit.xml", false, "", false},
		{"dashboard.html", true, KindText, true},
		{"page.html", false, "", false},
		{"final-state.png", false, KindImage, true},
		{"chart.svg", true, "", false},
		{"chart.svg", false, "", false},
		{"bundle.zip", true, "", false},
		{"run.js", false, "", false},
		{"Makefile", true, "", false},
	}
	for _, tt := range tests {
		kind, ok, reason := EvidenceKind(tt.name, tt.ours)
		if kind != tt.kind || ok != tt.ok || ok == (reason != "") {
			t.Errorf("EvidenceKind(%q, %v) = %q, %v, %q; want %q, %v", tt.name, tt.ours, kind, ok, reason, tt.kind, tt.ok)
		}
	}
}

func TestGuardWrite(t *testing.T) {
	t.Parallel()
	const secret = "guard-secret-0123456789"
	const shaped = "sk-ant-api03-FAKEfakeFAKEfake0123456789"
	png := append([]byte("\x89PNG\r\n\x1a\n"), []byte("IHDR....")...)
	tests := []struct {
		name      string
		file      string
		ours      bool
		data      []byte
		want      []byte // nil: anything secret-free
		leaks     int
		err       error // errors.Is target; nil for success
		withheld  bool
		unchanged bool
	}{
		{name: "clean json kept byte for byte", file: "a.json", data: []byte("{\"b\": 1,\n \"a\": \"x\"}\n"), unchanged: true},
		{name: "clean text kept", file: "a.log", data: []byte("hello\n"), unchanged: true},
		{name: "JSON lines kept", file: "logs/events.jsonl", data: []byte("{\"type\":\"turn.started\"}\n"), unchanged: true},
		{name: "json value", file: "a.json", data: []byte(`{"note":"key ` + secret + `"}`), leaks: 1},
		{name: "json key", file: "a.json", data: []byte(`{"` + secret + `":1}`), leaks: 1},
		{name: "json escaped value", file: "a.json", data: []byte(`{"note":"\u0067uard-secret-0123456789"}`), leaks: 1},
		{name: "json shape", file: "a.json", data: []byte(`{"k":"` + shaped + `"}`), leaks: 1},
		{name: "text exact", file: "a.md", data: []byte("see " + secret), leaks: 1, want: []byte("see " + redact.Redacted)},
		{name: "text shape", file: "a.txt", data: []byte("key=" + shaped), leaks: 1, want: []byte("key=" + redact.RedactedShape)},
		{name: "png clean", file: "a.png", data: png, unchanged: true},
		{name: "png with a secret is withheld", file: "a.png", data: append(png, secret...), leaks: 1, withheld: true, err: redact.ErrLeak},
		{name: "svg refused", file: "a.svg", data: []byte("<svg/>"), err: ErrNotAllowed},
		{name: "agent html refused", file: "x.html", data: []byte("<script>"), err: ErrNotAllowed},
		{name: "not json", file: "a.json", data: []byte("{nope"), err: errors.New("any")},
	}
	// Deferred (an attempt's evidence, made durable before its result.json) guards
	// exactly as the durable write does.
	for _, g := range []Guard{{Secrets: redact.NewSet(secret)}, {Secrets: redact.NewSet(secret), Deferred: true}} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/deferred=%v", tt.name, g.Deferred), func(t *testing.T) {
				t.Parallel()
				p := filepath.Join(t.TempDir(), tt.file)
				gf, err := g.Write(p, tt.data, false)
				if tt.err != nil {
					if err == nil || (tt.err.Error() != "any" && !errors.Is(err, tt.err)) {
						t.Fatalf("err = %v, want %v", err, tt.err)
					}
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("error reveals the secret: %v", err)
					}
					if _, serr := os.Stat(p); serr == nil {
						t.Fatal("a refused file was written")
					}
					if gf.Withheld != tt.withheld || len(gf.Leaks) != tt.leaks {
						t.Errorf("withheld %v leaks %d, want %v %d", gf.Withheld, len(gf.Leaks), tt.withheld, tt.leaks)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got, _ := os.ReadFile(p)
				if len(gf.Leaks) != tt.leaks || gf.Bytes != int64(len(got)) || len(gf.SHA256) != 64 {
					t.Errorf("GuardedFile = %+v for %q", gf, got)
				}
				if tt.unchanged && !bytes.Equal(got, tt.data) {
					t.Errorf("clean content changed: %q", got)
				}
				if tt.want != nil && !bytes.Equal(got, tt.want) {
					t.Errorf("written %q, want %q", got, tt.want)
				}
				if bytes.Contains(got, []byte(secret)) || bytes.Contains(got, []byte(shaped)) {
					t.Errorf("written file leaks: %q", got)
				}
				if strings.HasSuffix(tt.file, ".json") && !json.Valid(got) {
					t.Errorf("written JSON is invalid: %q", got)
				}
			})
		}
	}
}

// TestGuardEncodedCopies: an encoded copy of a secret (base64 inside a larger blob, hex,
// percent-encoded, JSON-escaped) in a JSON or text evidence file is reported as a leak
// and redacted: no form of the secret reaches the written file. Today's main writes
// them through untouched.
func TestGuardEncodedCopies(t *testing.T) {
	t.Parallel()
	const secret = "guard-secret-0123456789/+\"quoted\""
	set := redact.NewSet(secret)
	blob := []byte("Authorization header follows: " + secret + " (end)")
	copies := map[string]string{
		"base64 blob":       base64.StdEncoding.EncodeToString(blob),
		"base64url blob":    base64.RawURLEncoding.EncodeToString(blob[1:]),
		"base64 offset 2":   base64.StdEncoding.EncodeToString(blob[2:]),
		"hex":               hex.EncodeToString([]byte(secret)),
		"HEX":               strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"percent-encoded":   url.QueryEscape(secret),
		"json inside value": mustJSON(t, secret)[1 : len(mustJSON(t, secret))-1],
	}
	for name, c := range copies {
		for _, f := range []struct{ file, data string }{
			{"a.log", "the agent printed " + c + "\n"},
			{"a.json", mustJSON(t, map[string]any{"comments": []any{map[string]any{"body": "posted " + c}}})},
		} {
			t.Run(name+"/"+f.file, func(t *testing.T) {
				t.Parallel()
				p := filepath.Join(t.TempDir(), f.file)
				gf, err := Guard{Secrets: set}.Write(p, []byte(f.data), false)
				if err != nil {
					t.Fatal(err)
				}
				if len(gf.Leaks) == 0 || gf.Leaks[0].Reason != redact.ReasonEncoded && gf.Leaks[0].Reason != redact.ReasonExact {
					t.Fatalf("leaks = %+v, want the encoded copy", gf.Leaks)
				}
				got, _ := os.ReadFile(p)
				for _, form := range set.Forms() {
					if bytes.Contains(got, []byte(form.Text)) {
						t.Fatalf("written %s still holds a %q form: %q", f.file, form.Encoding, got)
					}
				}
				if !bytes.Contains(got, []byte(redact.Redacted)) {
					t.Errorf("nothing redacted: %q", got)
				}
			})
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEvidenceManifestDecode(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("a", 64)
	good := &EvidenceManifest{Schema: EvidenceManifestSchema,
		Files:   []EvidenceFile{{Path: "a.json", Bytes: 2, SHA256: sum}, {Path: "logs/b.log", Bytes: 0, SHA256: sum, Redacted: true}},
		Leaks:   []EvidenceLeak{{File: "logs/b.log", Reason: "exact secret value at byte 3"}},
		Dropped: []EvidenceDropped{{File: "x.svg", Reason: "SVG is active content"}},
		Missing: []string{"fixtures.json"}}
	b, err := EncodeEvidenceManifest(good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEvidenceManifest("m", b); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	tests := map[string]string{
		"unknown field": `{"schema":"agentproof.evidence-manifest/v1","files":[],"leaks":[],"dropped":[],"missing":[],"x":1}`,
		"wrong schema":  `{"schema":"other","files":[],"leaks":[],"dropped":[],"missing":[]}`,
		"null arrays":   `{"schema":"agentproof.evidence-manifest/v1","files":null,"leaks":[],"dropped":[],"missing":[]}`,
		"unsafe path":   `{"schema":"agentproof.evidence-manifest/v1","files":[{"path":"../x","bytes":1,"sha256":"` + sum + `"}],"leaks":[],"dropped":[],"missing":[]}`,
		"unsorted":      `{"schema":"agentproof.evidence-manifest/v1","files":[{"path":"b","bytes":1,"sha256":"` + sum + `"},{"path":"a","bytes":1,"sha256":"` + sum + `"}],"leaks":[],"dropped":[],"missing":[]}`,
		"bad sha":       `{"schema":"agentproof.evidence-manifest/v1","files":[{"path":"a","bytes":1,"sha256":"xyz"}],"leaks":[],"dropped":[],"missing":[]}`,
		"empty leak":    `{"schema":"agentproof.evidence-manifest/v1","files":[],"leaks":[{"file":"","reason":""}],"dropped":[],"missing":[]}`,
		"trailing":      `{"schema":"agentproof.evidence-manifest/v1","files":[],"leaks":[],"dropped":[],"missing":[]} {}`,
	}
	for name, doc := range tests {
		if _, err := DecodeEvidenceManifest("m", []byte(doc)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want a validation error", name, err)
		}
	}
}

// FuzzGuardSanitize: whatever a JSON or text evidence file holds, what the guard would
// write never contains the secret, and JSON stays JSON.
func FuzzGuardSanitize(f *testing.F) {
	f.Add("a.json", `{"k":"xSECRETVALUEx"}`, "SECRETVALUE")
	f.Add("a.log", "line SECRETVALUE\nsk-aaaaaaaaaaaaaaaaaaaa", "SECRETVALUE")
	f.Add("a.json", `["\u0053ECRETVALUE"]`, "SECRETVALUE")
	f.Add("a.log", "c2VjcmV0LXZhbHVlLTAxMjM0NTY3ODk=", "secret-value-0123456789")
	f.Add("a.json", `{"x":"736563726574\/2d76616c75652d30313233"}`, "secret/-value-0123")
	f.Fuzz(func(t *testing.T, name, doc, secret string) {
		if len(strings.TrimSpace(secret)) < 8 || strings.ContainsAny(secret, "[]") {
			return
		}
		if name != "a.json" && name != "a.log" {
			return
		}
		g := Guard{Secrets: redact.NewSet(secret)}
		out, _, err := g.Sanitize(name, []byte(doc), true)
		if err != nil {
			return
		}
		for _, form := range g.Secrets.Forms() {
			if bytes.Contains(out, []byte(form.Text)) {
				t.Fatalf("guarded %s still holds the secret (%q form): %q", name, form.Encoding, out)
			}
		}
		if name == "a.json" && !json.Valid(out) {
			t.Fatalf("guarded JSON is invalid: %q", out)
		}
	})
}

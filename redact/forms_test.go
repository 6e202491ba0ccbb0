package redact

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestCredentialForms(t *testing.T) {
	t.Parallel()
	pem := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
	tests := []struct {
		name  string
		value string
		want  []string // forms besides the value itself
	}{
		{"plain key", "sk-ant-api03-FAKEfakeFAKEfake0123", nil},
		{"bearer", "Bearer abcdefghijklmnop0123", []string{"abcdefghijklmnop0123"}},
		{"assignment", "OPENROUTER_API_KEY=or-v1-abcdef0123456789", []string{"or-v1-abcdef0123456789"}},
		{"pem", pem, []string{`-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----`, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"}},
		{"quote", `abc"defghij`, []string{`abc\"defghij`}},
		{"short parts", "Bearer short", nil},
		{"empty", "   ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := CredentialForms(tt.value)
			if strings.TrimSpace(tt.value) == "" {
				if got != nil {
					t.Fatalf("forms of an empty value = %q", got)
				}
				return
			}
			if got[0] != strings.TrimSpace(tt.value) {
				t.Errorf("first form = %q, want the value", got[0])
			}
			if !slices.Equal(got[1:], tt.want) && !(len(got) == 1 && tt.want == nil) {
				t.Errorf("forms = %q, want %q", got[1:], tt.want)
			}
		})
	}
	// A PEM credential written into a JSON file is still found by an exact scan.
	s := NewSet().WithCredentials(pem)
	doc, _ := json.Marshal(map[string]string{"k": pem})
	if _, ok := s.FindLeak(doc, false); !ok {
		t.Error("JSON-escaped PEM block not found")
	}
	if _, ok := s.FindLeak([]byte("only the body MIIEvQIBADANBgkqhkiG9w0BAQEFAASC here"), false); !ok {
		t.Error("PEM body line alone not found")
	}
}

// TestScanTreeSecretInName: a file named after a secret is a leak, and neither the
// report nor the path reveals the value.
func TestScanTreeSecretInName(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := NewSet(exactSecret)
	if err := os.WriteFile(filepath.Join(root, "key-"+exactSecret+".txt"), []byte("clean"), 0o644); err != nil {
		t.Fatal(err)
	}
	leaks, err := s.ScanTree(root, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaks) != 1 || leaks[0].Leak.Where != "file name" || leaks[0].Path != "key-"+Redacted+".txt" {
		t.Fatalf("leaks = %+v", leaks)
	}
	if got := s.SafePath("a/b.txt"); got != "a/b.txt" {
		t.Errorf("SafePath changed a clean path: %q", got)
	}
}

// TestScanTreeGzipSplit: a secret inside a gzip stream, split across the scanner's
// chunks, is found through decompression.
func TestScanTreeGzipSplit(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := NewSet(exactSecret)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	pad := bytes.Repeat([]byte{'a'}, chunkSize-len(exactSecret)/2)
	zw.Write(append(pad, exactSecret...))
	zw.Close()
	if err := os.WriteFile(filepath.Join(root, "big.log.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	leaks, err := s.ScanTree(root, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaks) != 1 || leaks[0].Path != "big.log.gz!gunzip" {
		t.Fatalf("leaks = %+v", leaks)
	}
}

// FuzzScanReader: a secret anywhere in a stream is found whatever the read sizes.
func FuzzScanReader(f *testing.F) {
	f.Add(0, 1, "SECRET-VALUE-123")
	f.Add(chunkSize-5, 7, "another-secret-value")
	f.Add(3*chunkSize+100, 4096, "x-secret-value-y")
	f.Fuzz(func(t *testing.T, at, read int, secret string) {
		secret = strings.TrimSpace(secret)
		if len(secret) < 8 || len(secret) > 512 || at < 0 || at > 4*chunkSize || read <= 0 || read > 2*chunkSize {
			return
		}
		data := append(bytes.Repeat([]byte{' '}, at), secret...)
		data = append(data, " tail"...)
		r := iotest.HalfReader(&chunkReader{b: data, n: read})
		l, ok, err := NewSet(secret).ScanReader(r, false)
		if err != nil || !ok || l.Reason != ReasonExact {
			t.Fatalf("secret at %d (reads of %d) not found: %+v %v %v", at, read, l, ok, err)
		}
	})
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

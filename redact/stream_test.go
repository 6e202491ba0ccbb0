package redact

import (
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"testing"
)

// TestShapeBreaks checks the property StreamScanner relies on: no shape's literal or
// character class holds a shape break, and no break is a word byte; the one shape with
// an any-byte part (the private key block's body) is matched once its header is.
func TestShapeBreaks(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		if isShapeBreak(byte(c)) != strings.ContainsRune(shapeBreaks, rune(c)) {
			t.Fatalf("isShapeBreak(%q) disagrees with shapeBreaks", byte(c))
		}
	}
	for _, c := range []byte(shapeBreaks) {
		if isWordByte(c) {
			t.Errorf("break %q is a word byte", c)
		}
	}
	for _, sh := range shapeDefs {
		re, err := syntax.Parse(sh.flags+sh.body, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		var walk func(r *syntax.Regexp)
		walk = func(r *syntax.Regexp) {
			switch r.Op {
			case syntax.OpLiteral:
				for _, c := range r.Rune {
					for _, folded := range []rune{c, rune(strings.ToUpper(string(c))[0]), rune(strings.ToLower(string(c))[0])} {
						if folded < 256 && isShapeBreak(byte(folded)) {
							t.Errorf("shape %s: literal holds the break %q", sh.name, folded)
						}
					}
				}
			case syntax.OpCharClass:
				for i := 0; i+1 < len(r.Rune); i += 2 {
					for _, c := range []byte(shapeBreaks) {
						if rune(c) >= r.Rune[i] && rune(c) <= r.Rune[i+1] {
							t.Errorf("shape %s: class %v holds the break %q", sh.name, r, c)
						}
					}
				}
			case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
				if sh.name != "private-key-block" {
					t.Errorf("shape %s matches any byte: a break could be inside a match", sh.name)
				}
			}
			for _, s := range r.Sub {
				walk(s)
			}
		}
		walk(re)
	}
}

// streamPieces are the parts random texts are made of: secret values and forms, shape
// openings and bodies, breaks, whitespace runs, markup.
var streamPieces = []string{
	"s3cr3t-value-0123", "czNjcjN0LXZhbHVlLTAxMjM", "s3cr3t%2Dvalue", "sk-", "sk-ant-", "abcdefghijklmnopqrstu",
	"OPENAI_API_KEY=", "Anthropic-Key: ", "Bearer ", "bearer\n\t ", "eyJhbGciOiJIUzI1", ".eyJzdWIiOiIxMjM0", ".c2lnbmF0dXJl",
	"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "<", ">", "{", "}", "(", ")", ",", ";", "|", "[", "]",
	"\"", "'", ":", "=", " ", strings.Repeat(" ", 300), strings.Repeat("x", 300), "<div class=\"card\">", "</div>\n", "é", "\x00",
}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(40) {
		b.WriteString(streamPieces[r.IntN(len(streamPieces))])
	}
	return b.String()
}

// scanInPieces writes text to a fresh scanner cut at random places.
func scanInPieces(s *Set, text string, shapes bool, r *rand.Rand) (Leak, bool) {
	sc := s.NewStreamScanner(shapes)
	for len(text) > 0 {
		n := min(len(text), 1+r.IntN(600))
		if r.IntN(4) == 0 {
			n = min(len(text), 1+r.IntN(8))
		}
		_, _ = sc.Write([]byte(text[:n]))
		text = text[n:]
	}
	return sc.Leak()
}

// TestStreamScannerAgreesWithFindLeak: whatever the cuts, the scanner finds a leak
// exactly when FindLeak over the whole text does.
func TestStreamScannerAgreesWithFindLeak(t *testing.T) {
	t.Parallel()
	s := NewSet("s3cr3t-value-0123", "another-secret-with-a-long-body-"+strings.Repeat("z", 90))
	r := rand.New(rand.NewPCG(1, 2))
	found := map[bool]int{} // by shapes: texts with a leak
	for i := range 20000 {
		text := randomText(r)
		for _, shapes := range []bool{false, true} {
			want, wantOK := s.FindLeak([]byte(text), shapes)
			got, ok := scanInPieces(s, text, shapes, r)
			if ok != wantOK {
				t.Fatalf("case %d shapes=%v: stream found %v (%v), FindLeak %v (%v) in %q", i, shapes, ok, got, wantOK, want, text)
			}
			if ok {
				found[shapes]++
			}
		}
	}
	// the texts exercise both answers, and shapes that exact values do not explain
	if found[false] < 2000 || found[true]-found[false] < 2000 || found[true] > 18000 {
		t.Fatalf("texts with a leak: %d exact, %d with shapes, of 20000: the generator no longer exercises both answers", found[false], found[true])
	}
	var nilSet *Set
	if _, ok := scanInPieces(nilSet, "Bearer abcdefghijklmnopqrstuvwxyz", true, r); !ok {
		t.Fatal("a nil set's scanner missed a bearer token")
	}
	if _, ok := scanInPieces(nilSet, "nothing to see <here>", true, r); ok {
		t.Fatal("a nil set's scanner found a leak in clean text")
	}
}

// TestStreamScannerWhere: the reported offset is the leak's place in the stream.
func TestStreamScannerWhere(t *testing.T) {
	t.Parallel()
	s := NewSet("s3cr3t-value-0123")
	text := strings.Repeat("<p>clean</p>\n", 10000) + "s3cr3t-value-0123"
	sc := s.NewStreamScanner(true)
	for i := 0; i < len(text); i += 4096 {
		_, _ = sc.Write([]byte(text[i:min(len(text), i+4096)]))
	}
	l, ok := sc.Leak()
	if !ok || l.Reason != ReasonExact || l.Where != "byte 130000" {
		t.Fatalf("got %+v %v, want exact at byte 130000", l, ok)
	}
}

// FuzzStreamScanner checks the agreement on arbitrary text and cut sizes.
func FuzzStreamScanner(f *testing.F) {
	f.Add("Bearer abcdefghijklmnopqrstuvwxyz", uint64(3))
	f.Add("<a>OPENAI_API_KEY=\n\n\nabcdefghijklmnop</a>", uint64(7))
	f.Add("x s3cr3t-value-0123 y", uint64(1))
	s := NewSet("s3cr3t-value-0123")
	f.Fuzz(func(t *testing.T, text string, seed uint64) {
		r := rand.New(rand.NewPCG(seed, seed))
		for _, shapes := range []bool{false, true} {
			_, want := s.FindLeak([]byte(text), shapes)
			if _, got := scanInPieces(s, text, shapes, r); got != want {
				t.Fatalf("shapes=%v: stream %v, FindLeak %v", shapes, got, want)
			}
		}
	})
}

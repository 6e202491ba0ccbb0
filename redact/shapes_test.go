package redact

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// reference is the plain way to find a shape, kept to check the anchored search
// against: every shape's whole expression run over the whole text (after the same
// "contains a literal" prefilter the guard used before), the earliest match winning.
type reference struct {
	name string
	re   *regexp.Regexp
	lits []string
	fold bool
}

func references() []reference {
	var out []reference
	for _, sh := range shapes() {
		out = append(out, reference{name: sh.name, re: sh.re, lits: sh.starts, fold: sh.fold})
	}
	return out
}

func findShapeReference(refs []reference, b []byte) (string, int, bool) {
	best, at := "", -1
	var lower []byte
	for _, r := range refs {
		hay := b
		if r.fold {
			if lower == nil {
				lower = bytes.ToLower(b)
			}
			hay = lower
		}
		hit := false
		for _, l := range r.lits {
			if bytes.Contains(hay, []byte(l)) {
				hit = true
			}
		}
		if !hit {
			continue
		}
		if loc := r.re.FindIndex(b); loc != nil && (at < 0 || loc[0] < at) {
			best, at = r.name, loc[0]
		}
	}
	return best, at, at >= 0
}

// TestShapeLiteralsFoldASCII: a fold literal is compared ASCII case-insensitively,
// which is exact only when none of its letters has a non-ASCII case fold (k: the
// Kelvin sign, s: the long s). A literal with one would let `(?i)` match text the
// literal search misses.
func TestShapeLiteralsFoldASCII(t *testing.T) {
	t.Parallel()
	for _, sh := range shapeDefs {
		for _, l := range sh.starts {
			if l == "" {
				t.Errorf("%s: empty literal", sh.name)
			}
			for _, r := range l {
				if r > unicode.MaxASCII {
					t.Errorf("%s: literal %q is not ASCII", sh.name, l)
				}
				if !sh.fold {
					continue
				}
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					if f > unicode.MaxASCII {
						t.Errorf("%s: fold literal %q has %q, which folds to %q", sh.name, l, r, f)
					}
				}
			}
		}
	}
}

// TestShapeMatchesBeginWithLiteral: every match of every shape's expression begins
// with one of its literals, which is what lets the search look only there.
func TestShapeMatchesBeginWithLiteral(t *testing.T) {
	t.Parallel()
	for _, tt := range shapeCorpus() {
		for _, sh := range shapes() {
			for _, loc := range sh.re.FindAllIndex([]byte(tt), -1) {
				m := tt[loc[0]:loc[1]]
				ok := false
				for _, l := range sh.starts {
					if sh.fold && strings.HasPrefix(strings.ToLower(m), l) || strings.HasPrefix(m, l) {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s matched %q, which begins with none of %q", sh.name, m, sh.starts)
				}
			}
		}
	}
}

// shapeCorpus is text around the literal boundaries: word characters before a
// literal, case variants, non-ASCII case folds, repeated and overlapping literals.
func shapeCorpus() []string {
	return []string{
		"key " + fakeAnthropic + " end",
		"x" + fakeAnthropic, "_" + fakeOpenAI, "é" + fakeOpenAI, "-" + fakeOpenAI,
		"sk-sk-sk-" + strings.Repeat("a", 20),
		"OpenAI_API_KEY=abcdefghijkl0123", "openai-key: 'abcdefghijklm'", "OPENAIAPIKEY:abcdefghijklmn",
		"openai_api_\u212Aey=abcdefghijklmn", "GEMINI_API_\u212AEY = abcdefghijklmnop",
		"openaiopenai_key=abcdefghijklmn", "xaixai-key=abcdefghijkl",
		"Authorization: Bearer abcdefghijklmnop0123", "xbearer abcdefghijklmnop0123", "BEARER\tabcdefghijklmnop0123==",
		"bearerbearer abcdefghijklmnopq", "token " + fakeJWT, "x" + fakeJWT,
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
		"-----BEGIN -----BEGIN PRIVATE KEY-----", "-----BEGIN PUBLIC KEY-----",
		"sk-short", "Bearer of news", "eyJ.eyJ.x", "",
	}
}

// TestFindShapeAgreesWithRegexp: the anchored search finds the same shape at the same
// offset as running every expression over the whole text.
func TestFindShapeAgreesWithRegexp(t *testing.T) {
	t.Parallel()
	refs := references()
	corpus := shapeCorpus()
	corpus = append(corpus, strings.Join(corpus, "\n"), strings.Join(corpus, ""), string(codexLog(t)))
	for _, tt := range corpus {
		name, at, ok := findShape([]byte(tt))
		wname, wat, wok := findShapeReference(refs, []byte(tt))
		if name != wname || at != wat || ok != wok {
			t.Errorf("findShape(%.60q) = %s %d %v, the expressions say %s %d %v", tt, name, at, ok, wname, wat, wok)
		}
	}
}

// FuzzFindShape: the anchored search and the whole expressions always agree.
func FuzzFindShape(f *testing.F) {
	for _, s := range shapeCorpus() {
		f.Add(s)
	}
	refs := references()
	f.Fuzz(func(t *testing.T, text string) {
		name, at, ok := findShape([]byte(text))
		wname, wat, wok := findShapeReference(refs, []byte(text))
		if name != wname || at != wat || ok != wok {
			t.Fatalf("findShape(%q) = %s %d %v, the expressions say %s %d %v", text, name, at, ok, wname, wat, wok)
		}
	})
}

// codexLog is a real scripted-model request log of a Codex message-marker cell
// (177,519 bytes of JSON lines: Codex's instructions, tools and the conversation; it
// names OpenAI, so the provider-key prefilter alone does not skip it).
func codexLog(tb testing.TB) []byte {
	tb.Helper()
	f, err := os.Open("testdata/codex-model-requests.jsonl.gz")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// reportCPU reports, when the returned function runs, the process's CPU time (user +
// system, getrusage) per iteration in ms and the bytes scanned per CPU second as
// cpu-MB/s: on a shared, loaded machine the wall-clock MB/s mostly measures the wait for
// a core.
func reportCPU(b *testing.B, n int) func() {
	start := cpuTime(b)
	return func() {
		d := cpuTime(b) - start
		b.ReportMetric(float64(d.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		if d > 0 {
			b.ReportMetric(float64(n)*float64(b.N)/d.Seconds()/1e6, "cpu-MB/s")
		}
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkShapesCodexLog scans the Codex request log for secret shapes (the guard's
// work on a clean text file, after the exact values), with the anchored search and,
// side by side in the same run, with the whole expressions (the guard's search before
// it): MB/s of each, by wall clock and by CPU time (cpu-MB/s).
func BenchmarkShapesCodexLog(b *testing.B) {
	log := codexLog(b)
	refs := references()
	for _, impl := range []string{"anchored", "regexp"} {
		b.Run(fmt.Sprintf("impl=%s", impl), func(b *testing.B) {
			b.SetBytes(int64(len(log)))
			defer reportCPU(b, len(log))()
			for b.Loop() {
				var ok bool
				if impl == "anchored" {
					_, _, ok = findShape(log)
				} else {
					_, _, ok = findShapeReference(refs, log)
				}
				if ok {
					b.Fatal("clean log reported")
				}
			}
		})
	}
}

// BenchmarkGuardCodexLog is the whole text scan of the guard (FindLeak: exact values of
// a ten-secret set in every form, then shapes) over the Codex request log.
func BenchmarkGuardCodexLog(b *testing.B) {
	log := codexLog(b)
	s := benchSet()
	b.SetBytes(int64(len(log)))
	defer reportCPU(b, len(log))()
	for b.Loop() {
		if _, ok := s.FindLeak(log, true); ok {
			b.Fatal("clean log reported")
		}
	}
}

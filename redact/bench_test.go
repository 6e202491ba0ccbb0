package redact

import (
	"fmt"
	"strings"
	"testing"
)

// benchSet is a secret set of ten 31-byte values, as in report's BenchmarkGuardSanitize.
func benchSet() *Set {
	var vals []string
	for i := range 10 {
		vals = append(vals, fmt.Sprintf("bench-secret-%02d-0123456789abcdef", i))
	}
	return NewSet(vals...)
}

// BenchmarkFindLeak scans 64 KiB of clean log text for the ten secrets (in every form
// the set knows), without and with the shape rules.
func BenchmarkFindLeak(b *testing.B) {
	s := benchSet()
	line := "2026-11-30T04:00:00Z run hb-1 step 3: report_progress accepted\n"
	log := []byte(strings.Repeat(line, (64<<10)/len(line)))
	for _, shapes := range []bool{false, true} {
		b.Run(fmt.Sprintf("shapes=%v", shapes), func(b *testing.B) {
			b.SetBytes(int64(len(log)))
			for b.Loop() {
				if _, ok := s.FindLeak(log, shapes); ok {
					b.Fatal("clean log reported")
				}
			}
		})
	}
}

// BenchmarkRedactText redacts 64 KiB of log text holding one secret.
func BenchmarkRedactText(b *testing.B) {
	s := benchSet()
	line := "2026-11-30T04:00:00Z run hb-1 step 3: report_progress accepted\n"
	text := strings.Repeat(line, (32<<10)/len(line)) + "bench-secret-07-0123456789abcdef\n" + strings.Repeat(line, (32<<10)/len(line))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if out := s.RedactText(text); !strings.Contains(out, Redacted) {
			b.Fatal("not redacted")
		}
	}
}

// BenchmarkNewSet builds the set of ten secrets (forms and index).
func BenchmarkNewSet(b *testing.B) {
	for b.Loop() {
		_ = benchSet()
	}
}

// BenchmarkNewSetFirstUse builds the set of ten secrets and scans a short text, which
// builds its index (every form of every secret).
func BenchmarkNewSetFirstUse(b *testing.B) {
	for b.Loop() {
		if benchSet().FindExact([]byte("clean text")) >= 0 {
			b.Fatal("clean text reported")
		}
	}
}

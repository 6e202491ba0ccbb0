package match

import (
	"testing"
)

// BenchmarkNormalize measures normalisation of a 64 KiB reply, clean (trim only) and
// messy (rewritten).
func BenchmarkNormalize(b *testing.B) {
	for _, messy := range []bool{false, true} {
		name := "clean"
		if messy {
			name = "messy"
		}
		b.Run(name, func(b *testing.B) {
			s := message64K("PAPERCLIP_E2E_OK_4242", messy)
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				Normalize(s)
			}
		})
	}
}

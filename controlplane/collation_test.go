package controlplane

import (
	"math/rand/v2"
	"testing"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
)

// TestCompareFastMatchesCollator: the fast path orders [a-z0-9:-] strings exactly as
// the root collator does.
func TestCompareFastMatchesCollator(t *testing.T) {
	t.Parallel()
	c := collate.New(language.Und)
	const alphabet = "-:0123456789abcdefghijklmnopqrstuvwxyz"
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	sign := func(x int) int { return min(1, max(-1, x)) }
	for i := 0; i < 20000; i++ {
		a, b := word(), word()
		if r.IntN(4) == 0 && len(a) > 0 {
			b = a[:r.IntN(len(a))] + b
		}
		got, ok := compareFast(a, b)
		if !ok {
			t.Fatalf("fast path refused %q %q", a, b)
		}
		if want := c.CompareString(a, b); sign(got) != sign(want) {
			t.Fatalf("compareFast(%q, %q) = %d, collator says %d", a, b, got, want)
		}
	}
	if _, ok := compareFast("a_b", "a-b"); ok {
		t.Fatal("fast path accepted an underscore")
	}
}

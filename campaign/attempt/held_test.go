package attempt

import (
	"slices"
	"testing"
)

// TestHeldSecrets: an attempt's scans see the secrets of every attempt that ran at
// some moment beside it (running now, or ended after it started), never its own twice
// nor those of an attempt that ended before it started; entries no running attempt
// overlapped are forgotten.
func TestHeldSecrets(t *testing.T) {
	t.Parallel()
	var h heldSecrets
	a := h.hold("a-canary")
	b := h.hold("b-canary")
	h.add(b, "b-master-key")
	if got := h.others(a); !slices.Equal(got, []string{"b-canary", "b-master-key"}) {
		t.Fatalf("a sees %v", got)
	}
	h.release(b) // b ended while a ran: a still sees it
	if got := h.others(a); !slices.Equal(got, []string{"b-canary", "b-master-key"}) {
		t.Fatalf("after b ended, a sees %v", got)
	}
	c := h.hold("c-canary") // started after b ended: never overlapped b
	if got := h.others(c); !slices.Equal(got, []string{"a-canary"}) {
		t.Fatalf("c sees %v", got)
	}
	h.release(a)
	if got := h.others(c); !slices.Equal(got, []string{"a-canary"}) {
		t.Fatalf("after a ended, c sees %v", got)
	}
	if n := len(h.entries); n != 2 { // b is forgotten: no running attempt overlapped it
		t.Fatalf("%d entries kept, want 2 (a and c)", n)
	}
	h.release(c)
	if n := len(h.entries); n != 0 {
		t.Fatalf("%d entries kept after every attempt ended", n)
	}
	h.add(nil, "x")
	h.release(nil)
	if got := h.others(nil); len(got) != 0 {
		t.Fatalf("an empty registry gives %v", got)
	}
}

package redact

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"sort"
)

// The needle index finds every form of every secret of a Set in one pass, whatever the
// number of forms (a secret has a dozen encoded forms; a set holds tens of secrets).
//
// Every needle of at least indexedMin bytes is cut into all its gram-byte windows
// ("grams"), each recorded with its offset in the needle. The haystack is sampled only
// at multiples of step = (shortest indexed needle) − gram + 1: any occurrence of a
// needle of length L ≥ step+gram−1 covers at least one sample position q with its gram
// b[q:q+gram] wholly inside the occurrence, so looking up the gram at every sample and
// verifying the needles it names finds every occurrence. A bitset over a hash of the
// gram (the prefilter) rejects almost every sample of clean text with one memory read;
// the gram table (a chained hash table) is searched only on a prefilter hit. Needles shorter than indexedMin (short
// raw secrets; encoded forms are never that short) are searched with bytes.Index.
const (
	gram       = 8
	indexedMin = 12
	bloomBits  = 17
)

// needle is one form of one secret.
type needle struct {
	text string
	enc  Encoding // "" for the value itself
}

// gramEntry is one gram of one needle: the gram (its bytes as a little-endian number),
// the needle, the gram's offset in it, and the next entry of its bucket (-1: none).
type gramEntry struct {
	gram   uint64
	needle int32
	off    int32
	next   int32
}

// needleIndex searches a fixed list of needles; it is immutable once built.
type needleIndex struct {
	needles []needle
	short   []int32 // needles shorter than indexedMin
	step    int     // sample distance; 0 when no needle is indexed
	bloom   []uint64
	grams   []gramEntry
	buckets []int32 // first entry of each bucket, -1 for none; a power of two long
	shift   uint    // bucket of gram g: (g * golden) >> shift
	longest int
}

const golden = 0x9E3779B97F4A7C15

func gramHash(g uint64) uint64 { return (g * golden) >> (64 - bloomBits) }

// newNeedleIndex indexes needles (non-empty, distinct).
func newNeedleIndex(needles []needle) *needleIndex {
	ix := &needleIndex{needles: needles}
	minLen := 0
	for i, n := range needles {
		ix.longest = max(ix.longest, len(n.text))
		if len(n.text) < indexedMin {
			ix.short = append(ix.short, int32(i))
			continue
		}
		if minLen == 0 || len(n.text) < minLen {
			minLen = len(n.text)
		}
	}
	if minLen == 0 {
		return ix
	}
	ix.step = minLen - gram + 1
	ix.bloom = make([]uint64, 1<<bloomBits/64)
	total := 0
	for _, n := range needles {
		if len(n.text) >= indexedMin {
			total += len(n.text) - gram + 1
		}
	}
	bits := uint(bits.Len(uint(total))) + 1 // at least two buckets per entry
	ix.shift = 64 - bits
	ix.buckets = make([]int32, 1<<bits)
	for i := range ix.buckets {
		ix.buckets[i] = -1
	}
	ix.grams = make([]gramEntry, 0, total)
	for i, n := range needles {
		if len(n.text) < indexedMin {
			continue
		}
		for off := 0; off+gram <= len(n.text); off++ {
			g := binary.LittleEndian.Uint64([]byte(n.text[off : off+gram]))
			h := gramHash(g)
			ix.bloom[h/64] |= 1 << (h % 64)
			b := (g * golden) >> ix.shift
			ix.grams = append(ix.grams, gramEntry{gram: g, needle: int32(i), off: int32(off), next: ix.buckets[b]})
			ix.buckets[b] = int32(len(ix.grams) - 1)
		}
	}
	return ix
}

// verify calls found for every needle holding gram g at sample q of b whose occurrence
// there is real, with the occurrence's start and the needle's number.
func (ix *needleIndex) verify(b []byte, q int, g uint64, found func(p, i int)) {
	for e := ix.buckets[(g*golden)>>ix.shift]; e >= 0; e = ix.grams[e].next {
		hit := &ix.grams[e]
		if hit.gram != g {
			continue
		}
		p := q - int(hit.off)
		n := ix.needles[hit.needle].text
		if p >= 0 && p+len(n) <= len(b) && string(b[p:p+len(n)]) == n {
			found(p, int(hit.needle))
		}
	}
}

// first returns the leftmost occurrence in b of any needle (the longest needle at that
// offset), as its offset and needle number, or -1.
func (ix *needleIndex) first(b []byte) (int, int) {
	if ix == nil {
		return -1, -1
	}
	at, which := -1, -1
	better := func(p, i int) bool {
		return at < 0 || p < at || p == at && len(ix.needles[i].text) > len(ix.needles[which].text)
	}
	for _, i := range ix.short {
		if p := bytes.Index(b, []byte(ix.needles[i].text)); p >= 0 && better(p, int(i)) {
			at, which = p, int(i)
		}
	}
	if ix.step == 0 {
		return at, which
	}
	// Every occurrence starting before an occurrence first verified at sample q is
	// itself verified at q (it has a sample in [p, p+step) and none before q): so the
	// first sample with any verified hit holds the leftmost indexed occurrence.
	for q := 0; q+gram <= len(b); q += ix.step {
		if at >= 0 && q >= at+ix.step {
			break // an occurrence at or before at has a sample before at+step
		}
		g := binary.LittleEndian.Uint64(b[q:])
		h := gramHash(g)
		if ix.bloom[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		found := false
		ix.verify(b, q, g, func(p, i int) {
			found = true
			if better(p, i) {
				at, which = p, i
			}
		})
		if found {
			break
		}
	}
	return at, which
}

// span is a byte range [start, end) of a haystack.
type span struct{ start, end int }

// all returns every occurrence of every needle in b (overlapping ones included) merged
// into disjoint, sorted spans; spans that only touch stay apart.
func (ix *needleIndex) all(b []byte) []span {
	if ix == nil {
		return nil
	}
	var spans []span
	for _, i := range ix.short {
		n := []byte(ix.needles[i].text)
		for from := 0; ; {
			p := bytes.Index(b[from:], n)
			if p < 0 {
				break
			}
			spans = append(spans, span{from + p, from + p + len(n)})
			from += p + 1
		}
	}
	if ix.step > 0 {
		for q := 0; q+gram <= len(b); q += ix.step {
			g := binary.LittleEndian.Uint64(b[q:])
			h := gramHash(g)
			if ix.bloom[h/64]&(1<<(h%64)) == 0 {
				continue
			}
			ix.verify(b, q, g, func(p, i int) {
				spans = append(spans, span{p, p + len(ix.needles[i].text)})
			})
		}
	}
	if len(spans) < 2 {
		return spans
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start < last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

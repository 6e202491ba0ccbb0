package attempt

import (
	"slices"
	"sync"

	"github.com/agentproof/agentproof/redact"
)

// heldSecrets are the secrets that the attempts of a campaign running at the same
// time hold: each attempt's canaries and its instance's own keys. A local agent runs
// as the user who runs agentproof, so while it runs it may read another attempt's
// instance home (its key files); the scans and the evidence of every attempt are
// guarded with the secrets of every attempt that was running at some moment while it
// ran (heldSecrets.others), besides its own and the campaign's (LocalExecutor.Secrets).
// Safe for concurrent use; the zero value is empty.
type heldSecrets struct {
	mu      sync.Mutex
	ended   int64 // attempts that ended so far
	entries []*heldEntry
}

// heldEntry is one attempt's secrets in a heldSecrets: registered when the attempt
// had ended attempts before it (epoch), ended when it was the ended-th to end (0 while
// it runs).
type heldEntry struct {
	values []string
	epoch  int64
	ended  int64
}

// hold registers a running attempt holding values, and returns its entry.
func (h *heldSecrets) hold(values ...string) *heldEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := &heldEntry{values: slices.Clone(values), epoch: h.ended}
	h.entries = append(h.entries, e)
	return e
}

// add registers more values of e's attempt (its instance's keys, once it started).
// A nil entry does nothing.
func (h *heldSecrets) add(e *heldEntry, values ...string) {
	if e == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e.values = append(e.values, values...)
}

// release marks e's attempt ended and forgets the entries no running attempt
// overlapped. A nil entry does nothing.
func (h *heldSecrets) release(e *heldEntry) {
	if e == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended++
	e.ended = h.ended
	oldest := h.ended // the earliest epoch of a running attempt
	for _, x := range h.entries {
		if x.ended == 0 {
			oldest = min(oldest, x.epoch)
		}
	}
	h.entries = slices.DeleteFunc(h.entries, func(x *heldEntry) bool { return x.ended != 0 && x.ended <= oldest })
}

// others returns the values of every attempt but e's that was running at some moment
// while e's was: still running, or ended after e's started.
func (h *heldSecrets) others(e *heldEntry) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, x := range h.entries {
		if x != e && (x.ended == 0 || e == nil || x.ended > e.epoch) {
			out = append(out, x.values...)
		}
	}
	return out
}

// withOthers is set with the secrets of the attempts that ran beside e's
// (heldSecrets.others); set itself when there are none.
func (h *heldSecrets) withOthers(set *redact.Set, e *heldEntry) *redact.Set {
	if o := h.others(e); len(o) > 0 {
		return set.With(o...)
	}
	return set
}

package environment

import (
	"time"

	"github.com/agentproof/agentproof/billing"
)

// LeaseRecord is one lease as an attempt's result.json records it (issue "Leases and
// billing": id, shape, start, end, reused or not).
//
//   - Shape: nil for a provider that pins nothing (local).
//   - StartedAt, EndedAt: RFC 3339 UTC with milliseconds; EndedAt is the end of its
//     cleanup, "" while the lease is alive or when its cleanup never ran.
//   - Reused: the lease served a whole cell (reuseLease: true); Launches counts the
//     processes launched into it.
//   - CleanupConfirmed, Remaining: the cleanup's verdict input (the cell fails
//     when cleanup cannot be confirmed) and what remained.
type LeaseRecord struct {
	ID               string       `json:"id"`
	Provider         ProviderName `json:"provider"`
	EnvironmentID    string       `json:"environmentId"`
	ConfigurationKey string       `json:"configurationKey,omitempty"`
	Shape            *Shape       `json:"shape"`
	StartedAt        string       `json:"startedAt"`
	EndedAt          string       `json:"endedAt,omitempty"`
	Reused           bool         `json:"reused"`
	Launches         int          `json:"launches"`
	CleanupConfirmed bool         `json:"cleanupConfirmed"`
	Remaining        *Inventory   `json:"remaining,omitempty"`
}

const recordTime = "2006-01-02T15:04:05.000Z07:00"

// NewLeaseRecord builds l's record after its cleanup (cleanup nil: not cleaned up yet)
// with the number of processes launched into it.
func NewLeaseRecord(l *Lease, launches int, cleanup *CleanupReport) LeaseRecord {
	r := LeaseRecord{ID: l.ID, Provider: l.Provider, EnvironmentID: l.EnvironmentID, ConfigurationKey: l.ConfigurationKey,
		StartedAt: l.StartedAt.UTC().Format(recordTime), Reused: l.Reuse, Launches: launches}
	if !l.Shape.IsZero() {
		s := l.Shape
		r.Shape = &s
	}
	if cleanup != nil {
		r.EndedAt = cleanup.EndedAt.UTC().Format(recordTime)
		r.CleanupConfirmed = cleanup.Confirmed
		if !cleanup.Remaining.Empty() {
			rem := cleanup.Remaining
			r.Remaining = &rem
		}
	}
	return r
}

// BillingLease converts the record for billing.Runtime: its window and, when it has a
// complete shape, CPU in cores and memory and disk in GiB. A record without an end or
// without a shape gives a lease billing treats as incomplete, never as free.
func (r LeaseRecord) BillingLease() billing.Lease {
	var l billing.Lease
	if t, err := time.Parse(time.RFC3339Nano, r.StartedAt); err == nil {
		l.StartedAt = t
	}
	if t, err := time.Parse(time.RFC3339Nano, r.EndedAt); err == nil {
		l.ReleasedAt = t
	}
	if s := r.Shape; s != nil && s.Pinned() {
		cpu := s.CPUCores
		mem := float64(s.MemoryBytes) / float64(GiB)
		disk := float64(s.DiskBytes) / float64(GiB)
		l.CPUCores, l.MemoryGiB, l.DiskGiB = &cpu, &mem, &disk
	}
	return l
}

// Runtime is the runtime usage of an attempt on provider (billing.Runtime): its run
// windows, its lease records and the campaign's finish time for a lease never ended.
// Local is not metered; the sandbox has no rate table, so a sandbox attempt whose
// leases all carry their shape is unpriced (lease time and shape kept), never free.
func Runtime(provider ProviderName, records []LeaseRecord, runs []billing.RunWindow, fallbackFinish time.Time) billing.RuntimeUsage {
	leases := make([]billing.Lease, 0, len(records))
	for _, r := range records {
		leases = append(leases, r.BillingLease())
	}
	return billing.Runtime(billing.RuntimeInput{Provider: string(provider), Runs: runs, Leases: leases, FallbackFinish: fallbackFinish})
}

package billing

import (
	"math"
	"time"
)

// RuntimeCostStatus is the coverage of an attempt's runtime (sandbox) cost.
type RuntimeCostStatus string

// Runtime cost statuses and sources.
const (
	// RuntimeEstimated: every lease had a resource shape; the cost is a list-price estimate.
	RuntimeEstimated RuntimeCostStatus = "estimated"
	// RuntimeUnavailable: the provider's cost cannot be estimated (no leases, a lease
	// without resources, or a provider without a rate table).
	RuntimeUnavailable RuntimeCostStatus = "unavailable"
	// RuntimeNotMetered: the local environment; run time is recorded, cost is not metered.
	RuntimeNotMetered RuntimeCostStatus = "not_metered"
	// RuntimeUnpriced: every lease reported its pinned shape and window, so the
	// resource-hours are known, but the provider has no rate table (for example the
	// sandbox provider on this machine): the cost is unknown, never zero.
	RuntimeUnpriced RuntimeCostStatus = "unpriced"

	// SourceLocalNotMetered is the cost source of the local environment.
	SourceLocalNotMetered = "local_not_metered"
	// SourceProviderCostUnavailable is the cost source when no estimate could be made.
	SourceProviderCostUnavailable = "provider_cost_unavailable"
	// SourceNoRateTable is the cost source of an unpriced runtime: leases with a
	// complete shape from a provider absent from RateTables.
	SourceNoRateTable = "no_rate_table"
)

// RateTable is a versioned set of public list prices for one runtime provider, in US
// dollars per resource-hour. AsOf (YYYY-MM-DD) and URL say where the figures came from;
// a change of prices is a new table, never an edit of an old one.
type RateTable struct {
	Provider            string  `json:"provider"`
	Source              string  `json:"source"`
	AsOf                string  `json:"asOf"`
	URL                 string  `json:"url"`
	CPUPerVCPUHourUSD   float64 `json:"cpuPerVcpuHourUsd"`
	MemoryPerGiBHourUSD float64 `json:"memoryPerGibHourUsd"`
	DiskPerGiBHourUSD   float64 `json:"diskPerGibHourUsd"`
}

// DaytonaListRates are Daytona's public list prices as of 2026-08-27: $0.0504
// per vCPU-hour, $0.0162 per GiB-hour of memory, $0.000108 per GiB-hour of disk. An
// estimate from them is not an invoice (credits, discounts and the free storage allowance
// can lower the real bill).
var DaytonaListRates = RateTable{
	Provider:            "daytona",
	Source:              "daytona_public_list_price",
	AsOf:                "2026-08-27",
	URL:                 "https://www.daytona.io/pricing",
	CPUPerVCPUHourUSD:   0.0504,
	MemoryPerGiBHourUSD: 0.0162,
	DiskPerGiBHourUSD:   0.000108,
}

// RateTables maps a provider (environment provider id) to its current rate table.
// Providers absent here are never estimated: their runtime cost is unavailable.
var RateTables = map[string]RateTable{"daytona": DaytonaListRates}

// RunWindow is one run's start and finish; a zero time means it was not recorded.
type RunWindow struct {
	StartedAt  time.Time
	FinishedAt time.Time
}

// Lease is one runtime lease (for example a sandbox) as the provider's public API
// reported it. Zero times are absent; nil resources are absent. CPU in vCPUs, memory and
// disk in GiB.
type Lease struct {
	StartedAt  time.Time
	ReleasedAt time.Time
	UpdatedAt  time.Time
	CPUCores   *float64
	MemoryGiB  *float64
	DiskGiB    *float64
}

// RuntimeInput is what Runtime needs: the environment's provider ("local", "daytona", …),
// the attempt's runs, its leases and the campaign's finish time, used as the end of a
// lease that was never released.
type RuntimeInput struct {
	Provider       string
	Runs           []RunWindow
	Leases         []Lease
	FallbackFinish time.Time
}

// RuntimeUsage is the runtime block of a result. Durations are in ms;
// LeaseDurationMs is nil where leases are not tracked (local); resources are set only when
// identical across leases; EstimatedListCostUSD is nil unless CostStatus is "estimated".
type RuntimeUsage struct {
	Provider             string            `json:"provider"`
	AgentRunDurationMs   int64             `json:"agentRunDurationMs"`
	LeaseDurationMs      *int64            `json:"leaseDurationMs"`
	LeaseCount           int               `json:"leaseCount"`
	CPUCores             *float64          `json:"cpuCores,omitempty"`
	MemoryGiB            *float64          `json:"memoryGiB,omitempty"`
	DiskGiB              *float64          `json:"diskGiB,omitempty"`
	EstimatedListCostUSD *float64          `json:"estimatedListCostUsd,omitempty"`
	CostStatus           RuntimeCostStatus `json:"costStatus"`
	CostSource           string            `json:"costSource"`
	PricingAsOf          string            `json:"pricingAsOf,omitempty"`
	PricingURL           string            `json:"pricingUrl,omitempty"`
}

// Runtime computes the runtime usage of an attempt. Local is not metered
// (run time still recorded); a provider with a rate table is estimated only when it has
// leases and every lease reports cpu, memory and disk; a provider without a rate table
// whose leases all report their shape is unpriced (its lease time and shape are kept);
// anything else (no leases, a lease without its shape) is unavailable.
func Runtime(in RuntimeInput) RuntimeUsage {
	out := RuntimeUsage{Provider: in.Provider, AgentRunDurationMs: runDuration(in.Runs)}
	if in.Provider == "local" {
		out.CostStatus = RuntimeNotMetered
		out.CostSource = SourceLocalNotMetered
		return out
	}
	out.CostStatus = RuntimeUnavailable
	out.CostSource = SourceProviderCostUnavailable
	out.LeaseCount = len(in.Leases)
	if len(in.Leases) == 0 {
		return out
	}
	var total int64
	var hoursCost float64
	complete := true
	for _, l := range in.Leases {
		end := l.ReleasedAt
		if end.IsZero() {
			end = in.FallbackFinish
		}
		if end.IsZero() {
			end = l.UpdatedAt
		}
		ms := int64(0)
		if !l.StartedAt.IsZero() && !end.IsZero() {
			ms = max(end.Sub(l.StartedAt).Milliseconds(), 0)
		}
		total += ms
		if l.CPUCores == nil || l.MemoryGiB == nil || l.DiskGiB == nil {
			complete = false
			continue
		}
		if rt, ok := RateTables[in.Provider]; ok {
			hoursCost += float64(ms) / 3_600_000 * (*l.CPUCores*rt.CPUPerVCPUHourUSD + *l.MemoryGiB*rt.MemoryPerGiBHourUSD + *l.DiskGiB*rt.DiskPerGiBHourUSD)
		}
	}
	out.LeaseDurationMs = &total
	out.CPUCores = sameAcross(in.Leases, func(l Lease) *float64 { return l.CPUCores })
	out.MemoryGiB = sameAcross(in.Leases, func(l Lease) *float64 { return l.MemoryGiB })
	out.DiskGiB = sameAcross(in.Leases, func(l Lease) *float64 { return l.DiskGiB })
	rt, ok := RateTables[in.Provider]
	if !complete {
		return out
	}
	if !ok {
		out.CostStatus = RuntimeUnpriced
		out.CostSource = SourceNoRateTable
		return out
	}
	est := roundUSD(hoursCost)
	out.EstimatedListCostUSD = &est
	out.CostStatus = RuntimeEstimated
	out.CostSource = rt.Source
	out.PricingAsOf = rt.AsOf
	out.PricingURL = rt.URL
	return out
}

// runDuration sums run windows; a window with a missing or reversed time counts 0.
func runDuration(runs []RunWindow) int64 {
	var sum int64
	for _, r := range runs {
		if r.StartedAt.IsZero() || r.FinishedAt.IsZero() {
			continue
		}
		sum += max(r.FinishedAt.Sub(r.StartedAt).Milliseconds(), 0)
	}
	return sum
}

func sameAcross(leases []Lease, get func(Lease) *float64) *float64 {
	first := get(leases[0])
	if first == nil {
		return nil
	}
	for _, l := range leases[1:] {
		v := get(l)
		if v == nil || *v != *first {
			return nil
		}
	}
	v := *first
	return &v
}

// roundUSD rounds a dollar amount to 1e-9 USD so that sums of list prices are stable.
func roundUSD(f float64) float64 { return math.Round(f*1e9) / 1e9 }

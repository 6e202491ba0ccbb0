package shard

import (
	"slices"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
)

// Estimates are the expected durations of cells (by execution id) and what they were
// computed from.
type Estimates struct {
	Cells   map[string]Cell
	Weights Weights
}

// Estimate gives every cell its expected duration: the median durationMs of its
// executed attempts (attempt > 0) over the campaigns of h (nil: none), or, without
// any, its attempt deadline times the median ratio of observed median to deadline of
// the cells that have history (per mille, rounded down; 1000 when none has).
func Estimate(cells []*catalog.Cell, h *result.History) Estimates {
	durations := map[string][]int64{}
	est := Estimates{Cells: map[string]Cell{}, Weights: Weights{Campaigns: []string{}}}
	if h != nil {
		for _, c := range h.Campaigns {
			est.Weights.Campaigns = append(est.Weights.Campaigns, c.CampaignID)
			for _, e := range c.Executions {
				if e.Attempt > 0 && e.DurationMs >= 0 {
					durations[e.ExecutionID] = append(durations[e.ExecutionID], e.DurationMs)
				}
			}
		}
	}
	var ratios []int64
	for _, c := range cells {
		d := durations[c.ID]
		if len(d) == 0 {
			continue
		}
		m := median(d)
		est.Cells[c.ID] = Cell{ExecutionID: c.ID, ExpectedMs: m, Source: FromHistory, Samples: len(d)}
		if c.AttemptTimeoutMs > 0 {
			ratios = append(ratios, m*1000/c.AttemptTimeoutMs)
		}
	}
	perMille := int64(1000)
	if len(ratios) > 0 {
		perMille = max(1, median(ratios))
	}
	est.Weights.DeadlinePerMille = perMille
	for _, c := range cells {
		if _, ok := est.Cells[c.ID]; !ok {
			est.Cells[c.ID] = Cell{ExecutionID: c.ID, ExpectedMs: max(1, c.AttemptTimeoutMs*perMille/1000), Source: FromDeadline}
		}
	}
	return est
}

// median is the middle value of v (the lower of the two middle ones for an even
// count); v is sorted in place and must not be empty.
func median(v []int64) int64 {
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

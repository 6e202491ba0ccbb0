// Package billing turns the usage recorded on an attempt's runs into cost accounting with
// honest coverage: provider-reported model spend, runtime estimates from versioned list
// rates, and a coverage status for each, so that missing data is reported as
// "unavailable", "unpriced" or "not metered" and never as $0 (docs/billing.md).
//
// An optional post-processing LLM judge's cost is not modelled: agentproof grades with
// deterministic matchers only.
package billing

import "math"

// CostStatus is the coverage of provider-reported LLM cost over an attempt's runs.
type CostStatus string

// LLM cost coverage statuses.
const (
	// CostReported: every run carried a provider-reported cost.
	CostReported CostStatus = "reported"
	// CostPartial: some, not all, runs carried a reported cost.
	CostPartial CostStatus = "partial"
	// CostUnpriced: no run was priced, but some run reported tokens.
	CostUnpriced CostStatus = "unpriced"
	// CostUnavailable: no run reported tokens or cost; never read as zero cost.
	CostUnavailable CostStatus = "unavailable"
)

// LLMUsage is the normalized LLM usage of one attempt. Token
// counts are whole tokens: InputTokens excludes the cached (cache-read) and cache-write
// input tokens, which are counted apart (CachedInputTokens, CacheWriteInputTokens: the
// tokens a provider wrote into its prompt cache, billed at their own rate), and
// TotalTokens is the sum of all four. ReportedCostUSD is the provider-reported model
// spend in US dollars (a CLI's own report, such as Claude Code's total_cost_usd, read
// as providerReportedUsd; never a list-price estimate) and is nil when no run carried a
// usable reported cost (never 0 for "unknown").
type LLMUsage struct {
	RunCount              int        `json:"runCount"`
	RunsWithTokenUsage    int        `json:"runsWithTokenUsage"`
	RunsWithReportedCost  int        `json:"runsWithReportedCost"`
	InputTokens           int64      `json:"inputTokens"`
	OutputTokens          int64      `json:"outputTokens"`
	CachedInputTokens     int64      `json:"cachedInputTokens"`
	CacheWriteInputTokens int64      `json:"cacheWriteInputTokens"`
	TotalTokens           int64      `json:"totalTokens"`
	ReportedCostUSD       *float64   `json:"reportedCostUsd"`
	CostStatus            CostStatus `json:"costStatus"`
}

// Token key aliases, first valid one wins (the cache-write keys and
// providerReportedUsd are agentproof's own additions).
var (
	inputKeys      = []string{"inputTokens", "input", "promptTokens"}
	outputKeys     = []string{"outputTokens", "output", "completionTokens"}
	cachedKeys     = []string{"cachedInputTokens", "cacheReadTokens", "cachedReadTokens"}
	cacheWriteKeys = []string{"cacheWriteInputTokens", "cacheWriteTokens", "cacheCreationInputTokens"}
	costKeys       = []string{"cacheAdjustedCostUsd", "costUsd", "providerCostUsd", "providerReportedUsd"}
)

// ExtractLLM normalizes the raw usage recorded for an attempt. usage is decoded JSON
// (maps, slices, float64 numbers, as encoding/json produces): either one run's usage
// object, or {"runs": [{"runId": …, "usage": {…}}, …]} for a multi-run attempt. runIDs
// are the attempt's run ids; the run count is max(len(runIDs), 1, number of entries),
// and runs without an entry count as runs without usage. Numbers count only when finite
// and ≥ 0; a cost in a currency other than USD is unknown. Cache-write tokens
// (cacheWriteInputTokens | cacheWriteTokens | cacheCreationInputTokens) are counted
// apart and in the total; a provider-reported cost may also be given as
// providerReportedUsd. A zero cost with zero input and
// output tokens does not count as priced.
func ExtractLLM(usage any, runIDs []string) LLMUsage {
	requested := max(len(runIDs), 1)
	var entries []map[string]any
	if m, ok := usage.(map[string]any); ok {
		if runs, ok := m["runs"].([]any); ok {
			for _, r := range runs {
				rm, _ := r.(map[string]any)
				u, _ := rm["usage"].(map[string]any)
				entries = append(entries, u)
			}
		} else {
			entries = append(entries, m)
		}
	}
	n := max(requested, len(entries))
	for len(entries) < n {
		entries = append(entries, nil)
	}

	out := LLMUsage{RunCount: n}
	var cost float64
	for _, e := range entries {
		if e == nil {
			continue
		}
		meas := measurement(e)
		in := firstNumber(meas, inputKeys)
		outTok := firstNumber(meas, outputKeys)
		cached := firstNumber(meas, cachedKeys)
		written := firstNumber(meas, cacheWriteKeys)
		out.InputTokens += tokens(in)
		out.OutputTokens += tokens(outTok)
		out.CachedInputTokens += tokens(cached)
		out.CacheWriteInputTokens += tokens(written)
		if in > 0 || outTok > 0 || cached > 0 || written > 0 {
			out.RunsWithTokenUsage++
		}
		if c, ok := entryCost(e, meas); ok && (c > 0 || in > 0 || outTok > 0) {
			out.RunsWithReportedCost++
			cost += c
		}
	}
	out.TotalTokens = out.InputTokens + out.CachedInputTokens + out.CacheWriteInputTokens + out.OutputTokens
	if out.RunsWithReportedCost > 0 {
		cost = roundUSD(cost)
		out.ReportedCostUSD = &cost
	}
	out.CostStatus = llmStatus(out.RunCount, out.RunsWithReportedCost, out.RunsWithTokenUsage)
	return out
}

// llmStatus derives the coverage status from counts.
func llmStatus(runs, priced, withTokens int) CostStatus {
	switch {
	case runs > 0 && priced >= runs:
		return CostReported
	case priced > 0:
		return CostPartial
	case withTokens > 0:
		return CostUnpriced
	default:
		return CostUnavailable
	}
}

// measurement picks the object holding the token counts: the first of runDelta, total,
// cumulative or the entry itself that contains any token key.
func measurement(e map[string]any) map[string]any {
	for _, k := range []string{"runDelta", "total", "cumulative"} {
		if m, ok := e[k].(map[string]any); ok && hasTokenKey(m) {
			return m
		}
	}
	return e
}

func hasTokenKey(m map[string]any) bool {
	for _, keys := range [][]string{inputKeys, outputKeys, cachedKeys, cacheWriteKeys} {
		for _, k := range keys {
			if _, ok := m[k]; ok {
				return true
			}
		}
	}
	return false
}

// number reports v as a finite, non-negative float64.
func number(v any) (float64, bool) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, false
	}
	return f, true
}

// firstNumber returns the value of the first key in keys holding a valid number, or 0.
func firstNumber(m map[string]any, keys []string) float64 {
	for _, k := range keys {
		if f, ok := number(m[k]); ok {
			return f
		}
	}
	return 0
}

func tokens(f float64) int64 {
	if f > math.MaxInt64/4 {
		return math.MaxInt64 / 4
	}
	return int64(math.Round(f))
}

// entryCost finds a run's reported cost in USD: entry-level cost keys, then the same on
// the measurement, then entry.cost {currency (default USD), amount | total}.
func entryCost(e, meas map[string]any) (float64, bool) {
	for _, m := range []map[string]any{e, meas} {
		for _, k := range costKeys {
			if f, ok := number(m[k]); ok {
				return f, true
			}
		}
	}
	c, ok := e["cost"].(map[string]any)
	if !ok {
		return 0, false
	}
	if cur, present := c["currency"]; present {
		if s, _ := cur.(string); s != "USD" {
			return 0, false
		}
	}
	for _, k := range []string{"amount", "total"} {
		if f, ok := number(c[k]); ok {
			return f, true
		}
	}
	return 0, false
}

package billing

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func usd(f float64) *float64 { return &f }

func TestExtractLLM(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		usage  string
		runIDs []string
		want   LLMUsage
	}{
		{"missing usage is unavailable, never zero cost", "", []string{"r1"},
			LLMUsage{RunCount: 1, CostStatus: CostUnavailable}},
		{"zero usage is unavailable", `{"inputTokens":0,"outputTokens":0,"costUsd":0}`, []string{"r1"},
			LLMUsage{RunCount: 1, CostStatus: CostUnavailable}},
		{"tokens without cost are unpriced", `{"inputTokens":100,"outputTokens":20,"cachedInputTokens":5}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, InputTokens: 100, OutputTokens: 20, CachedInputTokens: 5, TotalTokens: 125, CostStatus: CostUnpriced}},
		{"aliases input/output/cacheReadTokens", `{"input":7,"output":3,"cacheReadTokens":2,"costUsd":0.5}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 7, OutputTokens: 3, CachedInputTokens: 2, TotalTokens: 12, ReportedCostUSD: usd(0.5), CostStatus: CostReported}},
		{"aliases promptTokens/completionTokens/cachedReadTokens", `{"promptTokens":1,"completionTokens":2,"cachedReadTokens":3,"providerCostUsd":0.25}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 1, OutputTokens: 2, CachedInputTokens: 3, TotalTokens: 6, ReportedCostUSD: usd(0.25), CostStatus: CostReported}},
		{"first alias wins", `{"inputTokens":5,"input":99,"promptTokens":77}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, InputTokens: 5, TotalTokens: 5, CostStatus: CostUnpriced}},
		{"invalid numbers ignored", `{"inputTokens":-5,"input":4,"outputTokens":"9"}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, InputTokens: 4, TotalTokens: 4, CostStatus: CostUnpriced}},
		{"runDelta preferred over cumulative", `{"runDelta":{"inputTokens":10},"cumulative":{"inputTokens":1000},"costUsd":0.1}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 10, TotalTokens: 10, ReportedCostUSD: usd(0.1), CostStatus: CostReported}},
		{"total used when runDelta has no token key", `{"runDelta":{"foo":1},"total":{"outputTokens":8}}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, OutputTokens: 8, TotalTokens: 8, CostStatus: CostUnpriced}},
		{"cost on measurement", `{"cumulative":{"inputTokens":3,"costUsd":0.03}}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 3, TotalTokens: 3, ReportedCostUSD: usd(0.03), CostStatus: CostReported}},
		{"cacheAdjustedCostUsd wins over costUsd", `{"inputTokens":3,"cacheAdjustedCostUsd":0.02,"costUsd":0.9}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 3, TotalTokens: 3, ReportedCostUSD: usd(0.02), CostStatus: CostReported}},
		{"cost object USD default", `{"inputTokens":3,"cost":{"amount":0.4}}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 3, TotalTokens: 3, ReportedCostUSD: usd(0.4), CostStatus: CostReported}},
		{"cost object total", `{"inputTokens":3,"cost":{"currency":"USD","total":0.6}}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 3, TotalTokens: 3, ReportedCostUSD: usd(0.6), CostStatus: CostReported}},
		{"non-USD cost is unknown", `{"inputTokens":3,"cost":{"currency":"EUR","amount":0.4}}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, InputTokens: 3, TotalTokens: 3, CostStatus: CostUnpriced}},
		{"multi-run partial", `{"runs":[{"runId":"a","usage":{"inputTokens":1,"costUsd":0.1}},{"runId":"b","usage":{"inputTokens":2}}]}`, []string{"a", "b"},
			LLMUsage{RunCount: 2, RunsWithTokenUsage: 2, RunsWithReportedCost: 1, InputTokens: 3, TotalTokens: 3, ReportedCostUSD: usd(0.1), CostStatus: CostPartial}},
		{"runs padded to run ids", `{"runs":[{"runId":"a","usage":{"inputTokens":1,"costUsd":0.1}}]}`, []string{"a", "b", "c"},
			LLMUsage{RunCount: 3, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 1, TotalTokens: 1, ReportedCostUSD: usd(0.1), CostStatus: CostPartial}},
		{"single usage with several run ids", `{"inputTokens":1,"costUsd":0.1}`, []string{"a", "b"},
			LLMUsage{RunCount: 2, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 1, TotalTokens: 1, ReportedCostUSD: usd(0.1), CostStatus: CostPartial}},
		{"more entries than run ids", `{"runs":[{"usage":{"inputTokens":1,"costUsd":0.1}},{"usage":{"outputTokens":1,"costUsd":0.2}}]}`, []string{"a"},
			LLMUsage{RunCount: 2, RunsWithTokenUsage: 2, RunsWithReportedCost: 2, InputTokens: 1, OutputTokens: 1, TotalTokens: 2, ReportedCostUSD: usd(0.3), CostStatus: CostReported}},
		{"run entry without usage object", `{"runs":[{"runId":"a","usage":"nope"},{"runId":"b"}]}`, []string{"a", "b"},
			LLMUsage{RunCount: 2, CostStatus: CostUnavailable}},
		{"priced without tokens counts as priced", `{"costUsd":0.07}`, nil,
			LLMUsage{RunCount: 1, RunsWithReportedCost: 1, ReportedCostUSD: usd(0.07), CostStatus: CostReported}},
		{"cache-write tokens counted apart and in the total", `{"inputTokens":10,"outputTokens":2,"cachedInputTokens":3,"cacheWriteInputTokens":40}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, InputTokens: 10, OutputTokens: 2, CachedInputTokens: 3, CacheWriteInputTokens: 40, TotalTokens: 55, CostStatus: CostUnpriced}},
		{"cache-write aliases", `{"runs":[{"usage":{"cacheWriteTokens":5}},{"usage":{"cacheCreationInputTokens":6}},{"usage":{"cacheWriteInputTokens":1,"cacheWriteTokens":99}}]}`, nil,
			LLMUsage{RunCount: 3, RunsWithTokenUsage: 3, CacheWriteInputTokens: 12, TotalTokens: 12, CostStatus: CostUnpriced}},
		{"cache writes alone are token usage", `{"runDelta":{"cacheWriteInputTokens":7}}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, CacheWriteInputTokens: 7, TotalTokens: 7, CostStatus: CostUnpriced}},
		{"providerReportedUsd is a reported cost", `{"inputTokens":4,"outputTokens":1,"providerReportedUsd":0.0123}`, nil,
			LLMUsage{RunCount: 1, RunsWithTokenUsage: 1, RunsWithReportedCost: 1, InputTokens: 4, OutputTokens: 1, TotalTokens: 5, ReportedCostUSD: usd(0.0123), CostStatus: CostReported}},
		{"usage not an object", `[1,2]`, []string{"a"},
			LLMUsage{RunCount: 1, CostStatus: CostUnavailable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ExtractLLM(decode(t, tt.usage), tt.runIDs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ExtractLLM mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func f(v float64) *float64 { return &v }

func TestRuntime(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 8, 9, 0, 0, 0, 0, time.UTC)
	hour := t0.Add(time.Hour)
	runs := []RunWindow{{t0, t0.Add(1500 * time.Millisecond)}, {t0, time.Time{}}, {t0.Add(time.Second), t0}}
	shape := Lease{StartedAt: t0, ReleasedAt: hour, CPUCores: f(4), MemoryGiB: f(4), DiskGiB: f(10)}

	t.Run("local is not metered, run time kept", func(t *testing.T) {
		t.Parallel()
		got := Runtime(RuntimeInput{Provider: "local", Runs: runs})
		want := RuntimeUsage{Provider: "local", AgentRunDurationMs: 1500, CostStatus: RuntimeNotMetered, CostSource: SourceLocalNotMetered}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("daytona pinned shape one hour", func(t *testing.T) {
		t.Parallel()
		got := Runtime(RuntimeInput{Provider: "daytona", Leases: []Lease{shape}})
		if got.CostStatus != RuntimeEstimated || got.EstimatedListCostUSD == nil {
			t.Fatalf("want estimated, got %+v", got)
		}
		if math.Abs(*got.EstimatedListCostUSD-0.26748) > 1e-12 {
			t.Errorf("1 h of 4 vCPU/4 GiB/10 GiB = %v, want 0.26748", *got.EstimatedListCostUSD)
		}
		if got.CostSource != "daytona_public_list_price" || got.PricingAsOf != "2026-08-27" || got.PricingURL == "" {
			t.Errorf("pricing provenance missing: %+v", got)
		}
		if *got.LeaseDurationMs != 3_600_000 || got.LeaseCount != 1 || *got.CPUCores != 4 {
			t.Errorf("lease figures: %+v", got)
		}
	})
	t.Run("daytona no leases unavailable", func(t *testing.T) {
		t.Parallel()
		got := Runtime(RuntimeInput{Provider: "daytona", Runs: runs})
		if got.CostStatus != RuntimeUnavailable || got.CostSource != SourceProviderCostUnavailable || got.EstimatedListCostUSD != nil {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("daytona lease without resources unavailable", func(t *testing.T) {
		t.Parallel()
		partial := shape
		partial.DiskGiB = nil
		got := Runtime(RuntimeInput{Provider: "daytona", Leases: []Lease{shape, partial}})
		if got.CostStatus != RuntimeUnavailable || got.EstimatedListCostUSD != nil {
			t.Errorf("got %+v", got)
		}
		if *got.LeaseDurationMs != 7_200_000 || got.DiskGiB != nil || got.CPUCores == nil {
			t.Errorf("durations/resources: %+v", got)
		}
	})
	t.Run("unreleased lease ends at fallback, then updatedAt", func(t *testing.T) {
		t.Parallel()
		open := shape
		open.ReleasedAt = time.Time{}
		open.UpdatedAt = t0.Add(30 * time.Minute)
		got := Runtime(RuntimeInput{Provider: "daytona", Leases: []Lease{open}, FallbackFinish: t0.Add(2 * time.Hour)})
		if *got.LeaseDurationMs != 7_200_000 {
			t.Errorf("fallback finish not used: %d", *got.LeaseDurationMs)
		}
		got = Runtime(RuntimeInput{Provider: "daytona", Leases: []Lease{open}})
		if *got.LeaseDurationMs != 1_800_000 || math.Abs(*got.EstimatedListCostUSD-0.13374) > 1e-12 {
			t.Errorf("updatedAt not used: %+v", got)
		}
	})
	t.Run("differing shapes not reported", func(t *testing.T) {
		t.Parallel()
		other := shape
		other.CPUCores = f(2)
		got := Runtime(RuntimeInput{Provider: "daytona", Leases: []Lease{shape, other}})
		if got.CPUCores != nil || got.MemoryGiB == nil {
			t.Errorf("got %+v", got)
		}
		want := 0.26748 + (2*0.0504 + 4*0.0162 + 10*0.000108)
		if math.Abs(*got.EstimatedListCostUSD-want) > 1e-9 {
			t.Errorf("estimate %v, want %v", *got.EstimatedListCostUSD, want)
		}
	})
	t.Run("unknown provider unavailable", func(t *testing.T) {
		t.Parallel()
		got := Runtime(RuntimeInput{Provider: "exe-dev", Leases: []Lease{shape}})
		if got.CostStatus != RuntimeUnavailable || got.EstimatedListCostUSD != nil {
			t.Errorf("got %+v", got)
		}
	})
}

func TestSummarizeAndSum(t *testing.T) {
	t.Parallel()
	priced := ExtractLLM(decode(t, `{"inputTokens":10,"outputTokens":5,"costUsd":0.01}`), nil)
	unpriced := ExtractLLM(decode(t, `{"inputTokens":10}`), nil)
	none := ExtractLLM(nil, []string{"r"})
	local := Runtime(RuntimeInput{Provider: "local"})
	day := Runtime(RuntimeInput{Provider: "daytona", Leases: []Lease{{StartedAt: time.Unix(0, 0), ReleasedAt: time.Unix(3600, 0), CPUCores: f(4), MemoryGiB: f(4), DiskGiB: f(10)}}})
	dayNone := Runtime(RuntimeInput{Provider: "daytona"})

	a := Summarize(priced, local)
	if !a.Complete || *a.ObservedAndEstimatedCostUSD != 0.01 || a.EstimatedRuntimeCostUSD != nil {
		t.Errorf("priced+local: %+v", a)
	}
	b := Summarize(priced, day)
	if !b.Complete || math.Abs(*b.ObservedAndEstimatedCostUSD-0.27748) > 1e-12 {
		t.Errorf("priced+daytona: %+v", b)
	}
	c := Summarize(unpriced, local)
	if c.Complete || c.ReportedCostUSD != nil || c.ObservedAndEstimatedCostUSD != nil {
		t.Errorf("unpriced must be incomplete with unknown cost: %+v", c)
	}
	d := Summarize(priced, dayNone)
	if d.Complete {
		t.Errorf("unavailable runtime must be incomplete: %+v", d)
	}
	e := Summarize(none, local)
	if e.Complete || e.ObservedAndEstimatedCostUSD != nil {
		t.Errorf("no usage: %+v", e)
	}

	w := Summarize(ExtractLLM(decode(t, `{"inputTokens":1,"cacheWriteInputTokens":9}`), nil), local)
	if agg := Sum([]Summary{a, w}); agg.LLM.CacheWriteInputTokens != 9 || agg.LLM.TotalTokens != 15+10 {
		t.Errorf("cache writes in the aggregate: %+v", agg.LLM)
	}

	agg := Sum([]Summary{a, b, c, d, e})
	if agg.TestCount != 5 || agg.TestsWithCompleteBilling != 2 {
		t.Errorf("counts: %+v", agg)
	}
	if agg.LLM.RunCount != 5 || agg.LLM.RunsWithReportedCost != 3 || agg.LLM.CostStatus != CostPartial {
		t.Errorf("llm: %+v", agg.LLM)
	}
	if math.Abs(*agg.ReportedLLMCostUSD-0.03) > 1e-12 || math.Abs(*agg.EstimatedRuntimeCostUSD-0.26748) > 1e-12 {
		t.Errorf("sums: %v %v", *agg.ReportedLLMCostUSD, *agg.EstimatedRuntimeCostUSD)
	}
	if agg.RuntimeCostStatus != RuntimeUnavailable || agg.LeaseDurationMs != 3_600_000 {
		t.Errorf("runtime: %+v", agg)
	}
	if got := Sum(nil); got.ReportedLLMCostUSD != nil || got.LLM.CostStatus != CostUnavailable || got.RuntimeCostStatus != RuntimeUnavailable {
		t.Errorf("empty aggregate must be unknown, not zero: %+v", got)
	}
	if got := Sum([]Summary{a}); got.RuntimeCostStatus != RuntimeNotMetered || got.LLM.CostStatus != CostReported {
		t.Errorf("single local: %+v", got)
	}
}

// FuzzExtractLLM: arbitrary usage JSON never panics, counts stay consistent and no
// cost appears without a priced run.
func FuzzExtractLLM(f *testing.F) {
	for _, s := range []string{`{"inputTokens":1}`, `{"runs":[{"usage":{"costUsd":1}}]}`, `{"cost":{"currency":"USD","amount":1e308}}`, `null`} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		ids := make([]string, max(0, min(n, 64)))
		got := ExtractLLM(v, ids)
		if got.RunCount < 1 || got.RunsWithReportedCost > got.RunCount || got.RunsWithTokenUsage > got.RunCount {
			t.Fatalf("inconsistent counts: %+v", got)
		}
		if (got.ReportedCostUSD != nil) != (got.RunsWithReportedCost > 0) {
			t.Fatalf("cost without priced run: %+v", got)
		}
		if got.TotalTokens < 0 || got.InputTokens < 0 {
			t.Fatalf("negative tokens: %+v", got)
		}
	})
}

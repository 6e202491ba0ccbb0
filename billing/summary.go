package billing

// Summary is the per-result billing block. Dollar amounts are USD; a nil
// amount means unknown, never zero. Complete holds exactly when every run reported
// tokens and a cost and the runtime cost is known or not metered.
type Summary struct {
	LLM                         LLMUsage     `json:"llm"`
	Runtime                     RuntimeUsage `json:"runtime"`
	ReportedCostUSD             *float64     `json:"reportedCostUsd"`
	EstimatedRuntimeCostUSD     *float64     `json:"estimatedRuntimeCostUsd"`
	ObservedAndEstimatedCostUSD *float64     `json:"observedAndEstimatedCostUsd"`
	Complete                    bool         `json:"complete"`
}

// Summarize combines an attempt's LLM and runtime usage.
func Summarize(llm LLMUsage, rt RuntimeUsage) Summary {
	s := Summary{
		LLM:                     llm,
		Runtime:                 rt,
		ReportedCostUSD:         llm.ReportedCostUSD,
		EstimatedRuntimeCostUSD: rt.EstimatedListCostUSD,
	}
	if llm.ReportedCostUSD != nil || rt.EstimatedListCostUSD != nil {
		var sum float64
		if llm.ReportedCostUSD != nil {
			sum += *llm.ReportedCostUSD
		}
		if rt.EstimatedListCostUSD != nil {
			sum += *rt.EstimatedListCostUSD
		}
		sum = roundUSD(sum)
		s.ObservedAndEstimatedCostUSD = &sum
	}
	s.Complete = llm.RunCount > 0 &&
		llm.RunsWithTokenUsage >= llm.RunCount &&
		llm.RunsWithReportedCost >= llm.RunCount &&
		rt.CostStatus != RuntimeUnavailable && rt.CostStatus != RuntimeUnpriced
	return s
}

// Aggregate sums the billing of many results (a suite or a campaign). Failed
// and cancelled runs stay in every sum. LLM.CostStatus is recomputed from the summed
// counts; dollar sums are nil when no result contributed a known amount.
type Aggregate struct {
	TestCount                   int               `json:"testCount"`
	TestsWithCompleteBilling    int               `json:"testsWithCompleteBilling"`
	AgentRunDurationMs          int64             `json:"agentRunDurationMs"`
	LeaseDurationMs             int64             `json:"leaseDurationMs"`
	LLM                         LLMUsage          `json:"llm"`
	ReportedLLMCostUSD          *float64          `json:"reportedLlmCostUsd"`
	EstimatedRuntimeCostUSD     *float64          `json:"estimatedRuntimeCostUsd"`
	ObservedAndEstimatedCostUSD *float64          `json:"observedAndEstimatedCostUsd"`
	RuntimeCostStatuses         map[string]int    `json:"runtimeCostStatuses"`
	RuntimeCostStatus           RuntimeCostStatus `json:"runtimeCostStatus"`
}

// Sum aggregates summaries. RuntimeCostStatus is "estimated" or "not_metered" only when
// every result has that status (mixed estimated and not metered counts as estimated);
// any unavailable result makes it "unavailable", else any unpriced one "unpriced".
func Sum(summaries []Summary) Aggregate {
	a := Aggregate{TestCount: len(summaries), RuntimeCostStatuses: map[string]int{}}
	add := func(dst **float64, v *float64) {
		if v == nil {
			return
		}
		if *dst == nil {
			z := 0.0
			*dst = &z
		}
		**dst = roundUSD(**dst + *v)
	}
	for _, s := range summaries {
		if s.Complete {
			a.TestsWithCompleteBilling++
		}
		a.AgentRunDurationMs += s.Runtime.AgentRunDurationMs
		if s.Runtime.LeaseDurationMs != nil {
			a.LeaseDurationMs += *s.Runtime.LeaseDurationMs
		}
		a.LLM.RunCount += s.LLM.RunCount
		a.LLM.RunsWithTokenUsage += s.LLM.RunsWithTokenUsage
		a.LLM.RunsWithReportedCost += s.LLM.RunsWithReportedCost
		a.LLM.InputTokens += s.LLM.InputTokens
		a.LLM.OutputTokens += s.LLM.OutputTokens
		a.LLM.CachedInputTokens += s.LLM.CachedInputTokens
		a.LLM.CacheWriteInputTokens += s.LLM.CacheWriteInputTokens
		a.LLM.TotalTokens += s.LLM.TotalTokens
		add(&a.LLM.ReportedCostUSD, s.LLM.ReportedCostUSD)
		add(&a.ReportedLLMCostUSD, s.ReportedCostUSD)
		add(&a.EstimatedRuntimeCostUSD, s.EstimatedRuntimeCostUSD)
		add(&a.ObservedAndEstimatedCostUSD, s.ObservedAndEstimatedCostUSD)
		a.RuntimeCostStatuses[string(s.Runtime.CostStatus)]++
	}
	a.LLM.CostStatus = llmStatus(a.LLM.RunCount, a.LLM.RunsWithReportedCost, a.LLM.RunsWithTokenUsage)
	switch {
	case len(summaries) == 0 || a.RuntimeCostStatuses[string(RuntimeUnavailable)] > 0:
		a.RuntimeCostStatus = RuntimeUnavailable
	case a.RuntimeCostStatuses[string(RuntimeUnpriced)] > 0:
		a.RuntimeCostStatus = RuntimeUnpriced
	case a.RuntimeCostStatuses[string(RuntimeEstimated)] > 0:
		a.RuntimeCostStatus = RuntimeEstimated
	default:
		a.RuntimeCostStatus = RuntimeNotMetered
	}
	return a
}

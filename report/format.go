package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/billing"
)

// USD formats a dollar amount as the dashboard does: "$" and six decimals
// below $0.01, four otherwise.
func USD(v float64) string {
	if v < 0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 6, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 4, 64)
}

// Duration formats milliseconds: "Nms" below a second, "N.Ns" below a minute, "Mm Ss"
// otherwise, "Hh Mm" from an hour.
func Duration(ms int64) string {
	switch {
	case ms < 0:
		return "–"
	case ms < 1000:
		return fmt.Sprintf("%dms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	case ms < 3_600_000:
		return fmt.Sprintf("%dm %ds", ms/60_000, ms%60_000/1000)
	}
	return fmt.Sprintf("%dh %dm", ms/3_600_000, ms%3_600_000/60_000)
}

// Tokens formats a count with en-US thousands separators.
func Tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// UsageTokens is Tokens(n) for a count taken from usage, or "unavailable" when no run of
// usage reported token usage: a missing count is never shown as 0 (honest
// coverage, docs/billing.md).
func UsageTokens(n int64, usage billing.LLMUsage) string {
	if usage.RunsWithTokenUsage == 0 {
		return "unavailable"
	}
	return Tokens(n)
}

// TokensInOut is "<input> / <output>" tokens of usage, or "unavailable" when no run of
// usage reported token usage.
func TokensInOut(usage billing.LLMUsage) string {
	if usage.RunsWithTokenUsage == 0 {
		return "unavailable"
	}
	return Tokens(usage.InputTokens) + " / " + Tokens(usage.OutputTokens)
}

// LLMCostText is the provider-reported model spend: the amount with its coverage status
// when any run was priced ("$0.0123 (reported)", "$0.0100 (partial: 1/2 runs priced)"),
// otherwise the status word alone ("unpriced", "unavailable") — never $0 for missing
// data.
func LLMCostText(l billing.LLMUsage) string {
	if l.ReportedCostUSD == nil {
		return string(l.CostStatus)
	}
	if l.CostStatus == billing.CostPartial {
		return fmt.Sprintf("%s (partial: %d/%d runs priced)", USD(*l.ReportedCostUSD), l.RunsWithReportedCost, l.RunCount)
	}
	return fmt.Sprintf("%s (%s)", USD(*l.ReportedCostUSD), l.CostStatus)
}

// RuntimeCostText is the runtime estimate: "$0.2675 est." when estimated, "not metered"
// for local execution, "unpriced" for leases without a rate table, "unavailable"
// otherwise.
func RuntimeCostText(rt billing.RuntimeUsage) string {
	return runtimeWord(rt.CostStatus, rt.EstimatedListCostUSD)
}

func runtimeWord(status billing.RuntimeCostStatus, est *float64) string {
	switch {
	case status == billing.RuntimeEstimated && est != nil:
		return USD(*est) + " est."
	case status == billing.RuntimeNotMetered:
		return "not metered"
	case status == billing.RuntimeUnpriced && est == nil:
		return "unpriced"
	case est != nil:
		return USD(*est) + " est. (partial)"
	}
	return "unavailable"
}

// AggregateRuntimeText is RuntimeCostText for an aggregate: an estimate is shown with
// "(partial)" when some results were unavailable.
func AggregateRuntimeText(a billing.Aggregate) string {
	return runtimeWord(a.RuntimeCostStatus, a.EstimatedRuntimeCostUSD)
}

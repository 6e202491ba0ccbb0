package report

import (
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/billing"
)

// Summary renders summary.md (spec runner-e2e-harness §7.3): a headline with the counts,
// the billing totals with their coverage words, then one table row per selected cell
// with verdict, attempt, runtime, duration, tokens, reported cost with its status,
// runtime estimate and detail. Every cell of the table is one line of plain text with
// control characters escaped and "|" escaped.
func Summary(c *Campaign) []byte {
	var b strings.Builder
	state := "complete"
	if c.Partial {
		state = "partial"
	}
	fmt.Fprintf(&b, "# agentproof campaign %s\n\n", md(c.CampaignID))
	fmt.Fprintf(&b, "Passed: %d/%d · Failed: %d · Inconclusive: %d · Retries: %d · Cleanup: %s · Selection: %s\n\n",
		c.Passed, c.Selected, c.Failed, c.Inconclusive, c.Retries, yesNo(c.CleanupPassed, "all passed", "not all passed"), state)
	if c.StartedAt != "" {
		fmt.Fprintf(&b, "Started %s · finished %s · total test time %s\n\n", md(c.StartedAt), md(c.GeneratedAt), Duration(c.DurationMs))
	}
	a := c.Billing
	fmt.Fprintf(&b, "Tokens: %s input / %s output / %s cached / %s cache-write (%d/%d runs reported token usage)\n\n",
		UsageTokens(a.LLM.InputTokens, a.LLM), UsageTokens(a.LLM.OutputTokens, a.LLM), UsageTokens(a.LLM.CachedInputTokens, a.LLM),
		UsageTokens(a.LLM.CacheWriteInputTokens, a.LLM), a.LLM.RunsWithTokenUsage, a.LLM.RunCount)
	fmt.Fprintf(&b, "LLM cost reported by providers: %s; %d/%d runs priced\n\n", aggregateLLMText(a), a.LLM.RunsWithReportedCost, a.LLM.RunCount)
	fmt.Fprintf(&b, "Runtime: agent execution %s · lease %s · cost %s\n\n", Duration(a.AgentRunDurationMs), Duration(a.LeaseDurationMs), AggregateRuntimeText(a))
	b.WriteString("Unpriced and unavailable usage is excluded from dollar totals and never counted as free; runtime costs are list-price estimates; local execution is not metered.\n\n")
	if c.Repeat > 1 {
		writeRepeats(&b, c)
	}
	b.WriteString("| Cell | Attempt | Verdict | Runtime | Duration (s) | Tokens (in/out) | LLM reported | Runtime estimate | Detail |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for i := range c.Results {
		r := &c.Results[i]
		bl := billingOf(r)
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %.3f | %s | %s | %s | %s |\n",
			md(r.ExecutionID), r.Attempt, md(verdictText(r)), md(r.EnvironmentID),
			float64(r.DurationMs)/1000, TokensInOut(bl.LLM),
			md(LLMCostText(bl.LLM)), md(RuntimeCostText(bl.Runtime)), md(detailText(r)))
	}
	return []byte(b.String())
}

// writeRepeats renders the repeats table of a campaign run with --repeat: per cell the
// pass rate with its count, pass^k, pass@k, flakiness and each repetition's outcome.
func writeRepeats(b *strings.Builder, c *Campaign) {
	fmt.Fprintf(b, "Repeats: every cell ran %d times; %d flaky. A cell passes only when every repetition passed (pass^k).\n\n", c.Repeat, c.Flaky)
	b.WriteString("| Cell | Pass rate | pass^k | pass@k | Flaky | Repetitions |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range c.Repeats {
		var outs []string
		for _, o := range r.Outcomes {
			s := string(o.Counted)
			if o.Missing {
				s += " (missing)"
			}
			outs = append(outs, s)
		}
		fmt.Fprintf(b, "| %s | %d/%d (%.0f%%) | %s | %s | %s | %s |\n", md(r.ExecutionID), r.Passed, r.Repetitions,
			100*float64(r.Passed)/float64(max(r.Repetitions, 1)), yesNo(r.PassAll, "yes", "no"), yesNo(r.PassAny, "yes", "no"),
			yesNo(r.Flaky, "**flaky**", "no"), md(strings.Join(outs, ", ")))
	}
	b.WriteString("\n")
}

func yesNo(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// aggregateLLMText is LLMCostText for an aggregate.
func aggregateLLMText(a billing.Aggregate) string {
	l := a.LLM
	l.ReportedCostUSD = a.ReportedLLMCostUSD
	return LLMCostText(l)
}

// verdictText is the outcome, with the observed verdict and the expectation for
// calibration cells ("passed (failed as expected)").
func verdictText(r *Result) string {
	o := Outcome(r)
	switch {
	case r.Synthetic:
		return string(o) + " (missing)"
	case r.ExpectedVerdict != "" && r.Verdict == r.ExpectedVerdict:
		return fmt.Sprintf("%s (%s as expected)", o, r.Verdict)
	case r.ExpectedVerdict != "":
		return fmt.Sprintf("%s (%s, expected %s)", o, r.Verdict, r.ExpectedVerdict)
	case o != r.Verdict:
		return fmt.Sprintf("%s (verdict %s, cleanup %s)", o, r.Verdict, r.Cleanup)
	}
	return string(o)
}

// detailText explains a result in one line: its failure class and error, the failed
// matchers whose detail the error does not already quote, or "ok".
func detailText(r *Result) string {
	var parts []string
	if r.FailureClass != "" {
		parts = append(parts, string(r.FailureClass))
	}
	if r.Error != "" {
		parts = append(parts, r.Error)
	}
	for _, m := range r.MatcherResults {
		if !m.Passed && !strings.Contains(r.Error, m.Detail) {
			parts = append(parts, m.Kind+": "+m.Detail)
		}
	}
	if r.Cleanup != CleanupPassed && !r.Synthetic {
		parts = append(parts, "cleanup="+r.Cleanup)
	}
	if len(parts) == 0 {
		return "ok"
	}
	return clip(strings.Join(parts, "; "), 600)
}

// md makes untrusted text one safe Markdown table cell: control characters escaped,
// newlines as spaces, and the characters that start Markdown or HTML constructs
// backslash-escaped.
func md(s string) string {
	s = Clean(s, true)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '|', '\\', '<', '>', '[', ']', '`', '*', '_':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

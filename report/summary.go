package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// Summary renders summary.md, written for a CI job's
// summary page: a headline with the counts; "Needs attention": every cell that did not
// count as passed, failed ones first, then inconclusive ones, each with its verdict,
// failure class, one-line reason and the attempt directory holding its evidence; the
// repeats table of a campaign run with --repeat; a compact table of every cell
// (verdict, attempt, duration); then, collapsed in a <details> block, the billing
// totals with their coverage words and the full table (runtime, tokens, reported cost
// with its status, runtime estimate and detail). Every table cell is one line of plain
// text with control characters, Markdown and HTML escaped.
func Summary(c *result.Campaign) []byte {
	var b strings.Builder
	state := c.Selection()
	fmt.Fprintf(&b, "# agentproof campaign %s\n\n", md(c.CampaignID))
	if r := c.RegradeOf; r != nil {
		fmt.Fprintf(&b, "**A regrade of campaign %s** (graded first by %s): its stored evidence graded again by %s (docs/regrade.md).\n\n", md(r.CampaignID), md(r.Fingerprint), md(c.Fingerprint))
	}
	later := c.LaterPasses()
	counts := fmt.Sprintf("%d/%d", c.Passed, c.Selected)
	if in := c.Interruption; in != nil {
		fmt.Fprintf(&b, "**This campaign was %s.** The counts below cover the finished cells only. Continue it with `%s`.\n\n",
			md(in.Words()), strings.ReplaceAll(result.Clean(in.Resume, true), "`", "'"))
		counts += " finished"
	}
	if len(later) > 0 {
		counts += fmt.Sprintf(" (%d only after an earlier attempt did not pass)", len(later))
	}
	known := ""
	if c.KnownFailures > 0 {
		known = fmt.Sprintf(" · Known failures: %d", c.KnownFailures)
	}
	if c.UnexpectedPasses > 0 {
		known += fmt.Sprintf(" · Unexpectedly passed (remove from the known failures): %d", c.UnexpectedPasses)
	}
	if c.NotRun > 0 {
		known += fmt.Sprintf(" · Not run here: %d", c.NotRun)
	}
	fmt.Fprintf(&b, "Passed: %s · Failed: %d · Inconclusive: %d%s · Retries: %d · Cleanup: %s · Selection: %s\n\n",
		counts, c.Failed, c.Inconclusive, known, c.Retries, cleanupWord(c), state)
	if c.StartedAt != "" {
		fmt.Fprintf(&b, "Started %s · finished %s · attempts took %s in all (summed over cells, which run in parallel)\n\n", md(c.StartedAt), md(c.GeneratedAt), Duration(c.DurationMs))
	}
	writeAttention(&b, c)
	writeKnownFailures(&b, c)
	writeNotRunHere(&b, c)
	writeLaterPasses(&b, later, c.Repeat)
	writeRegressions(&b, c)
	if c.Repeat > 1 {
		writeRepeats(&b, c)
	}
	b.WriteString("## Cells\n\n")
	b.WriteString("| Cell | Verdict | Attempt | Duration (s) |\n")
	b.WriteString("|---|---|---|---|\n")
	for i := range c.Results {
		r := &c.Results[i]
		fmt.Fprintf(&b, "| %s | %s | %d | %.3f |\n", md(r.ExecutionID), md(verdictText(r)), r.Attempt, float64(r.DurationMs)/1000)
	}
	b.WriteString("\n<details>\n<summary>Usage, cost and details of every cell</summary>\n\n")
	a := c.Billing
	fmt.Fprintf(&b, "Tokens: %s input / %s output / %s cached / %s cache-write (%d/%d runs reported token usage)\n\n",
		UsageTokens(a.LLM.InputTokens, a.LLM), UsageTokens(a.LLM.OutputTokens, a.LLM), UsageTokens(a.LLM.CachedInputTokens, a.LLM),
		UsageTokens(a.LLM.CacheWriteInputTokens, a.LLM), a.LLM.RunsWithTokenUsage, a.LLM.RunCount)
	fmt.Fprintf(&b, "LLM cost reported by providers: %s; %d/%d runs priced\n\n", aggregateLLMText(a), a.LLM.RunsWithReportedCost, a.LLM.RunCount)
	fmt.Fprintf(&b, "Runtime: agent execution %s · lease %s · cost %s\n\n", Duration(a.AgentRunDurationMs), Duration(a.LeaseDurationMs), AggregateRuntimeText(a))
	b.WriteString("Unpriced and unavailable usage is excluded from dollar totals and never counted as free; runtime costs are list-price estimates; local execution is not metered.\n\n")
	b.WriteString("| Cell | Attempt | Verdict | Runtime | Duration (s) | Tokens (in/out) | LLM reported | Runtime estimate | Detail |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for i := range c.Results {
		r := &c.Results[i]
		bl := result.BillingOf(r)
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %.3f | %s | %s | %s | %s |\n",
			md(r.ExecutionID), r.Attempt, md(verdictText(r)), md(r.EnvironmentID),
			float64(r.DurationMs)/1000, TokensInOut(bl.LLM),
			md(LLMCostText(bl.LLM)), md(RuntimeCostText(bl.Runtime)), md(detailText(r)))
	}
	b.WriteString("\n</details>\n")
	return []byte(b.String())
}

// writeAttention renders the "Needs attention" section: the cells that did not count
// as passed, failed first (an unexpected pass of a known failure among them), then
// inconclusive, in execution id order within each, with their reason and evidence
// directory; or one line saying every cell passed. Known failures have a section of
// their own (writeKnownFailures).
func writeAttention(b *strings.Builder, c *result.Campaign) {
	b.WriteString("## Needs attention\n\n")
	n := 0
	for _, want := range []verdict.Verdict{verdict.Failed, verdict.Inconclusive} {
		for i := range c.Results {
			r := &c.Results[i]
			if st := result.StateOf(r); st.Counts() != want || st == result.StateKnownFailure || st == result.StateNotRunHere {
				continue
			}
			n++
			writeCellLine(b, r, md(verdictText(r))+": "+md(detailText(r)))
			if since, ok := c.RegressedSince(r.ExecutionID); ok {
				fmt.Fprintf(b, " — **%s**", md(regressionWords(since)))
			}
			b.WriteString("\n")
		}
	}
	switch {
	case n == 0 && (c.NotRun > 0 || c.KnownFailures > 0):
		b.WriteString("Nothing failed or was inconclusive")
		if c.KnownFailures > 0 {
			fmt.Fprintf(b, ": %d known failure(s) ended as the baseline expects (section Known failures)", c.KnownFailures)
		}
		if c.NotRun > 0 {
			fmt.Fprintf(b, "; %d selected cell(s) were not run here (section Not run here): they did not pass either", c.NotRun)
		}
		b.WriteString(".\n")
	case n == 0:
		b.WriteString("Nothing: every cell passed (calibration cells: met their expectation).\n")
	}
	b.WriteString("\n")
}

// writeKnownFailures renders "Known failures": every cell that ended as its entry in
// the baseline of known failures expects, with the entry's reason, since and source
// and what the cell observed; nothing when there is none.
func writeKnownFailures(b *strings.Builder, c *result.Campaign) {
	if c.KnownFailures == 0 {
		return
	}
	b.WriteString("## Known failures\n\n")
	b.WriteString("Cells the catalog's baseline expects to fail: they ran and were graded, and do not fail the campaign. One that passes fails it (remove its entry).\n\n")
	for i := range c.Results {
		r := &c.Results[i]
		if result.StateOf(r) != result.StateKnownFailure {
			continue
		}
		k := r.KnownFailure
		writeCellLine(b, r, fmt.Sprintf("%s (known since %s; %s): %s", md(k.Reason), md(k.Since), md(k.Source), md(detailText(r))))
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// writeCellLine writes a cell's list item, "- **<execution id>** — <text>", and its
// evidence directory when it has one (text is Markdown already; no line end).
func writeCellLine(b *strings.Builder, r *result.Result, text string) {
	fmt.Fprintf(b, "- **%s** — %s", md(r.ExecutionID), text)
	if dir := evidenceDir(r); dir != "" {
		fmt.Fprintf(b, " (evidence: %s)", md(dir))
	}
}

// writeNotRunHere renders "Not run here": the selected cells this machine could not
// run, grouped by reason (one line per reason with its count and environments, then
// the cells) and how to learn what it takes to run them, so that a campaign that passed
// what it ran never reads as a pass of those; nothing when every selected cell ran.
func writeNotRunHere(b *strings.Builder, c *result.Campaign) {
	if c.NotRun == 0 {
		return
	}
	b.WriteString("## Not run here\n\n")
	fmt.Fprintf(b, "%d selected cell(s) did not run: this machine cannot provide their environment. The campaign is partial; it exits %d when everything that ran passed.\n\n", c.NotRun, verdict.ExitPartial)
	var reasons []string
	byReason := map[string][]*result.Result{}
	for i := range c.Results {
		r := &c.Results[i]
		if r.NotRunHere == "" {
			continue
		}
		if _, ok := byReason[r.NotRunHere]; !ok {
			reasons = append(reasons, r.NotRunHere)
		}
		byReason[r.NotRunHere] = append(byReason[r.NotRunHere], r)
	}
	for _, why := range reasons {
		rs := byReason[why]
		var envs []string
		for _, r := range rs {
			if !slices.Contains(envs, r.EnvironmentID) {
				envs = append(envs, r.EnvironmentID)
			}
		}
		fmt.Fprintf(b, "- %d cell(s) of environment %s: %s\n", len(rs), md(strings.Join(envs, ", ")), md(why))
		for _, r := range rs {
			fmt.Fprintf(b, "  - %s\n", md(r.ExecutionID))
		}
	}
	fmt.Fprintf(b, "\n`%s` says what this machine gives and how to get the rest.\n\n", result.ProbeCommand)
}

// writeLaterPasses renders "Passed only after an earlier attempt did not": every cell
// that counts as passed on a later attempt (Campaign.LaterPasses), with its attempts;
// nothing when there is none.
func writeLaterPasses(b *strings.Builder, later []result.LaterPass, repeat int) {
	if len(later) == 0 {
		return
	}
	b.WriteString("## Passed only after an earlier attempt did not\n\n")
	for _, lp := range later {
		name := lp.ExecutionID
		if repeat > 1 {
			name = fmt.Sprintf("%s (repetition %d)", name, lp.Repetition)
		}
		fmt.Fprintf(b, "- **%s** — %s\n", md(name), md(lp.Words()))
	}
	b.WriteString("\n")
}

// writeRegressions renders "Regressions against the latest green campaign": per suite
// its latest green campaign of the same definition and the cells that passed there and
// fail now; the suites with nothing to compare with share one line per reason, with
// their count and ids (a first run's "no earlier green campaign" is one line, not one
// per suite) (docs/regressions.md). Nothing is written for a campaign without
// baselines.
func writeRegressions(b *strings.Builder, c *result.Campaign) {
	if len(c.Baselines) == 0 {
		return
	}
	b.WriteString("## Regressions against the latest green campaign\n\n")
	compared, without := baselineGroups(c.Baselines)
	switch n := c.Regressions(); {
	case n > 0:
		fmt.Fprintf(b, "**%s** since the latest green campaign of the same suite definition.\n\n", regressedCount(n))
	case len(compared) == 0:
		b.WriteString(nothingToCompare + "\n\n")
	default:
		b.WriteString("No cell regressed since the latest green campaign of its suite definition.\n\n")
	}
	for _, bl := range compared {
		fmt.Fprintf(b, "- %s: latest green %s — %s\n", md(bl.SuiteID), md(bl.CampaignID), md(regressedCount(len(bl.Regressed))))
		for _, cc := range bl.Regressed {
			fmt.Fprintf(b, "  - **%s**: %s → %s", md(cc.ExecutionID), orNone(cc.Before), orNone(cc.After))
			if cc.Reason != "" {
				fmt.Fprintf(b, ": %s", md(result.Clip(cc.Reason, 300)))
			}
			b.WriteString("\n")
		}
	}
	for _, g := range without {
		if len(g.Suites) == 1 {
			fmt.Fprintf(b, "- %s: %s\n", md(g.Suites[0]), md(g.Note))
			continue
		}
		fmt.Fprintf(b, "- %d suites: %s (%s)\n", len(g.Suites), md(g.Note), md(strings.Join(g.Suites, ", ")))
	}
	b.WriteString("\n")
}

// evidenceDir is the attempt directory of r's evidence relative to the campaign
// directory (the directory of its first evidence file up to "attempt-<n>"), "" when it
// has none.
func evidenceDir(r *result.Result) string { return result.AttemptDir(r) }

// writeRepeats renders the repeats table of a campaign run with --repeat: per cell the
// pass rate with its count, pass^k, pass@k, flakiness and each repetition's outcome.
func writeRepeats(b *strings.Builder, c *result.Campaign) {
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
func verdictText(r *result.Result) string {
	o := result.Outcome(r)
	if k := r.KnownFailure; k != nil && !r.Synthetic {
		switch st := result.StateOf(r); st {
		case result.StateKnownFailure:
			return fmt.Sprintf("%s (%s as expected)", st.Words(), r.Verdict)
		case result.StateUnexpectedPass:
			return fmt.Sprintf("%s (%s: %s)", verdict.Failed, st.Words(), k.Source)
		}
		return fmt.Sprintf("%s (a known failure expected %s)", o, k.Expected)
	}
	switch {
	case r.NotRunHere != "":
		return "not run here"
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

// detailText explains a result in one line: its failure class and error — led, when
// the result failed for the candidate's fault and its agent's run ended abnormally, by
// the run's termination summary (result.Headline) —, the failed matchers whose detail
// the error does not already quote, or "ok".
func detailText(r *result.Result) string {
	var parts []string
	if r.FailureClass != "" {
		parts = append(parts, string(r.FailureClass))
	}
	if reason := result.Headline(r.FailureClass, r.Error, r.Termination); reason != "" {
		parts = append(parts, reason)
	}
	for _, m := range r.MatcherResults {
		if !m.Passed && !strings.Contains(r.Error, m.Detail) {
			parts = append(parts, m.Kind+": "+m.Detail)
		}
	}
	if r.Cleanup != result.CleanupPassed && !r.Synthetic {
		parts = append(parts, "cleanup="+string(r.Cleanup))
	}
	if len(parts) == 0 {
		return "ok"
	}
	return result.Clip(strings.Join(parts, "; "), 600)
}

// md makes untrusted text one safe Markdown table cell: control characters escaped,
// newlines as spaces, and the characters that start Markdown or HTML constructs
// backslash-escaped.
func md(s string) string {
	s = result.Clean(s, true)
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

// cleanupWord is the summary's cleanup word: "all passed"; "not all passed"; or, when
// every cell whose cleanup did not pass is a calibration cell that counts as passed
// (its expected verdict asked for it, as the hostile daemon under local does), "not
// all passed, as expected by calibration cell(s) <ids>" naming at most
// maxCleanupNamed of them ("and N more").
func cleanupWord(c *result.Campaign) string {
	if c.CleanupPassed {
		return "all passed"
	}
	if cells := expectedCleanups(c.Results, md); cells != "" {
		return "not all passed, as expected by calibration cell(s) " + cells
	}
	return "not all passed"
}

// expectedCleanups names the cells of rs whose cleanup did not pass when every one of
// them is a calibration cell that counts as passed (its expected verdict asked for it),
// each id written by name (md for Markdown), at most maxCleanupNamed of them, then "and
// N more"; it is "" when every cleanup passed or another cell's did not.
func expectedCleanups(rs []result.Result, name func(string) string) string {
	var expected []string
	for i := range rs {
		r := &rs[i]
		if r.Cleanup == result.CleanupPassed || r.NotRunHere != "" {
			continue
		}
		if r.ExpectedVerdict == "" || result.Outcome(r) != verdict.Passed {
			return ""
		}
		expected = append(expected, name(r.ExecutionID))
	}
	named := expected[:min(len(expected), maxCleanupNamed)]
	words := strings.Join(named, ", ")
	if more := len(expected) - len(named); more > 0 {
		words += fmt.Sprintf(" and %d more", more)
	}
	return words
}

// maxCleanupNamed bounds the calibration cells the cleanup word names.
const maxCleanupNamed = 3

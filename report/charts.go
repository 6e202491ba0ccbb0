package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// Chart geometry (SVG user units).
const (
	chartW, chartH             = 320.0, 130.0
	padL, padR, padT, padB     = 44.0, 10.0, 10.0, 22.0
	plotW, plotH               = chartW - padL - padR, chartH - padT - padB
	chartLabelMax, chartDotRad = 3, 2.6
)

type chartView struct {
	Title, YMax, YMid, FirstLabel, LastLabel, Empty string
	Segments                                        []string // polyline point lists
	Dots                                            []dotView
	Breaks                                          []float64 // x of definition changes
	W, H, PadL, PlotR, PlotB, PlotT, MidY           float64
}

type dotView struct {
	X, Y  float64
	Label string
}

// point is one campaign's value on a chart; ok is false for unknown data (a gap, never
// zero), key is the fingerprint the line must not cross.
type point struct {
	label string
	value float64
	ok    bool
	key   string
}

// buildChart draws points (chronological) as polylines split wherever the key changes
// or a value is unknown.
func buildChart(title string, pts []point, format func(float64) string) chartView {
	cv := chartView{Title: title, W: chartW, H: chartH, PadL: padL, PlotR: chartW - padR, PlotB: padT + plotH, PlotT: padT, MidY: padT + plotH/2}
	maxV := 0.0
	known := 0
	for _, p := range pts {
		if p.ok {
			known++
			maxV = max(maxV, p.value)
		}
	}
	if known == 0 {
		cv.Empty = "no data"
		return cv
	}
	if maxV == 0 {
		maxV = 1
	}
	cv.YMax, cv.YMid = format(maxV), format(maxV/2)
	x := func(i int) float64 {
		if len(pts) == 1 {
			return padL + plotW/2
		}
		return padL + plotW*float64(i)/float64(len(pts)-1)
	}
	y := func(v float64) float64 { return padT + plotH*(1-v/maxV) }
	var seg []string
	flush := func() {
		if len(seg) > 1 {
			cv.Segments = append(cv.Segments, strings.Join(seg, " "))
		}
		seg = nil
	}
	for i, p := range pts {
		if i > 0 && p.key != pts[i-1].key {
			flush()
			cv.Breaks = append(cv.Breaks, round2((x(i-1)+x(i))/2))
		}
		if !p.ok {
			flush()
			continue
		}
		px, py := round2(x(i)), round2(y(p.value))
		seg = append(seg, strconv.FormatFloat(px, 'f', -1, 64)+","+strconv.FormatFloat(py, 'f', -1, 64))
		cv.Dots = append(cv.Dots, dotView{X: px, Y: py, Label: p.label + ": " + format(p.value)})
	}
	flush()
	cv.FirstLabel = shortDate(pts[0].label)
	cv.LastLabel = shortDate(pts[len(pts)-1].label)
	return cv
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func shortDate(label string) string {
	if i := strings.Index(label, " "); i > 0 {
		label = label[i+1:]
	}
	if len(label) >= 10 {
		return label[:10]
	}
	return label
}

func fmtUSD(v float64) string     { return USD(v) }
func fmtTokens(v float64) string  { return Tokens(int64(v)) }
func fmtMs(v float64) string      { return Duration(int64(v)) }
func fmtPercent(v float64) string { return fmt.Sprintf("%.0f%%", v) }

func costPoint(a billing.Aggregate) (float64, bool) {
	if a.ObservedAndEstimatedCostUSD == nil {
		return 0, false
	}
	return *a.ObservedAndEstimatedCostUSD, true
}

// buildHistory makes the history section: pointers, five overall trend charts over the
// last ChartCampaigns complete campaigns (lines break where the campaign fingerprint
// changes), per-suite charts over campaigns where that suite was complete (lines break
// where the suite's hash changes), and the campaign table rows.
func buildHistory(c *result.Campaign, h *result.History) historyView {
	hv := historyView{}
	if h == nil {
		return hv
	}
	hv.Present = true
	if h.LatestCampaignID != nil {
		hv.Latest = *h.LatestCampaignID
	}
	if h.LatestGreenCampaignID != nil {
		hv.Green = *h.LatestGreenCampaignID
	}
	hv.Caption, hv.Charts = overallCharts(h)
	hv.NoCompleteCharts = hv.Charts == nil
	for _, s := range c.Suites {
		if sc, ok := suiteCharts(s.SuiteID, h); ok {
			hv.SuiteCharts = append(hv.SuiteCharts, sc)
		}
	}
	hv.Rows, hv.SuiteIDs = campaignRows(c, h)
	return hv
}

// overallCharts draws the overall trend charts (cost, tokens, agent time, lease time,
// pass rate) over the last ChartCampaigns complete campaigns of h, chronologically,
// with their caption; no charts when no campaign is complete.
func overallCharts(h *result.History) (string, []chartView) {
	var complete []result.HistoryCampaign
	for i := len(h.Campaigns) - 1; i >= 0; i-- { // chronological
		if !h.Campaigns[i].Partial {
			complete = append(complete, h.Campaigns[i])
		}
	}
	if len(complete) > ChartCampaigns {
		complete = complete[len(complete)-ChartCampaigns:]
	}
	if len(complete) == 0 {
		return "", nil
	}
	defs := map[string]bool{}
	mk := func(get func(result.HistoryCampaign) (float64, bool)) []point {
		pts := make([]point, 0, len(complete))
		for _, hc := range complete {
			v, ok := get(hc)
			pts = append(pts, point{label: hc.CampaignID + " " + hc.GeneratedAt, value: v, ok: ok, key: hc.Fingerprint})
		}
		return pts
	}
	for _, hc := range complete {
		defs[hc.Fingerprint] = true
	}
	caption := fmt.Sprintf("%s · %s · lines break where a definition changed", plural(len(complete), "complete campaign"), plural(len(defs), "definition"))
	return caption, []chartView{
		buildChart("Observed + estimated cost", mk(func(hc result.HistoryCampaign) (float64, bool) { return costPoint(hc.Billing) }), fmtUSD),
		buildChart("Total tokens", mk(func(hc result.HistoryCampaign) (float64, bool) {
			return float64(hc.Billing.LLM.TotalTokens), hc.Billing.LLM.RunsWithTokenUsage > 0
		}), fmtTokens),
		buildChart("Agent execution time", mk(func(hc result.HistoryCampaign) (float64, bool) {
			return float64(hc.Billing.AgentRunDurationMs), true
		}), fmtMs),
		buildChart("Sandbox lease time", mk(func(hc result.HistoryCampaign) (float64, bool) {
			return float64(hc.Billing.LeaseDurationMs), hc.Billing.RuntimeCostStatuses["estimated"]+hc.Billing.RuntimeCostStatuses["unavailable"] > 0
		}), fmtMs),
		buildChart("Pass rate", mk(func(hc result.HistoryCampaign) (float64, bool) {
			if hc.Selected == 0 {
				return 0, false
			}
			return 100 * float64(hc.Passed) / float64(hc.Selected), true
		}), fmtPercent),
	}
}

// suiteCharts draws suite sid's charts (pass rate, cost, tokens, agent time) over the
// last ChartCampaigns campaigns of h in which it was complete, chronologically; ok is
// false when it was complete in none.
func suiteCharts(sid string, h *result.History) (suiteChartsView, bool) {
	var pts []result.HistoryCampaign
	var sums []result.SuiteSummary
	for i := len(h.Campaigns) - 1; i >= 0; i-- {
		for _, ss := range h.Campaigns[i].Suites {
			if ss.SuiteID == sid && ss.Complete {
				pts = append(pts, h.Campaigns[i])
				sums = append(sums, ss)
			}
		}
	}
	if len(pts) > ChartCampaigns {
		pts, sums = pts[len(pts)-ChartCampaigns:], sums[len(sums)-ChartCampaigns:]
	}
	if len(pts) == 0 {
		return suiteChartsView{}, false
	}
	mk := func(get func(result.SuiteSummary) (float64, bool)) []point {
		out := make([]point, 0, len(pts))
		for i, hc := range pts {
			v, ok := get(sums[i])
			out = append(out, point{label: hc.CampaignID + " " + hc.GeneratedAt, value: v, ok: ok, key: sums[i].SuiteDefinitionHash})
		}
		return out
	}
	hashes := map[string]bool{}
	for _, ss := range sums {
		hashes[ss.SuiteDefinitionHash] = true
	}
	return suiteChartsView{
		SuiteID: sid,
		Caption: plural(len(pts), "complete selection") + " · " + plural(len(hashes), "definition"),
		Charts: []chartView{
			buildChart("Pass rate", mk(func(ss result.SuiteSummary) (float64, bool) {
				if ss.Selected == 0 {
					return 0, false
				}
				return 100 * float64(ss.Passed) / float64(ss.Selected), true
			}), fmtPercent),
			buildChart("Cost", mk(func(ss result.SuiteSummary) (float64, bool) { return costPoint(ss.Billing) }), fmtUSD),
			buildChart("Tokens", mk(func(ss result.SuiteSummary) (float64, bool) {
				return float64(ss.Billing.LLM.TotalTokens), ss.Billing.LLM.RunsWithTokenUsage > 0
			}), fmtTokens),
			buildChart("Agent time", mk(func(ss result.SuiteSummary) (float64, bool) { return float64(ss.Billing.AgentRunDurationMs), true }), fmtMs),
		},
	}, true
}

// campaignRows makes the campaign table: one row per campaign of h, newest first (c's
// marked current), and the sorted ids of every suite any campaign holds.
func campaignRows(c *result.Campaign, h *result.History) ([]campaignRow, []string) {
	var rows []campaignRow
	suites := map[string]bool{}
	for _, hc := range h.Campaigns {
		rows = append(rows, campaignRowOf(hc, hc.CampaignID == c.CampaignID))
		for _, s := range hc.Suites {
			suites[s.SuiteID] = true
		}
	}
	var ids []string
	for s := range suites {
		ids = append(ids, s)
	}
	slices.Sort(ids)
	return rows, ids
}

// campaignRowOf is one campaign's table row: time, status (the worst counted outcome),
// counts, tokens, cost, time, and the words and suites its search and filter match.
func campaignRowOf(hc result.HistoryCampaign, current bool) campaignRow {
	row := campaignRow{
		ID: hc.CampaignID, Time: strings.Replace(strings.TrimSuffix(hc.GeneratedAt, "Z"), "T", " ", 1) + " UTC",
		Partial: hc.Partial, Current: current,
		Counts: fmt.Sprintf("%d/%d passed · %s", hc.Passed, hc.Selected, yesNo(hc.Partial, "partial", "complete")),
		Tokens: Tokens(hc.Billing.LLM.TotalTokens),
		Cost:   moneyOrWord(hc.Billing.ReportedLLMCostUSD, string(hc.Billing.LLM.CostStatus)) + " + " + AggregateRuntimeText(hc.Billing),
		Time2:  Duration(hc.Billing.AgentRunDurationMs) + " / " + leaseText(hc.Billing),
	}
	status := verdict.Passed
	switch {
	case hc.Failed > 0:
		status = verdict.Failed
	case hc.Inconclusive > 0:
		status = verdict.Inconclusive
	}
	row.Status, row.StatusClass = string(status), string(status)
	words := []string{hc.CampaignID, hc.GeneratedAt, row.Status, yesNo(hc.Partial, "partial", "complete")}
	var ss []string
	for _, s := range hc.Suites {
		ss = append(ss, s.SuiteID)
	}
	for _, e := range hc.Executions {
		words = append(words, e.ExecutionID, e.Model, e.Provider, string(e.Outcome))
	}
	row.Search = strings.ToLower(strings.Join(words, " "))
	row.Suites = " " + strings.Join(ss, " ") + " "
	return row
}

// plural formats "1 thing" or "n things".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

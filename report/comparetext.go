package report

import (
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// CompareText renders a comparison (`agentproof compare`) for a terminal: a headline, one section per change
// that has cells (still passing ones only counted), each cell with its outcomes and
// B's reason on one line (and, for a cell the baseline did not run here, why not) (control characters escaped, at most 300 bytes), the suites
// whose definition changed, and a last line with every count.
func CompareText(c *result.Comparison) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Comparing %s (before) with %s (after)\n", result.Clean(c.Before, true), result.Clean(c.After, true))
	for _, ch := range result.Changes {
		if ch == result.StillPassing || c.Counts[ch] == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s (%d):\n", ch.Words(), c.Counts[ch])
		if ch == result.ChangeUnexpectedPass {
			b.WriteString("  (known failures that passed: remove them from the catalog's known failures)\n")
		}
		for _, cc := range c.Cells {
			if cc.Change != ch {
				continue
			}
			before, after := stateOr(cc.StateBefore, cc.Before), stateOr(cc.StateAfter, cc.After)
			if cc.Change == result.ChangeNotRunHere {
				after = "not run here"
			}
			if cc.NotRunBefore != "" {
				before = "not run here"
			}
			fmt.Fprintf(&b, "  %s: %s → %s", result.Clean(cc.ExecutionID, true), before, after)
			if cc.NotRunBefore != "" {
				fmt.Fprintf(&b, " (before: %s)", result.Clip(result.Clean(cc.NotRunBefore, true), 300))
			}
			if cc.Change == result.ChangeNotRunHere && cc.Reason != "" {
				fmt.Fprintf(&b, " (%s)", result.Clip(result.Clean(cc.Reason, true), 300))
			} else if cc.Change == result.DefinitionChanged {
				fmt.Fprintf(&b, " (suite hash %s → %s)", result.Clip(cc.HashBefore, 24), result.Clip(cc.HashAfter, 24))
			} else if cc.After != verdict.Passed && cc.After != "" {
				if cc.FailureClass != "" {
					fmt.Fprintf(&b, " [%s]", cc.FailureClass)
				}
				if cc.Reason != "" {
					fmt.Fprintf(&b, " %s", result.Clip(result.Clean(cc.Reason, true), 300))
				}
			}
			b.WriteString("\n")
		}
	}
	if len(c.Suites) > 0 {
		b.WriteString("\nsuite definitions changed (a boundary: their cells are not compared):\n")
		for _, s := range c.Suites {
			fmt.Fprintf(&b, "  %s: %s → %s\n", result.Clean(s.SuiteID, true), result.Clean(s.HashBefore, true), result.Clean(s.HashAfter, true))
		}
	}
	var parts []string
	for _, ch := range result.Changes {
		words := strings.TrimSuffix(ch.Words(), " (not compared)")
		if ch == result.ChangeKnownFailure {
			words = "known failure(s)" // a noun, as on the campaign's last line
		}
		parts = append(parts, fmt.Sprintf("%d %s", c.Counts[ch], words))
	}
	fmt.Fprintf(&b, "\n%s\n", strings.Join(parts, ", "))
	return []byte(b.String())
}

// stateOr is a known failure's or unexpected pass's words, else the outcome (orNone).
func stateOr(s result.CellState, v verdict.Verdict) string {
	if s != "" {
		return s.Words()
	}
	return orNone(v)
}

func orNone(v verdict.Verdict) string {
	if v == "" {
		return "absent"
	}
	return string(v)
}

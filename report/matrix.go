package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"sync"

	"github.com/agentproof/agentproof/result"
)

// MatrixFile is the qualification matrix page's name at the results root.
const MatrixFile = "matrix.html"

//go:embed matrix.tmpl
var matrixTemplate string

// stateMarks are the one-character marks of the cell states in the matrix's texts.
var stateMarks = map[result.CellState]string{
	result.StatePassed: "✓", result.StateFailed: "✗", result.StateUnexpectedPass: "‼", result.StateKnownFailure: "!",
	result.StateNotRunHere: "–", result.StateInconclusive: "?", result.StateMissing: "∅",
}

var matrixTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("matrix").Funcs(template.FuncMap{
		"cellOf":    cellOf,
		"mark":      func(s result.CellState) string { return stateMarks[s] },
		"since":     sinceText,
		"history":   historyText,
		"runner":    runnerText,
		"label":     stateLabel,
		"stateList": func() []result.CellState { return result.CellStates },
	}).Parse(matrixTemplate))
})

// stateLabel is a cell state in words: "not run here" for not_run_here.
func stateLabel(s result.CellState) string { return strings.ReplaceAll(string(s), "_", " ") }

// cellOf is the runner's cell for case cs (nil when the runner never ran it).
func cellOf(r result.Runner, cs string) *result.QualifiedCell {
	for i := range r.Cells {
		if r.Cells[i].Case == cs {
			return &r.Cells[i]
		}
	}
	return nil
}

// sinceText says since which CLI version (or, for agentproof's own agents, which
// campaign) the cell's state holds: "since 0.171.0".
func sinceText(c *result.QualifiedCell) string {
	if c.SinceVersion != "" {
		return "since " + c.SinceVersion
	}
	return "since " + c.SinceCampaign
}

// historyText is the cell's history as marks, oldest first, each with its CLI version
// when it changed: "✓ 0.170.0 ✓ ✗ 0.171.0".
func historyText(c *result.QualifiedCell) string {
	var parts []string
	version := ""
	for _, e := range c.History {
		p := stateMarks[e.State]
		if e.CLIVersion != version {
			version = e.CLIVersion
			if version != "" {
				p += " " + version
			}
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// runnerText names a runner: "codex (local) · exec:codex · codex 0.171.0 · openai/gpt-5".
func runnerText(r result.Runner) string {
	parts := []string{r.Profile + " (" + r.Environment + ")"}
	if r.Driver != "" {
		parts = append(parts, r.Driver)
	}
	if r.CLI != "" {
		parts = append(parts, strings.TrimSpace(r.CLI+" "+r.CLIVersion))
	}
	if r.Model != "" {
		parts = append(parts, r.Model)
	}
	return strings.Join(parts, " · ")
}

// MatrixJSON renders the qualification matrix as indented JSON (schema
// agentproof.matrix/v1).
func MatrixJSON(q *result.Qualification) []byte {
	b, err := json.MarshalIndent(q, "", "  ")
	if err != nil {
		panic(err) // strings and slices of them always encode
	}
	return append(b, '\n')
}

// MatrixMarkdown renders the qualification matrix for a README: a legend, then one
// table per capability (rows: runners; columns: its cases), each cell the latest state
// (with why, for a cell not run here) with since which CLI version it holds, its
// history and a link to its evidence (relative to the results directory).
func MatrixMarkdown(q *result.Qualification) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Runner qualification matrix\n\n%d campaign(s), %d runner(s). ", len(q.Campaigns), len(q.Runners))
	var legend []string
	for _, s := range result.CellStates {
		legend = append(legend, stateMarks[s]+" "+stateLabel(s))
	}
	b.WriteString("States: " + strings.Join(legend, ", ") + "; history oldest first, with the CLI version where it changed.\n")
	for _, cp := range q.Capabilities {
		fmt.Fprintf(&b, "\n## %s\n\n| runner |", cp.Name)
		for _, cs := range cp.Cases {
			b.WriteString(" " + cs + " |")
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(cp.Cases)) + "\n")
		for _, r := range q.Runners {
			row, any := "| "+mdEscape(runnerText(r))+" |", false
			for _, cs := range cp.Cases {
				c := cellOf(r, cs)
				if c == nil {
					row += " |"
					continue
				}
				any = true
				row += fmt.Sprintf(" %s %s", stateMarks[c.State], stateLabel(c.State))
				if c.Reason != "" {
					row += ": " + md(c.Reason)
				}
				row += fmt.Sprintf(", %s (%s)", sinceText(c), historyText(c))
				if c.Evidence != "" {
					row += " [evidence](" + c.Evidence + result.ResultFile + ")"
				}
				row += " |"
			}
			if any {
				b.WriteString(row + "\n")
			}
		}
	}
	return []byte(b.String())
}

// mdEscape keeps a table cell in one cell.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// MatrixHTML renders the qualification matrix as a self-contained page (no script, no
// request): one table per capability, each cell coloured by its latest state with its
// history and a link to its evidence, readable on a phone (tables scroll sideways).
func MatrixHTML(q *result.Qualification) ([]byte, error) {
	var b bytes.Buffer
	if err := matrixTmpl().Execute(&b, q); err != nil {
		return nil, fmt.Errorf("report: rendering %s: %w", MatrixFile, err)
	}
	return b.Bytes(), nil
}

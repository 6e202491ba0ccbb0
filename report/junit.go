package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// JUnit renders junit.xml: a <testsuites> root named
// after the campaign and one <testsuite> per suite, with one <testcase> per selected
// cell (classname = suite id, name = execution id, time in seconds). Each testsuite's
// <properties> name every cell's evidence directory relative to the campaign
// directory (property "evidence:<execution id>", value "<…>/attempt-<n>/"; none for a
// cell without evidence). A cell counted as failed gets a <failure> with its failure
// class, error and failed matchers; an inconclusive cell gets a <skipped> whose text
// starts with the line "inconclusive …: reason" — or, when the campaign's
// InconclusiveAsFailure is set (flag --inconclusive-as-failure), a <failure
// type="inconclusive">, for CI systems that must not treat missing evidence as a pass.
//
// The document follows the Jenkins JUnit schema (junit-4.xsd): testsuites carries
// name, tests, failures, errors and time only; the skipped count is per testsuite;
// <skipped> carries text only; timestamp is omitted for a suite without a start time.
//
// Every text node and attribute passes through one sanitiser (result.Clean): only
// XML 1.0 characters and valid UTF-8 survive, anything else becomes a visible escape
// such as the text `\x1b`, then XML escaping applies. No CDATA is used.
func JUnit(c *result.Campaign) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	total, failures := 0, 0
	type suiteCases struct {
		id                       string
		cases                    []*result.Result
		failures, skipped, timeM int64
	}
	var suites []*suiteCases
	idx := map[string]*suiteCases{}
	for _, s := range c.Suites {
		sc := &suiteCases{id: s.SuiteID}
		idx[s.SuiteID] = sc
		suites = append(suites, sc)
	}
	for i := range c.Results {
		r := &c.Results[i]
		sc := idx[r.SuiteID]
		if sc == nil {
			sc = &suiteCases{id: r.SuiteID}
			idx[r.SuiteID] = sc
			suites = append(suites, sc)
		}
		sc.cases = append(sc.cases, r)
		sc.timeM += r.DurationMs
		total++
		switch junitKind(c, r) {
		case "failure":
			sc.failures++
			failures++
		case "skipped":
			sc.skipped++
		}
	}
	fmt.Fprintf(&b, "<testsuites name=%s tests=\"%d\" failures=\"%d\" errors=\"0\" time=\"%s\">\n",
		xmlAttr("agentproof "+c.CampaignID), total, failures, seconds(c.DurationMs))
	for _, sc := range suites {
		stamp := ""
		if t := suiteStart(sc.cases); t != "" {
			stamp = " timestamp=" + xmlAttr(t)
		}
		fmt.Fprintf(&b, "  <testsuite name=%s tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%s\"%s>\n",
			xmlAttr(sc.id), len(sc.cases), sc.failures, sc.skipped, seconds(sc.timeM), stamp)
		var props []string
		for _, r := range sc.cases {
			if dir := evidenceDir(r); dir != "" {
				props = append(props, fmt.Sprintf("      <property name=%s value=%s/>\n", xmlAttr("evidence:"+r.ExecutionID), xmlAttr(dir)))
			}
		}
		if len(props) > 0 {
			b.WriteString("    <properties>\n" + strings.Join(props, "") + "    </properties>\n")
		}
		for _, r := range sc.cases {
			writeTestcase(&b, c, r)
		}
		b.WriteString("  </testsuite>\n")
	}
	b.WriteString("</testsuites>\n")
	return b.Bytes()
}

// writeTestcase writes r's <testcase>: a <failure> typed by its failure class (an
// unexpected pass, an inconclusive cell and a failure without a class by their state)
// or a <skipped> (a cell not run here with its reason as the message), by junitKind.
func writeTestcase(b *bytes.Buffer, c *result.Campaign, r *result.Result) {
	fmt.Fprintf(b, "    <testcase classname=%s name=%s time=\"%s\">", xmlAttr(r.SuiteID), xmlAttr(r.ExecutionID), seconds(r.DurationMs))
	msg := junitMessage(r)
	switch junitKind(c, r) {
	case "failure":
		typ := string(r.FailureClass)
		if st := result.StateOf(r); st == result.StateUnexpectedPass {
			typ = string(st)
		} else if result.Outcome(r) == verdict.Inconclusive {
			typ = string(verdict.Inconclusive)
		} else if typ == "" {
			typ = string(verdict.Failed)
		}
		fmt.Fprintf(b, "\n      <failure message=%s type=%s>%s</failure>\n    ", xmlAttr(msg), xmlAttr(typ), xmlText(junitBody(r)))
	case "skipped":
		attr := ""
		if r.NotRunHere != "" { // a cell not run here: the reason is the message
			attr = " message=" + xmlAttr(msg)
		}
		fmt.Fprintf(b, "\n      <skipped%s>%s</skipped>\n    ", attr, xmlText(msg+"\n"+junitBody(r)))
	}
	b.WriteString("</testcase>\n")
}

func suiteStart(rs []*result.Result) string {
	s := ""
	for _, r := range rs {
		if r.StartedAt != "" && (s == "" || r.StartedAt < s) {
			s = r.StartedAt
		}
	}
	return s
}

// junitKind is how a cell shows in junit.xml, by its state (result.StateOf): a failed
// cell or an unexpected pass is a <failure>; a cell not run here or a known failure is <skipped>; an
// inconclusive or missing cell is <skipped>, or a <failure> with
// InconclusiveAsFailure; a passed cell neither ("").
func junitKind(c *result.Campaign, r *result.Result) string {
	switch result.StateOf(r) {
	case result.StateFailed, result.StateUnexpectedPass:
		return "failure"
	case result.StateNotRunHere, result.StateKnownFailure:
		return "skipped"
	case result.StatePassed:
		return ""
	}
	if c.InconclusiveAsFailure {
		return "failure"
	}
	return "skipped"
}

func seconds(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

// junitMessage is the one-line reason: outcome words, class, error, failed matchers;
// a known failure's reason first.
func junitMessage(r *result.Result) string {
	if k := r.KnownFailure; k != nil && result.StateOf(r) == result.StateKnownFailure {
		return result.Clip("known failure since "+k.Since+": "+k.Reason+" ("+verdictText(r)+": "+detailText(r)+")", 1000)
	}
	return result.Clip(verdictText(r)+": "+detailText(r), 1000)
}

// junitBody is the multi-line failure text: attempt, verdicts, error and every matcher.
func junitBody(r *result.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d, verdict %s", r.Attempt, r.Verdict)
	if r.ExpectedVerdict != "" {
		fmt.Fprintf(&b, ", expected %s", r.ExpectedVerdict)
	}
	fmt.Fprintf(&b, ", cleanup %s\n", r.Cleanup)
	if r.FailureClass != "" {
		fmt.Fprintf(&b, "failure class: %s\n", r.FailureClass)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", r.Error)
	}
	for _, m := range r.MatcherResults {
		state := "passed"
		if m.NotReached {
			state = "not reached"
		} else if !m.Passed {
			state = "FAILED"
		}
		fmt.Fprintf(&b, "matcher %s: %s: %s\n", m.Kind, state, m.Detail)
		if !m.Passed && m.Expected != nil {
			fmt.Fprintf(&b, "  expected: %s\n", compactJSON(m.Expected, 1200))
		}
		if !m.Passed && m.Observed != nil {
			fmt.Fprintf(&b, "  observed: %s\n", compactJSON(m.Observed, 1200))
		}
	}
	return b.String()
}

func compactJSON(v any, limit int) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return result.Clip(strings.TrimSuffix(buf.String(), "\n"), limit)
}

// xmlSafe keeps only XML 1.0 Char in valid UTF-8 (tab, LF, CR, U+0020–U+D7FF,
// U+E000–U+FFFD, U+10000–U+10FFFF) and turns everything else into a visible escape.
func xmlSafe(s string) string { return result.Clean(s, false) }

// xmlText escapes sanitised text for an element's content.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(xmlSafe(s))) // a strings.Builder never fails
	return b.String()
}

// xmlAttr returns a quoted, escaped attribute value (newlines become &#xA;).
func xmlAttr(s string) string { return `"` + xmlText(s) + `"` }

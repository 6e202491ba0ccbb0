package match

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// Test report formats (ParseTestReport).
const (
	ReportJUnit = "junit"
	ReportCTRF  = "ctrf"
)

// MaxTestReportBytes bounds a test report ParseTestReport reads (8 MiB).
const MaxTestReportBytes = 8 << 20

// ParseTestReport counts the tests of a report a verifier step wrote; the report is
// untrusted (the candidate's code ran beside it).
//
//   - junit: every <testcase> element, at any depth: failed when it holds a <failure>
//     or <error>, skipped when it holds a <skipped>, passed otherwise (the suites'
//     own tests/failures attributes are not trusted).
//   - ctrf: every entry of results.tests by its status (passed; failed; skipped and
//     pending count as skipped; other counts as failed: it did not pass).
//
// Errors: an unknown format, a report larger than MaxTestReportBytes, or one that does
// not parse (the CTRF document must have reportFormat "CTRF" and results.tests).
func ParseTestReport(format string, data []byte) (TestCounts, error) {
	if len(data) > MaxTestReportBytes {
		return TestCounts{}, fmt.Errorf("the report has more than %d bytes", MaxTestReportBytes)
	}
	switch format {
	case ReportJUnit:
		return parseJUnit(data)
	case ReportCTRF:
		return parseCTRF(data)
	}
	return TestCounts{}, fmt.Errorf("unknown test report format %q (junit or ctrf)", format)
}

// parseJUnit streams the XML tokens, counting <testcase> elements by their children.
func parseJUnit(data []byte) (TestCounts, error) {
	c := TestCounts{Format: ReportJUnit}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	depth, caseDepth := 0, -1
	var failed, skipped, root bool
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return TestCounts{}, fmt.Errorf("junit report: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if t.Name.Local != "testsuites" && t.Name.Local != "testsuite" {
					return TestCounts{}, fmt.Errorf("junit report: the root element is <%s>, not <testsuites> or <testsuite>", t.Name.Local)
				}
				root = true
			}
			depth++
			switch {
			case t.Name.Local == "testcase" && caseDepth < 0:
				caseDepth, failed, skipped = depth, false, false
			case caseDepth > 0 && depth == caseDepth+1 && (t.Name.Local == "failure" || t.Name.Local == "error"):
				failed = true
			case caseDepth > 0 && depth == caseDepth+1 && t.Name.Local == "skipped":
				skipped = true
			}
		case xml.EndElement:
			if depth == caseDepth {
				switch {
				case failed:
					c.Failed++
				case skipped:
					c.Skipped++
				default:
					c.Passed++
				}
				caseDepth = -1
			}
			depth--
		}
	}
	if !root {
		return TestCounts{}, errors.New("junit report: no <testsuites> or <testsuite> element")
	}
	return c, nil
}

// parseCTRF counts results.tests by status.
func parseCTRF(data []byte) (TestCounts, error) {
	var doc struct {
		ReportFormat string `json:"reportFormat"`
		Results      *struct {
			Tests []struct {
				Status string `json:"status"`
			} `json:"tests"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return TestCounts{}, fmt.Errorf("ctrf report: %w", err)
	}
	if doc.ReportFormat != "CTRF" || doc.Results == nil || doc.Results.Tests == nil {
		return TestCounts{}, errors.New(`ctrf report: reportFormat "CTRF" and results.tests are required`)
	}
	c := TestCounts{Format: ReportCTRF}
	for _, t := range doc.Results.Tests {
		switch t.Status {
		case "passed":
			c.Passed++
		case "skipped", "pending":
			c.Skipped++
		default:
			c.Failed++
		}
	}
	return c, nil
}

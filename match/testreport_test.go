package match

import (
	"strings"
	"testing"
)

func TestParseTestReport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, format, data string
		want               TestCounts
		err                string
	}{
		{"junit suites", ReportJUnit, `<?xml version="1.0"?><testsuites tests="99" failures="0"><testsuite name="a">` +
			`<testcase name="ok"/><testcase name="bad"><failure message="x">trace</failure></testcase>` +
			`<testcase name="err"><error/></testcase><testcase name="skip"><skipped/></testcase>` +
			`<testsuite name="nested"><testcase name="deep"><system-out>failure</system-out></testcase></testsuite></testsuite></testsuites>`,
			TestCounts{Format: ReportJUnit, Passed: 2, Failed: 2, Skipped: 1}, ""},
		{"junit one suite", ReportJUnit, `<testsuite><testcase name="a"/></testsuite>`, TestCounts{Format: ReportJUnit, Passed: 1}, ""},
		{"junit wrong root", ReportJUnit, `<html><testcase/></html>`, TestCounts{}, "root element"},
		{"junit broken", ReportJUnit, `<testsuite><testcase>`, TestCounts{}, "junit report"},
		{"junit empty", ReportJUnit, ``, TestCounts{}, "no <testsuites>"},
		{"ctrf", ReportCTRF, `{"reportFormat":"CTRF","specVersion":"0.0.0","results":{"tool":{"name":"t"},"summary":{"tests":9,"passed":9},` +
			`"tests":[{"name":"a","status":"passed"},{"name":"b","status":"failed"},{"name":"c","status":"pending"},{"name":"d","status":"other"}]}}`,
			TestCounts{Format: ReportCTRF, Passed: 1, Failed: 2, Skipped: 1}, ""},
		{"ctrf without tests", ReportCTRF, `{"reportFormat":"CTRF","results":{"summary":{"passed":3}}}`, TestCounts{}, "results.tests"},
		{"ctrf not json", ReportCTRF, `<x/>`, TestCounts{}, "ctrf report"},
		{"unknown", "tap", `ok 1`, TestCounts{}, "unknown test report format"},
	} {
		got, err := ParseTestReport(tc.format, []byte(tc.data))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case got != tc.want:
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if _, err := ParseTestReport(ReportCTRF, make([]byte, MaxTestReportBytes+1)); err == nil {
		t.Error("an oversized report parsed")
	}
}

// FuzzParseTestReport: any bytes, either format: no panic, counts never negative.
func FuzzParseTestReport(f *testing.F) {
	f.Add(true, []byte(`<testsuites><testsuite><testcase/><testcase><failure/></testcase></testsuite></testsuites>`))
	f.Add(false, []byte(`{"reportFormat":"CTRF","results":{"tests":[{"status":"passed"}]}}`))
	f.Add(true, []byte(`<testsuite><testcase><testcase><skipped/></testcase></testcase></testsuite>`))
	f.Fuzz(func(t *testing.T, junit bool, data []byte) {
		format := ReportCTRF
		if junit {
			format = ReportJUnit
		}
		c, err := ParseTestReport(format, data)
		if err == nil && (c.Passed < 0 || c.Failed < 0 || c.Skipped < 0 || c.Format != format) {
			t.Fatalf("counts %+v", c)
		}
	})
}

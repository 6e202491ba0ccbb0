package report

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/agentproof/agentproof/result"
)

// CTRFFile is the CTRF report's name beside junit.xml.
const CTRFFile = "ctrf.json"

// CTRFSpecVersion is the version of the Common Test Report Format CTRF writes.
const CTRFSpecVersion = "1.0.0"

// ctrfNamespace names the deterministic report ids (UUID v5 of the campaign id and
// generation time), so that regenerating a campaign reproduces ctrf.json.
var ctrfNamespace = uuid.MustParse("9a3f1f4e-5b7a-4f2c-8c1e-6a0d2b9e7c11")

type ctrfDoc struct {
	ReportFormat string      `json:"reportFormat"`
	SpecVersion  string      `json:"specVersion"`
	ReportID     string      `json:"reportId"`
	RunID        string      `json:"runId"`
	Timestamp    string      `json:"timestamp,omitempty"`
	GeneratedBy  string      `json:"generatedBy"`
	Results      ctrfResults `json:"results"`
}

type ctrfResults struct {
	Tool        ctrfTool       `json:"tool"`
	Summary     ctrfSummary    `json:"summary"`
	Tests       []ctrfTest     `json:"tests"`
	Environment map[string]any `json:"environment,omitempty"`
}

type ctrfTool struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type ctrfSummary struct {
	Tests    int   `json:"tests"`
	Passed   int   `json:"passed"`
	Failed   int   `json:"failed"`
	Skipped  int   `json:"skipped"`
	Pending  int   `json:"pending"`
	Other    int   `json:"other"`
	Flaky    int   `json:"flaky"`
	Suites   int   `json:"suites"`
	Start    int64 `json:"start"`
	Stop     int64 `json:"stop"`
	Duration int64 `json:"duration"`
}

type ctrfTest struct {
	Name      string           `json:"name"`
	Status    string           `json:"status"`
	Duration  int64            `json:"duration"`
	Start     int64            `json:"start,omitempty"`
	Stop      int64            `json:"stop,omitempty"`
	Suite     []string         `json:"suite"`
	Message   string           `json:"message,omitempty"`
	RawStatus string           `json:"rawStatus"`
	Labels    map[string]any   `json:"labels"`
	Type      string           `json:"type"`
	Retries   int              `json:"retries"`
	Flaky     bool             `json:"flaky"`
	Attach    []ctrfAttachment `json:"attachments,omitempty"`
}

type ctrfAttachment struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Path        string `json:"path"`
}

// CTRF renders ctrf.json, the campaign as a Common Test Report Format document
// (CTRFSpecVersion): one test per selected cell, named by its execution id, in the
// suite hierarchy [suite, profile, environment]. The status is the cell's state
// (result.StateOf): passed and failed as they are, an unexpected pass failed; a cell
// not run here is skipped; a known failure is "other" (it never fails the campaign);
// inconclusive and missing cells are "other" — or "failed" with
// InconclusiveAsFailure, as junit.xml does — with the state in rawStatus. Times are ms
// (start and stop since the Unix epoch); reportId is a UUID derived from the campaign
// id and its generation time, so a regenerated report is byte-identical.
func CTRF(c *result.Campaign) []byte {
	d := ctrfDoc{ReportFormat: "CTRF", SpecVersion: CTRFSpecVersion, RunID: c.CampaignID, GeneratedBy: "agentproof",
		ReportID: uuid.NewSHA1(ctrfNamespace, []byte(c.CampaignID+"\x00"+c.GeneratedAt)).String(), Timestamp: c.GeneratedAt}
	d.Results.Tool = ctrfTool{Name: "agentproof"}
	if p := c.Provenance; p != nil {
		d.Results.Tool.Version = p.Version
		d.Results.Environment = map[string]any{"commit": p.Revision, "osPlatform": p.OS}
	}
	flaky := map[string]bool{}
	for _, rp := range c.Repeats {
		flaky[rp.ExecutionID] = rp.Flaky
	}
	s := &d.Results.Summary
	s.Suites, s.Start, s.Stop = len(c.Suites), epochMs(c.StartedAt), epochMs(c.GeneratedAt)
	s.Duration = max(0, s.Stop-s.Start)
	d.Results.Tests = make([]ctrfTest, 0, len(c.Results))
	for i := range c.Results {
		t := ctrfTestOf(c, &c.Results[i], flaky[c.Results[i].ExecutionID])
		s.Tests++
		switch t.Status {
		case "passed":
			s.Passed++
		case "failed":
			s.Failed++
		case "skipped":
			s.Skipped++
		default:
			s.Other++
		}
		if t.Flaky {
			s.Flaky++
		}
		d.Results.Tests = append(d.Results.Tests, t)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		panic(err) // strings, numbers and maps of them always encode
	}
	return b.Bytes()
}

// ctrfTestOf is one cell as a CTRF test.
func ctrfTestOf(c *result.Campaign, r *result.Result, flaky bool) ctrfTest {
	state := result.StateOf(r)
	t := ctrfTest{Name: r.ExecutionID, Duration: max(0, r.DurationMs), Start: epochMs(r.StartedAt), Stop: epochMs(r.FinishedAt),
		Suite: []string{r.SuiteID, r.ProfileID, r.EnvironmentID}, RawStatus: string(state), Type: "e2e", Flaky: flaky,
		Retries: max(0, r.Attempt-max(1, r.FirstAttempt)), Message: result.Clean(r.Error, false)}
	switch state {
	case result.StatePassed, result.StateFailed:
		t.Status = string(state)
	case result.StateUnexpectedPass:
		t.Status = "failed"
	case result.StateNotRunHere:
		t.Status = "skipped"
	case result.StateKnownFailure:
		t.Status = "other"
	default:
		t.Status = "other"
		if c.InconclusiveAsFailure {
			t.Status = "failed"
		}
	}
	t.Labels = map[string]any{"case": r.CaseID, "profile": r.ProfileID, "environment": r.EnvironmentID, "attempt": r.Attempt}
	for k, v := range map[string]string{"provider": r.Provider, "model": r.Model, "verdict": string(r.Verdict),
		"expectedVerdict": string(r.ExpectedVerdict), "failureClass": string(r.FailureClass)} {
		if v != "" {
			t.Labels[k] = v
		}
	}
	if dir := evidenceDir(r); dir != "" {
		t.Attach = []ctrfAttachment{{Name: result.ResultFile, ContentType: "application/json", Path: dir + result.ResultFile}}
	}
	return t
}

// epochMs is an RFC 3339 time in ms since the Unix epoch; 0 when it does not parse.
func epochMs(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

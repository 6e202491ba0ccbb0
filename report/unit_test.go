package report

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

const validResult = `{"schema":"agentproof.result/v1","executionId":"s.p.local.c","campaignId":"c1","suiteId":"s","suiteDefinitionHash":"h","profileId":"p","environmentId":"local","caseId":"c","provider":"x","model":"m","attempt":1,"verdict":"passed","runIds":["r"],"startedAt":"2026-11-29T10:00:00Z","finishedAt":"2026-11-29T10:00:01Z","durationMs":1000,"matcherResults":[{"kind":"run_status","passed":true,"detail":"matched"}],"termination":{"exitCode":0},"usage":{"inputTokens":3},"cleanup":"passed","evidence":["logs/agent.log"]}`

// edit returns validResult with one top-level field replaced (value "" removes it).
func edit(t *testing.T, field, value string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(validResult), &m); err != nil {
		t.Fatal(err)
	}
	if value == "" {
		delete(m, field)
	} else {
		m[field] = json.RawMessage(value)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeResult(t *testing.T, dir, doc string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, result.ResultFile), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCleanF13(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, oneLine, multi string }{
		{"\x1b[31mERR\x1b[0m", `\x1b[31mERR\x1b[0m`, `\x1b[31mERR\x1b[0m`},
		{"a\x00b\x0bc\x0cd", `a\x00b\x0bc\x0cd`, `a\x00b\x0bc\x0cd`},
		{"bad \xff byte", `bad \xff byte`, `bad \xff byte`},
		{"nonchar \uFFFE", `nonchar \ufffe`, `nonchar \ufffe`},
		{"line\nbreak\ttab", "line break tab", "line\nbreak\ttab"},
		{"ok é 😀 ]]>", "ok é 😀 ]]>", "ok é 😀 ]]>"},
	}
	for _, tt := range tests {
		if got := result.Clean(tt.in, true); got != tt.oneLine {
			t.Errorf("Clean(%q, true) = %q, want %q", tt.in, got, tt.oneLine)
		}
		if got := result.Clean(tt.in, false); got != tt.multi {
			t.Errorf("Clean(%q, false) = %q, want %q", tt.in, got, tt.multi)
		}
	}
	// A case id with \x07 in an attribute still yields well-formed XML.
	c := &result.Campaign{CampaignID: "c", Results: []result.Result{{ExecutionID: "s.p.e.c\x07", SuiteID: "s", Verdict: verdict.Failed, FailureClass: verdict.CandidateFailure, Error: "]]>\x00", Cleanup: result.CleanupPassed}}}
	if out := string(JUnit(c)); strings.ContainsAny(out, "\x07\x00") || !strings.Contains(out, `name="s.p.e.c\x07"`) {
		t.Errorf("junit:\n%s", out)
	}
}

func TestFormats(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{0.26748: "$0.2675", 0.004458: "$0.004458", 0: "$0.000000", 12.5: "$12.5000"} {
		if got := USD(in); got != want {
			t.Errorf("USD(%v) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[int64]string{999: "999ms", 1500: "1.5s", 61_000: "1m 1s", 3_660_000: "1h 1m"} {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%d) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := Tokens(in); got != want {
			t.Errorf("Tokens(%d) = %s, want %s", in, got, want)
		}
	}
}

func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(validResult))
	f.Add([]byte(`{"schema":"agentproof.result/v1"}`))
	f.Add([]byte(`{"usage":{"runs":[{"usage":{"inputTokens":1e308}}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := result.DecodeResult("fuzz", b)
		if err != nil {
			if !errors.Is(err, result.ErrInvalid) {
				t.Fatalf("error is not a ValidationError: %v", err)
			}
			return
		}
		// A valid result re-encodes and decodes to an equally valid result.
		out, err := result.EncodeResult(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := result.DecodeResult("again", out); err != nil {
			t.Fatalf("re-encoded result invalid: %v\n%s", err, out)
		}
		// Rendering never panics and the XML stays free of raw control characters.
		c := result.BuildCampaign("c", nil, []string{r.ExecutionID}, []result.Result{*r}, nil, false)
		if x := JUnit(c); strings.ContainsAny(string(x), "\x00\x1b") {
			t.Fatal("control character in junit.xml")
		}
		_ = Summary(c)
		if _, err := Dashboard(c, nil, nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestChartBreaksAtDefinitionChanges(t *testing.T) {
	t.Parallel()
	pts := []point{
		{label: "a", value: 1, ok: true, key: "v1"},
		{label: "b", value: 2, ok: true, key: "v1"},
		{label: "c", value: 3, ok: true, key: "v2"},
		{label: "d", ok: false, key: "v2"}, // unknown: a gap, never zero
		{label: "e", value: 4, ok: true, key: "v2"},
		{label: "f", value: 5, ok: true, key: "v2"},
	}
	c := buildChart("t", pts, fmtTokens)
	if len(c.Segments) != 2 || len(c.Breaks) != 1 || len(c.Dots) != 5 {
		t.Errorf("segments %q, breaks %v, %d dots", c.Segments, c.Breaks, len(c.Dots))
	}
	if strings.Count(c.Segments[0], ",") != 2 || strings.Count(c.Segments[1], ",") != 2 {
		t.Errorf("segment a-b and e-f expected: %q", c.Segments)
	}
	if empty := buildChart("t", []point{{label: "x"}}, fmtTokens); empty.Empty == "" || len(empty.Dots) != 0 {
		t.Errorf("no data must not be drawn as zero: %+v", empty)
	}
}

func TestDashboardNotSelectedAndMissing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), nil)
	ids := []string{"core.reference.local.message-marker", "core.wrong.local.message-marker"}
	g, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: loadCatalog(t, nil), ExpectedIDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Campaign.Partial || g.Campaign.Suites[0].Complete {
		t.Error("a partial selection must be partial")
	}
	if diff := cmp.Diff([]string{"calibration.fixture-fail.local.process-exit", "calibration.fixture-pass.local.process-exit", "core.reference.daytona.message-marker"}, g.Unexpected); diff != "" {
		t.Errorf("unexpected: %s", diff)
	}
	b, _ := os.ReadFile(filepath.Join(root, "camp-2", DashboardFile))
	dash := string(b)
	for id, state := range map[string]string{
		"core.reference.daytona.message-marker": "not-selected",
		"core.wrong.local.message-marker":       "missing",
		"core.reference.local.message-marker":   "passed",
	} {
		if card := cardHTML(t, dash, id); !strings.Contains(card, `data-state="`+state+`"`) {
			t.Errorf("%s: want state %s in %s", id, state, card[:min(len(card), 200)])
		}
	}
	if strings.Contains(dash, "calibration.fixture") {
		t.Error("unselected suites have no grid")
	}
}

// Token counts are shown only when some run reported usage: a missing count is
// "unavailable", never 0.
func TestUsageTokensNeverZeroForMissing(t *testing.T) {
	t.Parallel()
	none := billing.LLMUsage{RunCount: 3}
	some := billing.LLMUsage{RunCount: 3, RunsWithTokenUsage: 1, InputTokens: 12000, OutputTokens: 0}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"none input", UsageTokens(none.InputTokens, none), "unavailable"},
		{"some input", UsageTokens(some.InputTokens, some), "12,000"},
		{"some output reported as zero", UsageTokens(some.OutputTokens, some), "0"},
		{"none in/out", TokensInOut(none), "unavailable"},
		{"some in/out", TokensInOut(some), "12,000 / 0"},
		{"none dashboard", tokensInOutWords(none), "unavailable"},
		{"some dashboard", tokensInOutWords(some), "12,000 in / 0 out"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

// Evidence links say what the files a reader looks for first are.
func TestEvidenceLabel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ rel, want string }{
		{"logs/agent/runs/r1/events.jsonl", "agent CLI event stream: logs/agent/runs/r1/events.jsonl"},
		{"logs/model-requests.jsonl", "scripted model request log: logs/model-requests.jsonl"},
		{"logs/flow.log", "flow log: logs/flow.log"},
		{"snapshots/api-state.json", "API snapshot: snapshots/api-state.json"},
		{"logs/agent/runs/r1/stderr.log", "logs/agent/runs/r1/stderr.log"},
	} {
		if got := evidenceLabel(tc.rel); got != tc.want {
			t.Errorf("evidenceLabel(%q) = %q, want %q", tc.rel, got, tc.want)
		}
	}
}

// TestProvenance: campaign.json carries the given provenance with the agent CLIs the
// results record (distinct, sorted), and regeneration without one keeps it.
func TestProvenance(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	withCLI := strings.Replace(validResult, `"evidence":`, `"runtimeFacts":[{"runId":"r","driver":"exec:codex","cliName":"codex","cliVersion":"0.1.0","binarySha256":"abababababababababababababababababababababababababababababababab"},{"runId":"r2","driver":"exec:codex","cliName":"codex","cliVersion":"0.1.0","binarySha256":"abababababababababababababababababababababababababababababababab"}],"evidence":`, 1)
	writeResult(t, filepath.Join(root, "c1", "s", "p", "local", "c", "attempt-1"), withCLI)
	prov := &result.Provenance{Version: "v1.2.3", Revision: "abc", Go: "go1.26", OS: "linux", Arch: "amd64"}
	g, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "c1", Provenance: prov})
	if err != nil {
		t.Fatal(err)
	}
	want := &result.Provenance{Version: "v1.2.3", Revision: "abc", Go: "go1.26", OS: "linux", Arch: "amd64", CLIs: []result.CLIProvenance{{Name: "codex", Version: "0.1.0", BinarySHA256: "abababababababababababababababababababababababababababababababab"}}}
	if len(g.Campaign.Candidates) > 0 {
		t.Fatalf("the result was not valid: %+v", g.Campaign.Candidates)
	}
	if diff := cmp.Diff(want, g.Campaign.Provenance); diff != "" {
		t.Errorf("provenance (-want +got):\n%s", diff)
	}
	before, _ := os.ReadFile(filepath.Join(root, "c1", result.CampaignFile))
	if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(root, "c1", result.CampaignFile)); string(after) != string(before) {
		t.Errorf("regeneration changed campaign.json:\n%s", after)
	}
}

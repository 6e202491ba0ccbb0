package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// The fixed campaign under testdata/results/camp-2 and its selection: one cell
// (core.wrong.local.message-marker) has no result at all, one (core.reference.local…)
// was retried.
var fixtureExpected = []string{
	"calibration.fixture-fail.local.process-exit",
	"calibration.fixture-pass.local.process-exit",
	"core.reference.daytona.message-marker",
	"core.reference.local.message-marker",
	"core.wrong.local.message-marker",
}

const coreHash = "7ffbefa220ca286bd73ff84ed358ce83564d0857a4c91c554dfe8f36a4473ccf"

func loadCatalog(t testing.TB, mutate func(string) string) *catalog.Catalog {
	t.Helper()
	b, err := os.ReadFile("testdata/catalog/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	text := string(b)
	if mutate != nil {
		text = mutate(text)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// copyDir copies testdata trees, rewriting every file with edit (nil: unchanged).
func copyDir(t testing.TB, src, dst string, edit func(string) string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if edit != nil {
			b = []byte(edit(string(b)))
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// buildFixtureHistory lays out four campaigns in a temporary results root and
// generates them in order: camp-green three days earlier, every cell passed; camp-0 two days earlier under an older definition of suite
// core (so history lines break), camp-1 a day earlier with only the calibration suite
// (partial), then the fixed camp-2. It returns the root, the catalog and camp-2's
// Generated.
func buildFixtureHistory(t testing.TB) (string, *catalog.Catalog, *Generated) {
	t.Helper()
	root := t.TempDir()
	cat := loadCatalog(t, nil)
	old := loadCatalog(t, func(s string) string {
		return strings.Replace(s, "    expectedMatrixSize: 3\n", "    expectedMatrixSize: 3\n    definitionMetadata: {version: 0}\n", 1)
	})
	oldHash := old.Suite("core").Fingerprint
	copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-0"), func(s string) string {
		s = strings.ReplaceAll(s, "camp-2", "camp-0")
		s = strings.ReplaceAll(s, "2026-11-29T", "2026-11-27T")
		return strings.ReplaceAll(s, coreHash, oldHash)
	})
	copyDir(t, "testdata/results/camp-2/calibration", filepath.Join(root, "camp-1", "calibration"), func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "camp-2", "camp-1"), "2026-11-29T", "2026-11-28T")
	})
	copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), nil)
	// camp-green, three days earlier, under today's definitions: every cell passed (the
	// daytona and wrong cells are the passing local reference result, re-labelled), so
	// it is the latest green campaign camp-2's regressions are checked against.
	toGreen := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "camp-2", "camp-green"), "2026-11-29T", "2026-11-26T")
	}
	copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-green"), toGreen)
	passing := "testdata/results/camp-2/core/reference/local/message-marker/attempt-2"
	copyDir(t, passing, filepath.Join(root, "camp-green", "core", "reference", "daytona", "message-marker", "attempt-1"), func(s string) string {
		s = strings.ReplaceAll(s, "core.reference.local.", "core.reference.daytona.")
		return toGreen(strings.ReplaceAll(s, `"environmentId": "local"`, `"environmentId": "daytona"`))
	})
	copyDir(t, passing, filepath.Join(root, "camp-green", "core", "wrong", "local", "message-marker", "attempt-1"), func(s string) string {
		s = strings.ReplaceAll(s, "core.reference.local.", "core.wrong.local.")
		return toGreen(strings.ReplaceAll(s, `"profileId": "reference"`, `"profileId": "wrong"`))
	})
	for _, step := range []struct {
		id  string
		cat *catalog.Catalog
		ids []string
	}{{"camp-green", cat, fixtureExpected}, {"camp-0", old, fixtureExpected}, {"camp-1", cat, fixtureExpected[:2]}} {
		if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: step.id, Catalog: step.cat, ExpectedIDs: step.ids}); err != nil {
			t.Fatalf("%s: %v", step.id, err)
		}
	}
	g, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat, ExpectedIDs: fixtureExpected})
	if err != nil {
		t.Fatal(err)
	}
	return root, cat, g
}

func readAll(t testing.TB, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range []string{result.CampaignFile, SummaryFile, JUnitFile, CTRFFile, DashboardFile, IndexFile} {
		b, err := os.ReadFile(filepath.Join(root, "camp-2", f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	b, err := os.ReadFile(filepath.Join(root, result.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	out[result.HistoryFile] = b
	return out
}

func TestGenerateGoldenAndRegenerate(t *testing.T) {
	t.Parallel()
	root, cat, g := buildFixtureHistory(t)
	files := readAll(t, root)
	for _, name := range []string{result.CampaignFile, SummaryFile, JUnitFile, CTRFFile, result.HistoryFile} {
		golden.Assert(t, string(files[name]), "golden/"+name)
	}
	if !bytes.Equal(files[DashboardFile], files[IndexFile]) {
		t.Error("index.html differs from dashboard.html")
	}
	c := g.Campaign
	if c.Selected != 5 || c.Executed != 4 || c.Passed != 3 || c.Failed != 1 || c.Inconclusive != 1 || c.Retries != 1 || c.Partial {
		t.Errorf("counts: selected %d executed %d passed %d failed %d inconclusive %d retries %d partial %v",
			c.Selected, c.Executed, c.Passed, c.Failed, c.Inconclusive, c.Retries, c.Partial)
	}
	if c.ExitCode() != 1 {
		t.Errorf("exit code %d, want 1", c.ExitCode())
	}
	h := g.History
	if len(h.Campaigns) != 4 || *h.LatestCampaignID != "camp-2" || h.LatestGreenCampaignID == nil || *h.LatestGreenCampaignID != "camp-green" {
		t.Errorf("history pointers: %d campaigns, latest %v, green %v", len(h.Campaigns), h.LatestCampaignID, h.LatestGreenCampaignID)
	}
	if h.LatestGreenBySuite["calibration"] != "camp-2" || h.LatestBySuite["core"] != "camp-2" {
		t.Errorf("suite pointers: %v %v", h.LatestBySuite, h.LatestGreenBySuite)
	}

	// Regenerating from the stored results (expected ids from campaign.json) reproduces
	// every file byte for byte.
	if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	again := readAll(t, root)
	for name, b := range files {
		if !bytes.Equal(b, again[name]) {
			t.Errorf("%s changed on regeneration:\n%s", name, cmp.Diff(string(b), string(again[name])))
		}
	}
	// Regenerating an older campaign after newer ones leaves history.json as it is.
	if _, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-0", Catalog: loadCatalog(t, func(s string) string {
		return strings.Replace(s, "    expectedMatrixSize: 3\n", "    expectedMatrixSize: 3\n    definitionMetadata: {version: 0}\n", 1)
	})}); err != nil {
		t.Fatal(err)
	}
	hist, _ := os.ReadFile(filepath.Join(root, result.HistoryFile))
	if !bytes.Equal(hist, files[result.HistoryFile]) {
		t.Error("regenerating camp-0 changed history.json")
	}
	// No temporary files are left behind by the atomic writes.
	entries, _ := os.ReadDir(filepath.Join(root, "camp-2"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover temporary file %s", e.Name())
		}
	}
}

func TestJUnitParsesStrictly(t *testing.T) {
	t.Parallel()
	root, _, _ := buildFixtureHistory(t)
	b, err := os.ReadFile(filepath.Join(root, "camp-2", JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("junit.xml does not parse strictly: %v", err)
		}
	}
	for _, bad := range []string{"\x1b", "\x00", "\x0b"} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("junit.xml contains raw %q", bad)
		}
	}
	if !bytes.Contains(b, []byte(`\x1b[31mERR`)) {
		t.Error("the ANSI escape is not shown as a visible escape")
	}
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
				} `xml:"failure"`
				Skipped *struct {
					Text string `xml:",chardata"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			switch {
			case c.Failure != nil:
				kinds[c.Name] = "failure:" + c.Failure.Type
			case c.Skipped != nil:
				kinds[c.Name] = "skipped"
				if !strings.HasPrefix(c.Skipped.Text, "inconclusive (missing): permanent_infrastructure; no result.json") {
					t.Errorf("skipped text %q", c.Skipped.Text)
				}
			default:
				kinds[c.Name] = "ok"
			}
		}
	}
	want := map[string]string{
		"calibration.fixture-fail.local.process-exit": "ok", // failed as expected
		"calibration.fixture-pass.local.process-exit": "ok",
		"core.reference.daytona.message-marker":       "failure:candidate_failure",
		"core.reference.local.message-marker":         "ok", // attempt 2 chosen
		"core.wrong.local.message-marker":             "skipped",
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("testcases (-want +got):\n%s", diff)
	}
}

func TestInconclusiveAsFailure(t *testing.T) {
	t.Parallel()
	_, _, g := buildFixtureHistory(t)
	c := *g.Campaign
	c.InconclusiveAsFailure = true
	out := string(JUnit(&c))
	if strings.Contains(out, "<skipped") || !strings.Contains(out, `type="inconclusive"`) {
		t.Errorf("inconclusive not counted as failure:\n%s", out)
	}
	if !strings.Contains(out, `failures="2"`) {
		t.Error("testsuites failures should count the inconclusive cell")
	}
	c.Failed = 0
	if c.ExitCode() != 1 {
		t.Errorf("inconclusive-as-failure exit %d, want 1", c.ExitCode())
	}
	c.InconclusiveAsFailure = false
	if c.ExitCode() != 3 {
		t.Errorf("inconclusive exit %d, want 3", c.ExitCode())
	}
}

// cardHTML returns the <details> element of one execution in a dashboard.
func cardHTML(t *testing.T, dash, id string) string {
	t.Helper()
	start := strings.Index(dash, `id="execution-`+id+`"`)
	if start < 0 {
		t.Fatalf("no card for %s", id)
	}
	// The card is a <details> that holds nested ones (the workspace diff's turns): its
	// end is the </details> that balances its opening.
	depth := 0
	for i := start; i < len(dash); {
		open := strings.Index(dash[i:], "<details")
		closing := strings.Index(dash[i:], "</details>")
		if closing < 0 {
			break
		}
		if open >= 0 && open < closing {
			depth++
			i += open + len("<details")
			continue
		}
		if depth == 0 {
			return dash[start : i+closing]
		}
		depth--
		i += closing + len("</details>")
	}
	t.Fatalf("the card of %s does not end", id)
	return ""
}

func TestDashboardXSSInert(t *testing.T) {
	t.Parallel()
	root, _, _ := buildFixtureHistory(t)
	b, err := os.ReadFile(filepath.Join(root, "camp-2", DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	dash := string(b)
	for _, bad := range []string{"<script>alert", "<img", "onerror=alert(2)>", "\x1b", "http://"} {
		if strings.Contains(dash, bad) {
			t.Errorf("dashboard contains %q", bad)
		}
	}
	if n := strings.Count(dash, "<script"); n != 1 {
		t.Errorf("want exactly the dashboard's own script, found %d <script", n)
	}
	card := cardHTML(t, dash, "core.reference.daytona.message-marker")
	if !strings.Contains(card, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(card, "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;") {
		t.Errorf("hostile text is not shown escaped:\n%s", card)
	}
	for _, attr := range []string{"href=\"javascript", "http-equiv=\"refresh", "<iframe", "<object"} {
		if strings.Contains(strings.ToLower(dash), attr) {
			t.Errorf("dashboard contains %q", attr)
		}
	}
	if !strings.Contains(dash, "default-src &#39;none&#39;") && !strings.Contains(dash, "default-src 'none'") {
		t.Error("no Content-Security-Policy with default-src 'none'")
	}
}

func TestDashboardBillingWords(t *testing.T) {
	t.Parallel()
	root, _, _ := buildFixtureHistory(t)
	b, err := os.ReadFile(filepath.Join(root, "camp-2", DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	dash := string(b)
	tests := []struct {
		id       string
		want     []string
		notWant  []string
		notMoney bool
	}{
		{id: "calibration.fixture-pass.local.process-exit", want: []string{"LLM unavailable", "runtime not metered"}, notMoney: true},
		{id: "core.reference.daytona.message-marker", want: []string{"LLM unpriced", "runtime $0.2675 est."}, notWant: []string{"LLM $0"}},
		{id: "core.reference.local.message-marker", want: []string{"LLM $0.0421 (reported)", "runtime not metered", "500 cache-write"}},
		{id: "core.wrong.local.message-marker", want: []string{"missing", "LLM unavailable"}, notMoney: true},
	}
	for _, tt := range tests {
		card := cardHTML(t, dash, tt.id)
		summary := card[:strings.Index(card, "</summary>")]
		for _, w := range tt.want {
			if !strings.Contains(summary, w) {
				t.Errorf("%s: card summary lacks %q:\n%s", tt.id, w, summary)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(summary, w) {
				t.Errorf("%s: card summary shows %q", tt.id, w)
			}
		}
		if tt.notMoney && strings.Contains(summary, "$") {
			t.Errorf("%s: unknown cost shown in dollars:\n%s", tt.id, summary)
		}
	}
	if !strings.Contains(dash, "not metered") || !strings.Contains(dash, "unavailable") || !strings.Contains(dash, "est.") {
		t.Error("coverage words missing from the dashboard")
	}
	// the card shows what the runner recorded launching each run
	card := cardHTML(t, dash, "core.reference.local.message-marker")
	for _, w := range []string{"<h3>Launched</h3>", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03", "pid 4242 · start tick 987654", "native · local", "agentproof &lt;value&gt; &lt;value&gt;"} {
		if !strings.Contains(card, w) {
			t.Errorf("the card lacks the launch fact %q", w)
		}
	}
	if strings.Contains(cardHTML(t, dash, "core.reference.daytona.message-marker"), "<h3>Launched</h3>") {
		t.Error("a result without launch facts shows a launch table")
	}
	if !strings.Contains(dash, "Cache-write input tokens") {
		t.Error("the dashboard has no cache-write tile")
	}
	sum, err := os.ReadFile(filepath.Join(root, "camp-2", SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sum), " / 500 cache-write (") {
		t.Errorf("summary.md does not show the cache-write tokens:\n%s", sum)
	}
}

func TestSecretsAreRedactedEverywhere(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const secret = "very-secret-value-0123456789"
	copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), func(s string) string {
		return strings.ReplaceAll(s, "fixture exited with code 1", "token "+secret+" rejected")
	})
	_, err := Generate(result.CampaignOptions{ResultsRoot: root, CampaignID: "camp-2", Catalog: loadCatalog(t, nil), ExpectedIDs: fixtureExpected, Secrets: redact.NewSet(secret)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{result.CampaignFile, SummaryFile, JUnitFile, DashboardFile} {
		b, _ := os.ReadFile(filepath.Join(root, "camp-2", f))
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s leaks the secret", f)
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, "camp-2", result.CampaignFile))
	if !bytes.Contains(b, []byte("token [REDACTED] rejected")) {
		t.Error("redaction marker missing from campaign.json")
	}
}

func TestMergeThreeMachines(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	fix := "testdata/results/camp-2"
	// Three machines, each with its own results root; the cell core.wrong… ran nowhere.
	a, b, c := filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "c")
	copyDir(t, filepath.Join(fix, "calibration"), filepath.Join(a, "camp-2", "calibration"), nil)
	copyDir(t, filepath.Join(fix, "core/reference/local"), filepath.Join(b, "camp-2", "core/reference/local"), nil)
	copyDir(t, filepath.Join(fix, "core/reference/daytona/message-marker/attempt-1"), filepath.Join(c, "job-17", "attempt-1"), nil)
	matrix, _ := json.Marshal(catalog.Matrix(loadCatalog(t, nil).Cells[:5]))
	ids, err := result.ParseExpectedIDs("matrix.json", matrix)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fixtureExpected, ids); diff != "" {
		t.Fatalf("expected ids (-want +got):\n%s", diff)
	}
	out := filepath.Join(tmp, "merged")
	m, err := result.Merge(result.MergeOptions{Sources: []string{a, b, c}, ResultsRoot: out})
	if err != nil {
		t.Fatal(err)
	}
	if m.CampaignID != "camp-2" || len(m.Copied) != 5 || len(m.Skipped) != 0 {
		t.Fatalf("merge: %+v", m)
	}
	g, err := Generate(result.CampaignOptions{ResultsRoot: out, CampaignID: m.CampaignID, Catalog: loadCatalog(t, nil), ExpectedIDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	camp := g.Campaign
	if camp.Selected != 5 || camp.Executed != 4 || camp.Retries != 1 || camp.Inconclusive != 1 {
		t.Errorf("merged counts: %+v", camp)
	}
	for _, r := range camp.Results {
		switch r.ExecutionID {
		case "core.wrong.local.message-marker":
			if !r.Synthetic || r.Attempt != 0 || r.Verdict != verdict.Inconclusive || r.FailureClass != verdict.PermanentInfrastructure || r.Cleanup != result.CleanupNotStarted {
				t.Errorf("missing cell: %+v", r)
			}
		case "core.reference.local.message-marker":
			if r.Attempt != 2 || r.Verdict != verdict.Passed {
				t.Errorf("retried cell: attempt %d verdict %s", r.Attempt, r.Verdict)
			}
			if len(r.Evidence) != 1 || r.Evidence[0] != "core/reference/local/message-marker/attempt-2/snapshots/api-state.json" {
				t.Errorf("evidence paths: %v", r.Evidence)
			}
		}
	}
	// Merging again copies nothing; a rerun with the same attempt number but other
	// content is kept beside the first.
	m2, err := result.Merge(result.MergeOptions{Sources: []string{a, b, c}, ResultsRoot: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Copied) != 0 || len(m2.Skipped) != 5 {
		t.Errorf("second merge: %+v", m2)
	}
	d := filepath.Join(tmp, "d")
	copyDir(t, filepath.Join(fix, "core/reference/daytona/message-marker/attempt-1"), filepath.Join(d, "x", "attempt-1"), func(s string) string {
		s = strings.Replace(s, `"verdict": "failed"`, `"verdict": "passed"`, 1)
		s = strings.Replace(s, `"failureClass": "candidate_failure",`, "", 1)
		return strings.ReplaceAll(s, "2026-11-29T11:00:03Z", "2026-11-29T12:00:03Z")
	})
	m3, err := result.Merge(result.MergeOptions{Sources: []string{d}, ResultsRoot: out, CampaignID: "camp-2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m3.Copied) != 1 || !strings.HasPrefix(m3.Copied[0], "core/reference/daytona/message-marker/attempt-1-") {
		t.Fatalf("conflicting rerun: %+v", m3)
	}
	g, err = Generate(result.CampaignOptions{ResultsRoot: out, CampaignID: "camp-2", Catalog: loadCatalog(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Campaign.Results {
		if r.ExecutionID == "core.reference.daytona.message-marker" && r.Verdict != verdict.Passed {
			t.Errorf("the later rerun should win: %s", r.Verdict)
		}
	}
}

// TestDashboardStructureGolden keeps the dashboard's element structure (every opening
// tag with its id, classes and data-* attribute names, one per line; the inline style
// and script bodies left out) in a golden file, so that a change of the page's
// structure shows in review (-update rewrites it).
func TestDashboardStructureGolden(t *testing.T) {
	t.Parallel()
	root, _, _ := buildFixtureHistory(t)
	b, err := os.ReadFile(filepath.Join(root, "camp-2", DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, string(dashboardStructure(string(b))), "golden/dashboard-structure.txt")
}

var (
	bodyOf    = regexp.MustCompile(`(?s)<(style|script)>.*?</(style|script)>`)
	openTag   = regexp.MustCompile(`<([a-z][a-z0-9]*)((?:\s+[a-zA-Z-]+(?:="[^"]*")?)*)\s*/?>`)
	attrOf    = regexp.MustCompile(`([a-zA-Z-]+)(?:="([^"]*)")?`)
	closeTags = regexp.MustCompile(`</([a-z][a-z0-9]*)>`)
)

func dashboardStructure(page string) []byte {
	page = bodyOf.ReplaceAllString(page, "<$1>")
	var out strings.Builder
	depth := 0
	void := map[string]bool{"meta": true, "link": true, "br": true, "input": true, "circle": true, "line": true, "polyline": true}
	pos := 0
	for pos < len(page) {
		o := openTag.FindStringSubmatchIndex(page[pos:])
		c := closeTags.FindStringIndex(page[pos:])
		if o == nil && c == nil {
			break
		}
		if c != nil && (o == nil || c[0] < o[0]) {
			depth = max(0, depth-1)
			pos += c[1]
			continue
		}
		tag := page[pos+o[2] : pos+o[3]]
		line := tag
		for _, a := range attrOf.FindAllStringSubmatch(page[pos+o[4]:pos+o[5]], -1) {
			switch {
			case a[1] == "id":
				line += "#" + a[2]
			case a[1] == "class":
				for _, cl := range strings.Fields(a[2]) {
					line += "." + cl
				}
			case strings.HasPrefix(a[1], "data-"):
				line += "[" + a[1] + "]"
			}
		}
		out.WriteString(strings.Repeat("  ", depth) + line + "\n")
		if !void[tag] && !strings.HasSuffix(page[pos+o[0]:pos+o[1]], "/>") {
			depth++
		}
		pos += o[1]
	}
	return []byte(out.String())
}

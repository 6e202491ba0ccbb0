package result

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// resultDoc is validResult for case cs of campaign id with the given top-level fields
// replaced (raw JSON values).
func resultDoc(t *testing.T, id, cs string, fields map[string]string) string {
	t.Helper()
	var m map[string]json.RawMessage
	doc := strings.ReplaceAll(validResult, "s.p.local.c", "s.p.local."+cs)
	doc = strings.Replace(doc, `"caseId":"c"`, `"caseId":"`+cs+`"`, 1)
	doc = strings.Replace(doc, `"campaignId":"c1"`, `"campaignId":"`+id+`"`, 1)
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		m[k] = json.RawMessage(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAssemblyResultChanged: a result.json rewritten between its summary and its
// second reading is an error, never a campaign.json that mixes two attempts.
func TestAssemblyResultChanged(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "c1", "s", "p", "local", "c", "attempt-1")
	writeResult(t, dir, validResult)
	a, err := Assemble(CampaignOptions{ResultsRoot: root, CampaignID: "c1", ExpectedIDs: []string{"s.p.local.c"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Full(0); err != nil {
		t.Fatalf("unchanged file: %v", err)
	}
	writeResult(t, dir, strings.Replace(validResult, "10:00:01Z", "10:00:02Z", 1))
	var buf bytes.Buffer
	if err := WriteCampaign(&buf, a.Campaign, a.Full); err == nil || !strings.Contains(err.Error(), "changed while the report was written") {
		t.Fatalf("got %v, want the change named", err)
	}
}

// TestReadBaselineCampaign: a regression check over the campaign.json it reads without
// the results' details is the check over the whole document — for passed, failed,
// calibration, uncleaned and missing (synthetic) cells.
func TestReadBaselineCampaign(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	failed := map[string]string{"verdict": `"failed"`, "failureClass": `"candidate_failure"`, "error": `"boom"`}
	cells := map[string]map[string]map[string]string{
		"base": {"a": nil, "b": nil, "c": failed, "d": nil},
		"now": {
			"a": failed, "b": nil,
			"c": {"verdict": `"failed"`, "failureClass": `"candidate_failure"`, "expectedVerdict": `"failed"`},
			"d": {"cleanup": `"failed"`},
		},
	}
	expected := []string{"s.p.local.a", "s.p.local.b", "s.p.local.c", "s.p.local.d", "s.p.local.e"}
	campaigns := map[string]*Campaign{}
	for id, cs := range cells {
		for cs, fields := range cs {
			writeResult(t, filepath.Join(root, id, "s", "p", "local", cs, "attempt-1"), resultDoc(t, id, cs, fields))
		}
		a, err := Assemble(CampaignOptions{ResultsRoot: root, CampaignID: id, ExpectedIDs: expected}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteCampaign(&buf, a.Campaign, a.Full); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, id, CampaignFile), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		campaigns[id] = a.Campaign
	}
	for id, other := range map[string]string{"base": "now", "now": "base"} {
		p := filepath.Join(root, id, CampaignFile)
		whole, err := ReadCampaign(p)
		if err != nil {
			t.Fatal(err)
		}
		light, err := readBaselineCampaign(p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(Compare(whole, campaigns[other]), Compare(light, campaigns[other])); diff != "" {
			t.Errorf("%s: comparison (-whole +light):\n%s", id, diff)
		}
		if whole.Regressions() != 0 || len(whole.Results) != len(expected) {
			t.Errorf("%s: %d results", id, len(whole.Results))
		}
	}
	if c := Compare(campaigns["base"], campaigns["now"]); c.Counts[Regressed] != 2 || c.Counts[Fixed] != 1 || c.Counts[StillPassing] != 1 || c.Counts[NowInconclusive] != 1 {
		t.Errorf("comparison counts: %v", c.Counts)
	}
	if err := os.WriteFile(filepath.Join(root, "summary.md"), []byte("# not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readBaselineCampaign(filepath.Join(root, "summary.md")); err == nil {
		t.Error("summary.md read as a campaign document")
	}
}

package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// ctrfSchema compiles the published CTRF schema (testdata/schemas/ctrf.schema.json),
// formats asserted.
func ctrfSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "schemas", "ctrf.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://agentproof.invalid/schemas/ctrf.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCTRFSchema: ctrf.json of the golden campaign, of a campaign with a missing cell
// (as skipped and as failure) and of a failed cell passes the published CTRF schema,
// its counts add up, and a document that breaks the schema is refused.
func TestCTRFSchema(t *testing.T) {
	t.Parallel()
	s := ctrfSchema(t)
	golden, err := os.ReadFile(filepath.Join("testdata", "golden", CTRFFile))
	if err != nil {
		t.Fatal(err)
	}
	missing := []result.Result{result.Synthetic(nil, "c", "s.p.local.c", "missing")}
	failed := missing[0]
	failed.Synthetic, failed.Attempt, failed.Verdict, failed.FailureClass = false, 2, verdict.Failed, verdict.CandidateFailure
	docs := map[string][]byte{
		"golden":            golden,
		"missing":           CTRF(result.BuildCampaign("c", nil, []string{"s.p.local.c"}, missing, nil, false)),
		"missing as failed": CTRF(result.BuildCampaign("c", nil, []string{"s.p.local.c"}, missing, nil, true)),
		"failed":            CTRF(result.BuildCampaign("c", nil, []string{"s.p.local.c"}, []result.Result{failed}, nil, false)),
	}
	for name, b := range docs {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s.Validate(inst); err != nil {
			t.Errorf("%s: ctrf.json fails the CTRF schema: %v", name, err)
		}
		var d ctrfDoc
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		sm := d.Results.Summary
		if sm.Tests != len(d.Results.Tests) || sm.Passed+sm.Failed+sm.Skipped+sm.Pending+sm.Other != sm.Tests {
			t.Errorf("%s: summary %+v does not add up to %d tests", name, sm, len(d.Results.Tests))
		}
	}
	var d map[string]any
	if err := json.Unmarshal(docs["failed"], &d); err != nil {
		t.Fatal(err)
	}
	test := d["results"].(map[string]any)["tests"].([]any)[0].(map[string]any)
	if test["status"] != "failed" || test["retries"] != float64(1) {
		t.Errorf("the failed cell is %v with %v retries", test["status"], test["retries"])
	}
	test["status"] = "inconclusive"
	if s.Validate(d) == nil {
		t.Error("a test with status \"inconclusive\" passed the CTRF schema")
	}
	if !bytes.Equal(CTRF(result.BuildCampaign("c", nil, []string{"s.p.local.c"}, missing, nil, false)), docs["missing"]) {
		t.Error("two renderings of one campaign differ")
	}
}

package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// TestEvidenceWriter: the allowlist drops what it must, a leak is recorded by file and
// reason (the file is written redacted), required files are checked, and WriteResult
// writes result.json and a valid evidence-manifest.json listing every file.
func TestEvidenceWriter(t *testing.T) {
	t.Parallel()
	const secret = "evidence-secret-value-0001"
	root := t.TempDir()
	dir := filepath.Join(root, "c", "x", "attempt-1")
	set := redact.NewSet(secret)
	w := NewEvidence(dir)
	writes := []struct {
		rel  string
		data string
		ours bool
		ok   bool
	}{
		{"fixtures.json", `{"company":"c1"}`, true, true},
		{"snapshots/api-state.json", `{"comments":[{"body":"key ` + secret + `"}]}`, true, true},
		{"logs/agent/runs/r1/stdout.log", "printed " + secret + "\n", false, true},
		{"workspace/chart.svg", "<svg/>", false, false},
		{"workspace/page.html", "<script>alert(1)</script>", false, false},
		{"logs/" + secret + ".log", "x", true, false},
	}
	for _, wr := range writes {
		if got := w.Write(set, wr.rel, []byte(wr.data), wr.ours); got != wr.ok {
			t.Errorf("write %s = %v, want %v", set.SafePath(wr.rel), got, wr.ok)
		}
	}
	if missing := w.CheckRequired(); len(missing) != 1 || missing[0] != "workspace-manifest.json" {
		t.Errorf("missing = %v", missing)
	}
	leaks := strings.Join(w.Leaks(), "\n")
	for _, want := range []string{"evidence snapshots/api-state.json: exact secret value at $.comments[0].body", "evidence logs/agent/runs/r1/stdout.log: exact secret value", "secret in the file name"} {
		if !strings.Contains(leaks, want) {
			t.Errorf("leaks lack %q:\n%s", want, leaks)
		}
	}
	o := Outcome{Judgement: verdict.Judgement{Verdict: verdict.Failed, FailureClass: verdict.SecretLeak, Reason: "secret leak: " + strings.Join(w.Leaks(), "; ")},
		CleanupConfirmed: true, Facts: &Facts{Matchers: []match.Outcome{{Kind: "run_status", Passed: true, Detail: "matched"}}}, Secrets: set, Evidence: w}
	c := loadDefault(t)
	cell := c.Cell("grader-calibration.leaky.local.message-marker")
	if cell == nil {
		t.Fatal("no leaky cell in the default catalog")
	}
	start := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	ar := &AttemptResult{Plan: AttemptPlan{CampaignID: "c", Cell: cell, Attempt: 1, Dir: "c/x/attempt-1"}, Outcome: o, StartedAt: start, FinishedAt: start}
	if err := WriteResult(root, ar); err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(filepath.Join(dir, result.EvidenceManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := result.DecodeEvidenceManifest("manifest", mb)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, ","); got != "fixtures.json,logs/agent/runs/r1/stdout.log,result.json,snapshots/api-state.json" {
		t.Errorf("manifest files = %s", got)
	}
	if len(m.Dropped) != 3 || len(m.Missing) != 1 || len(m.Leaks) < 3 {
		t.Errorf("manifest = %+v", m)
	}
	// nothing under the attempt directory holds the secret, in content or name
	leaksOnDisk, err := set.ScanTree(root, true)
	if err != nil || len(leaksOnDisk) != 0 {
		t.Errorf("results tree leaks: %+v %v", leaksOnDisk, err)
	}
	rb, _ := os.ReadFile(filepath.Join(dir, ResultFile))
	r, err := result.DecodeResult("result.json", rb)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rb), secret) || r.Verdict != verdict.Failed || r.FailureClass != verdict.SecretLeak {
		t.Errorf("result: verdict %s class %s, or it holds the secret", r.Verdict, r.FailureClass)
	}
	if !strings.Contains(strings.Join(r.Evidence, ","), result.EvidenceManifestFile) {
		t.Errorf("result evidence lacks the manifest: %v", r.Evidence)
	}
}

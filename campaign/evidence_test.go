package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/report"

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
	w := newEvidenceWriter(dir)
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
		if got := w.write(set, wr.rel, []byte(wr.data), wr.ours); got != wr.ok {
			t.Errorf("write %s = %v, want %v", set.SafePath(wr.rel), got, wr.ok)
		}
	}
	if missing := w.checkRequired(); len(missing) != 1 || missing[0] != "workspace-manifest.json" {
		t.Errorf("missing = %v", missing)
	}
	leaks := strings.Join(w.leakTexts(), "\n")
	for _, want := range []string{"evidence snapshots/api-state.json: exact secret value at $.comments[0].body", "evidence logs/agent/runs/r1/stdout.log: exact secret value", "secret in the file name"} {
		if !strings.Contains(leaks, want) {
			t.Errorf("leaks lack %q:\n%s", want, leaks)
		}
	}
	o := AttemptOutcome{Matchers: []match.Outcome{{Kind: "run_status", Passed: true}}, CleanupConfirmed: true, Leaks: w.leakTexts(), secrets: set, evidence: w}
	c := loadDefault(t)
	cell := c.Cell("grader-calibration.leaky.local.message-marker")
	if cell == nil {
		t.Fatal("no leaky cell in the default catalog")
	}
	j := Judge(o)
	if j.Verdict != verdict.Failed || j.FailureClass != verdict.SecretLeak || strings.Contains(j.Reason, secret) {
		t.Fatalf("judgement = %+v", j)
	}
	start := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	ar := &AttemptResult{Plan: AttemptPlan{CampaignID: "c", Cell: cell, Attempt: 1, Dir: "c/x/attempt-1"}, Outcome: o, Judgement: j, StartedAt: start, FinishedAt: start}
	if err := WriteResult(root, ar); err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(filepath.Join(dir, report.EvidenceManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := report.DecodeEvidenceManifest("manifest", mb)
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
	r, err := report.DecodeResult("result.json", rb)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(r.Evidence, ","), report.EvidenceManifestFile) {
		t.Errorf("result evidence lacks the manifest: %v", r.Evidence)
	}
}

// TestMissingRequiredEvidenceIsInconclusive: an attempt whose matchers all passed but
// whose required evidence is missing is inconclusive (permanent_infrastructure); a
// leak still overrides it.
func TestMissingRequiredEvidenceIsInconclusive(t *testing.T) {
	t.Parallel()
	o := AttemptOutcome{Matchers: []match.Outcome{{Kind: "run_status", Passed: true}}, CleanupConfirmed: true,
		CollectorError: "missing required evidence: workspace-manifest.json"}
	if j := Judge(o); j.Verdict != verdict.Inconclusive || j.FailureClass != verdict.PermanentInfrastructure {
		t.Errorf("judgement = %+v", j)
	}
	o.Leaks = []string{"evidence a.json: exact secret value"}
	if j := Judge(o); j.Verdict != verdict.Failed || j.FailureClass != verdict.SecretLeak {
		t.Errorf("leak must override: %+v", j)
	}
}

// TestInstanceSecrets: the master key (every encoding) and the run-token key derived
// from it are in the set, and the home's own key files are the only exception to the
// persisted-state scan.
func TestInstanceSecrets(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	master := []byte("0123456789abcdef0123456789abcdef")
	if err := os.WriteFile(filepath.Join(home, masterKeyFile), master, 0o600); err != nil {
		t.Fatal(err)
	}
	vals, err := instanceSecrets(home, "board-token-value-0001")
	if err != nil {
		t.Fatal(err)
	}
	set := redact.NewSet(vals...)
	for _, leak := range []string{"board-token-value-0001", string(master), "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "3031323334353637383961626364656630313233343536373839616263646566"} {
		if set.FindExact([]byte("x"+leak+"y")) < 0 {
			t.Errorf("instance secret form %q not in the set", leak)
		}
	}
	if set.Len() < 7 {
		t.Errorf("set has %d values, want the board token and several forms of each key", set.Len())
	}
	if !ownSecretFile(home, masterKeyFile) || ownSecretFile(home, "instance.db") {
		t.Error("ownSecretFile: only the 0600 key files are exempt")
	}
	if err := os.Chmod(filepath.Join(home, masterKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if ownSecretFile(home, masterKeyFile) {
		t.Error("a key file readable by others is not exempt")
	}
	if _, err := instanceSecrets(t.TempDir(), "x"); err == nil {
		t.Error("a home without a master key: want an error")
	}
}

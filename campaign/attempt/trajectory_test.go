package attempt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/trajectory"
)

// TestExportTrajectories writes the evidence a CLI run, a built-in run and the
// scripted model leave (real recorded streams), then exports the trajectories: one
// ATIF file next to each run's stream and one per model-log run, each referenced;
// the CLI stream cut at its bound gives a partial trajectory; a secret in a stream
// is redacted by the guard on its way into the evidence and never reaches the
// trajectory in any form; the export's own write goes through the guard too.
func TestExportTrajectories(t *testing.T) {
	t.Parallel()
	const secret = "sk-proj-trajectorysecretvalue0123456789"
	secrets := redact.NewSet(secret)
	ev := campaign.NewEvidence(t.TempDir())
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "trajectory", "testdata", "streams", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	codex := strings.Replace(string(read("codex-ask-question.jsonl")), `"text":"E2E_ASK_12_7be512955759c651"`, `"text":"E2E_ASK_12_7be512955759c651 `+secret+`"`, 1)
	ev.Write(secrets, "snapshots/api-state.json", read("board-reference-warm-three-turn/api-state.json"), true)
	ev.Write(secrets, "logs/agent/runs/hb-cli/events.jsonl", []byte(codex), false)
	ev.Write(secrets, "logs/agent/runs/hb-company-0001-fixture-wake-0001/stdout.log", read("board-reference-warm-three-turn/hb-company-0001-fixture-wake-0001.stdout.log"), false)
	ev.Write(secrets, "logs/agent/runs/hb-cut/events.jsonl", []byte(strings.Repeat(`{"type":"turn.started"}`+"\n", maxAgentLog/24+1)), false)
	ev.Write(secrets, ModelLogFile, read("model-requests-codex.jsonl"), false)
	runs := []api.HeartbeatRun{
		{RunID: "hb-cli", Driver: driver.MustParse("exec:codex"), Launch: &api.LaunchFacts{CLIName: "codex", CLIVersion: "0.171.0"}},
		{RunID: "hb-company-0001-fixture-wake-0001", Driver: driver.MustParse("reference")},
		{RunID: "hb-cut", Driver: driver.MustParse("exec:codex"), Termination: &api.Termination{}},
		{RunID: "../escape", Driver: driver.MustParse("reference")},
	}
	refs := exportTrajectories(ev, secrets, runs)
	want := []result.TrajectoryRef{
		{Path: "logs/agent/runs/hb-cli/trajectory.json", Format: trajectory.FormatCodex, RunID: "hb-cli"},
		{Path: "logs/agent/runs/hb-company-0001-fixture-wake-0001/trajectory.json", Format: trajectory.FormatBoard, RunID: "hb-company-0001-fixture-wake-0001"},
		{Path: "logs/agent/runs/hb-cut/trajectory.json", Format: trajectory.FormatCodex, RunID: "hb-cut", Partial: true},
		{Path: "logs/model-requests/run-1/trajectory.json", Format: trajectory.FormatModelLog, RunOrdinal: 1, Partial: true},
	}
	if len(refs) != len(want) {
		t.Fatalf("refs = %+v, want %d", refs, len(want))
	}
	for i, w := range want {
		r := refs[i]
		if r.Path != w.Path || r.Format != w.Format || r.RunID != w.RunID || r.RunOrdinal != w.RunOrdinal || r.Partial != w.Partial {
			t.Errorf("ref %d = %+v, want %+v", i, r, w)
		}
		b, err := os.ReadFile(filepath.Join(ev.Dir(), filepath.FromSlash(r.Path)))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Schema string `json:"schema_version"`
			Agent  struct{ Name, Version string }
			Steps  []json.RawMessage `json:"steps"`
		}
		// ATIF needs one step: a stream with none is one system step saying so
		if err := json.Unmarshal(b, &doc); err != nil || doc.Schema != trajectory.ATIFVersion || len(doc.Steps) != max(r.Steps, 1) {
			t.Errorf("%s: %v, schema %q, %d steps (ref says %d)", r.Path, err, doc.Schema, len(doc.Steps), r.Steps)
		}
		if i == 0 && (doc.Agent.Name != "codex" || doc.Agent.Version != "0.171.0") {
			t.Errorf("CLI agent = %+v", doc.Agent)
		}
		if i == 2 && !strings.Contains(strings.Join(r.Gaps, "|"), "cut at its bound") {
			t.Errorf("cut stream gaps = %q", r.Gaps)
		}
	}
	found, err := secrets.ScanTree(ev.Dir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Errorf("a secret is in the evidence after export: %+v", found)
	}
	b, _ := os.ReadFile(filepath.Join(ev.Dir(), "logs", "agent", "runs", "hb-cli", "trajectory.json"))
	if !strings.Contains(string(b), "E2E_ASK_12_7be512955759c651 [REDACTED") {
		t.Errorf("the CLI trajectory does not carry the redacted message:\n%s", b)
	}
	if leaks := ev.Leaks(); len(leaks) == 0 || !strings.Contains(strings.Join(leaks, "|"), "events.jsonl") {
		t.Errorf("the leak in the stream was not recorded: %q", leaks)
	}
}

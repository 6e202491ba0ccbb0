package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/result"
)

// transcriptStructure reduces HTML to its structure: one line per start tag with its
// class attribute, text and other attributes dropped.
func transcriptStructure(html string) string {
	tag := regexp.MustCompile(`<([a-z0-9]+)([^>]*)>`)
	class := regexp.MustCompile(`class="([^"]*)"`)
	var b strings.Builder
	for _, m := range tag.FindAllStringSubmatch(html, -1) {
		b.WriteString(m[1])
		if c := class.FindStringSubmatch(m[2]); c != nil {
			b.WriteString("." + strings.ReplaceAll(c[1], " ", "."))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestTranscriptStructureGolden renders the fixture campaign and compares the HTML
// structure of the failed card's transcript with testdata/golden/transcript.txt
// (-update rewrites it), and checks the view's texts: escaped, cut with a note,
// linked to the trajectory file, the gap listed.
func TestTranscriptStructureGolden(t *testing.T) {
	t.Parallel()
	root, _, _ := buildFixtureHistory(t)
	b, err := os.ReadFile(filepath.Join(root, "camp-2", DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	card := cardHTML(t, string(b), "core.reference.daytona.message-marker")
	start := strings.Index(card, `<div class="transcripts">`)
	if start < 0 {
		t.Fatalf("the card has no transcript:\n%s", card)
	}
	view := card[start:]
	for _, want := range []string{
		`href="core/reference/daytona/message-marker/attempt-1/logs/agent/runs/run-day-1/trajectory.json"`,
		`PAPERCLIP_E2E_OK_xyz\&#34;&gt;&lt;img src=x onerror=alert(3)&gt;`,
		"result cut here: 4500 bytes in all, in the trajectory file",
		"the stream ended without turn.completed or turn.failed",
		`data-partial="true"`,
	} {
		if !strings.Contains(view, want) {
			t.Errorf("the transcript lacks %q", want)
		}
	}
	got := transcriptStructure(view)
	golden.Assert(t, got, "golden/transcript.txt")
}

// TestLoadTranscriptBounds: a file that is missing or not ATIF is a problem shown,
// never an error; a long trajectory shows at most TranscriptSteps steps and about
// TranscriptBytes of text, the rest counted.
func TestLoadTranscriptBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var steps []map[string]any
	for i := 1; i <= 500; i++ {
		steps = append(steps, map[string]any{"step_id": i, "source": "agent", "message": strings.Repeat("x", 300)})
	}
	big, _ := json.Marshal(map[string]any{"schema_version": "ATIF-v1.7", "agent": map[string]string{"name": "a", "version": "1"}, "steps": steps})
	for name, body := range map[string][]byte{"big.json": big, "bad.json": []byte("{not json")} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := &result.Campaign{Results: []result.Result{{Trajectories: []result.TrajectoryRef{
		{Path: "big.json", Format: "f", RunID: "r1", Steps: 500},
		{Path: "bad.json", Format: "f", RunID: "r2"},
		{Path: "gone.json", Format: "f", RunID: "r3"},
		{Path: "../escape.json", Format: "f", RunID: "r4"},
	}}}}
	ts := LoadTranscripts(dir, c)
	if len(ts) != 3 {
		t.Fatalf("%d transcripts, want 3 (the unsafe path is not read)", len(ts))
	}
	bigT := ts["big.json"]
	shown := 0
	for _, s := range bigT.Steps {
		shown += len(s.Message)
	}
	if bigT.Problem != "" || len(bigT.Steps) > TranscriptSteps || bigT.Hidden != 500-len(bigT.Steps) || shown > TranscriptBytes+300 {
		t.Errorf("big: %d steps shown (%d bytes), %d hidden, problem %q", len(bigT.Steps), shown, bigT.Hidden, bigT.Problem)
	}
	for name, want := range map[string]string{"bad.json": "not an ATIF document", "gone.json": "could not be read"} {
		if p := ts[name].Problem; !strings.Contains(p, want) {
			t.Errorf("%s: problem %q, want %q", name, p, want)
		}
	}
	// The view of a long trajectory says how much it left out.
	v := &dashView{Suites: []suiteView{{Rows: []rowView{{Cells: [][]cardView{{{R: &c.Results[0]}}}}}}}}
	addTranscripts(v, ts)
	if got := len(v.Suites[0].Rows[0].Cells[0][0].Transcripts); got != 3 {
		t.Errorf("card has %d transcripts, want 3", got)
	}
}

// TestLoadTranscriptReadsEveryATIFVersion: the transcript view reads trajectories of
// older ATIF versions (v1.2: no trajectory_id, a plain session id) and of v1.8 (an
// audio content part, named in the text) alike; the version string is never a reason
// to refuse one.
func TestLoadTranscriptReadsEveryATIFVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := map[string]string{
		"v12.json": `{"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 1, "source": "user", "message": "hello"}, {"step_id": 2, "source": "agent", "message": "hi", "metrics": {"prompt_tokens": 3, "completion_tokens": 1}}]}`,
		"v18.json": `{"schema_version": "ATIF-v1.8", "agent": {"name": "a", "version": "1"}, "steps": [{"step_id": 1, "source": "user", "message": [{"type": "text", "text": "listen"}, {"type": "audio", "source": {"media_type": "audio/wav", "path": "q.wav", "duration_sec": 1.5}}]}]}`,
	}
	for name, body := range docs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := loadTranscript(filepath.Join(dir, "v12.json"), result.TrajectoryRef{Path: "v12.json"})
	if old.Problem != "" || len(old.Steps) != 2 || old.Steps[0].Message != "hello" || old.Steps[1].Tokens == "" {
		t.Errorf("v1.2: %+v", old)
	}
	audio := loadTranscript(filepath.Join(dir, "v18.json"), result.TrajectoryRef{Path: "v18.json"})
	if audio.Problem != "" || len(audio.Steps) != 1 || audio.Steps[0].Message != "listen\n[audio]" {
		t.Errorf("v1.8: %+v", audio)
	}
}

package attempt

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
)

// TestMatchObservationRedactsEncodedCopies: a message that holds an encoded copy of a
// secret (hex, base64) is graded, but no matcher outcome repeats the copy: the
// observation's secrets are every form of the set, not only the values.
func TestMatchObservationRedactsEncodedCopies(t *testing.T) {
	t.Parallel()
	secret := "apf-credential-0123456789abcdef"
	for _, copy := range []string{hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret))),
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawURLEncoding.EncodeToString([]byte("xy" + secret))[3:]} {
		st := &controlplane.State{
			Tasks:    []*controlplane.Task{{ID: "t-1", Status: "done"}},
			Comments: []*controlplane.Comment{{ID: "c-1", TaskID: "t-1", Body: "here: " + copy}},
			Runs:     []*controlplane.Run{{ID: "r-1", TaskID: "t-1", Status: "succeeded", Result: json.RawMessage(`{"result":{"presentationDecision":{"commentId":"c-1"}}}`)}},
		}
		obs := matchObservation(st, &Fixtures{TaskID: "t-1", Secrets: redact.NewSet(secret)}, st.Runs, nil, nil, nil)
		if obs.Message != "here: "+copy {
			t.Fatalf("message %q, want the posted comment", obs.Message)
		}
		m, err := match.Compile(match.Spec{Kind: "message_exact", Expected: "MARK"})
		if err != nil {
			t.Fatal(err)
		}
		out := m.Evaluate(obs)
		if out.Passed {
			t.Fatalf("message_exact passed on %q", obs.Message)
		}
		b, _ := json.Marshal(out)
		if strings.Contains(string(b), copy) {
			t.Errorf("the outcome repeats the encoded copy %q: %s", copy, b)
		}
	}
}

// TestObservedFilesApply: the downloaded home becomes HomeFiles; each artifact gets the
// bytes downloaded for it (same order), an artifact left undownloaded stays so (its
// byte matchers are not reached), and the composite JSON gains homeFiles and
// homeReceipts.
func TestObservedFilesApply(t *testing.T) {
	t.Parallel()
	st := &controlplane.State{
		Tasks: []*controlplane.Task{{ID: "t-1", Status: "done"}, {ID: "t-2", Status: "done"}},
		Artifacts: []*controlplane.Artifact{{ID: "a-1", TaskID: "t-1", Filename: "one.bin", SHA256: "x"}, {ID: "a-9", TaskID: "t-9", Filename: "other.bin"},
			{ID: "a-2", TaskID: "t-2", Filename: "two.bin", SHA256: "y"}},
	}
	obs := matchObservation(st, &Fixtures{TaskID: "t-1", Secrets: redact.NewSet()}, nil, nil, nil, nil, "t-2")
	if len(obs.Artifacts) != 2 {
		t.Fatalf("artifacts %+v, want those of t-1 and t-2", obs.Artifacts)
	}
	files := observedFiles{
		home:      homeListing{ActorID: "agent-1", Files: []controlplane.ManagedFile{{Path: "bin/k.bin", Revision: 1}}, Downloaded: true},
		homeBytes: map[string][]byte{"bin/k.bin": {0, 0xff}},
		receipts:  []controlplane.HomeReceipt{{ID: "r-1", RunID: "run-1"}},
		artifacts: [][]byte{nil, []byte("two")},
	}
	files.apply(obs)
	if !obs.HasHomeFiles || string(obs.HomeFiles["bin/k.bin"]) != "\x00\xff" {
		t.Errorf("home files %v (%v)", obs.HomeFiles, obs.HasHomeFiles)
	}
	if obs.Artifacts[0].Downloaded || !obs.Artifacts[1].Downloaded || string(obs.Artifacts[1].Content) != "two" {
		t.Errorf("artifacts %+v", obs.Artifacts)
	}
	var doc struct {
		HomeFiles    homeListing                `json:"homeFiles"`
		HomeReceipts []controlplane.HomeReceipt `json:"homeReceipts"`
		Tasks        []controlplane.Task        `json:"tasks"`
	}
	if err := json.Unmarshal(obs.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.HomeFiles.Files[0].Path != "bin/k.bin" || doc.HomeReceipts[0].ID != "r-1" || len(doc.Tasks) != 2 {
		t.Errorf("composite JSON %s", obs.JSON)
	}
	if obs.IssueStatus != "done" {
		t.Errorf("issue status %q, want the last task's", obs.IssueStatus)
	}
	// a home past the download bound is not downloaded: HasHomeFiles stays false
	partial := matchObservation(st, &Fixtures{TaskID: "t-1", Secrets: redact.NewSet()}, nil, nil, nil, nil)
	observedFiles{home: homeListing{Files: []controlplane.ManagedFile{}}}.apply(partial)
	if partial.HasHomeFiles {
		t.Error("a home that was not downloaded whole is observed as downloaded")
	}
}

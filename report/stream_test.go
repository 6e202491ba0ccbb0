package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/redact"
)

// assertAsInMemory checks that the files Generate wrote for campaign id under root —
// from result summaries, each result read whole again one at a time — are the bytes
// the renderers give over the whole campaign in memory (campaign.json read back, with
// every result whole): campaign.json, summary.md, junit.xml, dashboard.html (with its
// transcripts) and index.html.
func assertAsInMemory(t *testing.T, root, id string, cat *catalog.Catalog) {
	t.Helper()
	dir := filepath.Join(root, id)
	c, err := ReadCampaign(filepath.Join(dir, CampaignFile))
	if err != nil {
		t.Fatal(err)
	}
	hist, _, err := ReadHistory(filepath.Join(root, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	campaignJSON, err := encodeJSON(c)
	if err != nil {
		t.Fatal(err)
	}
	dash, err := Dashboard(c, cat, hist.Upto(c.GeneratedAt, c.CampaignID), LoadTranscripts(dir, c))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{CampaignFile: campaignJSON, SummaryFile: Summary(c), JUnitFile: JUnit(c), DashboardFile: dash, IndexFile: dash} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/%s differs from the in-memory rendering:\n%s", id, name, cmp.Diff(string(want), string(got)))
		}
	}
}

// TestGenerateAsInMemory: for the fixture history (retries, a failed and an
// inconclusive cell, a synthetic one, candidate notes, regressions against a green
// campaign, transcripts), with secrets to redact, and for a repeated campaign, the
// streamed files are the in-memory rendering's.
func TestGenerateAsInMemory(t *testing.T) {
	t.Parallel()
	t.Run("history", func(t *testing.T) {
		t.Parallel()
		root, cat, _ := buildFixtureHistory(t)
		for _, id := range []string{"camp-green", "camp-2"} {
			assertAsInMemory(t, root, id, cat)
		}
	})
	t.Run("secrets", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		const secret = "very-secret-value-0123456789"
		copyDir(t, "testdata/results/camp-2", filepath.Join(root, "camp-2"), func(s string) string {
			return strings.ReplaceAll(s, "fixture exited with code 1", "token "+secret+" rejected")
		})
		cat := loadCatalog(t, nil)
		if _, err := Generate(Options{ResultsRoot: root, CampaignID: "camp-2", Catalog: cat, ExpectedIDs: fixtureExpected, Secrets: redact.NewSet(secret)}); err != nil {
			t.Fatal(err)
		}
		assertAsInMemory(t, root, "camp-2", cat)
	})
	t.Run("repeats", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		base := filepath.Join(root, "c1", "s", "p", "local", "c")
		rep := func(k int, doc string) string {
			return strings.Replace(doc, `"attempt":1`, fmt.Sprintf(`"attempt":1,"repetition":%d,"repeat":3`, k), 1)
		}
		failed := strings.Replace(validResult, `"verdict":"passed"`, `"verdict":"failed","failureClass":"candidate_failure"`, 1)
		failed = strings.Replace(failed, `"passed":true,"detail":"matched"`, `"passed":false,"expected":"succeeded","observed":"failed","detail":"run failed"`, 1)
		writeResult(t, filepath.Join(base, "repeat-1", "attempt-1"), rep(1, validResult))
		writeResult(t, filepath.Join(base, "repeat-2", "attempt-1"), rep(2, failed))
		writeResult(t, filepath.Join(base, "repeat-3", "attempt-1"), rep(3, validResult))
		if _, err := Generate(Options{ResultsRoot: root, CampaignID: "c1", Repeat: 3}); err != nil {
			t.Fatal(err)
		}
		assertAsInMemory(t, root, "c1", nil)
	})
}

// TestGenerateResultChanged: a result.json rewritten between its summary and its
// second reading is an error, never a campaign.json that mixes two attempts.
func TestGenerateResultChanged(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "c1", "s", "p", "local", "c", "attempt-1")
	writeResult(t, dir, validResult)
	cands, err := LoadCandidates(filepath.Join(root, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	results, _, _, _, sources := chooseRepeated(nil, "c1", []string{"s.p.local.c"}, cands, 1)
	rr := &resultReader{dir: filepath.Join(root, "c1"), results: results, sources: sources}
	if _, err := rr.full(0); err != nil {
		t.Fatalf("unchanged file: %v", err)
	}
	writeResult(t, dir, strings.Replace(validResult, "10:00:01Z", "10:00:02Z", 1))
	var buf bytes.Buffer
	if err := writeCampaignJSON(&buf, buildCampaign("c1", nil, []string{"s.p.local.c"}, results, nil, false), rr.full); err == nil || !strings.Contains(err.Error(), "changed while the report was written") {
		t.Fatalf("got %v, want the change named", err)
	}
}

// TestGuardedWriterAsWrite: a guarded write in pieces ends as Guard.Write over the whole
// content does — the same bytes on disk, size, digest, leaks, withholding and error —
// for clean and leaking text, JSON (escaped values, keys, numbers, shapes), an image,
// JSON that does not parse, and a refused kind.
func TestGuardedWriterAsWrite(t *testing.T) {
	t.Parallel()
	const secret = "guard-secret-0123456789"
	g := Guard{Secrets: redact.NewSet(secret)}
	big := strings.Repeat("<tr><td>clean cell</td></tr>\n", 5000)
	cases := []struct{ name, content string }{
		{"clean.html", big},
		{"exact.html", big + "<p>" + secret + "</p>" + big},
		{"split.md", big + secret},
		{"shape.txt", big + "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123\n"},
		{"spaced.log", big + "OPENAI_API_KEY=" + strings.Repeat(" ", 70000) + "abcdefghijklmnop\n"},
		{"clean.json", `{"a": [1, 2, {"b": "` + strings.Repeat("x", 100000) + `"}], "c": null}` + "\n"},
		{"escaped.json", `{"note": "\u0067uard-secret-0123456789"}`},
		{"key.json", `{"guard-secret-0123456789": 1}`},
		{"number.json", `{"n": 12345678901234567890}`},
		{"shape.json", `{"auth": "sk-ant-abcdefghijklmnopqrstuvwx"}`},
		// above maxCleanJSON: read back token by token only
		{"bigclean.json", `{"a": "` + strings.Repeat("y", maxCleanJSON) + `"}`},
		{"bigshape.json", `{"a": "` + strings.Repeat("y ", maxCleanJSON/2) + `", "auth": "sk-ant-abcdefghijklmnopqrstuvwx"}`},
		{"notjson.json", `{"a": `},
		{"image.png", "\x89PNG" + secret},
		{"script.js", "alert(1)"},
	}
	num := Guard{Secrets: redact.NewSet(secret, "12345678901234567890")}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := g
			if tc.name == "number.json" {
				g = num
			}
			dir := t.TempDir()
			want, wantErr := g.Write(filepath.Join(dir, "whole", tc.name), []byte(tc.content), true)
			var got GuardedFile
			var err error
			w, err := g.Create(filepath.Join(dir, "pieces", tc.name), true)
			if err == nil {
				for i := 0; i < len(tc.content); i += 1000 {
					if _, err := w.WriteString(tc.content[i:min(len(tc.content), i+1000)]); err != nil {
						t.Fatal(err)
					}
				}
				got, err = w.Close()
			}
			if (err == nil) != (wantErr == nil) || (err != nil && errors.Is(err, redact.ErrLeak) != errors.Is(wantErr, redact.ErrLeak)) {
				t.Fatalf("error %v, Write's %v", err, wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("guarded file (-Write +pieces):\n%s", diff)
			}
			a, errA := os.ReadFile(filepath.Join(dir, "whole", tc.name))
			b, errB := os.ReadFile(filepath.Join(dir, "pieces", tc.name))
			if !bytes.Equal(a, b) || (errA == nil) != (errB == nil) {
				t.Errorf("written bytes differ (%v, %v)", errA, errB)
			}
			if entries, _ := os.ReadDir(filepath.Join(dir, "pieces")); len(entries) > 1 || (errB != nil && len(entries) > 0) {
				t.Errorf("leftover files: %v", entries)
			}

			// Staged, then committed: the same file, absent until the commit.
			staged := filepath.Join(dir, "staged", tc.name)
			var gs GuardedFile
			var st StagedFile
			w, err = g.Create(staged, true)
			if err == nil {
				if _, err := w.WriteString(tc.content); err != nil {
					t.Fatal(err)
				}
				gs, st, err = w.Stage()
			}
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("Stage error %v, Write's %v", err, wantErr)
			}
			if diff := cmp.Diff(want, gs); diff != "" {
				t.Errorf("guarded file (-Write +staged):\n%s", diff)
			}
			if _, err := os.Stat(staged); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("staged file in place before the commit: %v", err)
			}
			if err == nil {
				if err := CommitStaged([]StagedFile{st}); err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(staged); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("committed file: %v %v", fi, err)
				}
			}
			c, errC := os.ReadFile(staged)
			if !bytes.Equal(a, c) || (errA == nil) != (errC == nil) {
				t.Errorf("staged bytes differ (%v, %v)", errA, errC)
			}
			if entries, _ := os.ReadDir(filepath.Dir(staged)); len(entries) > 1 || (errC != nil && len(entries) > 0) {
				t.Errorf("leftover staged files: %v", entries)
			}
		})
	}
}

// TestCommitStaged: staged files in two directories appear together after the commit;
// a commit that fails (a destination directory gone) removes every temporary file not
// yet renamed, and DiscardStaged leaves nothing.
func TestCommitStaged(t *testing.T) {
	t.Parallel()
	g := Guard{Secrets: redact.NewSet("commit-secret-0123456789")}
	stage := func(t *testing.T, p, content string) StagedFile {
		t.Helper()
		w, err := g.Create(p, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteString(content); err != nil {
			t.Fatal(err)
		}
		_, st, err := w.Stage()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "c", "summary.md"), filepath.Join(dir, "history.json")
	if err := os.WriteFile(b, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []StagedFile{stage(t, a, "# new\n"), stage(t, b, `{"new": true}`+"\n")}
	if got, _ := os.ReadFile(b); string(got) != "old\n" {
		t.Fatalf("history.json before the commit: %q", got)
	}
	if err := CommitStaged(files); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{a: "# new\n", b: `{"new": true}` + "\n"} {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", p, got, err)
		}
	}

	gone := filepath.Join(dir, "gone")
	files = []StagedFile{stage(t, filepath.Join(dir, "c", "junit.xml"), "<testsuites/>\n"), stage(t, filepath.Join(gone, "x.md"), "x\n")}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if err := CommitStaged(files); err == nil {
		t.Fatal("commit into a removed directory: no error")
	}
	DiscardStaged([]StagedFile{stage(t, filepath.Join(dir, "c", "dashboard.html"), "<html></html>\n")})
	entries, err := os.ReadDir(filepath.Join(dir, "c"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"summary.md"}) {
		t.Errorf("files after a failed commit and a discard: %v, want only summary.md", names)
	}
}

// TestReadBaselineCampaign: a regression check over the campaign.json it reads without
// the results' details is the check over the whole document.
func TestReadBaselineCampaign(t *testing.T) {
	t.Parallel()
	root, _, g := buildFixtureHistory(t)
	for _, id := range []string{"camp-green", "camp-0", "camp-2"} {
		p := filepath.Join(root, id, CampaignFile)
		whole, err := ReadCampaign(p)
		if err != nil {
			t.Fatal(err)
		}
		light, err := readBaselineCampaign(p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(Compare(whole, g.Campaign), Compare(light, g.Campaign)); diff != "" {
			t.Errorf("%s: comparison (-whole +light):\n%s", id, diff)
		}
	}
	if _, err := readBaselineCampaign(filepath.Join(root, "camp-2", SummaryFile)); err == nil {
		t.Error("summary.md read as a campaign document")
	}
}

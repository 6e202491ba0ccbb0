package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	wsource "github.com/agentproof/agentproof/workspace/source"
)

// withWorkspace returns baseB with the case hello declaring the workspace decl (a YAML
// flow mapping).
func withWorkspace(t *testing.T, decl string) string {
	return mustReplace(t, baseB, "    workMode: standard\n", "    workMode: standard\n    workspace: "+decl+"\n")
}

// TestWorkspaceSourceOfADirectory: a case's directory source resolves relative to its
// catalog file, its digest is the tree's, it is part of the suite definition (a changed
// file changes the fingerprint), and the YAML below files/ is never read as catalog.
func TestWorkspaceSourceOfADirectory(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"a.yaml": baseA, "b.yaml": withWorkspace(t, "{dir: files/repo}"),
		"files/repo/go.mod": "module x\n", "files/repo/broken.yaml": "not: [a catalog",
	})
	c, err := LoadDir(dir, WithFlows(testFlows...))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Cells[0].Workspace()
	if w == nil || w.Source.Kind != wsource.KindDir {
		t.Fatalf("cell workspace = %+v", w)
	}
	want, err := wsource.TreeDigest(os.DirFS(filepath.Join(dir, "files", "repo")), wsource.Limits{})
	if err != nil || w.Source.Digest != want {
		t.Fatalf("digest %q (%v), want %q", w.Source.Digest, err, want)
	}
	before := c.Suite("core").Fingerprint
	if err := os.WriteFile(filepath.Join(dir, "files", "repo", "go.mod"), []byte("module y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c2, err := LoadDir(dir, WithFlows(testFlows...))
	if err != nil {
		t.Fatal(err)
	}
	if c2.Suite("core").Fingerprint == before {
		t.Error("a changed workspace file keeps the suite's fingerprint")
	}
	plain, err := loadFiles(map[string]string{"a.yaml": baseA, "b.yaml": baseB})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Suite("core").Fingerprint == before {
		t.Error("a workspace source is not part of the suite definition")
	}
}

// TestWorkspaceSourceRefusals: every bad declaration is refused at the case's
// workspace, naming the field and why.
func TestWorkspaceSourceRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, decl, want string }{
		{"branch", "{git: ../repo, commit: main}", "commit"},
		{"short commit", "{git: ../repo, commit: abc1234}", "commit"},
		{"no commit", "{git: ../repo}", "commit"},
		{"two kinds", "{dir: files/repo, tar: files/w.tar}", "workspace"},
		{"missing dir", "{dir: files/nowhere}", "files/nowhere"},
		{"missing tar", "{tar: files/none.tar}", "files/none.tar"},
		{"not an archive", "{tar: files/repo}", "tar"},
		{"commit without git", "{dir: files/repo, commit: " + strings.Repeat("a", 40) + "}", "commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, map[string]string{"a.yaml": baseA, "b.yaml": withWorkspace(t, tc.decl), "files/repo/x": "x"})
			_, err := LoadDir(dir, WithFlows(testFlows...))
			if err == nil {
				t.Fatalf("%s loaded", tc.decl)
			}
			msg := err.Error()
			if !strings.Contains(msg, "b.yaml:") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want one at b.yaml naming %q", msg, tc.want)
			}
		})
	}
}

// TestWorkspaceSourceOfGitAndTar: a git source keeps its commit as its digest and its
// repository path made absolute; an archive's digest is its bytes'.
func TestWorkspaceSourceOfGitAndTar(t *testing.T) {
	t.Parallel()
	commit := strings.Repeat("0123456789", 4)
	dir := writeTree(t, map[string]string{"a.yaml": baseA, "b.yaml": withWorkspace(t, "{git: ../repo, commit: \""+commit+"\"}")})
	c, err := LoadDir(dir, WithFlows(testFlows...))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Cells[0].Workspace().Source
	if s.Digest != "git:"+commit || s.Repo != filepath.Join(filepath.Dir(dir), "repo") {
		t.Errorf("git source = %+v", s)
	}
	dir = writeTree(t, map[string]string{"a.yaml": baseA, "b.yaml": withWorkspace(t, "{tar: files/w.tar}"), "files/w.tar": "bytes"})
	c, err = LoadDir(dir, WithFlows(testFlows...))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := wsource.FileDigest(os.DirFS(filepath.Join(dir, "files")), "w.tar")
	if s := c.Cells[0].Workspace().Source; s.Digest != want || s.Kind != wsource.KindTar {
		t.Errorf("tar source = %+v, want digest %s", s, want)
	}
}

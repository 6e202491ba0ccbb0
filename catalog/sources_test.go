package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mineSuite is a user's suite that references only declarations of the default catalog.
const mineSuite = `suites:
  - id: mine
    label: Mine
    description: My suite over the default catalog's profiles, environment and case.
    profiles: [codex, reference]
    environments: [local]
    cases: [message-marker]
    expectedMatrixSize: 2
`

// writeTree writes files (slash paths relative to dir) and returns dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// problemsOf returns the problems of a *ValidationError, failing the test on any other
// outcome.
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a *ValidationError", err)
	}
	var out []string
	for _, p := range ve.Problems {
		out = append(out, p.String())
	}
	return out
}

// TestLoadSourcesWithDefault: a user's suite naming the default catalog's codex,
// reference, local and message-marker loads with Sources.Default; the default suites
// keep their fingerprints; without Default the same file names the unknown ids.
func TestLoadSourcesWithDefault(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"mine.yaml": mineSuite})
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadSources(Sources{Default: true, Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(c.Suites), len(def.Suites)+1; got != want {
		t.Fatalf("%d suites, want %d", got, want)
	}
	for _, s := range def.Suites {
		if c.Suite(s.ID).Fingerprint != s.Fingerprint {
			t.Errorf("suite %s: fingerprint changed by merging", s.ID)
		}
	}
	cells, err := c.Select(Selector{Suites: []string{"mine"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, cell := range cells {
		ids = append(ids, cell.ID)
	}
	if got := strings.Join(ids, " "); got != "mine.codex.local.message-marker mine.reference.local.message-marker" {
		t.Fatalf("cells %s", got)
	}
	_, err = LoadSources(Sources{Paths: []string{dir}})
	got := strings.Join(problemsOf(t, err), "\n")
	for _, want := range []string{`suite mine names unknown profile "codex"`, `unknown case "message-marker"`} {
		if !strings.Contains(got, want) {
			t.Errorf("without the default catalog, want a problem containing %q; got\n%s", want, got)
		}
	}
}

// TestLoadSourcesMerge: two paths (a directory and a single file) merge into one
// catalog in the order given; an id declared in both is a duplicate naming both files;
// overlapping paths and an empty Sources are problems; a missing path wraps
// fs.ErrNotExist.
func TestLoadSourcesMerge(t *testing.T) {
	t.Parallel()
	a := writeTree(t, map[string]string{"a.yaml": baseA})
	b := writeTree(t, map[string]string{"sub/b.yaml": baseB})
	bFile := filepath.Join(b, "sub", "b.yaml")
	c, err := LoadSources(Sources{Paths: []string{a, bFile}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cells) != 1 || c.Cells[0].ID != "core.agent.local.hello" {
		t.Fatalf("cells %v", c.Cells)
	}

	t.Run("duplicate id across parts names both files", func(t *testing.T) {
		t.Parallel()
		again := writeTree(t, map[string]string{"again.yaml": "groups:\n  - {id: core, description: Again.}\n"})
		got := problemsOf(t, func() error { _, err := LoadSources(Sources{Paths: []string{a, b, again}}); return err }())
		want := "^" + regexp.QuoteMeta(filepath.ToSlash(again)+"/again.yaml:2:10: duplicate group id \"core\" (first declared at "+filepath.ToSlash(a)+"/a.yaml:2:10)") + "$"
		if len(got) != 1 || !regexp.MustCompile(want).MatchString(got[0]) {
			t.Fatalf("problems %q, want one matching %s", got, want)
		}
	})
	t.Run("duplicate of a default declaration names the default file", func(t *testing.T) {
		t.Parallel()
		mine := writeTree(t, map[string]string{"p.yaml": "cases:\n" + baseB[strings.Index(baseB, "  - id: hello"):strings.Index(baseB, "suites:")] +
			"  - id: message-marker\n    label: Mine\n    workMode: standard\n    flow: single_turn\n    expectedRunCount: 1\n    attemptTimeoutMs: {local: 1000}\n" +
			"    expectedTerminalState: {issue: done, run: succeeded}\n    title: t\n    prompt: p\n    marker: \"M_{{nonce}}\"\n    matchers:\n      - {kind: message_exact, expected: \"{{marker}}\"}\n"})
		got := strings.Join(problemsOf(t, func() error { _, err := LoadSources(Sources{Default: true, Paths: []string{mine}}); return err }()), "\n")
		if !regexp.MustCompile(`p\.yaml:\d+:9: duplicate case id "message-marker" \(first declared at catalog/default/cases\.yaml:\d+:9\)`).MatchString(got) {
			t.Fatalf("problems:\n%s", got)
		}
	})
	t.Run("overlapping paths", func(t *testing.T) {
		t.Parallel()
		got := problemsOf(t, func() error { _, err := LoadSources(Sources{Paths: []string{b, bFile}}); return err }())
		want := filepath.ToSlash(bFile) + ": is the same file as " + filepath.ToSlash(b) + "/sub/b.yaml: two catalog paths include it"
		if len(got) != 1 || !strings.HasPrefix(got[0], want) {
			t.Fatalf("problems %q, want one starting %q", got, want)
		}
	})
	t.Run("no part", func(t *testing.T) {
		t.Parallel()
		got := problemsOf(t, func() error { _, err := LoadSources(Sources{}); return err }())
		if len(got) != 1 || !strings.HasPrefix(got[0], "no catalog") {
			t.Fatalf("problems %q", got)
		}
	})
	t.Run("missing path", func(t *testing.T) {
		t.Parallel()
		_, err := LoadSources(Sources{Default: true, Paths: []string{a, filepath.Join(a, "nope")}})
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("a part without yaml files", func(t *testing.T) {
		t.Parallel()
		empty := t.TempDir()
		got := problemsOf(t, func() error { _, err := LoadSources(Sources{Paths: []string{a, empty}}); return err }())
		if len(got) != 1 || got[0] != "catalog "+empty+" has no *.yaml files" {
			t.Fatalf("problems %q", got)
		}
	})
}

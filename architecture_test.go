package agentproof_test

import (
	"bufio"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/agentproof/agentproof"

// tableRow is one row of the "## Packages" table of docs/ARCHITECTURE.md: a package
// (relative to the module) and the module packages it imports.
var tableRow = regexp.MustCompile("^\\| `([a-z0-9/]+)` \\|[^|]*\\| ([^|]*) \\|$")

var quoted = regexp.MustCompile("`([a-z0-9/]+)`")

// documentedImports parses the package table of docs/ARCHITECTURE.md.
func documentedImports(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	inTable := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inTable = line == "## Packages"
			continue
		}
		m := tableRow.FindStringSubmatch(line)
		if !inTable || m == nil {
			continue
		}
		if _, dup := out[m[1]]; dup {
			t.Errorf("docs/ARCHITECTURE.md lists package %s twice", m[1])
		}
		imports := []string{}
		for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
			imports = append(imports, q[1])
		}
		slices.Sort(imports)
		out[m[1]] = imports
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("docs/ARCHITECTURE.md has no package table under \"## Packages\"")
	}
	return out
}

// actualImports lists every package of the module that has non-test Go files, with the
// module packages it imports (go/build, the default build context: what `go list`
// reports as Imports).
func actualImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); p != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != "." {
			return filepath.SkipDir // another module (third_party/): not the module's packages
		}
		pkg, err := build.Default.ImportDir(p, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		if len(pkg.GoFiles) == 0 {
			return nil // test-only, like this file's
		}
		imports := []string{}
		for _, imp := range pkg.Imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				imports = append(imports, rel)
			}
		}
		slices.Sort(imports)
		out[filepath.ToSlash(p)] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArchitectureTable: docs/ARCHITECTURE.md's package table is true to the code —
// every package of the module has a row, every row names a package, and each row
// lists exactly the module packages its package imports. A package that starts
// importing something else must change the table (and the architecture) on purpose.
func TestArchitectureTable(t *testing.T) {
	t.Parallel()
	doc, code := documentedImports(t), actualImports(t)
	for pkg, imports := range code {
		want, ok := doc[pkg]
		if !ok {
			t.Errorf("package %s has no row in docs/ARCHITECTURE.md", pkg)
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(want, imp) {
				t.Errorf("package %s imports %s, which its row in docs/ARCHITECTURE.md does not allow", pkg, imp)
			}
		}
		for _, imp := range want {
			if !slices.Contains(imports, imp) {
				t.Errorf("docs/ARCHITECTURE.md says package %s imports %s; it does not (remove it from the row)", pkg, imp)
			}
		}
	}
	for pkg := range doc {
		if _, ok := code[pkg]; !ok {
			t.Errorf("docs/ARCHITECTURE.md has a row for %s, which is not a package of the module", pkg)
		}
	}
	if doc["verdict"] == nil || len(doc["verdict"]) != 0 {
		t.Error("package verdict must import nothing of the module (it is the bottom of the vocabulary)")
	}
}

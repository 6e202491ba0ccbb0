package agentproof_test

import (
	"bufio"
	"fmt"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// layerRow is one row of the "## Layers" table of docs/ARCHITECTURE.md:
// "| <number> <name> | <packages> | <floors it may import> |".
var layerRow = regexp.MustCompile(`^\| (\d+) ([^|]+?) \| ([^|]*) \| ([^|]*) \|$`)

var floorNumber = regexp.MustCompile(`\d+`)

// floor is one floor of the layering rule: its number (0 is the bottom), its name,
// its packages (relative to the module) and the floors its packages may import.
type floor struct {
	n        int
	name     string
	packages []string
	imports  []int
}

// documentedLayers parses the "## Layers" table of docs/ARCHITECTURE.md.
func documentedLayers(t *testing.T) []floor {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var floors []floor
	inTable := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "## ") {
			inTable = line == "## Layers"
			continue
		}
		m := layerRow.FindStringSubmatch(line)
		if !inTable || m == nil {
			continue
		}
		f := floor{name: m[2]}
		f.n, _ = strconv.Atoi(m[1])
		for _, q := range quoted.FindAllStringSubmatch(m[3], -1) {
			f.packages = append(f.packages, q[1])
		}
		for _, d := range floorNumber.FindAllString(m[4], -1) {
			n, _ := strconv.Atoi(d)
			f.imports = append(f.imports, n)
		}
		floors = append(floors, f)
	}
	if len(floors) == 0 {
		t.Fatal("docs/ARCHITECTURE.md has no layer table under \"## Layers\"")
	}
	return floors
}

// floorProblems lists what makes floors no layering: floors not numbered 0, 1, 2, …
// in order, a floor that may import a floor above its own or one that does not exist,
// a bottom floor that may import anything, a package on two floors.
func floorProblems(floors []floor) []string {
	var out []string
	on := map[string]int{}
	for i, f := range floors {
		if f.n != i {
			out = append(out, fmt.Sprintf("floor %q is numbered %d; floors are numbered 0, 1, 2, … from the bottom", f.name, f.n))
		}
		for _, g := range f.imports {
			if g > f.n || g < 0 {
				out = append(out, fmt.Sprintf("floor %d %s may import floor %d, which is not below it", f.n, f.name, g))
			}
		}
		if f.n == 0 && len(f.imports) > 0 {
			out = append(out, fmt.Sprintf("floor 0 %s (the leaves) may import nothing of the module", f.name))
		}
		for _, p := range f.packages {
			if prev, dup := on[p]; dup {
				out = append(out, fmt.Sprintf("package %s is on floors %d and %d", p, prev, f.n))
			}
			on[p] = f.n
		}
	}
	return out
}

// layerViolations lists every package of imports (package → the module packages it
// imports) that has no floor, and every import the floors do not allow: one of a
// package of no floor, of a floor above the importer's, or of a floor the importer's
// row does not list.
func layerViolations(floors []floor, imports map[string][]string) []string {
	on := map[string]floor{}
	for _, f := range floors {
		for _, p := range f.packages {
			on[p] = f
		}
	}
	var out []string
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		f, ok := on[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("package %s stands on no floor of docs/ARCHITECTURE.md's \"Layers\"", pkg))
			continue
		}
		for _, imp := range imports[pkg] {
			g, ok := on[imp]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("package %s (floor %d %s) imports %s, which stands on no floor", pkg, f.n, f.name, imp))
			case g.n > f.n:
				out = append(out, fmt.Sprintf("package %s (floor %d %s) imports %s from floor %d %s above it", pkg, f.n, f.name, imp, g.n, g.name))
			case !slices.Contains(f.imports, g.n):
				out = append(out, fmt.Sprintf("package %s (floor %d %s) imports %s from floor %d %s, which its floor may not import", pkg, f.n, f.name, imp, g.n, g.name))
			}
		}
	}
	return out
}

// TestArchitectureLayers: the layering of docs/ARCHITECTURE.md is a layering (floors
// numbered from the bottom, none importing upwards, the leaves importing nothing,
// every package on one floor) and the code keeps it: every package of the module
// stands on a floor, imports only the floors its floor may import, and every package
// a floor names exists.
func TestArchitectureLayers(t *testing.T) {
	t.Parallel()
	floors, code := documentedLayers(t), actualImports(t)
	for _, p := range floorProblems(floors) {
		t.Error(p)
	}
	for _, v := range layerViolations(floors, code) {
		t.Error(v)
	}
	for _, f := range floors {
		for _, p := range f.packages {
			if _, ok := code[p]; !ok {
				t.Errorf("floor %d %s names %s, which is not a package of the module", f.n, f.name, p)
			}
		}
	}
}

// TestLayerRuleRefusesWrongWayImports is the test of the layering test: the rule,
// with docs/ARCHITECTURE.md's floors, passes the module's imports as they are and
// refuses each wrong-way import added to them (a leaf importing anything, the wire
// types linking the process supervisor or the npm installer, a mechanism, an agent or
// the server importing the catalog, the catalog importing an agent, the harness
// importing the printers or the server, the server importing the harness), as well as
// a package of no floor; and it refuses floors that are no layering.
func TestLayerRuleRefusesWrongWayImports(t *testing.T) {
	t.Parallel()
	floors, code := documentedLayers(t), actualImports(t)
	if v := layerViolations(floors, code); len(v) != 0 {
		t.Fatalf("the module's own imports break the rule: %q", v)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"verdict", "canonjson", "floor 0 leaves) imports canonjson from floor 0 leaves, which its floor may not import"},
		{"agent/driver", "worker", "imports worker from floor 2 mechanisms above it"},
		{"api", "worker", "imports worker from floor 2 mechanisms above it"},
		{"api", "agent/clis", "imports agent/clis from floor 2 mechanisms above it"},
		{"environment", "catalog", "imports catalog from floor 5 declarations and records above it"},
		{"server", "catalog", "imports catalog from floor 5 declarations and records above it"},
		{"agent", "catalog", "imports catalog from floor 5 declarations and records above it"},
		{"campaign", "report", "imports report from floor 7 printers above it"},
		{"campaign/attempt", "server", "imports server from floor 4 control-plane server, which its floor may not import"},
		{"server", "campaign", "imports campaign from floor 6 harness above it"},
		{"report", "agent", "imports agent from floor 3 agents, which its floor may not import"},
		{"catalog", "agent", "imports agent from floor 3 agents, which its floor may not import"},
		{"controlplane", "nowhere/pkg", "imports nowhere/pkg, which stands on no floor"},
	} {
		wrong := maps.Clone(code)
		wrong[tc.from] = append(slices.Clone(code[tc.from]), tc.to)
		v := layerViolations(floors, wrong)
		if len(v) != 1 || !strings.Contains(v[0], "package "+tc.from+" (floor ") || !strings.Contains(v[0], tc.want) {
			t.Errorf("%s importing %s: violations %q, want one saying %q", tc.from, tc.to, v, tc.want)
		}
	}
	stray := maps.Clone(code)
	stray["stray"] = nil
	if v := layerViolations(floors, stray); len(v) != 1 || !strings.Contains(v[0], "package stray stands on no floor") {
		t.Errorf("a package of no floor: violations %q", v)
	}
	bad := []floor{
		{n: 0, name: "leaves", packages: []string{"a"}, imports: []int{0}},
		{n: 2, name: "skipped", packages: []string{"b", "a"}, imports: []int{0, 3}},
	}
	p := floorProblems(bad)
	for _, want := range []string{"floor 0 leaves (the leaves) may import nothing", `floor "skipped" is numbered 2`,
		"floor 2 skipped may import floor 3, which is not below it", "package a is on floors 0 and 2"} {
		if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("floorProblems(bad) = %q, want one saying %q", p, want)
		}
	}
}

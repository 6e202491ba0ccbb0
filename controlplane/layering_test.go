package controlplane

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoImportRunsBackUp: the controlplane folder holds the model, its store and its
// conformance suite only. Their non-test code imports nothing of agentproof but the
// leaves canonjson and atomicfile and packages of this folder (README "Layout"):
// adapters such as the MCP server, the HTTP API and the agents live outside it.
func TestNoImportRunsBackUp(t *testing.T) {
	t.Parallel()
	const module = "github.com/agentproof/agentproof/"
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rest, ours := strings.CutPrefix(p, module)
			if ours && rest != "canonjson" && rest != "atomicfile" && rest != "controlplane" && !strings.HasPrefix(rest, "controlplane/") {
				t.Errorf("%s imports %s, which is outside controlplane/", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package agentproof_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compilers are the calls that compile something expensive (a regular expression, a
// template, a JSON Schema): never at package initialisation.
var compilers = map[string]bool{
	"regexp.MustCompile": true, "regexp.Compile": true, "regexp.MustCompilePOSIX": true,
	"template.Must": true, "jsonschema.NewCompiler": true,
}

// TestNoCompileAtInit: no package-level variable of the module is initialised by
// compiling a regular expression, a template or a schema outside a function literal
// (sync.OnceValue(func() …) is how a package compiles on first use). One binary is every
// serve child, fixture child, agent and sandbox init, and each pays every linked
// package's initialisation at start (docs/performance.md).
func TestNoCompileAtInit(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			ast.Inspect(gd, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncLit:
					return false // runs when called, not at init
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && compilers[x.Name+"."+sel.Sel.Name] {
							t.Errorf("%s: %s.%s in a package-level initialiser: compile on first use (sync.OnceValue)", fset.Position(n.Pos()), x.Name, sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

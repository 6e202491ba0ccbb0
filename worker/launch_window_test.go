package worker

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// callName returns the name of the function a call expression calls ("pkg.F", "x.M" or "F").
func callName(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return x.Name + "." + f.Sel.Name
		}
		return "?." + f.Sel.Name
	}
	return "?"
}

// TestLaunchWindowHasNoWait is the structural proof that nothing waits in the launch
// window (docs/fixture-worker.md, "No wait in the launch window"): RunGuarded's last workspace, fence
// directory, executable and ownership checks run in Spec.BeforeStart, which contains no
// goroutine, channel operation, select, sleep or lock and calls only the listed
// non-blocking checks, ending with the ownership check; and Supervise calls cmd.Start()
// as the very next statement after BeforeStart.
func TestLaunchWindowHasNoWait(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	parse := func(name string) *ast.File {
		f, err := parser.ParseFile(fset, filepath.Join(".", name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// The launch window is the function literal launchWindow returns; RunGuarded
	// passes launchWindow(…) as its Spec.BeforeStart.
	var launch *ast.FuncLit
	beforeStart := false
	ast.Inspect(parse("guarded.go"), func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Name.Name == "launchWindow" && n.Recv == nil {
				for _, st := range n.Body.List {
					if ret, ok := st.(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
						launch, _ = ret.Results[0].(*ast.FuncLit)
					}
				}
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && k.Name == "BeforeStart" {
				c, ok := n.Value.(*ast.CallExpr)
				beforeStart = ok && callName(c) == "launchWindow"
			}
		}
		return true
	})
	if launch == nil {
		t.Fatal("guarded.go has no launchWindow returning func() error {…}")
	}
	if !beforeStart {
		t.Fatal("guarded.go does not set Spec.BeforeStart to launchWindow(…)")
	}
	allowed := map[string]bool{
		"CheckWorkspace": true, "IsWorkspaceEmpty": true, "checkDedicatedFenceDirectory": true,
		"checkExecutableUnchanged": true, "ControllerHoldProblem": true, "err.Error": true, "fmt.Sprintf": true,
	}
	var checks []string
	ast.Inspect(launch.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt, *ast.SelectStmt, *ast.SendStmt, *ast.DeferStmt:
			t.Errorf("launch window at %v: %T", fset.Position(n.Pos()), n)
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				t.Errorf("launch window at %v: channel receive", fset.Position(n.Pos()))
			}
		case *ast.CallExpr:
			name := callName(n)
			if !allowed[name] {
				t.Errorf("launch window at %v calls %s", fset.Position(n.Pos()), name)
			}
			if name != "err.Error" && name != "fmt.Sprintf" {
				checks = append(checks, name)
			}
		}
		return true
	})
	want := []string{"CheckWorkspace", "IsWorkspaceEmpty", "checkDedicatedFenceDirectory", "checkExecutableUnchanged", "ControllerHoldProblem"}
	if !slices.Equal(checks, want) {
		t.Errorf("launch window checks %v, want %v (ownership last)", checks, want)
	}

	// In supervise(), the statement after `if spec.BeforeStart != nil {…}` is cmd.Start().
	found := false
	ast.Inspect(parse("supervise.go"), func(n ast.Node) bool {
		block, ok := n.(*ast.BlockStmt)
		if !ok {
			return true
		}
		for i, st := range block.List {
			ifs, ok := st.(*ast.IfStmt)
			if !ok || i+1 >= len(block.List) {
				continue
			}
			if sel, ok := ifs.Cond.(*ast.BinaryExpr); !ok || !isSelector(sel.X, "spec", "BeforeStart") {
				continue
			}
			found = true
			as, ok := block.List[i+1].(*ast.AssignStmt)
			if !ok || len(as.Rhs) != 1 {
				t.Errorf("the statement after BeforeStart is not `err = cmd.Start()`")
				continue
			}
			if c, ok := as.Rhs[0].(*ast.CallExpr); !ok || callName(c) != "cmd.Start" {
				t.Errorf("the statement after BeforeStart is not cmd.Start()")
			}
		}
		return true
	})
	if !found {
		t.Error("supervise.go does not call BeforeStart")
	}
}

func isSelector(e ast.Expr, x, sel string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == x && s.Sel.Name == sel
}

// TestSuperviseBeforeStartRefusal: a BeforeStart error starts nothing and is reported
// as Refused; BeforeStart runs after the context check and exactly once.
func TestSuperviseBeforeStartRefusal(t *testing.T) {
	t.Parallel()
	refused := errors.New("refused by the launch window")
	calls := 0
	out, err := Supervise(context.Background(), Spec{
		Path: selfPath(t), Args: []string{"agentproof", "fixture-child", "pass", "1000"}, Dir: t.TempDir(),
		Timeout: time.Minute, MaxOutputBytes: 1024,
		BeforeStart: func() error { calls++; return refused },
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Started || out.PID != 0 || !errors.Is(out.Refused, refused) || calls != 1 {
		t.Errorf("outcome %+v calls %d, want refused and not started", out, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	out, _ = Supervise(ctx, Spec{
		Path: selfPath(t), Args: []string{"agentproof"}, Dir: t.TempDir(), Timeout: time.Minute, MaxOutputBytes: 1,
		BeforeStart: func() error { calls++; return nil },
	})
	if !out.Aborted || calls != 0 {
		t.Errorf("aborted=%v calls=%d: BeforeStart must not run after an abort", out.Aborted, calls)
	}
}

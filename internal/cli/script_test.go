package cli

import (
	"os"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run this test binary as the `agentproof` command inside
// scripts, so whole-CLI scenarios exercise the real Main with real child processes.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"agentproof": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs every testdata/script/*.txtar scenario.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"holdfence": holdFence},
	})
}

// holdFence is the script command `holdfence <file>`: the test process (not the
// agentproof child it runs) takes an exclusive flock on file and keeps it until the
// script ends, like another process holding a guarded run's fence.
func holdFence(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdfence <file>")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	ts.Defer(func() { _ = f.Close() })
}

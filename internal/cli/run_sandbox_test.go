package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment/sandbox"
)

// TestProbeSandboxBeforeRun: a selection with a sandbox cell on a machine that cannot
// run the sandbox (here: bubblewrap missing) is a configuration error (exit 2) that
// names the environment, what is missing and what to do; a selection without sandbox
// cells does not probe.
func TestProbeSandboxBeforeRun(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	var sandboxCells, localCells []*catalog.Cell
	for _, cell := range c.Cells {
		if cell.Environment.Provider == "sandbox" {
			sandboxCells = append(sandboxCells, cell)
		} else {
			localCells = append(localCells, cell)
		}
	}
	if len(sandboxCells) == 0 {
		t.Fatal("the default catalog has no sandbox cell")
	}
	missing := sandbox.Options{Bwrap: filepath.Join(t.TempDir(), "no-bwrap"), Executable: filepath.Join(t.TempDir(), "agentproof")}
	err = probeSandbox(context.Background(), append(localCells[:1:1], sandboxCells...), missing)
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("probe error %v (%T), want a *UsageError (exit 2)", err, err)
	}
	for _, want := range []string{"environment sandbox", "bwrap:", "apt-get install bubblewrap", "agentproof environments probe"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("probe error %q does not say %q", err, want)
		}
	}
	if err := probeSandbox(context.Background(), localCells, missing); err != nil {
		t.Errorf("a selection without sandbox cells was probed: %v", err)
	}
}

package mcp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/mcp"
)

// TestFileBinding: a server with a run binding file (a warm ACP session's) refuses
// every call with no_run_bound while no run is bound (no file, or a cleared one), acts
// for the run the file names with that run's token once it is written (reading the
// file per call: a rewrite takes effect at the next call), and a token the control
// plane does not accept is refused by the control plane, not trusted by the server.
func TestFileBinding(t *testing.T) {
	t.Parallel()
	w := newWorld(t, controlplane.Seed{})
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), session.RunBindingFile)
	s, err := mcp.NewServer(mcp.Config{StateDir: w.stateDir, Bind: mcp.FileBinding(w.apiURL, path)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	bw := &world{session: cs}

	if text, isErr := bw.call(t, mcp.ToolGetTaskContext, map[string]any{}); !isErr || !strings.HasPrefix(text, "no_run_bound:") {
		t.Errorf("no binding file: %q (error %v), want no_run_bound", text, isErr)
	}
	if err := session.WriteRunBinding(path, "run-1", w.token); err != nil {
		t.Fatal(err)
	}
	var rc controlplane.RunContext
	bw.ok(t, mcp.ToolGetTaskContext, map[string]any{}, &rc)
	if rc.RunID != "run-1" {
		t.Errorf("bound call acted for run %q, want run-1", rc.RunID)
	}
	if text, _ := bw.call(t, mcp.ToolGetTaskContext, map[string]any{}); strings.Contains(text, w.token) {
		t.Errorf("the result holds the run token")
	}
	other := w.srv.MintAgentToken(w.co.ID(), "actor-1", "run-9")
	if err := session.WriteRunBinding(path, "run-1", other); err != nil {
		t.Fatal(err)
	}
	if text, isErr := bw.call(t, mcp.ToolGetTaskContext, map[string]any{}); !isErr || strings.Contains(text, other) {
		t.Errorf("a token of another run: %q (error %v), want refused and redacted", text, isErr)
	}
	if err := session.WriteRunBinding(path, "", ""); err != nil {
		t.Fatal(err)
	}
	if text, isErr := bw.call(t, mcp.ToolGetTaskContext, map[string]any{}); !isErr || !strings.HasPrefix(text, "no_run_bound:") {
		t.Errorf("cleared binding: %q (error %v), want no_run_bound", text, isErr)
	}
}

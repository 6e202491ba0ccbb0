package acpagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
)

func TestServeRefusesBadConfig(t *testing.T) {
	t.Parallel()
	script := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment"}}}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "oracle"}, `unknown agent "oracle"`},
		{Config{Name: Reference, StateDir: "/tmp"}, "reference script with at least one turn"},
		{Config{Name: Wrong, Script: script, StateDir: "rel"}, "must be an absolute path"},
	} {
		err := Serve(context.Background(), tc.cfg, strings.NewReader(""), os.Stdout)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Serve(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestTurnCounter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if n, err := loadTurns(dir); n != 0 || err != nil {
		t.Fatalf("fresh = %d, %v", n, err)
	}
	if err := saveTurns(dir, 2); err != nil {
		t.Fatal(err)
	}
	if n, err := loadTurns(dir); n != 2 || err != nil {
		t.Errorf("after save = %d, %v", n, err)
	}
	for _, bad := range []string{"{", `{"schema":"other","turnsDone":1}`, `{"schema":"` + SessionSchema + `","turnsDone":-1}`} {
		if err := os.WriteFile(filepath.Join(dir, SessionFile), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadTurns(dir); err == nil {
			t.Errorf("%s loaded", bad)
		}
	}
}

func TestApplyEditStaysInTheWorkspace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(ws, "up")); err != nil {
		t.Fatal(err)
	}
	x := "x"
	for _, p := range []string{"../escape.txt", "up/escape.txt"} {
		if err := applyEdit(ws, &catalog.WorkspaceEdit{Path: p, Write: &x}); err == nil {
			t.Errorf("edit of %s succeeded", p)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "escape.txt")); err == nil {
		t.Error("a file was written outside the workspace")
	}
	a := "b"
	for _, e := range []*catalog.WorkspaceEdit{{Path: "d/f", Write: &x}, {Path: "d/f", Append: &a}} {
		if err := applyEdit(ws, e); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "d", "f")); string(b) != "xb" {
		t.Errorf("d/f = %q", b)
	}
	if err := applyEdit(ws, &catalog.WorkspaceEdit{Path: "d/f", Delete: true}); err != nil {
		t.Fatal(err)
	}
	if err := applyEdit(ws, &catalog.WorkspaceEdit{Path: "d/f", Delete: true}); err != nil {
		t.Errorf("deleting a missing file: %v", err)
	}
}

package flows

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/script"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/catalog"
)

// TestReferenceScriptsReadBeforeOverwrite: a session agent's derived script reads a
// file the seeded workspace holds before its write replaces it, and writes a new file
// without a read; a CLI's script (its shell writes) is left as it is.
func TestReferenceScriptsReadBeforeOverwrite(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "stats.py"), []byte("broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixed, fresh := "fixed\n", "new\n"
	ref := &catalog.ReferenceScript{Turns: []*script.Turn{{Steps: []*script.Step{
		{Edit: &script.Edit{Path: "stats.py", Write: &fixed}},
		{Edit: &script.Edit{Path: "notes.txt", Write: &fresh}},
	}}}}
	calls := func(d string) []string {
		in := ModelInput{Case: &catalog.Case{Flow: "single_turn"}, Rendered: &catalog.RenderedCase{Reference: ref},
			Profile: &catalog.Profile{Driver: driver.MustParse(d)}, Workspace: ws}
		scripts, err := ReferenceScripts(in)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, st := range scripts[0].Steps {
			p, _ := st.Args["path"].(string)
			out = append(out, st.Call+" "+filepath.Base(p))
		}
		return out
	}
	got := calls("acp:gemini")
	want := []string{scriptedmodel.RoleRead + " stats.py", scriptedmodel.RoleWrite + " stats.py", scriptedmodel.RoleWrite + " notes.txt", " ."}
	if len(got) != len(want) {
		t.Fatalf("acp:gemini steps %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("acp:gemini steps %q, want %q", got, want)
		}
	}
	for _, c := range calls("exec:codex") {
		if c == scriptedmodel.RoleRead+" stats.py" {
			t.Errorf("exec:codex steps %q: a shell writer needs no read", calls("exec:codex"))
		}
	}
}

package reference

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/script"
)

// TestRunInWorkspace: a run step runs its argv in the workspace (no shell: the
// arguments reach the program as they are); a non-zero exit is the program's result,
// not an error of the run; a program past its deadline is killed and the script goes
// on; a program that cannot start is an error naming it.
func TestRunInWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := &script.Run{Command: []string{"/bin/sh", "-c", `printf '%s' "$1" > ran.txt; exit 3`, "sh", "$NOT_EXPANDED"}, TimeoutMs: 10000}
	if err := RunInWorkspace(context.Background(), dir, r); err != nil {
		t.Fatalf("a program exiting 3: %v, want no error", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ran.txt")); err != nil || string(b) != "$NOT_EXPANDED" {
		t.Errorf("ran.txt = %q, %v; want the argument as given", b, err)
	}
	start := time.Now()
	if err := RunInWorkspace(context.Background(), dir, &script.Run{Command: []string{"/bin/sleep", "30"}, TimeoutMs: 100}); err != nil {
		t.Errorf("a program past its deadline: %v, want no error", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the deadline did not stop the program (%s)", d)
	}
	if err := RunInWorkspace(context.Background(), dir, &script.Run{Command: []string{"no-such-program-agentproof"}, TimeoutMs: 100}); err == nil {
		t.Error("a missing program: no error")
	}
	if err := RunInWorkspace(context.Background(), dir, &script.Run{TimeoutMs: 100}); err == nil {
		t.Error("an empty command: no error")
	}
}

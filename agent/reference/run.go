package reference

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/agentproof/agentproof/agent/script"
)

// runWaitDelay bounds how long a run step's output is read after its process ended or
// was killed (a descendant holding the pipe open).
const runWaitDelay = 2 * time.Second

// RunInWorkspace carries out a run step: it starts r.Command (argv, no shell; the
// program looked up on the agent's PATH) in workspace with the agent's own environment,
// reads and discards its output, and waits at most r.TimeoutMs (ms) before killing it.
// The step's exit code is the program's business, not the run's: a program that exits
// non-zero (tests that fail before the fix) or passes its deadline is what a developer
// sees, and the script goes on. Errors: an empty command, a program that cannot start,
// the context's end.
func RunInWorkspace(ctx context.Context, workspace string, r *script.Run) error {
	if r == nil || len(r.Command) == 0 || r.Command[0] == "" {
		return errors.New("run: needs a command")
	}
	rctx, cancel := context.WithTimeout(ctx, time.Duration(max(r.TimeoutMs, 1))*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(rctx, r.Command[0], r.Command[1:]...)
	cmd.Dir = workspace
	cmd.Env = os.Environ()
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.WaitDelay = runWaitDelay
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %q: %w", r.Command[0], err)
	}
	_ = cmd.Wait() // its exit status is what the agent looked at, not a fault of the run
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/spf13/cobra"
)

// newAgentCmd is the hidden command the heartbeat runner launches for the built-in
// agents: `agentproof agent <reference|wrong|leaky|nop>`, and the
// ACP drivers for the built-in ACP agents: `agentproof agent acp-<reference|nop|wrong>`
// (agent.RunACPBuiltin: ACP on stdin/stdout, docs/acp.md). The agent reads
// its run from its own environment (agent.EnvAPIURL and siblings, set by the driver).
// nop exits 0 at once and touches nothing. The agent reaches the agent API through
// a.dialAgent. Exit codes: 0 the run was carried out, 2 the
// environment lacks what the agent needs, 1 anything else (the runner then completes
// the run as failed).
func newAgentCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "agent <reference|wrong|leaky|nop|acp-reference|acp-nop|acp-wrong|acp-wrong-undo|acp-write-first|acp-ask-other>",
		Short:  "Run one turn of a built-in agent (launched by the heartbeat runner)",
		Hidden: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s needs exactly one agent name: reference, wrong, leaky, nop, acp-reference, acp-nop, acp-wrong, acp-wrong-undo, acp-write-first or acp-ask-other", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if slices.Contains(agent.ACPBuiltinCommands, args[0]) {
				err := agent.RunACPBuiltin(ctx, args[0], os.Environ(), a.stdin, a.stdout, a.stderr)
				var ue *agent.UsageError
				if errors.As(err, &ue) {
					return &UsageError{Err: err}
				}
				return err
			}
			n, err := agent.ParseBuiltin(args[0])
			if err != nil {
				return &UsageError{Err: err}
			}
			out, err := agent.RunBuiltin(ctx, n, os.Environ(), a.dialAgent)
			if out.Output != "" {
				// the leaky calibration agent prints what it should not
				if _, werr := fmt.Fprintln(a.stdout, out.Output); werr != nil && err == nil {
					err = werr
				}
			}
			var ue *agent.UsageError
			if errors.As(err, &ue) {
				return &UsageError{Err: err}
			}
			if err != nil {
				return err
			}
			if n.Kind == driver.KindNop {
				return nil
			}
			if out.Turn == 0 {
				_, err = fmt.Fprintf(a.stdout, "%s agent: no turn fits this wake; run completed as %s\n", args[0], out.Disposition)
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "%s agent: turn %d carried out; run completed as %s\n", args[0], out.Turn, out.Disposition)
			return err
		},
	}
}

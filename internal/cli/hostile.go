package cli

import (
	"strings"

	"github.com/agentproof/agentproof/agent/hostile"
	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/verdict"
)

// newHostileCmd is the hidden built-in hostile agent (package agent/hostile):
// `agentproof hostile <attack> [args]` prints one JSON report and exits 0 when the
// attack was contained, 1 when it succeeded, 2 for bad arguments.
func newHostileCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                "hostile <attack> [args]",
		Short:              "Run one attack of the built-in hostile agent (" + strings.Join(hostile.Attacks, "; ") + ")",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := hostile.Run(args, a.stdout, a.stderr); code != 0 {
				return withExit(verdict.ExitCode(code), nil) // the process status, passed through
			}
			return nil
		},
	}
}

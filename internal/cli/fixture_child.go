package cli

import (
	"os"

	"github.com/agentproof/agentproof/worker"
	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/verdict"
)

// newFixtureChildCmd is the hidden fixture program the local fixture worker spawns
// (seed 003, fixture-child): `agentproof fixture-child <fixture> <lifetime-ms>`, or on the
// guarded path `agentproof fixture-child --gate <fence-dir> <fixture> <lifetime-ms>` (the
// admission gate, worker.RunGate). Its exit codes are the seed's EXIT table, not the
// CLI's: a wrong argument exits 64, a gate refusal 123.
func newFixtureChildCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                "fixture-child [--gate <fence-dir>] <fixture> <lifetime-ms>",
		Short:              "Run one built-in fixture program (spawned by the fixture worker)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			var code int
			if len(args) > 0 && args[0] == worker.GateFlag {
				// The guarded path (seed 003): the gate runs first, then the fixture.
				code = worker.RunGate(args, worker.ControlPipe(), a.stdin, a.stdout, a.stderr)
			} else {
				code = worker.RunChild(args, a.stdin, a.stdout, a.stderr, os.Environ())
			}
			if code == 0 {
				return nil
			}
			// The seed's EXIT table, passed through as the process status.
			return withExit(verdict.ExitCode(code), nil)
		},
	}
}

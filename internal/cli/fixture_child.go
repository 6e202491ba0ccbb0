package cli

import (
	"os"

	"github.com/agentproof/agentproof/worker"
	"github.com/spf13/cobra"
)

// newFixtureChildCmd is the hidden fixture program the local fixture worker spawns
// (seed 003, fixture-child): `agentproof fixture-child <fixture> <lifetime-ms>`. Its exit
// codes are the seed's EXIT table, not the CLI's: a wrong argument exits 64.
func newFixtureChildCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                "fixture-child <fixture> <lifetime-ms>",
		Short:              "Run one built-in fixture program (spawned by the fixture worker)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			code := worker.RunChild(args, a.stdin, a.stdout, a.stderr, os.Environ())
			if code == 0 {
				return nil
			}
			return withExit(code, nil)
		},
	}
}

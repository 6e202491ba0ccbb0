package cli

import (
	"os"

	"github.com/agentproof/agentproof/worker"
	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/verdict"
)

// fixtureChildCmd is the name of the fixture program's command.
const fixtureChildCmd = "fixture-child"

// newFixtureChildCmd is the hidden fixture program the local fixture worker spawns:
// `agentproof fixture-child <fixture> <lifetime-ms>`, or on the
// guarded path `agentproof fixture-child --gate <fence-dir> <fixture> <lifetime-ms>` (the
// admission gate, worker.RunGate). Its exit codes are the fixture programs' own
// (docs/fixture-worker.md), not the CLI's: a wrong argument exits 64, a gate refusal 123.
func newFixtureChildCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                fixtureChildCmd + " [--gate <fence-dir>] <fixture> <lifetime-ms>",
		Short:              "Run one built-in fixture program (spawned by the fixture worker)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := runFixtureChild(a, args); code != 0 {
				// The seed's EXIT table, passed through as the process status.
				return withExit(verdict.ExitCode(code), nil)
			}
			return nil
		},
	}
}

// runFixtureChild runs the fixture program with the arguments after "fixture-child" and
// returns its exit code. Main calls it before building the
// command tree: a fixture process starts once per fixture cell, and the tree is a
// tenth of what such a process does of its own (docs/performance.md).
func runFixtureChild(a *app, args []string) int {
	if len(args) > 0 && args[0] == worker.GateFlag {
		// The guarded path: the gate runs first, then the fixture.
		return worker.RunGate(args, worker.ControlPipe(), a.stdin, a.stdout, a.stderr)
	}
	return worker.RunChild(args, a.stdin, a.stdout, a.stderr, os.Environ())
}

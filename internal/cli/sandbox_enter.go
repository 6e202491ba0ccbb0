package cli

import (
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/verdict"
)

// newSandboxEnterCmd is the hidden trampoline of a sandbox launch (sandbox.RunEnter):
// `agentproof sandbox-enter --uid U --gid G --cgroup DIR… --stage PATH… -- BWRAP ARGS…`,
// the process the heartbeat runner's worker supervises. It joins the lease's cgroups,
// stages the binds, drops privileges and executes bubblewrap; it returns only on
// failure (exit 121, or 64 for a malformed command line).
func newSandboxEnterCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                sandbox.EnterCommand + " --uid U --gid G [--cgroup DIR]... [--stage PATH]... -- BWRAP ARGS...",
		Short:              "Enter a sandbox lease (run by the worker for a sandbox launch)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return withExit(verdict.ExitCode(sandbox.RunEnter(args, a.stderr)), nil) // the process status, passed through
		},
	}
}

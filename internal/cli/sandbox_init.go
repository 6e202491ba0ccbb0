package cli

import (
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/verdict"
)

// newSandboxInitCmd is the hidden PID 1 of a sandbox (sandbox.RunInit):
// `agentproof sandbox-init --status-fd N --pass-fds K [--listen ADDR=SOCKET]... -- PATH ARGV...`.
// It brings the allowlisted endpoints in over the bridge, runs the agent, reaps
// orphans and exits with the agent's exit code (122 when it cannot start it, 64 for
// a malformed command line).
func newSandboxInitCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                sandbox.InitCommand + " --status-fd N --pass-fds K [--listen ADDR=SOCKET]... -- PATH ARGV...",
		Short:              "Be a sandbox's init (run by bubblewrap inside a sandbox)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := sandbox.RunInit(args, a.stderr); code != 0 {
				return withExit(verdict.ExitCode(code), nil) // the process status, passed through
			}
			return nil
		},
	}
}

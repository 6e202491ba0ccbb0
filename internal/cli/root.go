// Package cli holds agentproof's cobra commands, one file per command. It turns flags
// into options for the packages that do the work and maps their outcomes to documented
// exit codes (see ExitOK and its siblings). Nothing imports this package but main.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/client"
)

// app carries what the commands depend on, so that tests can inject it: the streams
// every command writes to and dialAgent, how a built-in agent (`agentproof agent`)
// reaches the agent API (client.DialAgent in Main; nil refuses to dial).
type app struct {
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	dialAgent agent.Dialer
}

// Main runs the agentproof command line with args (without the program name) and the
// given streams, and returns the process exit code (verdict.ExitCode): 0 passed,
// 1 failed, 2 usage or configuration error, 3 inconclusive, 70 internal error (a bug
// in agentproof: the error is printed with "this is a bug in agentproof"),
// 130 interrupted. A panic in a command is an internal error too.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "agentproof: internal error: panic: %v\n%s\n", r, bugNote)
			code = int(ExitInternal)
		}
	}()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, dialAgent: client.DialAgent}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	printError(stderr, cmd, err)
	return int(exitCode(err))
}

// printError prints what Main says about err (nothing for nil): an internal error
// (exit code 70) with bugNote; any other error once, unless it is an *ExitError
// without words (the command already printed its outcome); for a flag or command the
// user got wrong, a pointer to the command's help.
func printError(stderr io.Writer, cmd *cobra.Command, err error) {
	if err == nil {
		return
	}
	exit := exitCode(err)
	var ee *ExitError
	switch {
	case exit == ExitInternal && !errors.As(err, &ee):
		fmt.Fprintf(stderr, "agentproof: internal error: %v\n%s\n", err, bugNote)
	case !errors.As(err, &ee) || ee.Err != nil:
		fmt.Fprintf(stderr, "agentproof: %v\n", err)
	}
	var ue *UsageError
	if exit == ExitUsage && cmd != nil && (errors.As(err, &ue) && isFlagError(err) || strings.HasPrefix(err.Error(), "unknown command")) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
}

// bugNote follows every internal error (exit code 70).
const bugNote = "this is a bug in agentproof; please report it with the command line you ran and this message"

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentproof",
		Short: "Qualify AI agent runners end to end, with evidence you can trust",
		Long: strings.TrimSpace(`
agentproof qualifies AI agent runners (Codex, Claude Code, OpenCode, ACP agents,
scripted agents) end to end. A catalog declares suites of agent profiles ×
environments × task cases; every cell runs in its own fresh control-plane instance,
database and workspace; deterministic matchers grade the resulting state, messages
and files; the verdict is passed, failed or inconclusive, never a guess.

Exit codes: 0 passed, 1 failed, 2 usage or configuration error, 3 inconclusive
(evidence incomplete), 70 internal error (a bug in agentproof), 130 interrupted.`),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &UsageError{Err: flagError{err}}
	})
	root.AddCommand(
		newConformanceCmd(a),
		newVersionCmd(a),
		newValidateCmd(a),
		newListCmd(a),
		newFingerprintCmd(a),
		newSchemaCmd(a),
		newFixtureCmd(a),
		newFixtureChildCmd(a),
		newAgentCmd(a),
		newReportCmd(a),
		newCompareCmd(a),
		newRunCmd(a),
		newServeCmd(a),
		newModelCmd(a),
		newModelsCmd(a),
		newAgentsCmd(a),
		newMCPCmd(a),
		newEnvironmentsCmd(a),
		newSandboxEnterCmd(a),
		newSandboxInitCmd(a),
		newHostileCmd(a),
	)
	return root
}

// flagError marks a usage error that cobra or pflag raised while parsing flags.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

// isFlagError reports whether err came from flag parsing.
func isFlagError(err error) bool {
	var fe flagError
	return errors.As(err, &fe)
}

// noArgs is cobra.NoArgs with a usage error that maps to exit code 2.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q (see '%s --help')", cmd.CommandPath(), args, cmd.CommandPath())
	}
	return nil
}

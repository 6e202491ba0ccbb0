// Package cli holds agentproof's cobra commands, one file per command. It turns flags
// into options for the packages that do the work and maps their outcomes to documented
// exit codes (see ExitOK and its siblings). Nothing imports this package but main.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/worker"
)

// app carries what the commands depend on, so that tests can inject it: the streams
// every command writes to and dialAgent, how a built-in agent (`agentproof agent`)
// reaches the agent API (client.DialAgent in Main; nil refuses to dial).
type app struct {
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	dialAgent agent.Dialer
	// entry is true when the command line being run is this process's own (os.Args),
	// so that `run` may re-execute it (takeCredentials); false for a test that calls
	// Main in-process.
	entry bool
	// creds are the declared credentials `run` took out of its environment.
	creds credentials
	// unpinned are the container environments of a run whose image could not be
	// pinned before planning (pinImages): environment id → why.
	unpinned map[string]string
	// handed is true in a `run` re-executed without its credentials (they were handed
	// over a descriptor): what the first image already said is not said again.
	handed bool
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
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, dialAgent: client.DialAgent, entry: len(os.Args) > 0 && slices.Equal(os.Args[1:], args)}
	if len(args) > 0 && args[0] == fixtureChildCmd {
		return runFixtureChild(a, args[1:])
	}
	if code, ok := dispatchEarly(args, stdin, stderr); ok {
		return code
	}
	agent.RegisterDrivers() // the composition root: every command below may parse a driver name
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	printError(stderr, cmd, err)
	return int(exitCode(err))
}

// dispatchEarly runs, without building the command tree, the hidden commands that
// start once per launch or campaign and whose start-up cost is part of every cell's
// (docs/performance.md): the sandbox's init, and run's process
// sentry. ok is false for any other command line. Their cobra commands stay for help.
// The agentproof binary runs the sandbox's init before Main, during package
// initialisation (internal/earlycmd); this serves a Main called in process (test
// binaries).
func dispatchEarly(args []string, stdin io.Reader, stderr io.Writer) (code int, ok bool) {
	switch {
	case len(args) == 0:
		return 0, false
	case args[0] == sandbox.InitCommand:
		return sandbox.RunInit(args[1:], stderr), true
	case len(args) == 1 && args[0] == worker.SentryCommand:
		return worker.RunSentry(stdin, stderr), true
	}
	return 0, false
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

Pinned agent CLIs ('agentproof agents install'):
` + pinnedSpecs() + `

Exit codes: 0 passed, 1 failed, 2 usage or configuration error, 3 inconclusive
(evidence incomplete), 4 partial (everything that ran passed; some selected cells
were not run here: this machine cannot provide their environment), 70 internal error
(a bug in agentproof), 130 interrupted.`),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &UsageError{Err: flagError{invalidValue(suggestFlag(cmd, err))}}
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
		newMatrixCmd(a),
		newRunCmd(a),
		newRegradeCmd(a),
		newServeCmd(a),
		newModelCmd(a),
		newModelsCmd(a),
		newAgentsCmd(a),
		newMCPCmd(a),
		newImportCmd(a),
		newEnvironmentsCmd(a),
		newSandboxInitCmd(a),
		newHostileCmd(a),
	)
	return root
}

// suggestFlag adds "(did you mean --x?)" to an unknown long flag's error, naming the
// closest flags of cmd (its own and inherited; catalog.Suggest); other errors are
// returned as they are.
func suggestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok || cmd == nil {
		return err
	}
	var known []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	s := catalog.Suggest(name, known)
	if len(s) == 0 {
		return err
	}
	for i := range s {
		s[i] = "--" + s[i]
	}
	return fmt.Errorf("%w (did you mean %s?)", err, strings.Join(s, " or "))
}

// wantAnnotation is the flag annotation holding the words for what a flag's value must
// be ("a whole number ≥ 1"), said when the value given does not parse (see wantFlag).
const wantAnnotation = "agentproof/want"

// wantFlag records on cmd's flag name what its value must be, for invalidValue.
func wantFlag(cmd *cobra.Command, name, want string) {
	if err := cmd.Flags().SetAnnotation(name, wantAnnotation, []string{want}); err != nil {
		panic(err) // a flag name that does not exist is a bug in the command's definition
	}
}

// invalidValue rewrites pflag's error for a value that does not parse ("invalid
// argument "abc" for "--max-parallel" flag: strconv.ParseInt: ...") as
// `invalid value "abc" for --max-parallel: want a whole number ≥ 1`: the flag's
// wantAnnotation, else the words for its type; other errors are returned as they are.
func invalidValue(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) || iv.GetFlag() == nil {
		return err
	}
	f := iv.GetFlag()
	want := ""
	if w := f.Annotations[wantAnnotation]; len(w) > 0 {
		want = w[0]
	}
	if want == "" {
		switch f.Value.Type() {
		case "int", "int8", "int16", "int32", "int64":
			want = "a whole number"
		case "uint", "uint8", "uint16", "uint32", "uint64":
			want = "a whole number ≥ 0"
		case "float32", "float64":
			want = "a number"
		case "duration":
			want = "a duration such as 30s, 5m or 1h30m"
		case "bool":
			want = "true or false"
		}
	}
	if want == "" {
		return fmt.Errorf("invalid value %q for --%s: %w", iv.GetValue(), f.Name, errors.Unwrap(iv))
	}
	return fmt.Errorf("invalid value %q for --%s: want %s", iv.GetValue(), f.Name, want)
}

// flagError marks a usage error that cobra or pflag raised while parsing flags.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

// isFlagError reports whether err came from flag parsing.
func isFlagError(err error) bool {
	var fe flagError
	return errors.As(err, &fe)
}

// withSubcommands adds subs to cmd, a command that does nothing itself: run without a
// subcommand (or with arguments) it is a usage error (exit 2) naming them ("show or
// update").
func withSubcommands(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.Name()
	}
	list := names[len(names)-1]
	if len(names) > 1 {
		list = strings.Join(names[:len(names)-1], ", ") + " or " + list
	}
	cmd.Args = noArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return usageErrorf("%s needs a subcommand: %s (see '%s --help')", cmd.CommandPath(), list, cmd.CommandPath())
	}
	cmd.AddCommand(subs...)
	return cmd
}

// noArgs is cobra.NoArgs with a usage error that maps to exit code 2. On a command with
// subcommands an argument is a mistyped subcommand: the error names the nearest ones
// (cobra's suggestions) or lists them all.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasAvailableSubCommands() {
		hint := "its subcommands: " + strings.Join(subcommandNames(cmd), ", ")
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra's default, which it sets on the root only
		}
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			hint = "did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageErrorf("%s has no subcommand %q (%s; see '%s --help')", cmd.CommandPath(), args[0], hint, cmd.CommandPath())
	}
	return usageErrorf("%s takes no arguments, got %q (see '%s --help')", cmd.CommandPath(), args, cmd.CommandPath())
}

// subcommandNames lists the names of cmd's available subcommands, in cobra's order.
func subcommandNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}

package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/verdict"
)

// TestHelpGolden pins the --help text of every visible command.
func TestHelpGolden(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	var paths [][]string
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		var p []string
		for x := c; x != nil; x = x.Parent() {
			p = append([]string{x.Name()}, p...)
		}
		paths = append(paths, p[1:])
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(&app{}))
	for _, p := range paths {
		name := "root"
		if len(p) > 0 {
			name = strings.Join(p, "_")
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := Main(append(append([]string{}, p...), "--help"), strings.NewReader(""), &out, &errb)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			golden.Assert(t, out.String(), filepath.Join("help", name+".txt"))
		})
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want verdict.ExitCode
	}{
		{[]string{"version"}, ExitOK},
		{[]string{"version", "extra"}, ExitUsage},
		{[]string{"--no-such-flag"}, ExitUsage},
		{[]string{"version", "--no-such-flag"}, ExitUsage},
		{[]string{"no-such-command"}, ExitUsage},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			if got := verdict.ExitCode(Main(tt.args, strings.NewReader(""), &out, &errb)); got != tt.want {
				t.Errorf("exit = %d, want %d; stderr: %s", got, tt.want, errb.String())
			}
		})
	}
}

// TestMistypedSubcommands: every command with subcommands refuses an argument that is
// none of them as a usage error (exit 2, never the group's help with exit 0) naming
// the command; a near miss names the subcommand meant.
func TestMistypedSubcommands(t *testing.T) {
	t.Parallel()
	var groups [][]string
	var walk func(c *cobra.Command, path []string)
	near := map[string]string{} // a group's path → a near miss of its first subcommand
	walk = func(c *cobra.Command, path []string) {
		if c.HasAvailableSubCommands() {
			groups = append(groups, path)
			near[strings.Join(path, " ")] = subcommandNames(c)[0] + "x"
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub, append(slices.Clone(path), sub.Name()))
			}
		}
	}
	walk(newRootCmd(&app{}), nil)
	if len(groups) < 5 {
		t.Fatalf("found %d command groups %v: the walk is broken", len(groups), groups)
	}
	for _, g := range groups[1:] { // the root has its own test (no-such-command)
		for _, arg := range []string{"zzz-no-such-subcommand", near[strings.Join(g, " ")]} {
			var out, errb bytes.Buffer
			args := append(slices.Clone(g), arg)
			if code := verdict.ExitCode(Main(args, strings.NewReader(""), &out, &errb)); code != ExitUsage {
				t.Errorf("%v: exit %d, want %d; stderr %s", args, code, ExitUsage, errb.String())
				continue
			}
			if want := "agentproof " + strings.Join(g, " ") + " has no subcommand"; !strings.Contains(errb.String(), want) {
				t.Errorf("%v: stderr %q, want %q", args, errb.String(), want)
			}
		}
	}
	var out, errb bytes.Buffer
	Main([]string{"environments", "prob"}, strings.NewReader(""), &out, &errb)
	if !strings.Contains(errb.String(), "did you mean probe?") {
		t.Errorf("environments prob: stderr %q, want the suggestion", errb.String())
	}
}

// TestUsageErrorsPointAtHelp: a mistyped command or flag names the help to read.
func TestUsageErrorsPointAtHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"no-such-command"}, "Run 'agentproof --help' for usage."},
		{[]string{"version", "--no-such-flag"}, "Run 'agentproof version --help' for usage."},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		if code := Main(tt.args, strings.NewReader(""), &out, &errb); verdict.ExitCode(code) != ExitUsage {
			t.Errorf("%v: exit %d, want %d", tt.args, code, ExitUsage)
		}
		if !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: stderr %q does not contain %q", tt.args, errb.String(), tt.want)
		}
	}
	// An argument error that is not about flags does not add the hint twice.
	var out, errb bytes.Buffer
	Main([]string{"version", "extra"}, strings.NewReader(""), &out, &errb)
	if strings.Count(errb.String(), "--help") != 1 {
		t.Errorf("version extra: stderr %q", errb.String())
	}
}

// TestInternalErrors: an error no command classified is an internal error (exit 70,
// never 1, the code of a failed cell), printed with "this is a bug in agentproof".
func TestInternalErrors(t *testing.T) {
	t.Parallel()
	for _, err := range []error{errors.New("unexpected state"), fmt.Errorf("writing: %w", os.ErrPermission)} {
		if got := exitCode(err); got != ExitInternal {
			t.Errorf("exitCode(%v) = %d, want %d", err, got, ExitInternal)
		}
		var b bytes.Buffer
		printError(&b, nil, err)
		if !strings.Contains(b.String(), "internal error: "+err.Error()) || !strings.Contains(b.String(), "this is a bug in agentproof") {
			t.Errorf("printed %q", b.String())
		}
	}
	for err, want := range map[error]verdict.ExitCode{
		nil:                                 ExitOK,
		withExit(ExitFailed, nil):           ExitFailed,
		usageErrorf("bad flag"):             ExitUsage,
		withExit(ExitInterrupted, nil):      ExitInterrupted,
		errors.New("unknown command \"x\""): ExitUsage,
	} {
		if got := exitCode(err); got != want {
			t.Errorf("exitCode(%v) = %d, want %d", err, got, want)
		}
	}
	var b bytes.Buffer
	printError(&b, nil, withExit(ExitFailed, nil))
	if b.Len() != 0 {
		t.Errorf("a wordless exit error printed %q", b.String())
	}
}

// TestServeHelpListsHeartbeatRoutes: `serve --help` names every heartbeat route the
// server registers (a route added to the table without a line in the help fails).
func TestServeHelpListsHeartbeatRoutes(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Main([]string{"serve", "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	help := strings.Join(strings.Fields(out.String()), " ")
	routes := server.HeartbeatRoutes()
	if len(routes) == 0 {
		t.Fatal("server.HeartbeatRoutes lists no route")
	}
	for _, r := range routes {
		method, pattern, _ := strings.Cut(r, " ")
		if !strings.Contains(help+" ", method+" "+pattern+" ") {
			t.Errorf("serve --help does not list %s", r)
		}
	}
}

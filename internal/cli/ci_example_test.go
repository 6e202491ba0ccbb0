package cli

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"
)

// ciExample is the GitHub Actions example workflow of the repository.
var ciExample = filepath.Join("..", "..", "examples", "github-actions.yml")

// workflowCommand is one agentproof invocation of a workflow step: the job, the argv
// after the program name, and the command path it resolves to.
type workflowCommand struct {
	job  string
	args []string
	path string // e.g. "agentproof report merge"
	set  []string
}

// TestCIExampleCommands parses examples/github-actions.yml and checks every agentproof
// command its steps run: the subcommand exists, its flags exist and parse, its
// positional arguments are accepted. The workflow must run the sharded campaign the
// example is for: list --matrix-json (plan), run --id --campaign --results once per
// matrix cell, and report merge --expected-ids over every shard.
func TestCIExampleCommands(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(ciExample)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Needs    any `yaml:"needs"`
			Strategy struct {
				Matrix map[string]any `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("%s: %v", ciExample, err)
	}
	var cmds []workflowCommand
	for job, j := range wf.Jobs {
		for _, st := range j.Steps {
			for _, line := range strings.Split(st.Run, "\n") {
				args := shellWords(line)
				if len(args) == 0 || (args[0] != "./agentproof" && args[0] != "agentproof") {
					continue
				}
				c := workflowCommand{job: job, args: args[1:]}
				root := newRootCmd(&app{stdout: io.Discard, stderr: io.Discard})
				cmd, rest, err := root.Find(c.args)
				if err != nil || cmd == root {
					t.Errorf("job %s: %q is not an agentproof subcommand: %v", job, line, err)
					continue
				}
				if err := cmd.ParseFlags(rest); err != nil {
					t.Errorf("job %s: %q: %v", job, line, err)
					continue
				}
				if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
					t.Errorf("job %s: %q: %v", job, line, err)
					continue
				}
				c.path = cmd.CommandPath()
				for _, f := range []string{"all", "id", "campaign", "results", "matrix-json", "expected-ids", "catalog", "with-default", "suite"} {
					if fl := cmd.Flags().Lookup(f); fl != nil && fl.Changed {
						c.set = append(c.set, f)
					}
				}
				cmds = append(cmds, c)
			}
		}
	}
	want := []struct {
		job, path string
		flags     []string
	}{
		{"plan", "agentproof validate", nil},
		{"plan", "agentproof list", []string{"matrix-json"}},
		{"cell", "agentproof run", []string{"id", "campaign", "results"}},
		{"report", "agentproof report merge", []string{"expected-ids", "campaign", "results"}},
	}
	for _, w := range want {
		if !slices.ContainsFunc(cmds, func(c workflowCommand) bool {
			if c.job != w.job || c.path != w.path {
				return false
			}
			for _, f := range w.flags {
				if !slices.Contains(c.set, f) {
					return false
				}
			}
			return true
		}) {
			t.Errorf("job %s does not run %s with --%s; it runs %v", w.job, w.path, strings.Join(w.flags, " --"), cmds)
		}
	}
	// the run job is the matrix of the plan's cells
	cell := wf.Jobs["cell"]
	if inc, _ := cell.Strategy.Matrix["include"].(string); !strings.Contains(inc, "fromJSON(needs.plan.outputs.matrix).include") {
		t.Errorf("job cell's matrix is %v, want the include list of the plan's --matrix-json output", cell.Strategy.Matrix)
	}
}

// TestCIExampleLint lints examples/github-actions.yml with actionlint (syntax, job and
// step keys, expressions and their types, needs, matrix, action inputs it knows; no
// shellcheck, which is not installed here).
func TestCIExampleLint(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(ciExample)
	if err != nil {
		t.Fatal(err)
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint("<stdin>", raw, nil) // "<stdin>": no project, no config file is read
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Errorf("%s:%d:%d: %s [%s]", ciExample, e.Line, e.Column, e.Message, e.Kind)
	}
	// the linter is not blind: a broken copy is reported
	broken := strings.Replace(string(raw), "needs: plan\n", "needs: nosuchjob\n", 1)
	if errs, err := l.Lint("<stdin>", []byte(broken), nil); err != nil || len(errs) == 0 {
		t.Fatalf("actionlint found nothing in a workflow whose job needs an unknown job (%v)", err)
	}
}

// shellWords splits one shell command line into words (github.com/mattn/go-shellwords:
// quotes group, no expansion) up to the first redirection, pipe or command separator;
// a line it cannot split is no words.
func shellWords(line string) []string {
	words, err := shellwords.NewParser().Parse(line)
	if err != nil {
		return nil
	}
	return words
}

// TestShellWords pins the splitting the workflow test relies on.
func TestShellWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`./agentproof run --id "$X" --results 'a b'`, []string{"./agentproof", "run", "--id", "$X", "--results", "a b"}},
		{`./agentproof list --all --matrix-json > matrix.json`, []string{"./agentproof", "list", "--all", "--matrix-json"}},
		{`chmod +x agentproof && ./agentproof x`, []string{"chmod", "+x", "agentproof"}},
		{`  `, nil},
	} {
		if got := shellWords(c.in); !slices.Equal(got, c.want) {
			t.Errorf("shellWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

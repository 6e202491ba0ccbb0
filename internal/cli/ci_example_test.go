package cli

import (
	"encoding/json"
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
// example is for: list --shards N (the plan and its --matrix-json), run --plan --shard
// --campaign --results once per shard of the matrix, and report merge --plan over
// every shard; for the default catalog that is N + 2 jobs.
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
				for _, f := range []string{"all", "id", "campaign", "results", "matrix-json", "expected-ids", "catalog", "with-default", "suite", "shards", "weights", "plan", "shard"} {
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
		{"plan", "agentproof list", []string{"all", "shards", "weights"}},
		{"plan", "agentproof list", []string{"all", "shards", "weights", "matrix-json"}},
		{"shard", "agentproof run", []string{"plan", "shard", "campaign", "results"}},
		{"report", "agentproof report merge", []string{"plan", "campaign", "results"}},
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
	// the run job is the matrix of the plan's shards
	sh := wf.Jobs["shard"]
	if inc, _ := sh.Strategy.Matrix["include"].(string); !strings.Contains(inc, "fromJSON(needs.plan.outputs.matrix).include") {
		t.Errorf("job shard's matrix is %v, want the include list of the plan's --matrix-json output", sh.Strategy.Matrix)
	}
	t.Logf("jobs for the default catalog: %d", workflowJobs(t, len(wf.Jobs)-1, cmds))
}

// workflowJobs is how many jobs the workflow runs for the default catalog's --all
// selection: its jobs without a matrix (others) plus one per shard of the plan its
// `list --shards N` makes. The shard matrix must be smaller than one job per cell.
func workflowJobs(t *testing.T, others int, cmds []workflowCommand) int {
	t.Helper()
	for _, c := range cmds {
		if c.path != "agentproof list" || !slices.Contains(c.set, "matrix-json") {
			continue
		}
		var out strings.Builder
		args := slices.Clone(c.args)
		for i, a := range args {
			if a == "$WEIGHTS" {
				args[i] = "" // the first run: no history yet
			}
		}
		if code := Main(args, strings.NewReader(""), &out, io.Discard); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		var m struct {
			Include []struct{ Cells int } `json:"include"`
		}
		if err := json.Unmarshal([]byte(out.String()), &m); err != nil {
			t.Fatal(err)
		}
		cells := 0
		for _, j := range m.Include {
			cells += j.Cells
		}
		if len(m.Include) == 0 || len(m.Include) >= cells {
			t.Fatalf("the workflow's matrix has %d shards for %d cells", len(m.Include), cells)
		}
		return others + len(m.Include)
	}
	t.Fatal("the workflow lists no shard matrix")
	return 0
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
	if broken == string(raw) {
		t.Fatal("the broken copy is not broken: no job says needs: plan")
	}
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

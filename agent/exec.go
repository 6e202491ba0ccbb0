package agent

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/template"
	"github.com/agentproof/agentproof/worker"
)

// ExecVars are the placeholders an exec agent's args may use ({{name}}, see
// package template): workspace, apiUrl, runId, stateDir and taskId (driver.ExecArgVars,
// which `agentproof validate` checks). The run token and secrets are deliberately not
// among them: they reach the agent only through its environment (EnvRunToken and the
// secret names).
var ExecVars = driver.ExecArgVars

// execDriver runs a command declared in the profile (bring your own agent): never a
// shell, the argv exactly as templated, the environment exactly apiEnv.
type execDriver struct {
	command string
	args    []template.Template
	envRefs []string // names the profile binds to secret references
	bounds  bounds
}

func newExec(config api.DriverConfig, name driver.Name, ce *ConfigError) Driver {
	d := execDriver{}
	d.bounds = parseBounds(config, name, ce, []string{"command", "args", "env"})
	cmd := config.Command
	switch {
	case cmd == "":
		ce.Problems = append(ce.Problems, "command (an absolute path) is required")
	case !filepath.IsAbs(cmd) || strings.ContainsRune(cmd, 0):
		ce.Problems = append(ce.Problems, fmt.Sprintf("command %q must be an absolute path (no PATH lookup, no shell)", cmd))
	default:
		d.command = cmd
	}
	for i, s := range config.Args {
		t, err := template.Parse(s)
		if err != nil {
			ce.Problems = append(ce.Problems, fmt.Sprintf("args[%d]: %v", i, err))
			continue
		}
		for _, v := range t.Vars() {
			if !slices.Contains(ExecVars, v) {
				ce.Problems = append(ce.Problems, fmt.Sprintf("args[%d] uses {{%s}}; args may use only %s (the run token and secrets go only into the environment)", i, v, strings.Join(ExecVars, ", ")))
			}
		}
		d.args = append(d.args, t)
	}
	for _, name := range slices.Sorted(maps.Keys(config.Env)) {
		if !envNameRE().MatchString(name) {
			ce.Problems = append(ce.Problems, fmt.Sprintf("env name %q is not an environment variable name", name))
			continue
		}
		d.envRefs = append(d.envRefs, name)
	}
	return d
}

func (d execDriver) Name() string { return "exec" }

// Launch renders the args with the run's values (ExecVars) and builds the spec: Path is
// the command itself, argv[0] the command, the environment apiEnv (base, run identity,
// run token, resolved secrets). Every name the profile's env binds must have a resolved
// secret in env.Secrets.
func (d execDriver) Launch(rc controlplane.RunContext, env RunEnv) (worker.Spec, error) {
	if err := requireRun(env, true); err != nil {
		return worker.Spec{}, err
	}
	var missing []string
	for _, name := range d.envRefs {
		if _, ok := env.Secrets[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return worker.Spec{}, fmt.Errorf("agent: exec: secrets %s are not resolved", strings.Join(missing, ", "))
	}
	vars := map[string]string{
		"apiUrl": env.APIURL, "runId": env.RunID, "stateDir": env.StateDir,
		"taskId": rc.ActiveTask.ID, "workspace": env.Workspace,
	}
	args := []string{d.command}
	for i, t := range d.args {
		s, err := t.Render(vars)
		if err != nil {
			return worker.Spec{}, fmt.Errorf("agent: exec: args[%d]: %w", i, err)
		}
		args = append(args, s)
	}
	e, err := apiEnv(env)
	if err != nil {
		return worker.Spec{}, err
	}
	return worker.Spec{Path: d.command, Args: args, Env: e, Dir: env.Workspace, Timeout: d.bounds.timeout, MaxOutputBytes: d.bounds.maxOutput}, nil
}

// ExecLeftOpen is the detail of a run whose exec agent exited 0 without completing it
// (Report.LeftOpen): the runner completes such a run as failed, and this says why and
// which calls complete a run (docs/agent-protocol.md "Completing the run").
const ExecLeftOpen = "the exec agent exited 0 without completing its run, so the runner completed it as failed: " +
	"an exec agent must append its run.result.proposed and run.terminal events (POST $" + EnvAPIURL + "/events) " +
	"and then complete the run (POST $" + EnvAPIURL + "/complete) before it exits (docs/agent-protocol.md)"

// Report: an exec agent completes its own run; one it left open failed (LeftOpen says
// so when the agent exited 0).
func (d execDriver) Report(o worker.Outcome) Report {
	r := Report{Summary: Summarize(o), RunStatus: controlplane.RunFailed, Transcript: transcript(o)}
	if o.ExitCode != nil && *o.ExitCode == 0 {
		r.LeftOpen = ExecLeftOpen
	}
	return r
}

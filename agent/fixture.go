package agent

import (
	"strconv"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/worker"
)

// fixtureDriver runs a fixture program (docs/fixture-worker.md) as the agent (calibration of process
// control): `agentproof fixture-child <fixture> <lifetime-ms>` with exactly
// worker.ChildEnvironment() in the workspace.
type fixtureDriver struct {
	fixture string
	bounds  bounds
}

func (d fixtureDriver) Name() string { return "fixture:" + d.fixture }

// Launch builds the fixture program's spec. Its lifetime is the timeout plus
// worker.WatchdogMarginMS (capped at worker.MaxChildLifetimeMS), so the supervisor's
// timeout acts first, as in the local fixture worker. Only Executable and Workspace of
// env are used: a fixture never talks to the API and gets no token and no secret.
func (d fixtureDriver) Launch(_ controlplane.RunContext, env RunEnv) (worker.Spec, error) {
	if err := requireRun(env, false); err != nil {
		return worker.Spec{}, err
	}
	if err := requireExecutable(env); err != nil {
		return worker.Spec{}, err
	}
	lifetime := min(d.bounds.timeout.Milliseconds()+worker.WatchdogMarginMS, worker.MaxChildLifetimeMS)
	return worker.Spec{
		Path:           env.Executable,
		Args:           []string{"agentproof", "fixture-child", d.fixture, strconv.FormatInt(lifetime, 10)},
		Env:            worker.ChildEnvironment(),
		Dir:            env.Workspace,
		Timeout:        d.bounds.timeout,
		MaxOutputBytes: d.bounds.maxOutput,
	}, nil
}

// Report: a fixture's exit is the whole story — RunStatus is succeeded exactly when it
// exited 0 within its bounds with a complete observation.
func (d fixtureDriver) Report(o worker.Outcome) Report {
	status := controlplane.RunFailed
	if o.Exited && o.ExitCode != nil && *o.ExitCode == 0 && !o.TimedOut && !o.OutputExceeded && !o.Aborted && o.CollectorError == "" {
		status = controlplane.RunSucceeded
	}
	return Report{Summary: Summarize(o), RunStatus: status, Transcript: transcript(o)}
}

package attempt

import (
	"net/url"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/result"
)

// observeRuntime fills the runtime part of the observation from what the heartbeat
// runner recorded launching each run (api.LaunchFacts): per run the runtime facts the
// runtime_metadata matcher grades, the runtime mode every run agreed on (the distinct
// modes joined with "+" when they disagree, so that a runtime_mode matcher fails) and
// the environment (the catalog environment whose fixture created the control-plane
// environment the runs executed in, or the recorded id when they executed elsewhere).
// Nothing is taken from the catalog's declarations: a run without launch facts leaves
// them unobserved (the matchers are then not reached).
func observeRuntime(o *Observation, plan campaign.AttemptPlan, f *Fixtures) {
	var modes, envs []string
	for _, r := range o.Runs {
		l := r.Launch
		if l == nil || l.Driver == "" {
			// No launch facts, or only the live identity (pid and start time) of a run
			// still running when the attempt observed it: its facts land in the durable
			// record when its process ends, so they are unobserved here.
			continue
		}
		env := l.EnvironmentID
		if env != "" && env == f.EnvironmentID {
			env = plan.Cell.Environment.ID
		}
		o.Match.RuntimeFacts = append(o.Match.RuntimeFacts, map[string]string{
			match.RuntimeDriver: l.Driver, match.RuntimeAdapterType: l.AdapterType, match.RuntimeProvider: l.Provider,
			match.RuntimeCLIName: l.CLIName, match.RuntimeCLIVersion: l.CLIVersion, match.RuntimeBinarySHA256: l.BinarySHA256,
			match.RuntimeMode: l.RuntimeMode, match.RuntimeEnvironment: env, match.RuntimeExecutionTarget: l.ExecutionTarget,
		})
		o.Facts.Runtime = append(o.Facts.Runtime, reportFacts(r.RunID, l))
		if !slices.Contains(modes, l.RuntimeMode) {
			modes = append(modes, l.RuntimeMode)
		}
		if !slices.Contains(envs, env) {
			envs = append(envs, env)
		}
	}
	o.Match.HasRuntimeFacts = len(o.Match.RuntimeFacts) > 0
	observeProcesses(o)
	o.Match.RuntimeMode = strings.Join(modes, "+")
	o.Match.Environment = strings.Join(envs, "+")
}

// observeProcesses fills the process identities the process_identity matcher grades:
// per run, in order, the agent process the runner observed carrying it out — for a
// session driver's run (ACP, Pi) the identity read from /proc when its turn started
// (api.SessionTurn), otherwise the launched process's (api.LaunchFacts). A run with neither keeps a zero identity
// (the matcher is then not reached). It also fills the workspace watches the
// no_mutation matcher grades (api.WorkspaceWatch per run; a run without one was not
// watched, one whose record lists only part of its events is incomplete).
func observeProcesses(o *Observation) {
	o.Match.Processes = nil
	for _, r := range o.Runs {
		p := match.ProcessIdentity{RunID: r.RunID}
		switch t := r.SessionTurn(); {
		case t != nil && t.PID > 0:
			p.PID, p.StartTicks = t.PID, t.ProcessStartTicks
		case r.Launch != nil:
			p.PID, p.StartTicks = r.Launch.PID, r.Launch.ProcessStartTicks
		}
		o.Match.Processes = append(o.Match.Processes, p)
	}
	o.Match.HasProcesses = len(o.Match.Processes) > 0
	o.Match.Watches = nil
	for _, r := range o.Runs {
		w := match.RunWatch{RunID: r.RunID}
		if ww := r.WorkspaceWatch; ww != nil {
			w.Observed, w.Complete = true, ww.Complete && ww.More == 0
			for _, e := range ww.Events {
				w.Events = append(w.Events, match.WatchEvent{Op: e.Op, Path: e.Path, At: e.At})
			}
		}
		o.Match.Watches = append(o.Match.Watches, w)
	}
	o.Match.HasWatches = len(o.Match.Watches) > 0
}

// reportFacts is one run's launch facts as result.json shows them.
func reportFacts(runID string, l *api.LaunchFacts) result.RuntimeFacts {
	return result.RuntimeFacts{RunID: runID, Driver: l.Driver, AdapterType: l.AdapterType, Provider: l.Provider,
		CLIName: l.CLIName, CLIVersion: l.CLIVersion, VersionSource: l.VersionSource, Binary: l.Binary,
		BinarySHA256: l.BinarySHA256, Argv: slices.Clone(l.Argv), RuntimeMode: l.RuntimeMode,
		EnvironmentID: l.EnvironmentID, ExecutionTarget: l.ExecutionTarget, PID: l.PID,
		ProcessStartTicks: l.ProcessStartTicks, Problems: slices.Clone(l.Problems)}
}

// expectations are the runtime facts every run of the cell must have been launched
// with (the profile's runtime metadata check, a runtime_metadata matcher graded after
// the case's): the profile's driver and expectedRuntimeMetadata (adapterType,
// provider — with --live, the host of the live provider's base URL), the runtime mode
// its generation declares, the environment and its expected execution target, and for
// a CLI cell the pinned CLI's name, version and (when the install recorded it) its
// binary's SHA-256. An empty expectation is not checked.
func (x *LocalExecutor) expectations(plan campaign.AttemptPlan) map[string]string {
	return expectationsOf(plan, x.CLIs, x.Live)
}

// expectationsOf is expectations for the pinned CLIs clis, live or not.
func expectationsOf(plan campaign.AttemptPlan, clis map[string]PinnedCLI, live bool) map[string]string {
	p, env := plan.Cell.Profile, plan.Cell.Environment
	want := map[string]string{
		match.RuntimeDriver: p.Driver.String(), match.RuntimeAdapterType: p.ExpectedRuntimeMetadata.AdapterType,
		match.RuntimeProvider: p.ExpectedRuntimeMetadata.Provider, match.RuntimeMode: p.Generation,
		match.RuntimeEnvironment: env.ID, match.RuntimeExecutionTarget: env.ExpectedExecutionTarget.Kind,
	}
	if name, isCLI := p.Driver.CLI(); isCLI {
		pin := clis[name]
		want[match.RuntimeCLIName], want[match.RuntimeCLIVersion], want[match.RuntimeBinarySHA256] = name, pin.Version, pin.SHA256
		if dc, err := api.DriverConfigOf(p.DriverConfig); err == nil && live && dc.Live != nil {
			if u, err := url.Parse(dc.Live.BaseURL); err == nil {
				want[match.RuntimeProvider] = u.Hostname()
			}
		}
	}
	for k, v := range want {
		if v == "" {
			delete(want, k)
		}
	}
	return want
}

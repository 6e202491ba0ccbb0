package attempt

import (
	"testing"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/match"
)

// TestObserveRuntime: the runtime mode and environment the matchers grade are the ones
// the heartbeat runner recorded, never the catalog's: a run in another control-plane
// environment than the fixtures created, or runs that disagree, fail the matchers, and
// runs without launch facts leave them not reached.
func TestObserveRuntime(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cell := c.Cell("grader-calibration.reference.local.message-marker")
	plan := campaign.AttemptPlan{Cell: cell}
	f := &Fixtures{EnvironmentID: "env-fixture"}
	launch := func(env, mode string) api.HeartbeatRun {
		return api.HeartbeatRun{RunID: "r-" + env + mode, Launch: &api.LaunchFacts{Driver: "reference", RuntimeMode: mode, EnvironmentID: env, ExecutionTarget: "local"}}
	}
	tests := []struct {
		name       string
		runs       []api.HeartbeatRun
		mode, env  string
		modePasses bool
		envPasses  bool
		reached    bool
	}{
		{"as launched", []api.HeartbeatRun{launch("env-fixture", "native")}, "native", "local", true, true, true},
		{"another environment", []api.HeartbeatRun{launch("env-other", "native")}, "native", "env-other", true, false, true},
		{"runs disagree", []api.HeartbeatRun{launch("env-fixture", "native"), launch("env-fixture", "legacy")}, "native+legacy", "local", false, true, true},
		{"nothing recorded", []api.HeartbeatRun{{RunID: "r-1"}}, "", "", false, false, false},
		// A run still running when the attempt is observed (its deadline passed) shows
		// only its live identity: its launch facts are unobserved, not an empty driver.
		{"still running", []api.HeartbeatRun{{RunID: "r-1", Launch: &api.LaunchFacts{PID: 42, ProcessStartTicks: 7}}}, "", "", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := &Observation{Match: &match.Observation{}, Runs: tt.runs}
			observeRuntime(o, plan, f)
			if o.Match.RuntimeMode != tt.mode || o.Match.Environment != tt.env || o.Match.HasRuntimeFacts != tt.reached {
				t.Fatalf("observed mode %q environment %q facts %v", o.Match.RuntimeMode, o.Match.Environment, o.Match.HasRuntimeFacts)
			}
			for _, rf := range o.Facts.Runtime {
				if rf.RunID == "" || rf.Driver == "" {
					t.Errorf("runtime facts without run or driver (result.json would refuse them): %+v", rf)
				}
			}
			ms, err := match.CompileAll([]match.Spec{{Kind: match.KindRuntimeMode, Expected: "native"}, {Kind: match.KindEnvironment, Expected: "local"}})
			if err != nil {
				t.Fatal(err)
			}
			out := match.Evaluate(ms, o.Match)
			if out[0].Passed != tt.modePasses || out[1].Passed != tt.envPasses || out[0].NotReached == tt.reached {
				t.Errorf("runtime_mode %+v environment %+v", out[0], out[1])
			}
		})
	}
}

// TestExpectations: the profile's runtime metadata check expects the profile's driver
// and expectedRuntimeMetadata, its generation, the environment and its target, and for
// a CLI the pinned name, version and binary digest (unset ones are not checked).
func TestExpectations(t *testing.T) {
	t.Parallel()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	x := &LocalExecutor{CLIs: map[string]PinnedCLI{"codex": {Binary: "/x/codex", Version: "0.171.0", SHA256: "ab"}}}
	got := x.expectations(campaign.AttemptPlan{Cell: c.Cell("core-compatibility.codex.local.message-marker")})
	want := map[string]string{match.RuntimeDriver: "exec:codex", match.RuntimeAdapterType: "codex_local", match.RuntimeProvider: "scripted",
		match.RuntimeMode: "native", match.RuntimeEnvironment: "local", match.RuntimeExecutionTarget: "local",
		match.RuntimeCLIName: "codex", match.RuntimeCLIVersion: "0.171.0", match.RuntimeBinarySHA256: "ab"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("expectations %v", got)
	}
	x.Live = true
	if got := x.expectations(campaign.AttemptPlan{Cell: c.Cell("core-compatibility.codex.local.message-marker")}); got[match.RuntimeProvider] != "api.openai.com" {
		t.Errorf("live provider expectation %q", got[match.RuntimeProvider])
	}
	ref := x.expectations(campaign.AttemptPlan{Cell: c.Cell("core-compatibility.reference.local.message-marker")})
	if _, ok := ref[match.RuntimeCLIName]; ok || ref[match.RuntimeAdapterType] != "agentproof_builtin" {
		t.Errorf("reference expectations %v", ref)
	}
}

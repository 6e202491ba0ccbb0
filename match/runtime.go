package match

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/canonjson"
)

// KindRuntimeMetadata grades what the heartbeat runner recorded launching each run
// (Observation.RuntimeFacts): expected is an object of runtime keys (RuntimeKeys) to
// the exact value every run must have been launched with, for example
// {cliName: codex, cliVersion: "0.171.0"}. It passes when every run matches every
// key; it fails when a run recorded a different value; it is not reached when no run
// recorded its launch, or when a run did not record a key (and nothing mismatched).
const KindRuntimeMetadata Kind = "runtime_metadata"

// The keys of a run's runtime facts (api.LaunchFacts): the driver, adapter type and
// model provider it was launched with, the agent CLI's name, version and binary
// SHA-256, the runtime mode, the catalog environment it executed in and the kind of
// its execution target.
const (
	RuntimeDriver          = "driver"
	RuntimeAdapterType     = "adapterType"
	RuntimeProvider        = "provider"
	RuntimeCLIName         = "cliName"
	RuntimeCLIVersion      = "cliVersion"
	RuntimeBinarySHA256    = "binarySha256"
	RuntimeMode            = "runtimeMode"
	RuntimeEnvironment     = "environment"
	RuntimeExecutionTarget = "executionTarget"
)

// RuntimeKeys lists the runtime keys in declaration order.
var RuntimeKeys = []string{RuntimeDriver, RuntimeAdapterType, RuntimeProvider, RuntimeCLIName, RuntimeCLIVersion,
	RuntimeBinarySHA256, RuntimeMode, RuntimeEnvironment, RuntimeExecutionTarget}

// compileRuntime checks a runtime_metadata expectation: a non-empty object whose keys
// are runtime keys and whose values are non-empty strings (kept sorted by key).
func compileRuntime(spec Spec, c *compiled, bad badFunc) {
	m, ok := spec.Expected.(map[string]any)
	if !ok || len(m) == 0 {
		bad("expected", "expected must be an object of runtime keys (%s) to exact values", strings.Join(RuntimeKeys, ", "))
		return
	}
	var want canonjson.Object
	for _, k := range slices.Sorted(mapKeys(m)) {
		s, isString := m[k].(string)
		switch {
		case !slices.Contains(RuntimeKeys, k):
			bad("expected", "expected names unknown runtime key %q; use %s", k, strings.Join(RuntimeKeys, ", "))
		case !isString || s == "":
			bad("expected", "expected.%s must be a non-empty string", k)
		default:
			want = append(want, canonjson.Member{Key: k, Value: s})
		}
	}
	c.runtime, c.display = want, want
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// evalRuntime compares every run's runtime facts with the expectation.
func (c *compiled) evalRuntime(obs *Observation) result {
	if !obs.HasRuntimeFacts || len(obs.RuntimeFacts) == 0 {
		return result{missing: "no run recorded what it launched"}
	}
	observed := make([]map[string]string, len(obs.RuntimeFacts))
	mismatch, unobserved := false, ""
	for i, facts := range obs.RuntimeFacts {
		observed[i] = map[string]string{}
		for _, m := range c.runtime {
			got, want := facts[m.Key], m.Value.(string)
			observed[i][m.Key] = got
			switch {
			case got == "" && unobserved == "":
				unobserved = fmt.Sprintf("run %d did not record its %s", i+1, m.Key)
			case got != "" && got != want:
				mismatch = true
			}
		}
	}
	if !mismatch && unobserved != "" {
		return result{missing: unobserved}
	}
	return result{passed: !mismatch, observed: observed}
}

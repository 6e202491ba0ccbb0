package attempt

import (
	"fmt"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/verdict"
)

// Grades is what the grade stage returns: the outcomes of the case's matchers in case
// order, then of the profile's runtime metadata check (a runtime_metadata matcher
// over the expectations), and the harness fault that kept the matchers from being
// evaluated (they did not compile), or nil.
type Grades struct {
	Matchers []match.Outcome
	Fault    *verdict.Fault
}

// grade evaluates the rendered case's matchers and the runtime metadata check against
// obs (package match).
func grade(plan campaign.AttemptPlan, obs *match.Observation, expect map[string]string) Grades {
	specs := plan.Case.Matchers
	if len(expect) > 0 {
		exp := map[string]any{}
		for k, v := range expect {
			exp[k] = v
		}
		specs = append(specs[:len(specs):len(specs)], match.Spec{Kind: match.KindRuntimeMetadata, Expected: exp})
	}
	ms, err := match.CompileAll(specs)
	if err != nil {
		return Grades{Fault: verdict.HarnessFault(fmt.Errorf("compiling the case's matchers: %w", err), false)}
	}
	return Grades{Matchers: match.Evaluate(ms, obs)}
}

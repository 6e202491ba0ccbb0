package match

import (
	"fmt"
	"strings"
)

// KindCommand grades a verifier step: a command the harness ran after the agent's last
// turn (Observation.Verifiers; docs/workspaces.md "Verifier commands"). name is the
// step's id; at least one of
//
//	exitCode  the exit code the step must end with (an int; a step killed by a signal
//	          or its deadline has none and fails it)
//	expected  text its output (stdout then stderr, as kept) must contain
//	pattern   an RE2 expression its output must match (flags as message_regex's)
//	tests     {failed, passed, minPassed}: the counts of the test report the step
//	          wrote (a JUnit XML or CTRF JSON file the step declares)
//
// is required; every one given must hold. It is not reached when the step did not run
// (no verification, or an earlier problem kept it from starting), or tests is given and
// the step declared no report, or its report could not be read; a step the harness
// could not start or killed never reaches grading (the attempt is inconclusive).
const KindCommand Kind = "command"

// VerifierRun is one verifier step as the harness observed it: its id, whether it
// started, its exit code (nil when it did not exit normally), whether its own deadline
// stopped it, its kept output (stdout then stderr), and the counts of its test report
// (nil without one; ReportProblem says why a declared report could not be read).
type VerifierRun struct {
	Step          string      `json:"step"`
	Started       bool        `json:"started"`
	ExitCode      *int        `json:"exitCode,omitempty"`
	TimedOut      bool        `json:"timedOut,omitempty"`
	Output        string      `json:"-"`
	Report        *TestCounts `json:"report,omitempty"`
	ReportProblem string      `json:"reportProblem,omitempty"`
}

// TestCounts are the counts of a test report: tests passed, failed (failures and
// errors) and skipped, and the report's format ("junit" or "ctrf").
type TestCounts struct {
	Format  string `json:"format"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
}

// TestsSpec is a command matcher's tests parameter: the exact number of failed tests,
// the exact number passed, and the least number passed (each optional, one required).
type TestsSpec struct {
	Failed    *int `json:"failed,omitempty" yaml:"failed,omitempty"`
	Passed    *int `json:"passed,omitempty" yaml:"passed,omitempty"`
	MinPassed *int `json:"minPassed,omitempty" yaml:"minPassed,omitempty"`
}

// compileCommand checks a command matcher's parameters.
func compileCommand(spec Spec, c *compiled, bad badFunc) {
	if spec.Name == "" {
		bad("name", "name is required: the id of the verifier step to grade")
	}
	if spec.ExitCode == nil && spec.Expected == nil && spec.Pattern == "" && spec.Tests == nil {
		bad("exitCode", "a command matcher needs at least one of exitCode, expected, pattern or tests")
	}
	if spec.Expected != nil {
		if s, ok := stringParam(spec, bad, "the text the step's output must contain"); ok {
			c.text = s
		}
	}
	if spec.Pattern != "" || spec.Flags != "" {
		compileRegex(spec, c, bad)
	}
	if t := spec.Tests; t != nil {
		if t.Failed == nil && t.Passed == nil && t.MinPassed == nil {
			bad("tests", "tests needs at least one of failed, passed or minPassed")
		}
		for name, v := range map[string]*int{"failed": t.Failed, "passed": t.Passed, "minPassed": t.MinPassed} {
			if v != nil && *v < 0 {
				bad("tests", "tests.%s must be 0 or more; got %d", name, *v)
			}
		}
	}
	display := map[string]any{"step": spec.Name}
	if spec.ExitCode != nil {
		display["exitCode"] = *spec.ExitCode
	}
	if spec.Expected != nil {
		display["contains"] = c.text
	}
	if spec.Pattern != "" {
		display["pattern"] = spec.Pattern
	}
	if spec.Tests != nil {
		display["tests"] = *spec.Tests
	}
	c.display = display
}

// evalCommand grades the named step.
func (c *compiled) evalCommand(obs *Observation) result {
	if !obs.HasVerifiers {
		return result{missing: "no verifier ran"}
	}
	var run *VerifierRun
	for i := range obs.Verifiers {
		if obs.Verifiers[i].Step == c.spec.Name {
			run = &obs.Verifiers[i]
		}
	}
	if run == nil || !run.Started {
		return result{missing: fmt.Sprintf("verifier step %q did not run", c.spec.Name)}
	}
	observed := map[string]any{"step": run.Step, "timedOut": run.TimedOut}
	if run.ExitCode != nil {
		observed["exitCode"] = *run.ExitCode
	}
	ok := true
	if want := c.spec.ExitCode; want != nil {
		ok = ok && run.ExitCode != nil && *run.ExitCode == *want
	}
	if c.spec.Expected != nil {
		ok = ok && strings.Contains(run.Output, c.text)
	}
	if c.re != nil {
		ok = ok && c.re.MatchString(run.Output)
	}
	if c.spec.Expected != nil || c.re != nil {
		observed["output"] = run.Output
	}
	if t := c.spec.Tests; t != nil {
		if run.Report == nil {
			why := run.ReportProblem
			if why == "" {
				why = "the step declares no report"
			}
			return result{missing: fmt.Sprintf("verifier step %q has no test counts: %s", run.Step, why)}
		}
		observed["tests"] = *run.Report
		r := run.Report
		ok = ok && (t.Failed == nil || r.Failed == *t.Failed) && (t.Passed == nil || r.Passed == *t.Passed) &&
			(t.MinPassed == nil || r.Passed >= *t.MinPassed)
	}
	return result{passed: ok, observed: observed}
}

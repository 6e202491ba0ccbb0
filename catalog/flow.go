package catalog

import (
	"fmt"
	"slices"
)

// Flow names how the harness plays the human in a case. The names are the flow
// registry's (package campaign/flows, one file per flow), not the catalog's: loading
// learns them, and what each requires of a case, from the FlowContracts it is handed
// (WithFlows).
type Flow string

// FlowContract is what catalog validation checks of a case by its flow: the rules a
// flow's implementation declares beside its play function (package campaign/flows) and
// the command line hands to loading (WithFlows). The zero contract is a flow that works
// one task and needs nothing beyond the fields every case has.
type FlowContract struct {
	// Name is the flow's name, a case's flow field.
	Name Flow
	// FixtureProgram marks the flow of the fixture programs (driver fixture:<program>),
	// which never talk to the control plane: its cases need no title, prompt, marker
	// or issue state (and may not be untitled), and a fixture driver runs exactly the
	// flows so marked.
	FixtureProgram bool
	// RetriesKilledRun marks a flow that kills a run and has the human retry it: the
	// retry carries out the killed turn again, so the case's reference script has one
	// turn fewer than its expectedRunCount.
	RetriesKilledRun bool
	// Needs are the case fields the flow cannot be played without.
	Needs []Need
	// Accepts are the flow-only fields (FlowOnlyFields) a case of this flow may set; a
	// case of a flow that does not accept one must leave it unset.
	Accepts []CaseField
	// Check states any further rule of the flow, reporting through p; nil for none.
	Check func(cs *Case, p CaseProblems)
}

// CaseField names a case field a flow may need or accept, by its YAML key.
type CaseField string

// The case fields a flow contract may name.
const (
	FieldRevisionRequest CaseField = "revisionRequest"
	FieldQuestionAnswer  CaseField = "questionAnswer"
	FieldPlanMarkers     CaseField = "planMarkers"
	FieldFollowups       CaseField = "followups"
	FieldTurnMarkers     CaseField = "turnMarkers"
	FieldWorkspaceFile   CaseField = "workspaceFile"
	FieldTurnTimeout     CaseField = "turnTimeoutMs"
	// FieldRestartServer is restartServerBeforeQuestionAnswer, a flow-only field.
	FieldRestartServer CaseField = "restartServerBeforeQuestionAnswer"
)

// NeedableFields are the fields a contract's Needs may name.
var NeedableFields = []CaseField{FieldRevisionRequest, FieldQuestionAnswer, FieldPlanMarkers, FieldFollowups, FieldTurnMarkers, FieldWorkspaceFile, FieldTurnTimeout}

// FlowOnlyFields are the fields a case may set only when its flow accepts them
// (FlowContract.Accepts).
var FlowOnlyFields = []CaseField{FieldRestartServer}

// Need is one field a flow needs: set (a string or mapping field: present with its
// parts; turnTimeoutMs: positive), or for a list field exactly Count entries (at least
// one when Count is 0). What, when set, says what the field is to the flow, for the
// problem that names a missing one ("the human's answer").
type Need struct {
	Field CaseField
	Count int
	What  string
}

// Valid reports a contract naming a field no contract may name, or none.
func (fc FlowContract) Valid() error {
	if fc.Name == "" {
		return fmt.Errorf("a flow contract has no name")
	}
	for _, n := range fc.Needs {
		if !slices.Contains(NeedableFields, n.Field) {
			return fmt.Errorf("flow %s needs %q, which is not one of %s", fc.Name, n.Field, oneOf(NeedableFields))
		}
	}
	for _, f := range fc.Accepts {
		if !slices.Contains(FlowOnlyFields, f) {
			return fmt.Errorf("flow %s accepts %q, which is not one of %s", fc.Name, f, oneOf(FlowOnlyFields))
		}
	}
	return nil
}

// ScriptTurns is how many turns a reference script of a case of the flow carries out
// for expectedRuns expected runs: one per run, but one fewer when the flow retries a
// killed run (the retry carries out the killed turn again).
func (fc FlowContract) ScriptTurns(expectedRuns int) int {
	if fc.RetriesKilledRun {
		return expectedRuns - 1
	}
	return expectedRuns
}

// CaseProblems reports the problems a flow's Check finds in one case.
type CaseProblems struct {
	v  *validator
	cs *Case
}

// Add reports a problem at field (a pointer into the case, or nil for the case
// itself), prefixed with the case and its flow.
func (p CaseProblems) Add(field any, format string, args ...any) {
	p.v.add(p.v.at(field, p.cs), "case %s: flow %s: %s", p.cs.ID, p.cs.Flow, fmt.Sprintf(format, args...))
}

// Option configures Load, LoadDir and Default.
type Option func(*loadOptions)

type loadOptions struct {
	// flows, when non-nil, are the flows an implementation can play, by name: a case
	// naming any other flow is a problem, and each case is checked against its flow's
	// contract.
	flows map[Flow]FlowContract
}

// WithFlows gives loading the flows this agentproof plays with their contracts: a
// case whose flow is none of them is refused (naming the case's file:line and the
// flows), and every case is checked against its flow's contract, so that a catalog
// that could only end inconclusive is a usage error before anything starts. The
// command line passes the flow registry's (flows.Contracts). Without the option a
// case's flow is only required: no name is refused and no contract checked (for tests
// and tools that read declarations only).
func WithFlows(contracts ...FlowContract) Option {
	return func(o *loadOptions) {
		o.flows = make(map[Flow]FlowContract, len(contracts))
		for _, c := range contracts {
			o.flows[c.Name] = c
		}
	}
}

func buildOptions(opts []Option) loadOptions {
	var o loadOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

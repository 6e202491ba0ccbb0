package match

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// KindPlanRevisions grades a task's plan document revision by revision, from the
// persisted documents, interactions and approvals of the composite JSON observation
// ({documents, interactions, approvals}: the plan flow verifies canonical document
// revision ids, bodies, step counts and interaction targets). name is the document key (default "plan"); expected is the list of
// revisions the document must have, oldest first, each an object:
//
//	steps     the number of numbered steps of the revision's body (lines "1. …",
//	          "2) …"); required
//	contains  text the body must contain (optional)
//	outcome   how the human decided the revision: the one interaction or approval whose
//	          targetRevisionId is that revision's id must have this status (rejected,
//	          accepted, approved); required
//
// It passes when the document has exactly those revisions and each is the target of
// exactly one interaction or approval, with that outcome; nothing else may target a
// revision of the document. It is not reached when no JSON document was observed; a
// missing document fails.
const KindPlanRevisions Kind = "plan_revisions"

// PlanOutcomes are the outcomes a plan_revisions revision may expect.
var PlanOutcomes = []string{"rejected", "accepted", "approved"}

// planRevision is one expected revision of a plan_revisions matcher.
type planRevision struct {
	Steps    int    `json:"steps"`
	Contains string `json:"contains,omitempty"`
	Outcome  string `json:"outcome"`
}

// compilePlan checks a plan_revisions expectation.
func compilePlan(spec Spec, c *compiled, bad badFunc) {
	list, ok := spec.Expected.([]any)
	if !ok || len(list) == 0 {
		bad("expected", "expected must be a non-empty list of revisions {steps, contains?, outcome}")
		return
	}
	var want []planRevision
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			bad("expected", "expected[%d] must be an object {steps, contains?, outcome}", i)
			continue
		}
		var r planRevision
		for k, v := range m {
			switch k {
			case "steps":
				n, ok := intValue(v)
				if !ok || n < 1 {
					bad("expected", "expected[%d].steps must be an integer ≥ 1", i)
				}
				r.Steps = n
			case "contains":
				s, ok := v.(string)
				if !ok {
					bad("expected", "expected[%d].contains must be a string", i)
				}
				r.Contains = s
			case "outcome":
				s, _ := v.(string)
				if !slices.Contains(PlanOutcomes, s) {
					bad("expected", "expected[%d].outcome must be one of %s", i, strings.Join(PlanOutcomes, ", "))
				}
				r.Outcome = s
			default:
				bad("expected", "expected[%d] has unknown field %q; use steps, contains, outcome", i, k)
			}
		}
		if r.Steps == 0 || r.Outcome == "" {
			bad("expected", "expected[%d] needs steps and outcome", i)
		}
		want = append(want, r)
	}
	c.plan = want
	c.text = spec.Name
	if c.text == "" {
		c.text = "plan"
	}
	c.display = map[string]any{"document": c.text, "revisions": want}
}

// intValue accepts the integer forms YAML and JSON decoding produce.
func intValue(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case uint64:
		return int(n), true
	case float64:
		if n == float64(int(n)) {
			return int(n), true
		}
	}
	return 0, false
}

// stepLine is one numbered step of a plan body, compiled on first use.
var stepLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[ \t]*\d+[.)][ \t]+\S`) })

// PlanSteps counts the numbered steps ("1. …", "2) …") of a plan body.
func PlanSteps(body string) int { return len(stepLine().FindAllString(body, -1)) }

// planState is the part of the composite JSON observation plan_revisions reads.
type planState struct {
	Documents    []planDocument `json:"documents"`
	Interactions []planDecision `json:"interactions"`
	Approvals    []planDecision `json:"approvals"`
}

// planDocument is a document as plan_revisions reads it.
type planDocument struct {
	Key              string `json:"key"`
	LatestRevisionID string `json:"latestRevisionId"`
	Revisions        []struct {
		ID   string `json:"id"`
		Body string `json:"body"`
	} `json:"revisions"`
}

// planDecision is an interaction or approval as plan_revisions reads it.
type planDecision struct {
	ID               string  `json:"id"`
	Status           string  `json:"status"`
	TargetRevisionID *string `json:"targetRevisionId"`
}

// observedRevision is what plan_revisions reports about one revision.
type observedRevision struct {
	RevisionID string   `json:"revisionId"`
	Steps      int      `json:"steps"`
	Decisions  []string `json:"decisions"`
	Problems   []string `json:"problems,omitempty"`
}

// evalPlan grades the plan document of the composite JSON observation.
func (c *compiled) evalPlan(obs *Observation) result {
	st, missing := decodeObserved[planState](obs)
	if missing != "" {
		return result{missing: missing}
	}
	idx := slices.IndexFunc(st.Documents, func(d planDocument) bool { return d.Key == c.text })
	if idx < 0 {
		return result{observed: fmt.Sprintf("no document with key %q", c.text)}
	}
	doc := st.Documents[idx]
	targets := map[string][]planDecision{}
	revs := map[string]bool{}
	for _, r := range doc.Revisions {
		revs[r.ID] = true
	}
	for _, d := range append(slices.Clone(st.Interactions), st.Approvals...) {
		if d.TargetRevisionID != nil && revs[*d.TargetRevisionID] {
			targets[*d.TargetRevisionID] = append(targets[*d.TargetRevisionID], d)
		}
	}
	passed := len(doc.Revisions) == len(c.plan)
	observed := make([]observedRevision, len(doc.Revisions))
	for i, r := range doc.Revisions {
		o := observedRevision{RevisionID: r.ID, Steps: PlanSteps(r.Body), Decisions: []string{}}
		for _, d := range targets[r.ID] {
			o.Decisions = append(o.Decisions, d.ID+":"+d.Status)
		}
		if i < len(c.plan) {
			w := c.plan[i]
			if o.Steps != w.Steps {
				o.Problems = append(o.Problems, fmt.Sprintf("%d steps, want %d", o.Steps, w.Steps))
			}
			if w.Contains != "" && !strings.Contains(r.Body, w.Contains) {
				o.Problems = append(o.Problems, fmt.Sprintf("body lacks %q", w.Contains))
			}
			if ds := targets[r.ID]; len(ds) != 1 || ds[0].Status != w.Outcome {
				o.Problems = append(o.Problems, fmt.Sprintf("want exactly one interaction or approval targeting it, %s", w.Outcome))
			}
		}
		if i == len(doc.Revisions)-1 && r.ID != doc.LatestRevisionID {
			o.Problems = append(o.Problems, fmt.Sprintf("the document's latest revision is %s, not its last", doc.LatestRevisionID))
		}
		if len(o.Problems) > 0 {
			passed = false
		}
		observed[i] = o
	}
	return result{passed: passed, observed: observed}
}

package match

import (
	"fmt"
	"strings"
)

// KindTaskTitle grades the title of a task created without one (or kept as given) from
// the composite JSON observation's titles view {created, changes, afterRun, current} and
// agentCalls (the server's ledger of each run's agent calls). Two forms:
//
//   - Naming (expected: a list of keyword groups, count: the tool-call bound N ≥ 1):
//     the agent named its untitled task. The initial run's calls were recorded; its
//     first successful set_task_title is within its first N tool calls (discovery reads,
//     commands and uploads count; the run protocol does not); the first title change
//     is that run's; the saved title is the last change's title (call, audit and saved
//     task agree) and is not empty; and every keyword group matches the saved title: a
//     group is alternatives separated by "|", each matched case-insensitively as a
//     substring ("rotat|rollover" matches "Rotating"). Keywords are a deterministic
//     check of what the title is about, not an exact wording.
//   - Control (expected: the explicit title, a string; no count): the title was kept
//     throughout, not restored: it is the created title, no change was ever applied,
//     and it is the title after every run and now.
//
// Missing evidence fails: no JSON document, no
// titles view, no run, or an initial run whose calls were not recorded is a failure
// naming what is missing, never a pass and never "not reached".
const KindTaskTitle Kind = "task_title"

// titleState is the part of the composite JSON task_title reads.
type titleState struct {
	Titles *struct {
		Created string `json:"created"`
		Changes []struct {
			CommandID string  `json:"commandId"`
			RunID     *string `json:"runId"`
			Title     string  `json:"title"`
		} `json:"changes"`
		AfterRun []struct {
			RunID string `json:"runId"`
			Title string `json:"title"`
		} `json:"afterRun"`
		Current string `json:"current"`
	} `json:"titles"`
	AgentCalls []struct {
		RunID    string `json:"runId"`
		Recorded bool   `json:"recorded"`
		Calls    []struct {
			Tool   string `json:"tool"`
			Class  string `json:"class"`
			Status int    `json:"status"`
		} `json:"calls"`
	} `json:"agentCalls"`
}

// compileTitle prepares task_title: c.text is the control title, c.items the keyword
// groups (lower-cased), c.count the tool-call bound.
func compileTitle(spec Spec, c *compiled, bad badFunc) {
	switch v := spec.Expected.(type) {
	case string:
		if strings.TrimSpace(v) == "" {
			bad("expected", "expected (the control title) must not be empty")
		}
		if spec.Count != nil {
			bad("count", "count (the tool-call bound) applies only to the naming form (expected: a list of keyword groups)")
		}
		c.text, c.display = v, map[string]any{"title": v, "kept": "throughout"}
	case []any:
		if len(v) == 0 {
			bad("expected", "expected must list at least one keyword group")
		}
		for i, item := range v {
			s, ok := item.(string)
			if !ok || strings.Trim(s, "| ") == "" {
				bad("expected", "expected[%d] must be a keyword group: alternatives separated by \"|\"", i)
				continue
			}
			c.items = append(c.items, strings.ToLower(s))
		}
		if spec.Count == nil || *spec.Count < 1 {
			bad("count", "count (the bound on the initial run's tool calls before it names the task) must be 1 or more")
		} else {
			c.count = *spec.Count
		}
		c.display = map[string]any{"keywords": c.items, "withinToolCalls": c.count}
	default:
		bad("expected", "expected must be the control title (a string) or a list of keyword groups")
	}
}

// toolCallClasses are the agent-call classes that count as tool calls.
var toolCallClasses = []string{"discovery", "command", "file"}

// evalTitle grades task_title (see KindTaskTitle).
func (c *compiled) evalTitle(obs *Observation) result {
	fail := func(format string, args ...any) result {
		return result{observed: map[string]any{"problems": []string{fmt.Sprintf(format, args...)}}}
	}
	st, missing := decodeObserved[titleState](obs)
	if missing != "" {
		return fail("missing evidence: %s", missing)
	}
	t := st.Titles
	if t == nil {
		return fail("missing evidence: the task's titles were not observed")
	}
	if len(t.AfterRun) == 0 {
		return fail("missing evidence: the task has no run")
	}
	seen := map[string]any{"created": t.Created, "current": t.Current, "changes": len(t.Changes)}
	if c.items == nil { // control
		problems := c.controlTitleProblems(&st)
		seen["problems"] = problems
		return result{passed: len(problems) == 0, observed: seen}
	}
	initial := t.AfterRun[0].RunID
	recorded, problems := c.namingProblems(&st, initial, seen)
	if !recorded {
		return fail("missing evidence: the calls of the initial run %s were not recorded", initial)
	}
	problems = append(problems, c.chosenTitleProblems(&st, initial)...)
	seen["problems"] = problems
	return result{passed: len(problems) == 0, observed: seen}
}

// controlTitleProblems checks a control task, whose title c.text must never change:
// created with it, no title change, it after every run and saved. It returns the
// checks that failed.
func (c *compiled) controlTitleProblems(st *titleState) []string {
	t := st.Titles
	var problems []string
	if t.Created != c.text {
		problems = append(problems, fmt.Sprintf("the task was created titled %q, not %q", t.Created, c.text))
	}
	for _, ch := range t.Changes {
		problems = append(problems, fmt.Sprintf("command %s of run %s changed the control title to %q", ch.CommandID, deref(ch.RunID), ch.Title))
	}
	for _, a := range t.AfterRun {
		if a.Title != c.text {
			problems = append(problems, fmt.Sprintf("after run %s the title was %q", a.RunID, a.Title))
		}
	}
	if t.Current != c.text {
		problems = append(problems, fmt.Sprintf("the saved title is %q", t.Current))
	}
	return problems
}

// namingProblems checks that run initial named the task (a successful set_task_title)
// within its first c.count tool calls. It records the run's tool calls in
// seen["initialRunCalls"] and the naming call's 1-based position (0: none) in
// seen["namedAtCall"], and returns whether the run's calls were recorded and the
// checks that failed.
func (c *compiled) namingProblems(st *titleState, initial string, seen map[string]any) (recorded bool, problems []string) {
	var calls []string
	for _, l := range st.AgentCalls {
		if l.RunID != initial {
			continue
		}
		recorded = l.Recorded
		named := 0
		for _, call := range l.Calls {
			if !contains(toolCallClasses, call.Class) {
				continue
			}
			calls = append(calls, call.Tool)
			if named == 0 && call.Tool == "set_task_title" && call.Status == 200 {
				named = len(calls)
			}
		}
		seen["namedAtCall"] = named
		switch {
		case named == 0:
			problems = append(problems, fmt.Sprintf("the initial run %s never named the task (set_task_title) successfully", initial))
		case named > c.count:
			problems = append(problems, fmt.Sprintf("the initial run %s named the task at tool call %d, after the first %d", initial, named, c.count))
		}
	}
	seen["initialRunCalls"] = calls
	return recorded, problems
}

// chosenTitleProblems checks the title the agent chose: the first change made by run
// initial, the saved title the last change's, not empty, and holding (case-folded)
// one alternative of each keyword group in c.items. It returns the checks that failed.
func (c *compiled) chosenTitleProblems(st *titleState, initial string) []string {
	t := st.Titles
	var problems []string
	if len(t.Changes) == 0 {
		problems = append(problems, "no title change was applied")
	} else {
		if first := t.Changes[0]; deref(first.RunID) != initial {
			problems = append(problems, fmt.Sprintf("the first title change %s is run %s's, not the initial run %s's", first.CommandID, deref(first.RunID), initial))
		}
		if last := t.Changes[len(t.Changes)-1]; last.Title != t.Current {
			problems = append(problems, fmt.Sprintf("the saved title %q is not the last change's %q", t.Current, last.Title))
		}
	}
	title := strings.ToLower(t.Current)
	if strings.TrimSpace(title) == "" {
		problems = append(problems, "the saved title is empty")
	}
	for _, group := range c.items {
		hit := false
		for _, alt := range strings.Split(group, "|") {
			if alt = strings.TrimSpace(alt); alt != "" && strings.Contains(title, alt) {
				hit = true
			}
		}
		if !hit {
			problems = append(problems, fmt.Sprintf("the title %q has none of %q", t.Current, group))
		}
	}
	return problems
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

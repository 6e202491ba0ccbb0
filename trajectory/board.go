package trajectory

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/controlplane"
)

// FormatBoard is the control plane's record of a run: the task and the human's
// messages it was given, the semantic commands it applied and the operations the
// control plane did not simply allow it (snapshots/api-state.json), and its kept standard output.
// It is the trajectory of agents that write no stream of their own — agentproof's
// built-in reference, nop, wrong, leaky and hostile agents, the fixture programs and
// a plain exec agent — and the fallback of an agent whose stream is missing (then
// partial: the record holds what the agent did, not what it thought).
const FormatBoard = "agentproof-board-record"

func init() {
	register(Format{Name: FormatBoard, Accepts: func(driver.Name) bool { return true }, Convert: fromBoard})
}

// semanticScope is the idempotency scope of a run's semantic commands (controlplane:
// IdempotencyRecord, "<runId>:semantic-command").
const semanticScope = ":semantic-command"

// fromBoard builds a run's trajectory from the control plane's state:
//
//  1. user steps: for the task's first run, the task (identifier, title, description);
//     for a later run, a system step naming the wake that opened it; then every
//     interaction of the task the human resolved (title, outcome, result) and every
//     comment on the task by someone other than the run's actor, after the previous
//     run of the task opened and no later than this run opened;
//  2. agent steps, in state-revision order: each semantic command the run applied (a
//     tool call named by its kind with its canonical input as arguments, the command
//     result as its result) and each operation of the run the control plane did not simply allow (a
//     system step naming the operation and the reason);
//  3. the run's kept standard output, as an agent step (bounded).
//
// A deterministic agent (built-in, hostile, fixture) makes no model call: its agent
// steps have LLMCalls 0. A run the state does not hold, or that had not finished, is
// a gap; so is a run of a driver that writes its own stream (a CLI), which this
// record only stands in for.
func fromBoard(in Input) Trajectory {
	t := Trajectory{RunID: in.RunID, Agent: in.Agent, Format: FormatBoard}
	d := in.Driver
	if _, isCLI := d.CLI(); isCLI || d.SessionLayer() {
		t.Gap("the run's own stream was not read (it is missing, or no converter reads it): this is the control plane's record of what the run did, not of what it said or thought")
	}
	var llm *int
	if d.Builtin() || d.Kind == driver.KindFixture || d.Kind == driver.KindHostile {
		llm = intp(0)
	}
	st := in.State
	if st == nil {
		t.Gap("the control plane's state could not be read")
		t.Finish()
		return t
	}
	run := findRun(st, in.RunID)
	if run == nil {
		t.Gap("the control plane's state holds no run %s", in.RunID)
		addStdout(&t, in.Stdout, llm)
		t.Finish()
		return t
	}
	t.SessionID = run.SessionID
	if run.FinishedAt == nil {
		t.Gap("run %s had not finished when the state was read", run.ID)
	}
	addHumanSteps(&t, st, run)
	for _, step := range runSteps(st, run, llm) {
		t.Add(step)
	}
	addStdout(&t, in.Stdout, llm)
	t.Finish()
	return t
}

// addHumanSteps adds what reached the run from the human side: the task (the task's
// first run) or the wake that opened it (a later run), then the interactions of the
// task the human resolved and the comments of others on it, after the previous run of
// the task opened and no later than this run opened.
func addHumanSteps(t *Trajectory, st *controlplane.State, run *controlplane.Run) {
	first, prevOpened := previousRun(st, run)
	if first {
		if task := findTask(st, run.TaskID); task != nil {
			msg := task.Identifier + ": " + task.Title
			if task.Description != nil && *task.Description != "" {
				msg += "\n\n" + *task.Description
			}
			t.Add(Step{Role: RoleUser, Kind: "task", Message: NewText(msg)})
		}
	} else {
		var payload bytes.Buffer
		_ = json.Compact(&payload, run.Wake.Payload)
		t.Add(Step{Role: RoleSystem, Kind: "wake", Time: rfc3339(run.OpenedAt), Message: NewText("woken: " + string(run.Wake.Reason) + " " + payload.String())})
	}
	inWindow := func(at string) bool { return (prevOpened == "" || at > prevOpened) && at <= run.OpenedAt }
	for _, in := range st.Interactions {
		if in == nil || in.TaskID != run.TaskID || in.ResolvedAt == nil || !inWindow(*in.ResolvedAt) {
			continue
		}
		msg := in.Title + ": " + string(in.Status)
		var res bytes.Buffer
		if json.Compact(&res, in.Result) == nil && res.String() != "{}" && res.String() != "null" {
			msg += " " + res.String()
		}
		t.Add(Step{Role: RoleUser, Kind: "interaction", Time: rfc3339(*in.ResolvedAt), Message: NewText(msg)})
	}
	for _, c := range st.Comments {
		if c == nil || c.TaskID != run.TaskID || (c.AuthorActorID != nil && *c.AuthorActorID == run.ActorID) || !inWindow(c.CreatedAt) {
			continue
		}
		t.Add(Step{Role: RoleUser, Kind: "comment", Time: rfc3339(c.CreatedAt), Message: NewText(c.Body)})
	}
}

// runSteps are the run's own steps in state-revision order: each semantic command it
// applied (an agent step with llm model calls) and each of its operations the control
// plane did not simply allow (a system step).
func runSteps(st *controlplane.State, run *controlplane.Run, llm *int) []Step {
	type op struct {
		rev  int64
		step Step
	}
	var ops []op
	for _, rec := range st.Idempotency {
		if rec == nil || rec.Scope != run.ID+semanticScope {
			continue
		}
		ops = append(ops, op{rec.Result.StateRevision, commandStep(rec, llm)})
	}
	for _, dec := range st.Decisions {
		if dec == nil || dec.RunID == nil || *dec.RunID != run.ID || dec.Outcome == "allowed" {
			continue
		}
		ops = append(ops, op{dec.StateRevision, Step{Role: RoleSystem, Kind: "decision", Time: rfc3339(dec.At),
			Message: NewText("the control plane answered " + dec.Operation + " with " + dec.Outcome + ": " + dec.Reason)}})
	}
	slices.SortStableFunc(ops, func(a, b op) int { return cmp.Compare(a.rev, b.rev) })
	steps := make([]Step, len(ops))
	for i, o := range ops {
		steps[i] = o.step
	}
	return steps
}

// commandStep is the agent step of one applied semantic command: a tool call named by
// its kind with its canonical input (kind removed) as arguments, the command result as
// its result; an input that does not parse is kept as text.
func commandStep(rec *controlplane.IdempotencyRecord, llm *int) Step {
	var input map[string]json.RawMessage
	parsed := json.Unmarshal([]byte(rec.InputCanonical), &input) == nil
	kind := rec.Result.CommandKind
	if k := rawString(input["kind"]); kind == "" {
		kind = k
	}
	delete(input, "kind")
	args := json.RawMessage(`{}`)
	if len(input) > 0 {
		args, _ = json.Marshal(input)
	}
	a, cut := arguments(string(args))
	if !parsed { // keep what the record holds, as text
		a, cut = arguments(rec.InputCanonical)
	}
	id := rec.Result.CommandID
	if id == "" {
		id = rec.Key
	}
	res, _ := json.Marshal(rec.Result)
	return Step{Role: RoleAgent, Kind: "semantic_command", LLMCalls: llm,
		ToolCalls: []ToolCall{{ID: id, Name: kind, Arguments: a, ArgumentsTruncated: cut}},
		Results:   []Result{{CallID: id, Content: NewText(string(res))}}}
}

// addStdout adds the run's kept standard output as an agent step.
func addStdout(t *Trajectory, stdout []byte, llm *int) {
	if s := strings.TrimSpace(string(stdout)); s != "" {
		t.Add(Step{Role: RoleAgent, Kind: "stdout", Message: NewText(s), LLMCalls: llm})
	}
}

func findRun(st *controlplane.State, id string) *controlplane.Run {
	for _, r := range st.Runs {
		if r != nil && r.ID == id {
			return r
		}
	}
	return nil
}

func findTask(st *controlplane.State, id string) *controlplane.Task {
	for _, t := range st.Tasks {
		if t != nil && t.ID == id {
			return t
		}
	}
	return nil
}

// previousRun reports whether run is the first of its task (by open time, then id)
// and, when it is not, when the run before it opened.
func previousRun(st *controlplane.State, run *controlplane.Run) (first bool, prevOpened string) {
	var before []*controlplane.Run
	for _, r := range st.Runs {
		if r != nil && r.TaskID == run.TaskID && r.ID != run.ID && (r.OpenedAt < run.OpenedAt || (r.OpenedAt == run.OpenedAt && r.ID < run.ID)) {
			before = append(before, r)
		}
	}
	if len(before) == 0 {
		return true, ""
	}
	latest := before[0]
	for _, r := range before[1:] {
		if r.OpenedAt > latest.OpenedAt {
			latest = r
		}
	}
	return false, latest.OpenedAt
}

func rawString(b json.RawMessage) string {
	var s string
	_ = json.Unmarshal(b, &s)
	return s
}

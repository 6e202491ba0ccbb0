package trajectory

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/agentproof/agentproof/agent/scriptedmodel"
)

// FormatModelLog is the scripted model's request log (logs/model-requests.jsonl, one
// agentproof.model-request/v1 line per request): the model's side of a CLI run.
const FormatModelLog = "agentproof-model-requests"

// ModelLog builds one trajectory per run of a scripted model's request log, in run
// order (Trajectory.Ordinal is the log's 1-based run; RunID is ""). The conversation
// is the one the agent sent with its last scripted request of the run (auxiliary
// requests, step 0, are counted, not read), decoded by the scripted model's own
// decoder (scriptedmodel.DecodeRequest): user and developer text are user steps,
// assistant text and calls agent steps (calls with the arguments the agent sent
// back), tool output the results of the calls they name. The usage the scripted model
// reported for request n is the usage of the n-th agent turn. The model's answer to
// the last request is never in the log (it records what the agent sent): that is
// always a gap, as are a body that was not kept or does not decode.
func ModelLog(stream []byte, cut bool) []Trajectory {
	var readGaps Trajectory
	byRun := map[int][]modelLogEntry{}
	eachObjectLine(&readGaps, stream, cut, func(line []byte) bool {
		var e modelLogEntry
		if json.Unmarshal(line, &e) != nil {
			if !json.Valid(line) {
				return false // not JSON at all
			}
			readGaps.Gap("a log line does not have the model-request shape")
			return true
		}
		byRun[max(e.Run, 1)] = append(byRun[max(e.Run, 1)], e)
		return true
	})
	var out []Trajectory
	for _, run := range slices.Sorted(func(yield func(int) bool) {
		for k := range byRun {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, modelLogRun(run, byRun[run], readGaps.Gaps))
	}
	return out
}

// modelLogEntry is one line of the scripted model's request log: its sequence, run
// and time, the request's wire format and scripted step (0: auxiliary), the reply
// given or the error refused with, the usage reported in tokens, and the request body
// when it was kept.
type modelLogEntry struct {
	Seq    int                  `json:"seq"`
	Run    int                  `json:"run"`
	Time   string               `json:"time"`
	Format scriptedmodel.Format `json:"format"`
	Step   int                  `json:"step"`
	Reply  string               `json:"reply"`
	Error  string               `json:"error"`
	Usage  *struct {
		Input  float64 `json:"input_tokens"`
		Output float64 `json:"output_tokens"`
	} `json:"usage"`
	Body json.RawMessage `json:"body"`
}

// usage is the entry's reported usage, or nil.
func (e modelLogEntry) usage() *Usage {
	if e.Usage == nil {
		return nil
	}
	return &Usage{Input: count(e.Usage.Input), Output: count(e.Usage.Output)}
}

// modelLogRun builds the trajectory of run number run from its log entries (sorted
// here by sequence), starting with the gaps of reading the log (readGaps): every
// entry's usage counts; the conversation is the last scripted request's, with the
// scripted requests' usages as the agent turns'; the last request's error is a
// system step and its reply, never logged, a gap.
func modelLogRun(run int, es []modelLogEntry, readGaps []string) Trajectory {
	slices.SortStableFunc(es, func(a, b modelLogEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	t := Trajectory{Ordinal: run, Agent: Agent{Name: "scripted-model client", Version: "unknown"}, Format: FormatModelLog}
	t.Gaps = append(t.Gaps, readGaps...)
	var main []modelLogEntry
	aux := 0
	for _, e := range es {
		if e.Step >= 1 {
			main = append(main, e)
		} else {
			aux++
		}
		if u := e.usage(); u != nil {
			t.addUsage(*u)
		}
	}
	if len(main) == 0 {
		t.Gap("run %d has no scripted request (%d auxiliary or unmatched request(s))", run, aux)
		t.Finish()
		return t
	}
	last := main[len(main)-1]
	if len(last.Body) == 0 {
		t.Gap("the body of the last request of run %d was not kept", run)
	} else if req, err := scriptedmodel.DecodeRequest(last.Format, last.Body); err != nil {
		t.Gap("the last request of run %d does not decode: %s", run, NewText(err.Error()).S)
	} else {
		t.Agent.Model = req.Model
		usages := make([]*Usage, len(main))
		for i, e := range main {
			usages[i] = e.usage()
		}
		conversation(&t, req.Items, usages)
	}
	switch {
	case last.Error != "":
		t.Add(Step{Role: RoleSystem, Kind: "model_error", Time: rfc3339(last.Time), Message: NewText("the scripted model refused the last request: " + last.Error)})
	default:
		t.Gap("the model's reply to the last request (%s) is not in the request log", NewText(last.Reply).S)
	}
	t.Finish()
	return t
}

// conversation adds the steps of a decoded conversation; the
// usage of request n (usages[n-1], nil when not reported) goes to the n-th agent turn
// (the reply to it).
func conversation(t *Trajectory, items []scriptedmodel.Item, usages []*Usage) {
	callStep := map[string]int{}
	turn := 0
	lastAgent := -1
	for _, it := range items {
		switch it.Kind {
		case scriptedmodel.ItemUser:
			t.Add(Step{Role: RoleUser, Kind: "user", Message: NewText(it.Text)})
			lastAgent = -1
		case scriptedmodel.ItemAssistantText, scriptedmodel.ItemAssistantCall:
			// A call right after the same turn's text (or call) with no result between
			// them is part of that turn.
			if it.Kind == scriptedmodel.ItemAssistantCall && lastAgent >= 0 && len(t.Steps[lastAgent].Results) == 0 {
				addCall(t, lastAgent, it, callStep)
				continue
			}
			s := Step{Role: RoleAgent, Kind: string(it.Kind), LLMCalls: intp(1)}
			if turn < len(usages) {
				s.Usage = usages[turn]
			}
			turn++
			if it.Kind == scriptedmodel.ItemAssistantText {
				s.Message = NewText(it.Text)
			}
			lastAgent = t.Add(s)
			if lastAgent >= 0 && it.Kind == scriptedmodel.ItemAssistantCall {
				addCall(t, lastAgent, it, callStep)
			}
		case scriptedmodel.ItemToolResult:
			if i, ok := callStep[it.CallID]; ok {
				t.Steps[i].Results = append(t.Steps[i].Results, Result{CallID: it.CallID, Content: NewText(it.Text)})
			} else {
				t.Add(Step{Role: RoleSystem, Kind: "tool_result", Message: NewText("result of tool call " + it.CallID + ", which the conversation does not show"),
					Results: []Result{{Content: NewText(it.Text)}}})
			}
		}
	}
}

func addCall(t *Trajectory, i int, it scriptedmodel.Item, callStep map[string]int) {
	a, cut := arguments(it.Text)
	id := it.CallID
	if id == "" {
		id = it.Name
	}
	t.Steps[i].ToolCalls = append(t.Steps[i].ToolCalls, ToolCall{ID: id, Name: it.Name, Arguments: a, ArgumentsTruncated: cut})
	callStep[id] = i
}

package trajectory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ATIF (Harbor's Agent Trajectory Interchange Format, RFC 0001 "trajectory format" of
// the Harbor project, laude-institute/harbor, now harbor-framework/harbor): one JSON
// document per trajectory. docs/trajectories.md maps this model onto it field by field.

// ATIFVersion is the ATIF version ATIF writes (schema_version).
const ATIFVersion = "ATIF-v1.8"

// ATIFFile is the name of a run's ATIF document in its evidence directory, Harbor's
// own name for it.
const ATIFFile = "trajectory.json"

type atifDoc struct {
	SchemaVersion string         `json:"schema_version"`
	SessionID     string         `json:"session_id,omitempty"`
	TrajectoryID  string         `json:"trajectory_id,omitempty"`
	Agent         atifAgent      `json:"agent"`
	Steps         []atifStep     `json:"steps"`
	Notes         string         `json:"notes,omitempty"`
	FinalMetrics  *atifFinal     `json:"final_metrics,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

type atifAgent struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	ModelName string `json:"model_name,omitempty"`
}

type atifStep struct {
	StepID           int              `json:"step_id"`
	Timestamp        string           `json:"timestamp,omitempty"`
	Source           Role             `json:"source"`
	Message          string           `json:"message"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []atifCall       `json:"tool_calls,omitempty"`
	Observation      *atifObservation `json:"observation,omitempty"`
	Metrics          *atifMetrics     `json:"metrics,omitempty"`
	LLMCallCount     *int             `json:"llm_call_count,omitempty"`
	Extra            map[string]any   `json:"extra,omitempty"`
}

type atifCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
	Extra        map[string]any  `json:"extra,omitempty"`
}

type atifObservation struct {
	Results []atifResult `json:"results"`
}

type atifResult struct {
	SourceCallID string         `json:"source_call_id,omitempty"`
	Content      string         `json:"content,omitempty"`
	Extra        map[string]any `json:"extra,omitempty"`
}

type atifMetrics struct {
	PromptTokens     int64    `json:"prompt_tokens"`
	CompletionTokens int64    `json:"completion_tokens"`
	CachedTokens     int64    `json:"cached_tokens"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
}

type atifFinal struct {
	TotalPromptTokens     *int64   `json:"total_prompt_tokens,omitempty"`
	TotalCompletionTokens *int64   `json:"total_completion_tokens,omitempty"`
	TotalCachedTokens     *int64   `json:"total_cached_tokens,omitempty"`
	TotalCostUSD          *float64 `json:"total_cost_usd,omitempty"`
	TotalSteps            int      `json:"total_steps"`
}

// ATIF renders t as an ATIF document (indented JSON, ATIFVersion):
//
//   - session_id is the agent's session (or the control plane's), trajectory_id the
//     run id (or "run-<ordinal>" for a model request log); agent.version is
//     "unknown" when the stream does not say.
//   - Steps are numbered from 1. An agent step's tool calls, results (observation,
//     each naming its call), reasoning, usage (metrics) and llm_call_count are kept;
//     tool calls, metrics and reasoning exist only on agent steps, and a step with
//     llm_call_count 0 has no metrics (ATIF's rules); results of a user step are
//     moved to a following system step.
//   - A cut text, a tool's error and the stream's own name of a step are in the
//     step's, call's or result's extra ({"truncated": true, "bytes": n}, {"error":
//     true}, {"kind": …}).
//   - extra.agentproof holds the format, the run, partial and the gaps; a partial
//     trajectory also says so in notes.
//   - a trajectory without any step gets one system step saying so (noStep): ATIF
//     requires at least one.
//   - final_metrics has total_steps and, when the stream reported usage, the token
//     totals and the dollars the stream reported (never an estimate).
//
// It fails only when an argument document is not valid JSON (a bug of a converter).
func ATIF(t Trajectory) ([]byte, error) {
	d := atifDoc{SchemaVersion: ATIFVersion, SessionID: t.SessionID, Steps: []atifStep{}}
	d.TrajectoryID = t.RunID
	if d.TrajectoryID == "" && t.Ordinal > 0 {
		d.TrajectoryID = fmt.Sprintf("run-%d", t.Ordinal)
	}
	d.Agent = atifAgent{Name: t.Agent.Name, Version: t.Agent.Version, ModelName: t.Agent.Model}
	if d.Agent.Name == "" {
		d.Agent.Name = "unknown"
	}
	if d.Agent.Version == "" {
		d.Agent.Version = "unknown"
	}
	for _, s := range t.Steps {
		for _, as := range atifSteps(s) {
			as.StepID = len(d.Steps) + 1
			d.Steps = append(d.Steps, as)
		}
	}
	if len(d.Steps) == 0 {
		d.Steps = append(d.Steps, noStep(t))
	}
	ap := map[string]any{"format": t.Format, "partial": t.Partial(), "gaps": nonNil(t.Gaps)}
	if t.RunID != "" {
		ap["runId"] = t.RunID
	}
	if t.Ordinal > 0 {
		ap["runOrdinal"] = t.Ordinal
	}
	d.Extra = map[string]any{"agentproof": ap}
	if t.Partial() {
		d.Notes = "Partial trajectory (agentproof): " + strings.Join(t.Gaps, "; ")
	}
	d.FinalMetrics = &atifFinal{TotalSteps: len(d.Steps)}
	if u := t.Usage; u != nil {
		d.FinalMetrics.TotalPromptTokens, d.FinalMetrics.TotalCompletionTokens, d.FinalMetrics.TotalCachedTokens = &u.Input, &u.Output, &u.Cached
		d.FinalMetrics.TotalCostUSD = u.CostUSD
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("trajectory: encoding ATIF for %s: %w", t.Format, err)
	}
	return buf.Bytes(), nil
}

// noStep is the one step of a trajectory whose stream held none (ATIF requires at least
// one): a system step saying so, with the gaps, its extra.kind "agentproof-no-step".
func noStep(t Trajectory) atifStep {
	msg := "No step of this run was recorded (agentproof)"
	if len(t.Gaps) > 0 {
		msg += ": " + strings.Join(t.Gaps, "; ")
	}
	return atifStep{StepID: 1, Source: RoleSystem, Message: msg, Extra: map[string]any{"kind": "agentproof-no-step"}}
}

// atifSteps renders one step (two when a non-agent step carries results: ATIF keeps
// an observation on agent and system steps only).
func atifSteps(s Step) []atifStep {
	as := atifStep{Timestamp: s.Time, Source: s.Role, Message: s.Message.S}
	as.Extra = map[string]any{}
	if s.Kind != "" {
		as.Extra["kind"] = s.Kind
	}
	cutExtra(as.Extra, "message", s.Message)
	var results []atifResult
	for _, r := range s.Results {
		ar := atifResult{SourceCallID: r.CallID, Content: r.Content.S, Extra: map[string]any{}}
		if r.Error {
			ar.Extra["error"] = true
		}
		cutExtra(ar.Extra, "content", r.Content)
		if len(ar.Extra) == 0 {
			ar.Extra = nil
		}
		results = append(results, ar)
	}
	if s.Role == RoleAgent {
		as.ReasoningContent = s.Reasoning.S
		cutExtra(as.Extra, "reasoning", s.Reasoning)
		for _, c := range s.ToolCalls {
			ac := atifCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: c.Arguments}
			if len(ac.Arguments) == 0 {
				ac.Arguments = json.RawMessage(`{}`)
			}
			if c.Server != "" || c.ArgumentsTruncated {
				ac.Extra = map[string]any{}
				if c.Server != "" {
					ac.Extra["server"] = c.Server
				}
				if c.ArgumentsTruncated {
					ac.Extra["argumentsTruncated"] = true
				}
			}
			as.ToolCalls = append(as.ToolCalls, ac)
		}
		as.LLMCallCount = s.LLMCalls
		if u := s.Usage; u != nil && (s.LLMCalls == nil || *s.LLMCalls > 0) {
			as.Metrics = &atifMetrics{PromptTokens: u.Input, CompletionTokens: u.Output, CachedTokens: u.Cached, CostUSD: u.CostUSD}
		}
		if as.LLMCallCount != nil && *as.LLMCallCount == 0 {
			as.ReasoningContent = ""
		}
	}
	if len(as.Extra) == 0 {
		as.Extra = nil
	}
	if len(results) == 0 {
		return []atifStep{as}
	}
	if s.Role != RoleUser {
		as.Observation = &atifObservation{Results: results}
		return []atifStep{as}
	}
	return []atifStep{as, {Source: RoleSystem, Message: "", Observation: &atifObservation{Results: results}}}
}

// cutExtra records in extra that text was cut (name+"Truncated", name+"Bytes").
func cutExtra(extra map[string]any, name string, text Text) {
	if text.Truncated {
		extra[name+"Truncated"] = true
		extra[name+"Bytes"] = text.Bytes
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

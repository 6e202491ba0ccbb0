package trajectory

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

// atifSchema compiles testdata/atif-v1.8.schema.json (see testdata/SOURCES.md), with
// formats asserted.
func atifSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	schemaOnce.Do(func() {
		raw, err := os.ReadFile(filepath.Join("testdata", "atif-v1.8.schema.json"))
		if err != nil {
			schemaErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		const url = "https://agentproof.invalid/schemas/atif-v1.8.schema.json"
		if schemaErr = c.AddResource(url, doc); schemaErr != nil {
			return
		}
		schema, schemaErr = c.Compile(url)
	})
	if schemaErr != nil {
		t.Fatal(schemaErr)
	}
	return schema
}

// validateATIF checks b against the ATIF schema and the rules the schema cannot say:
// step ids 1..n in order, and every result's source_call_id naming a tool call of its
// step (the RFC's reference validator checks both).
func validateATIF(t testing.TB, b []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	if err := atifSchema(t).Validate(inst); err != nil {
		return err
	}
	var d struct {
		Steps []struct {
			StepID    int `json:"step_id"`
			ToolCalls []struct {
				ID string `json:"tool_call_id"`
			} `json:"tool_calls"`
			Observation *struct {
				Results []struct {
					Source *string `json:"source_call_id"`
				} `json:"results"`
			} `json:"observation"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	for i, s := range d.Steps {
		if s.StepID != i+1 {
			return &ruleError{"step ids are not 1..n in order"}
		}
		if s.Observation == nil {
			continue
		}
		for _, r := range s.Observation.Results {
			if r.Source == nil || *r.Source == "" {
				continue
			}
			found := false
			for _, c := range s.ToolCalls {
				found = found || c.ID == *r.Source
			}
			if !found {
				return &ruleError{"source_call_id " + *r.Source + " names no tool call of its step"}
			}
		}
	}
	return nil
}

type ruleError struct{ s string }

func (e *ruleError) Error() string { return e.s }

// TestSchemaAcceptsTheRFCExample calibrates the schema: the RFC's own example must
// validate, and each mutation breaking a rule the RFC states must not.
func TestSchemaAcceptsTheRFCExample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "rfc-0001-example.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateATIF(t, raw); err != nil {
		t.Fatalf("the RFC's example does not validate: %v", err)
	}
	var v18 map[string]any
	if err := json.Unmarshal(raw, &v18); err != nil {
		t.Fatal(err)
	}
	v18["schema_version"] = "ATIF-v1.8"
	step(v18, 0)["message"] = []any{map[string]any{"type": "text", "text": "listen"},
		map[string]any{"type": "audio", "source": map[string]any{"media_type": "audio/mp3", "path": "q.mp3", "duration_sec": 2.5}}}
	if b, _ := json.Marshal(v18); validateATIF(t, b) != nil {
		t.Fatalf("the example as v1.8 with an audio part does not validate: %v", validateATIF(t, b))
	}
	mutations := []struct {
		name   string
		mutate func(d map[string]any)
	}{
		{"no schema_version", func(d map[string]any) { delete(d, "schema_version") }},
		{"unknown schema_version", func(d map[string]any) { d["schema_version"] = "ATIF-v2.0" }},
		{"no agent version", func(d map[string]any) { delete(d["agent"].(map[string]any), "version") }},
		{"no steps", func(d map[string]any) { delete(d, "steps") }},
		{"unknown root field", func(d map[string]any) { d["trajectory"] = 1 }},
		{"step without message", func(d map[string]any) { delete(step(d, 0), "message") }},
		{"step id 0", func(d map[string]any) { step(d, 0)["step_id"] = 0 }},
		{"step ids out of order", func(d map[string]any) { step(d, 1)["step_id"] = 7 }},
		{"unknown source", func(d map[string]any) { step(d, 0)["source"] = "tool" }},
		{"tool call on a user step", func(d map[string]any) { step(d, 0)["tool_calls"] = step(d, 1)["tool_calls"] }},
		{"metrics on a user step", func(d map[string]any) { step(d, 0)["metrics"] = map[string]any{} }},
		{"reasoning on a system step", func(d map[string]any) {
			step(d, 0)["source"] = "system"
			step(d, 0)["reasoning_content"] = "x"
		}},
		{"tool call without arguments", func(d map[string]any) {
			delete(step(d, 1)["tool_calls"].([]any)[0].(map[string]any), "arguments")
		}},
		{"arguments not an object", func(d map[string]any) {
			step(d, 1)["tool_calls"].([]any)[0].(map[string]any)["arguments"] = "ticker=GOOGL"
		}},
		{"observation without results", func(d map[string]any) { step(d, 1)["observation"] = map[string]any{} }},
		{"result of no call", func(d map[string]any) {
			step(d, 1)["observation"].(map[string]any)["results"].([]any)[0].(map[string]any)["source_call_id"] = "call_missing"
		}},
		{"llm_call_count 0 with metrics", func(d map[string]any) { step(d, 2)["llm_call_count"] = 0 }},
		{"negative tokens", func(d map[string]any) { step(d, 1)["metrics"].(map[string]any)["prompt_tokens"] = -1 }},
		{"bad timestamp", func(d map[string]any) { step(d, 0)["timestamp"] = "yesterday" }},
		{"image part without source", func(d map[string]any) {
			step(d, 0)["message"] = []any{map[string]any{"type": "image"}}
		}},
		{"empty steps (v1.8: at least one)", func(d map[string]any) { d["steps"] = []any{} }},
		{"audio part with an image source", func(d map[string]any) {
			step(d, 0)["message"] = []any{map[string]any{"type": "audio", "source": map[string]any{"media_type": "image/png", "path": "a.png"}}}
		}},
		{"audio part with a negative duration", func(d map[string]any) {
			step(d, 0)["message"] = []any{map[string]any{"type": "audio", "source": map[string]any{"media_type": "audio/wav", "path": "a.wav", "duration_sec": -1}}}
		}},
		{"audio part with text", func(d map[string]any) {
			step(d, 0)["message"] = []any{map[string]any{"type": "audio", "text": "x", "source": map[string]any{"media_type": "audio/wav", "path": "a.wav"}}}
		}},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			m.mutate(d)
			b, _ := json.Marshal(d)
			if err := validateATIF(t, b); err == nil {
				t.Fatal("the mutated example validates")
			}
		})
	}
}

func step(d map[string]any, i int) map[string]any {
	return d["steps"].([]any)[i].(map[string]any)
}

// TestATIFShape checks the writer's rules on a constructed trajectory: agent-only
// fields dropped from other steps, user results moved to a system step, cut texts and
// errors in extra, metrics absent on deterministic steps, partial in notes and extra.
func TestATIFShape(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxTextBytes) // 2 bytes a rune: cut
	tr := Trajectory{RunID: "run-1", Format: "test", Agent: Agent{Name: "a"}, Steps: []Step{
		{Role: RoleUser, Message: NewText("do it"), Results: []Result{{Content: NewText("stray")}}, Reasoning: NewText("not mine")},
		{Role: RoleAgent, Message: NewText(long), ToolCalls: []ToolCall{{ID: "c1", Name: "f", Arguments: json.RawMessage(`{"a":1}`), Server: "s"}},
			Results: []Result{{CallID: "c1", Content: NewText("boom"), Error: true}}, Usage: &Usage{Input: 3, Output: 2, Cached: 1}, LLMCalls: intp(1)},
		{Role: RoleAgent, Message: NewText("done"), Reasoning: NewText("r"), Usage: &Usage{Input: 1}, LLMCalls: intp(0)},
		{Role: RoleSystem, Message: NewText("note"), ToolCalls: []ToolCall{{ID: "x", Name: "y"}}},
	}, Gaps: []string{"the stream was cut"}}
	tr.Usage = &Usage{Input: 4, Output: 2, Cached: 1}
	b, err := ATIF(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateATIF(t, b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	steps := d["steps"].([]any)
	if len(steps) != 5 {
		t.Fatalf("%d steps, want 5 (the user step's result moved to a system step)", len(steps))
	}
	if s := step(d, 1); s["source"] != "system" || s["observation"] == nil {
		t.Errorf("step 2 = %v, want the system step holding the user step's result", s)
	}
	s2 := step(d, 2)
	ex := s2["extra"].(map[string]any)
	if ex["messageTruncated"] != true || ex["messageBytes"] != float64(len(long)) {
		t.Errorf("step 3 extra = %v, want the cut recorded", ex)
	}
	res := s2["observation"].(map[string]any)["results"].([]any)[0].(map[string]any)
	if res["extra"].(map[string]any)["error"] != true {
		t.Errorf("result = %v, want error in extra", res)
	}
	if s := step(d, 3); s["metrics"] != nil || s["reasoning_content"] != nil {
		t.Errorf("deterministic step = %v, want no metrics and no reasoning", s)
	}
	if s := step(d, 4); s["tool_calls"] != nil {
		t.Errorf("system step = %v, want no tool calls", s)
	}
	if !strings.Contains(d["notes"].(string), "the stream was cut") {
		t.Errorf("notes = %q", d["notes"])
	}
	if ap := d["extra"].(map[string]any)["agentproof"].(map[string]any); ap["partial"] != true {
		t.Errorf("extra.agentproof = %v", ap)
	}
	if fm := d["final_metrics"].(map[string]any); fm["total_prompt_tokens"] != float64(4) || fm["total_steps"] != float64(5) {
		t.Errorf("final_metrics = %v", fm)
	}
}

package scriptedmodel

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseScript(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"nonce": "n42"}
	tests := []struct {
		name    string
		src     string
		want    *Script
		wantErr []string // substrings, all must appear
	}{
		{
			name: "full",
			src: `schema: agentproof.model-script/v1
model: m1
aux_answer: "Title {{nonce}}"
usage: {input_tokens: 7, output_tokens: 3}
steps:
  - call: shell
    args: {command: "echo {{nonce}} > f.txt", workdir: "."}
  - call: finish_task
    args: {summary: "done {{nonce}}", tags: ["a", "{{nonce}}"], n: 2}
    expect: "exit"
  - answer: "OK_{{nonce}}"
`,
			want: &Script{Model: "m1", AuxAnswer: "Title n42", Usage: &Usage{InputTokens: 7, OutputTokens: 3}, Steps: []Step{
				{Call: "shell", Args: map[string]any{"command": "echo n42 > f.txt", "workdir": "."}, Line: 6},
				{Call: "finish_task", Args: map[string]any{"summary": "done n42", "tags": []any{"a", "n42"}, "n": 2}, Expect: "exit", Line: 8},
				{Answer: "OK_n42", Line: 11},
			}},
		},
		{
			name: "defaults",
			src:  "steps:\n  - answer: hi\n",
			want: &Script{Model: DefaultModel, AuxAnswer: DefaultAuxAnswer, Steps: []Step{{Answer: "hi", Line: 2}}},
		},
		{
			name: "empty answer is an answer",
			src:  "steps:\n  - answer: \"\"\n",
			want: &Script{Model: DefaultModel, AuxAnswer: DefaultAuxAnswer, Steps: []Step{{Answer: "", Line: 2}}},
		},
		{
			name:    "every problem at once",
			src:     "schema: other/v9\nusage: {input_tokens: -1}\nsteps:\n  - {}\n  - {call: shell, answer: x}\n  - {call: \"bad role!\"}\n  - {call: shell}\n  - {answer: \"{{undefined}}\", args: {a: 1}}\n",
			wantErr: []string{`schema is "other/v9"`, "must not be negative", "step 1 (line 4): needs call or answer", "step 2 (line 5): has more than one of call, answer and answer_match", `call "bad role!" is not a tool role`, "step 4 (line 7): call shell needs args.command", `variable "undefined" is not defined`, "an answer takes no args"},
		},
		{name: "unknown field", src: "steps:\n  - answer: x\n    sleep: 3\n", wantErr: []string{"field sleep not found"}},
		{name: "no steps", src: "model: x\n", wantErr: []string{"at least one step"}},
		{name: "empty", src: "", wantErr: []string{"empty document"}},
		{name: "not yaml", src: "steps: [", wantErr: []string{"yaml"}},
		{name: "unclosed placeholder", src: "steps:\n  - answer: \"{{nonce\"\n", wantErr: []string{"not closed"}},
		{name: "non-string map key", src: "steps:\n  - call: t\n    args: {a: {1: x}}\n", wantErr: []string{"not a JSON value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseScript("s.yaml", []byte(tc.src), vars)
			if tc.wantErr != nil {
				var se *ScriptError
				if !errors.As(err, &se) {
					t.Fatalf("err = %v, want a *ScriptError", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if !strings.HasPrefix(err.Error(), "model script s.yaml: ") {
					t.Errorf("error %q does not name the script", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("script (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseScriptTooLarge(t *testing.T) {
	t.Parallel()
	_, err := ParseScript("big", make([]byte, MaxScriptBytes+1), nil)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzParseScript: the parser never panics, and a script it accepts has steps that are
// each a call or an answer, with args that encode as JSON.
func FuzzParseScript(f *testing.F) {
	f.Add("steps:\n  - call: shell\n    args: {command: \"echo {{nonce}}\"}\n  - answer: ok\n")
	f.Add("model: m\nusage: {input_tokens: 1, output_tokens: 2}\nsteps: [{answer: x, expect: y}]\n")
	f.Add("steps:\n  - call: finish_task\n    args: {a: [1, 2.5, true, null, {b: c}]}\n")
	f.Add("steps: [{call: x, args: {k: &a [1]}}, {answer: *a}]")
	f.Add("steps:\n  - call: write_file\n    args: {path: /w/p, content: c}\n  - when: {toolResult: denied, step: 1}\n    answer: no\n    else: {when: {toolResult: error}, answer: e, else: {answer: ok}}\n")
	f.Add("steps: [{call: shell, args: {command: x}}, {when: {toolResult: rejected}, call: shell, args: {command: y}, else: {answer: z}}]")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := ParseScript("fuzz", []byte(src), map[string]string{"nonce": "n"})
		if err != nil {
			return
		}
		if len(s.Steps) == 0 || s.Model == "" {
			t.Fatalf("accepted a script without steps or model: %+v", s)
		}
		for i, st := range s.Steps {
			if st.Call != "" && st.Answer != "" {
				t.Fatalf("step %d is both a call and an answer: %+v", i, st)
			}
			if _, err := json.Marshal(st.Args); err != nil {
				t.Fatalf("step %d args do not encode: %v", i, err)
			}
			depth := 0
			for b := &s.Steps[i]; b != nil; b = b.Else {
				if b.When == nil && b.Else != nil {
					t.Fatalf("step %d has an else without a condition", i)
				}
				if b.When != nil && (!slices.Contains(ResultKinds, b.When.ToolResult) || b.When.Step < 0 || b.When.Step > i) {
					t.Fatalf("step %d accepted condition %+v", i, b.When)
				}
				if depth++; depth > MaxBranchDepth {
					t.Fatalf("step %d nests %d else steps", i, depth)
				}
			}
		}
	})
}

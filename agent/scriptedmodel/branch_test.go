package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/agentproof/agentproof/agent/script"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// branchScript writes, finishes, then says what became of the write: denied, or the
// marker (else).
const branchScript = `steps:
  - call: write_file
    args: {path: /w/proof.txt, content: proof}
  - call: finish_task
    args: {summary: MARKER}
  - when: {toolResult: denied, step: 1}
    answer: "Permission to write proof.txt was denied."
    else:
      when: {toolResult: error, step: 1}
      answer: "The write failed."
      else: {answer: MARKER}
`

func TestParseBranches(t *testing.T) {
	t.Parallel()
	s, err := ParseScript("b.yaml", []byte(branchScript), nil)
	if err != nil {
		t.Fatal(err)
	}
	st := s.Steps[2]
	if st.When == nil || st.When.ToolResult != ResultDenied || st.When.Step != 1 || st.When.Line != 6 || st.Answer == "" {
		t.Fatalf("step 3 = %+v (when %+v)", st, st.When)
	}
	if e := st.Else; e == nil || e.When == nil || e.When.ToolResult != ResultError || e.Line != 9 || e.Else == nil || e.Else.Answer != "MARKER" || e.Else.When != nil {
		t.Fatalf("step 3 else = %+v", st.Else)
	}
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"unknown kind", "steps:\n  - call: shell\n    args: {command: x}\n  - when: {toolResult: denyed}\n    answer: a\n",
			[]string{"step 2 (line 4): when (line 4): toolResult: \"denyed\" is not a tool result kind"}},
		{"no kind", "steps:\n  - answer: a\n    when: {step: 0}\n", []string{"when (line 3): needs toolResult"}},
		{"later step", "steps:\n  - call: shell\n    args: {command: x}\n  - when: {toolResult: denied, step: 2}\n    answer: a\n",
			[]string{"step 2 must name an earlier step (1..1)"}},
		{"step without a call", "steps:\n  - answer: a\n  - when: {toolResult: denied, step: 1}\n    answer: b\n",
			[]string{"step 2: when (line 3): step 1 calls no tool"}},
		{"else without when", "steps:\n  - answer: a\n    else: {answer: b}\n", []string{"step 1 (line 2): else needs a when"}},
		{"bad else", "steps:\n  - call: shell\n    args: {command: x}\n  - when: {toolResult: approved}\n    answer: a\n    else: {call: shell}\n",
			[]string{"step 2 else (line 6): call shell needs args.command"}},
		{"unknown field in when", "steps:\n  - answer: a\n    when: {toolResult: denied, of: x}\n", []string{"field of not found"}},
	} {
		_, err := ParseScript("b.yaml", []byte(tc.src), nil)
		var se *ScriptError
		if !errors.As(err, &se) {
			t.Errorf("%s: err = %v, want a *ScriptError", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
	}
	deep := "steps:\n  - call: shell\n    args: {command: x}\n  - when: {toolResult: denied}\n    answer: a\n"
	indent := "    "
	for range MaxBranchDepth + 1 {
		deep += indent + "else:\n" + indent + "  when: {toolResult: denied}\n" + indent + "  answer: a\n"
		indent += "  "
	}
	if _, err := ParseScript("deep", []byte(deep), nil); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("deep else: %v", err)
	}
}

func TestParseResultKind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]ResultKind{"approved": ResultApproved, "denied": ResultDenied, "rejected": ResultDenied,
		"declined": ResultDenied, "blocked": ResultDenied, "error": ResultError, "failed": ResultError,
		"cancelled": ResultCancelled, "canceled": ResultCancelled, "aborted": ResultCancelled} {
		if got, err := ParseResultKind(in); err != nil || got != want {
			t.Errorf("ParseResultKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "missing", "Denied", "ok"} {
		if _, err := ParseResultKind(bad); err == nil {
			t.Errorf("ParseResultKind(%q) accepted", bad)
		}
	}
}

// TestToolResultsOfTheCLIs: the tool result each pinned CLI sent its model after an
// approved, a declined and a failed write (testdata/toolresults: the requests of the
// real CLIs, offline, trimmed to the conversation) is classified as what happened, in
// every wire format, and the branch script answers accordingly.
func TestToolResultsOfTheCLIs(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/toolresults/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured requests: %v", err)
	}
	s, err := ParseScript("b.yaml", []byte(branchScript), nil)
	if err != nil {
		t.Fatal(err)
	}
	answers := map[ResultKind]string{ResultDenied: "Permission to write proof.txt was denied.", ResultError: "The write failed.", ResultApproved: "MARKER"}
	for _, f := range files {
		var fx struct {
			Format Format          `json:"format"`
			Want   ResultKind      `json:"want"`
			Body   json.RawMessage `json:"body"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		req, err := DecodeRequest(fx.Format, fx.Body)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got, ok := req.LatestToolResult()
		if !ok || got.Kind != fx.Want {
			t.Errorf("%s: latest tool result %+v (found %v), want %s", filepath.Base(f), got, ok, fx.Want)
		}
		// The conversation continues with finish_task's result: step 3's condition
		// looks at step 1's write.
		req.Items = append(req.Items, Item{Kind: ItemAssistantCall, Name: "finish_task", CallID: "call_ap_2"}, Item{Kind: ItemToolResult, CallID: "call_ap_2", Text: "ok"})
		reply, err := s.Decide(req)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if reply.Text != answers[fx.Want] || len(reply.Branches) == 0 || reply.Branches[0].Observed.Kind != fx.Want {
			t.Errorf("%s: reply %q branches %+v, want %q", filepath.Base(f), reply.Text, reply.Branches, answers[fx.Want])
		}
	}
}

func TestClassifyToolResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		it   Item
		want ResultKind
	}{
		{"plain output", Item{Text: "Wrote file successfully."}, ResultApproved},
		{"codex exit 0", Item{Text: "Chunk ID: 1\nProcess exited with code 0\nOutput:\n"}, ResultApproved},
		{"codex exit 1", Item{Text: "Chunk ID: 1\nProcess exited with code 1\nOutput:\nno such file"}, ResultError},
		{"anthropic is_error", Item{Text: "EACCES", Error: true}, ResultError},
		{"claude rejection", Item{Text: "The user doesn't want to proceed with this tool use. The tool use was rejected.", Error: true}, ResultDenied},
		{"claude-agent-acp rejection", Item{Text: "User refused permission to run tool", Error: true}, ResultDenied},
		{"gemini rejection", Item{Text: `{"error":"Tool \"write_file\" was canceled by the user."}`, Error: true}, ResultDenied},
		{"gemini wording in an output is no rejection", Item{Text: `{"output":"Tool \"write_file\" was canceled by the user."}`}, ResultApproved},
		{"gemini error", Item{Text: `{"error":"Path not in workspace"}`, Error: true}, ResultError},
		{"pi gate", Item{Text: "The human did not allow this write of /w/proof.txt; it was not carried out."}, ResultDenied},
		{"opencode error", Item{Text: "NotFound: FileSystem.makeDirectory (/proc/1/nope)"}, ResultError},
		{"cancelled", Item{Text: "Tool execution was aborted"}, ResultCancelled},
		{"a file that mentions errors", Item{Text: "line 1: no error here"}, ResultApproved},
	} {
		if got, rule := ClassifyToolResult(tc.it); got != tc.want {
			t.Errorf("%s: %s (by %s), want %s", tc.name, got, rule, tc.want)
		}
	}
}

// TestBranchUnmatchedIsEvidence: a condition that does not hold on a step without an
// else refuses the request naming the step, the condition and what the request
// showed; the request log keeps the evaluation either way.
func TestBranchUnmatchedIsEvidence(t *testing.T) {
	t.Parallel()
	s, err := ParseScript("b.yaml", []byte("steps:\n  - call: shell\n    args: {command: x}\n  - when: {toolResult: denied}\n    answer: no\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"done"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`
	req, err := DecodeRequest(FormatChat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Decide(req)
	var se *StepError
	if !errors.As(err, &se) || se.Step != 1 || len(se.Branches) != 1 || se.Branches[0].Matched || se.Branches[0].Observed.Kind != ResultApproved {
		t.Fatalf("err = %v (%+v)", err, se)
	}
	for _, w := range []string{"step 2 (answer, line 4)", "toolResult denied of the previous tool call", "shows approved", `"done"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	// A request with no tool result at all observes "missing".
	req, _ = DecodeRequest(FormatChat, []byte(`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`))
	if _, err := s.Decide(req); !errors.As(err, &se) || se.Branches[0].Observed.Kind != ResultMissing {
		t.Errorf("no tool result: %v", err)
	}
}

// TestServerLogsBranches: over HTTP, each request's log line carries its latest tool
// result as classified and the branch conditions evaluated, in the Anthropic Messages
// format (is_error) as Claude Code sends a refused call.
func TestServerLogsBranches(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	srv, r := serve(t, Options{Script: mustScript(t, "steps:\n  - call: shell\n    args: {command: x}\n  - when: {toolResult: denied}\n    answer: DENIED\n    else: {answer: OK}\n"), Log: &log})
	body := `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"User refused permission to run tool"}]}],` +
		`"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]}`
	resp, got := post(t, r.URL+"/messages", body)
	if resp.StatusCode != 200 || !bytes.Contains(got, []byte("DENIED")) {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	e := srv.Requests()[0]
	if e.ToolResult == nil || e.ToolResult.Kind != ResultDenied || e.ToolResult.Tool != "Bash" || len(e.Branches) != 1 || !e.Branches[0].Matched || e.Branches[0].Line != 4 {
		t.Errorf("log entry %+v (tool result %+v)", e, e.ToolResult)
	}
	if !bytes.Contains(log.Bytes(), []byte(`"branches":[{"step":2,"line":4,"condition":"toolResult denied of the previous tool call"`)) {
		t.Errorf("log line lacks the branch: %s", log.Bytes())
	}
}

// TestBranchOnDenial: a declined-write case's derived script (ForACP, then
// BranchOnDenial) answers that the write was denied on each pinned CLI's captured
// decline, and the case's own answer (no word of a denial) on an approval or an error,
// with the unmatched condition in the reply's branches.
func TestBranchOnDenial(t *testing.T) {
	t.Parallel()
	w, marker := "proof-n1", "MARKER_n1"
	ref := &script.Script{Turns: []*script.Turn{{Steps: []*script.Step{
		{Edit: &script.Edit{Path: "proof.txt", Write: &w}},
		{Command: "finish_task", Args: map[string]any{"summary": marker}, Present: true},
	}}}}
	scripts, err := ForACP(ref, "/w", false)
	if err != nil {
		t.Fatal(err)
	}
	BranchOnDenial(scripts, "proof.txt")
	last := scripts[0].Steps[len(scripts[0].Steps)-1]
	if last.When == nil || last.When.Step != 1 || last.When.ToolResult != ResultDenied || last.Else == nil || last.Else.Answer != marker {
		t.Fatalf("final step %+v", last)
	}
	files, _ := filepath.Glob("testdata/toolresults/*.json")
	for _, f := range files {
		var fx struct {
			Format Format          `json:"format"`
			Want   ResultKind      `json:"want"`
			Body   json.RawMessage `json:"body"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &fx); err != nil {
			t.Fatal(err)
		}
		req, err := DecodeRequest(fx.Format, fx.Body)
		if err != nil {
			t.Fatal(err)
		}
		req.Items = append(req.Items, Item{Kind: ItemAssistantCall, Name: "finish_task", CallID: "call_ap_2"}, Item{Kind: ItemToolResult, CallID: "call_ap_2", Text: "ok"})
		reply, err := scripts[0].Decide(req)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		denied := strings.Contains(reply.Text, "was denied")
		if denied != (fx.Want == ResultDenied) || !strings.HasSuffix(reply.Text, marker) || len(reply.Branches) != 1 || reply.Branches[0].Matched != denied {
			t.Errorf("%s (%s): reply %q, branches %+v", filepath.Base(f), fx.Want, reply.Text, reply.Branches)
		}
	}
}

// TestUndoWrites: a write step is followed by a shell write-and-delete of the same file,
// and a branch on the write keeps naming it.
func TestUndoWrites(t *testing.T) {
	t.Parallel()
	w, marker := "proof-n1", "MARKER_n1"
	ref := &script.Script{Turns: []*script.Turn{{Steps: []*script.Step{
		{Command: "report", Args: map[string]any{"text": "x"}},
		{Edit: &script.Edit{Path: "proof.txt", Write: &w}},
		{Command: "finish_task", Args: map[string]any{"summary": marker}, Present: true},
	}}}}
	scripts, err := ForACP(ref, "/w", false)
	if err != nil {
		t.Fatal(err)
	}
	BranchOnDenial(scripts, "proof.txt")
	UndoWrites(scripts)
	st := scripts[0].Steps
	if len(st) != 5 || st[1].Call != RoleWrite || st[2].Call != RoleShell || st[2].Args["command"] != `printf '%s' 'proof-n1' > '/w/proof.txt' && rm -f -- '/w/proof.txt'` {
		t.Fatalf("steps %+v", st)
	}
	if st[4].When == nil || st[4].When.Step != 2 {
		t.Errorf("the final branch names step %+v, want the write (2)", st[4].When)
	}
}

// TestReadBeforeOverwrite: a write of a file that exists is preceded by a read of it, a
// write of a new file is not, and the denial branch still names the write.
func TestReadBeforeOverwrite(t *testing.T) {
	t.Parallel()
	a, b := "fixed", "new"
	ref := &script.Script{Turns: []*script.Turn{{Steps: []*script.Step{
		{Edit: &script.Edit{Path: "stats.py", Write: &a}},
		{Edit: &script.Edit{Path: "notes.txt", Write: &b}},
		{Command: "finish_task", Args: map[string]any{"summary": "M"}, Present: true},
	}}}}
	scripts, err := ForACP(ref, "/w", false)
	if err != nil {
		t.Fatal(err)
	}
	BranchOnDenial(scripts, "stats.py")
	ReadBeforeOverwrite(scripts, func(p string) bool { return p == "/w/stats.py" })
	st := scripts[0].Steps
	if len(st) != 5 || st[0].Call != RoleRead || st[0].Args["path"] != "/w/stats.py" || st[1].Call != RoleWrite || st[2].Call != RoleWrite || st[2].Args["path"] != "/w/notes.txt" {
		t.Fatalf("steps %+v", st)
	}
	if st[4].When == nil || st[4].When.Step != 2 {
		t.Errorf("the final branch names step %+v, want the write (2)", st[4].When)
	}
}

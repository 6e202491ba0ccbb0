package scriptedmodel

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/template"
	"go.yaml.in/yaml/v3"
)

// ScriptSchema is the optional `schema:` tag of a model script.
const ScriptSchema = "agentproof.model-script/v1"

// CaptureToken is what a Capture step's arguments hold where the captured text goes.
const CaptureToken = "$CAPTURE"

// DefaultModel is the model id the scripted model serves when a script names none.
const DefaultModel = "scripted-model"

// DefaultAuxAnswer is the text the scripted model gives to an auxiliary request (one that
// offers no tools, such as OpenCode's title generator) when the script sets no aux_answer.
const DefaultAuxAnswer = "Scripted session"

// RoleShell is the tool role that resolves to the request's own shell tool (Codex
// exec_command, OpenCode bash, Claude Code Bash, …); its step's `command` argument is
// renamed to that tool's command parameter (`cmd` or `command`).
const RoleShell = "shell"

// RoleWrite is the tool role that resolves to the request's own file-writing tool
// (OpenCode write, Claude Code Write, Gemini CLI write_file, …): its step's `path` and
// `content` arguments are renamed to that tool's parameters (filePath, file_path,
// absolute_path or path; content). When the request offers no such tool (Codex), the
// step becomes a call of the shell tool that writes the file (ShellWrite). The native
// tool of an ACP agent asks the client's permission before it writes, which is what
// the native-boundary cases observe; path should be absolute (the agents require it).
const RoleWrite = "write_file"

// RoleRead is the tool role that resolves to the request's own file-reading tool
// (OpenCode and Pi read, Claude Code Read, Gemini CLI read_file): its step's `path`
// argument is renamed to that tool's path parameter. When the request offers no such
// tool, the step becomes a call of the shell tool that prints the file (ShellRead).
// A derived script reads a file before it replaces it (ReadBeforeOverwrite), as a
// model does: Claude Code's Write refuses to overwrite a file the session has not read.
const RoleRead = "read_file"

// MaxScriptBytes bounds a script file (bytes).
const MaxScriptBytes = 1 << 20

// MaxSteps bounds the number of steps of one script.
const MaxSteps = 1000

// MaxHoldMs bounds a step's hold_ms (ms).
const MaxHoldMs = 600_000

// roleRE is what a tool role must look like: a semantic tool name such as finish_task or
// report_progress, or "shell".
var roleRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`) })

// Script is a parsed, rendered model script: the model id, the text for auxiliary
// requests, optional fixed usage, and the steps the model plays in order, one step per
// assistant turn of the conversation.
type Script struct {
	// Model is the model id served by GET /v1/models and echoed in responses.
	Model string
	// AuxAnswer answers requests that offer no tools (title generators).
	AuxAnswer string
	// Usage, when non-nil, is the token usage every response reports; otherwise usage is
	// estimated from the request and output sizes (see Usage).
	Usage *Usage
	// Steps are played in order: the conversation's number of assistant turns picks the
	// step (so a retried request gets the same step again).
	Steps []Step
}

// Step is one assistant turn: exactly one of Call (a tool role, with Args), Answer
// (final text) or AnswerMatch (final text taken from the request: the first match of
// the expression in the latest input — the tool results and user messages after the
// last assistant turn, such as a steering message delivered mid-turn; no match refuses
// the request naming the step). Expect, when set, is a substring the latest tool
// result or user message of the request must contain, or the request is refused naming
// this step. Capture (call steps only) takes the first submatch of the expression in
// the latest input (such as the human's answer in a native question's tool result) and
// puts it in place of CaptureToken in the step's string arguments (submatch k ≥ 2 in
// place of CaptureToken followed by k, "$CAPTURE2"); no match refuses the
// request naming the step. Hold (call steps only) holds the streamed response after its first frame
// — the model is mid-tool-call — until the run's hold is released (Server.Release) or
// Hold passes; then the call completes. Line is the step's line in the script file
// (1-based) for messages.
type Step struct {
	Call        string
	Args        map[string]any
	Answer      string
	AnswerMatch *regexp.Regexp
	Capture     *regexp.Regexp
	// CaptureInts names the arguments that are integers once captured (a string
	// argument that is exactly one capture token of a digits-only group becomes that
	// number).
	CaptureInts []string
	// CaptureAnywhere makes Capture search the whole conversation's input (Input), not
	// only the latest: for an agent that adds a steering message to the conversation
	// at once and samples again (Codex's app-server), not with the next tool result.
	CaptureAnywhere bool
	Expect          string
	Hold            time.Duration
	Line            int
	// When, when set, is the step's branch condition (a tool result of a kind): the step
	// plays when it holds; otherwise Else plays (resolved the same way), or, with no
	// Else, the request is refused naming the step, the condition and what the request
	// showed.
	When *When
	Else *Step
}

// Describe renders the step for messages: "step 2 (call finish_task, line 7)".
func (s Step) Describe(index int) string {
	what := "answer"
	switch {
	case s.Call != "":
		what = "call " + s.Call
	case s.AnswerMatch != nil:
		what = "answer_match"
	}
	if s.Line > 0 {
		return fmt.Sprintf("step %d (%s, line %d)", index+1, what, s.Line)
	}
	return fmt.Sprintf("step %d (%s)", index+1, what)
}

// Usage is token usage reported to the client: input and output tokens.
type Usage struct {
	InputTokens  int `yaml:"input_tokens" json:"input_tokens"`
	OutputTokens int `yaml:"output_tokens" json:"output_tokens"`
}

// ScriptError lists every problem of a script, each prefixed with its line when known.
type ScriptError struct {
	Name     string
	Problems []string
}

// Error renders "model script NAME: p1; p2".
func (e *ScriptError) Error() string {
	return fmt.Sprintf("model script %s: %s", e.Name, strings.Join(e.Problems, "; "))
}

type rawScript struct {
	Schema    string    `yaml:"schema"`
	Model     string    `yaml:"model"`
	AuxAnswer string    `yaml:"aux_answer"`
	Usage     *Usage    `yaml:"usage"`
	Steps     []rawStep `yaml:"steps"`
}

type rawStep struct {
	Call        string         `yaml:"call"`
	Args        map[string]any `yaml:"args"`
	Answer      *string        `yaml:"answer"`
	AnswerMatch string         `yaml:"answer_match"`
	Expect      string         `yaml:"expect"`
	HoldMs      int64          `yaml:"hold_ms"`
	When        *rawWhen       `yaml:"when"`
	Else        *rawStep       `yaml:"else"`
}

type rawWhen struct {
	ToolResult string `yaml:"toolResult"`
	Step       int    `yaml:"step"`
}

// ParseScript parses a model script (YAML) named name and renders every string in it
// with vars ({{name}} placeholders, package template, for example {{nonce}}). The
// document:
//
//	schema: agentproof.model-script/v1   # optional
//	model: scripted-model                # optional
//	aux_answer: "Scripted session"       # optional, answer to tool-less requests
//	usage: {input_tokens: 10, output_tokens: 2}   # optional fixed usage
//	steps:
//	  - call: shell                      # the request's shell tool
//	    args: {command: "echo hi > f.txt"}
//	  - call: finish_task                # a semantic tool, matched by name suffix
//	    args: {summary: "done {{nonce}}"}
//	    expect: "exit code 0"            # optional: the preceding tool result contains it
//	  - call: shell                      # held mid-call until released (steering)
//	    args: {command: "true"}
//	    hold_ms: 60000
//	  - answer_match: "STEER_[A-Z0-9_]+"  # the final text is taken from the latest input
//	  - when: {toolResult: denied, step: 1}  # a branch: step 1's call was refused …
//	    answer: "The write was denied."
//	    else: {answer: "MARKER_{{nonce}}"}  # … or not (without else: the request is refused)
//
// It returns a *ScriptError listing every problem (unknown fields, a step with not
// exactly one of call, answer and answer_match, a bad role, a shell step without a
// string command, an answer_match that does not compile or matches the empty string,
// hold_ms on an answer or outside 1..MaxHoldMs, an undefined variable, a script over
// MaxScriptBytes or MaxSteps, a branch condition on an unknown tool result kind or on
// a step that is not an earlier call step, an else without a condition, else steps
// nested deeper than MaxBranchDepth). Every problem names its line.
func ParseScript(name string, data []byte, vars map[string]string) (*Script, error) {
	se := &ScriptError{Name: name}
	raw, nodes, ok := decodeScript(data, se)
	if !ok {
		return nil, se
	}
	render := func(where, s string) string {
		if !strings.Contains(s, "{{") {
			return s
		}
		t, err := template.Parse(s)
		if err == nil {
			var out string
			if out, err = t.Render(vars); err == nil {
				return out
			}
		}
		se.Problems = append(se.Problems, fmt.Sprintf("%s: %v", where, err))
		return s
	}
	s := &Script{Model: render("model", raw.Model), AuxAnswer: render("aux_answer", raw.AuxAnswer), Usage: raw.Usage}
	if raw.Schema != "" && raw.Schema != ScriptSchema {
		se.Problems = append(se.Problems, fmt.Sprintf("schema is %q, want %q", raw.Schema, ScriptSchema))
	}
	if s.Model == "" {
		s.Model = DefaultModel
	}
	if s.AuxAnswer == "" {
		s.AuxAnswer = DefaultAuxAnswer
	}
	if u := raw.Usage; u != nil && (u.InputTokens < 0 || u.OutputTokens < 0) {
		se.Problems = append(se.Problems, "usage: token counts must not be negative")
	}
	switch {
	case len(raw.Steps) == 0:
		se.Problems = append(se.Problems, "steps: at least one step is required")
	case len(raw.Steps) > MaxSteps:
		se.Problems = append(se.Problems, fmt.Sprintf("steps: more than %d", MaxSteps))
	}
	for i, rs := range raw.Steps {
		var node *yaml.Node
		if i < len(nodes) {
			node = nodes[i]
		}
		s.Steps = append(s.Steps, parseStep(i, stepWhere(i, "", node), node, rs, render, se, 0))
	}
	se.Problems = append(se.Problems, branchTargetProblems(s.Steps)...)
	if len(se.Problems) > 0 {
		return nil, se
	}
	return s, nil
}

// decodeScript decodes data (at most MaxScriptBytes) strictly into a rawScript and
// finds each step's node; ok is false (with the problem in se) when it cannot.
func decodeScript(data []byte, se *ScriptError) (raw rawScript, nodes []*yaml.Node, ok bool) {
	if len(data) > MaxScriptBytes {
		se.Problems = append(se.Problems, fmt.Sprintf("larger than %d bytes", MaxScriptBytes))
		return raw, nil, false
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			se.Problems = append(se.Problems, "empty document")
		} else {
			se.Problems = append(se.Problems, err.Error())
		}
		return raw, nil, false
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&raw); err != nil {
		se.Problems = append(se.Problems, err.Error())
		return raw, nil, false
	}
	return raw, stepNodes(&doc), true
}

// stepWhere names step i (0-based) of a script, or its else (what: " else"), with
// the line of node when known: "step 2 (line 7)".
func stepWhere(i int, what string, node *yaml.Node) string {
	if node == nil || node.Line == 0 {
		return fmt.Sprintf("step %d%s", i+1, what)
	}
	return fmt.Sprintf("step %d%s (line %d)", i+1, what, node.Line)
}

// parseStep checks and renders step i (0-based, at node, named where in problems; node
// is nil when unknown; depth counts the else steps it is nested in) of a model script,
// adding its problems to se: exactly one of call, answer and answer_match, a tool
// role, an answer_match that compiles and does not match the empty string, no args on
// an answer, hold_ms on a call only and within 1..MaxHoldMs, the args the shell and
// write_file calls need, and its branch (parseBranch).
func parseStep(i int, where string, node *yaml.Node, rs rawStep, render func(where, s string) string, se *ScriptError, depth int) Step {
	st := Step{Call: rs.Call, Expect: rs.Expect}
	if node != nil {
		st.Line = node.Line
	}
	parseBranch(&st, i, where, node, rs, render, se, depth)
	kinds := 0
	for _, set := range []bool{rs.Call != "", rs.Answer != nil, rs.AnswerMatch != ""} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		se.Problems = append(se.Problems, where+": needs call or answer")
	case kinds > 1:
		se.Problems = append(se.Problems, where+": has more than one of call, answer and answer_match")
	case rs.Call != "" && !roleRE().MatchString(rs.Call):
		se.Problems = append(se.Problems, fmt.Sprintf("%s: call %q is not a tool role (letters, digits, _ . -)", where, rs.Call))
	}
	if rs.AnswerMatch != "" {
		re, err := regexp.Compile(render(where+": answer_match", rs.AnswerMatch))
		switch {
		case err != nil:
			se.Problems = append(se.Problems, fmt.Sprintf("%s: answer_match: %v", where, err))
		case re.MatchString(""):
			se.Problems = append(se.Problems, where+": answer_match matches the empty string")
		default:
			st.AnswerMatch = re
		}
	}
	if (rs.AnswerMatch != "" || rs.Answer != nil) && rs.Args != nil {
		se.Problems = append(se.Problems, where+": an answer takes no args")
	}
	if rs.HoldMs != 0 {
		switch {
		case rs.Call == "":
			se.Problems = append(se.Problems, where+": hold_ms applies to call steps only")
		case rs.HoldMs < 0 || rs.HoldMs > MaxHoldMs:
			se.Problems = append(se.Problems, fmt.Sprintf("%s: hold_ms %d must be in 1..%d", where, rs.HoldMs, MaxHoldMs))
		default:
			st.Hold = time.Duration(rs.HoldMs) * time.Millisecond
		}
	}
	if rs.Answer != nil {
		st.Answer = render(where+": answer", *rs.Answer)
	}
	st.Expect = render(where+": expect", rs.Expect)
	if rs.Args != nil {
		rendered, err := renderArgs(rs.Args, render, where+": args")
		if err != nil {
			se.Problems = append(se.Problems, fmt.Sprintf("%s: args: %v", where, err))
		}
		st.Args = rendered
	}
	se.Problems = append(se.Problems, toolArgProblems(where, rs.Call, st.Args)...)
	return st
}

// toolArgProblems lists what the args of a shell, write_file or read_file call lack: a
// shell call needs args.command (a non-empty string), a write_file call exactly
// args.path (a non-empty string) and args.content (a string), a read_file call exactly
// args.path.
func toolArgProblems(where, call string, args map[string]any) []string {
	switch call {
	case RoleShell:
		if c, ok := args["command"].(string); !ok || c == "" {
			return []string{where + ": call shell needs args.command, a non-empty string"}
		}
	case RoleWrite:
		p, okPath := args["path"].(string)
		_, okContent := args["content"].(string)
		if !okPath || p == "" || !okContent || len(args) != 2 {
			return []string{where + ": call write_file needs exactly args.path (a non-empty string) and args.content (a string)"}
		}
	case RoleRead:
		if p, ok := args["path"].(string); !ok || p == "" || len(args) != 1 {
			return []string{where + ": call read_file needs exactly args.path (a non-empty string)"}
		}
	}
	return nil
}

// renderArgs renders every string in a YAML-decoded argument map and converts it to
// JSON-compatible values (map[string]any keys only; YAML maps with non-string keys are
// refused).
func renderArgs(args map[string]any, render func(where, s string) string, where string) (map[string]any, error) {
	v, err := jsonValue(args, render, where)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func jsonValue(v any, render func(where, s string) string, where string) (any, error) {
	switch x := v.(type) {
	case string:
		return render(where, x), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := jsonValue(e, render, where+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := jsonValue(e, render, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case nil, bool, int, int64, uint64, float64:
		return x, nil
	default:
		return nil, fmt.Errorf("%s: a %T is not a JSON value (YAML maps need string keys)", where, v)
	}
}

// stepNodes returns the node of each item of the top-level `steps` sequence.
func stepNodes(doc *yaml.Node) []*yaml.Node {
	if doc == nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "steps" && root.Content[i+1].Kind == yaml.SequenceNode {
			return root.Content[i+1].Content
		}
	}
	return nil
}

// keyNode returns the value node of key in the mapping node n (following aliases), or
// nil.
func keyNode(n *yaml.Node, key string) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// parseBranch checks and sets st's branch: when's tool result kind (ParseResultKind)
// and step (0, or an earlier step: 1..i), and its else, parsed as a step of its own
// (parseStep) at most MaxBranchDepth deep. An else without a when is a problem.
func parseBranch(st *Step, i int, where string, node *yaml.Node, rs rawStep, render func(where, s string) string, se *ScriptError, depth int) {
	if rs.When == nil {
		if rs.Else != nil {
			se.Problems = append(se.Problems, where+": else needs a when (a branch condition)")
		}
		return
	}
	wnode := keyNode(node, "when")
	w := &When{Step: rs.When.Step}
	at := where
	if wnode != nil {
		w.Line = wnode.Line
		at = fmt.Sprintf("%s: when (line %d)", where, wnode.Line)
	} else {
		at += ": when"
	}
	k, err := ParseResultKind(rs.When.ToolResult)
	switch {
	case rs.When.ToolResult == "":
		se.Problems = append(se.Problems, at+": needs toolResult (approved, denied, error or cancelled)")
	case err != nil:
		se.Problems = append(se.Problems, fmt.Sprintf("%s: toolResult: %v", at, err))
	}
	if w.Step < 0 || w.Step > i {
		se.Problems = append(se.Problems, fmt.Sprintf("%s: step %d must name an earlier step (1..%d) or be left out (the previous tool call)", at, w.Step, i))
	}
	w.ToolResult = k
	st.When = w
	if rs.Else == nil {
		return
	}
	if depth+1 >= MaxBranchDepth {
		se.Problems = append(se.Problems, fmt.Sprintf("%s: else steps nested more than %d deep", where, MaxBranchDepth))
		return
	}
	enode := keyNode(node, "else")
	e := parseStep(i, stepWhere(i, " else", enode), enode, *rs.Else, render, se, depth+1)
	st.Else = &e
}

// branchTargetProblems lists the branch conditions (of every step and its else steps)
// whose step names a step that calls no tool in any of its branches: such a condition
// could never see a tool result.
func branchTargetProblems(steps []Step) []string {
	var out []string
	for i := range steps {
		for st := &steps[i]; st != nil && st.When != nil; st = st.Else {
			k := st.When.Step
			if k < 1 || k > len(steps) || calls(steps[k-1]) {
				continue
			}
			where := fmt.Sprintf("step %d", i+1)
			if st.When.Line > 0 {
				where = fmt.Sprintf("step %d: when (line %d)", i+1, st.When.Line)
			}
			out = append(out, fmt.Sprintf("%s: step %d calls no tool, so it has no tool result to branch on", where, k))
		}
	}
	return out
}

// calls reports whether st or one of its else steps is a tool call.
func calls(st Step) bool {
	for s := &st; s != nil; s = s.Else {
		if s.Call != "" {
			return true
		}
	}
	return false
}

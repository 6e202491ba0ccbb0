package scriptedmodel

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// ResultKind is what the agent's runtime reported back for a tool call, as the next
// request carries it (the tool result's text and the wire's error flag): the kinds a
// step's branch condition (When) tests.
type ResultKind string

// The tool result kinds.
const (
	// ResultApproved: the tool ran and its result is no refusal, cancellation or error.
	ResultApproved ResultKind = "approved"
	// ResultDenied: the runtime refused the call (the human declined its permission,
	// a permission gate blocked it).
	ResultDenied ResultKind = "denied"
	// ResultError: the tool ran (or tried to) and failed.
	ResultError ResultKind = "error"
	// ResultCancelled: the call was cancelled or aborted before it ran.
	ResultCancelled ResultKind = "cancelled"
	// ResultMissing: the request carries no result of the call the condition names
	// (never a condition's kind: only observed).
	ResultMissing ResultKind = "missing"
)

// ResultKinds are the kinds a condition may test, in the order messages list them.
var ResultKinds = []ResultKind{ResultApproved, ResultDenied, ResultError, ResultCancelled}

// resultAliases are the other spellings a script may use for a kind.
var resultAliases = map[string]ResultKind{
	"rejected": ResultDenied, "declined": ResultDenied, "blocked": ResultDenied,
	"canceled": ResultCancelled, "aborted": ResultCancelled, "failed": ResultError,
}

// ParseResultKind returns the kind s names (one of ResultKinds or an alias: rejected,
// declined and blocked are denied; canceled and aborted cancelled; failed error), or an
// error naming the kinds.
func ParseResultKind(s string) (ResultKind, error) {
	if k := ResultKind(s); slices.Contains(ResultKinds, k) {
		return k, nil
	}
	if k, ok := resultAliases[s]; ok {
		return k, nil
	}
	return "", fmt.Errorf("%q is not a tool result kind (approved, denied, error, cancelled; or rejected, declined, blocked, canceled, aborted, failed)", s)
}

// When is a step's branch condition: the tool result of a call is of kind ToolResult.
// Step is the 1-based script step whose call's result is looked at; 0 means the
// previous tool call (the latest tool result of the request). Line is the condition's
// line in the script file (0 when unknown).
type When struct {
	ToolResult ResultKind
	Step       int
	Line       int
}

// String renders the condition: "toolResult denied (of step 1)".
func (w *When) String() string {
	of := "the previous tool call"
	if w.Step > 0 {
		of = fmt.Sprintf("step %d", w.Step)
	}
	return fmt.Sprintf("toolResult %s of %s", w.ToolResult, of)
}

// ToolResultSeen is a tool result as the scripted model read it: the call it answers
// (its tool name and id), the kind it was classified as, the rule that classified it
// and the head of its text (at most 300 bytes).
type ToolResultSeen struct {
	Tool   string     `json:"tool,omitempty"`
	CallID string     `json:"callId,omitempty"`
	Kind   ResultKind `json:"kind"`
	Rule   string     `json:"rule"`
	Text   string     `json:"text,omitempty"`
}

// BranchOutcome is one evaluation of a branch condition while a request was answered:
// the step (1-based) and the condition's line, the condition, what the request showed
// and whether the condition held; Else says the step's else was played next (false
// with Matched false: there was no else, and the request was refused).
type BranchOutcome struct {
	Step      int            `json:"step"`
	Line      int            `json:"line,omitempty"`
	Condition string         `json:"condition"`
	Observed  ToolResultSeen `json:"observed"`
	Matched   bool           `json:"matched"`
	Else      bool           `json:"else,omitempty"`
}

// resultRule is one way a runtime words a tool result: results whose text matches
// Pattern (and whose wire error flag is set, when ErrorFlag) are of kind Kind. Name
// says whose wording it is.
type resultRule struct {
	Name      string
	Kind      ResultKind
	ErrorFlag bool
	Pattern   string
}

// resultRules are the tool-result wordings of the runtimes the scripted model serves,
// first match wins; they were read from the requests of the pinned CLIs after an
// approved, a declined, a failed and a cancelled call (docs/acp.md "What a runner tells
// its model"). A result no rule matches is an error when the wire flags it as one, and
// approved otherwise.
var resultRules = []resultRule{
	{Name: "claude-code rejection", Kind: ResultDenied, Pattern: `(?i)\bUser refused permission\b|the user doesn't want to (proceed|take this action)|tool use was rejected`},
	{Name: "gemini-cli rejection", Kind: ResultDenied, ErrorFlag: true, Pattern: `(?i)Tool \\?"[^"\\]+\\?" was cancell?ed by the user`},
	{Name: "pi write gate", Kind: ResultDenied, Pattern: `(?i)the human did not allow this`},
	{Name: "permission wording", Kind: ResultDenied, Pattern: `(?i)\bpermission (was |has been )?(denied|rejected|declined)\b|\b(denied|rejected|declined|blocked) by the (user|human)\b`},
	{Name: "cancellation wording", Kind: ResultCancelled, Pattern: `(?i)\b(tool (call|execution) was (cancell?ed|aborted))\b|\brequest (was )?(cancell?ed|aborted)\b|^\s*(aborted|cancell?ed)\b`},
	{Name: "exit status", Kind: ResultError, Pattern: `(?i)\bProcess exited with code [1-9][0-9]*\b|\b(exit code|exit status):? *[1-9][0-9]*\b`},
	{Name: "error wording", Kind: ResultError, Pattern: `^\s*(?i:error|failed|failure)\b|^\s*([A-Z][A-Za-z]*)?(Error|NotFound|Exception):`},
}

// compiledRules are resultRules' patterns, compiled on first use.
var compiledRules = sync.OnceValue(func() []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(resultRules))
	for i, r := range resultRules {
		out[i] = regexp.MustCompile(r.Pattern)
	}
	return out
})

// ClassifyToolResult says what kind of tool result it is (an ItemToolResult) and by
// which rule (resultRules; "error flag" when only the wire's error flag decided, "no
// rule" for an approved result).
func ClassifyToolResult(it Item) (ResultKind, string) {
	for i, re := range compiledRules() {
		r := resultRules[i]
		if r.ErrorFlag && !it.Error {
			continue
		}
		if re.MatchString(it.Text) {
			return r.Kind, r.Name
		}
	}
	if it.Error {
		return ResultError, "error flag"
	}
	return ResultApproved, "no rule"
}

// maxSeenText bounds the text of a ToolResultSeen (bytes).
const maxSeenText = 300

// seen describes the tool result it (answering the call named tool).
func seen(it Item, tool string) ToolResultSeen {
	k, rule := ClassifyToolResult(it)
	return ToolResultSeen{Tool: tool, CallID: it.CallID, Kind: k, Rule: rule, Text: clip(it.Text, maxSeenText)}
}

// LatestToolResult is the last tool result of the request after its last assistant
// item, classified, with the call it answers; ok is false when there is none.
func (r *Request) LatestToolResult() (ToolResultSeen, bool) {
	for i := len(r.Items) - 1; i >= 0; i-- {
		it := r.Items[i]
		switch it.Kind {
		case ItemAssistantText, ItemAssistantCall:
			return ToolResultSeen{}, false
		case ItemToolResult:
			return seen(it, r.callName(it.CallID, i)), true
		}
	}
	return ToolResultSeen{}, false
}

// callName is the name of the assistant call with id callID before index i, or of the
// nearest assistant call before i when callID is empty or not found.
func (r *Request) callName(callID string, i int) string {
	nearest := ""
	for j := i - 1; j >= 0; j-- {
		it := r.Items[j]
		if it.Kind != ItemAssistantCall {
			continue
		}
		if callID != "" && it.CallID == callID {
			return it.Name
		}
		if nearest == "" {
			nearest = it.Name
		}
	}
	return nearest
}

// resultOfStep is the tool result of the call the conversation's assistant turn step
// (0-based: the call step `step` played) made: the tool result with that call's id, or
// the first tool result after it when the wire gives no id. ok is false when that turn
// is no call or no result of it is in the request.
func (r *Request) resultOfStep(step int) (ToolResultSeen, bool) {
	turn := -1
	for i, it := range r.Items {
		if it.Kind != ItemAssistantText && it.Kind != ItemAssistantCall {
			continue
		}
		if turn++; turn != step {
			continue
		}
		if it.Kind != ItemAssistantCall {
			return ToolResultSeen{}, false
		}
		for _, res := range r.Items[i+1:] {
			if res.Kind == ItemToolResult && (it.CallID == "" || res.CallID == "" || res.CallID == it.CallID) {
				return seen(res, it.Name), true
			}
		}
		return ToolResultSeen{}, false
	}
	return ToolResultSeen{}, false
}

// observe evaluates w against req: what the request shows of the call w names, and
// whether it is of w's kind.
func (w *When) observe(req *Request) (ToolResultSeen, bool) {
	var got ToolResultSeen
	var ok bool
	if w.Step > 0 {
		got, ok = req.resultOfStep(w.Step - 1)
	} else {
		got, ok = req.LatestToolResult()
	}
	if !ok {
		return ToolResultSeen{Kind: ResultMissing, Rule: "no result of the call in the request"}, false
	}
	return got, got.Kind == w.ToolResult
}

// MaxBranchDepth bounds how many else steps may be nested in one another.
const MaxBranchDepth = 16

// branch resolves the step n plays for req: st itself when it has no condition or its
// condition holds, else its Else (resolved the same way). It returns the step to play
// and every condition it evaluated; a condition that does not hold on a step without
// an else is a *StepError naming the step, the condition and what was observed.
func branch(n int, st Step, req *Request) (Step, []BranchOutcome, error) {
	var out []BranchOutcome
	for st.When != nil {
		got, ok := st.When.observe(req)
		o := BranchOutcome{Step: n + 1, Line: st.When.Line, Condition: st.When.String(), Observed: got, Matched: ok}
		if ok {
			out = append(out, o)
			st.When = nil
			return st, out, nil
		}
		if st.Else == nil {
			out = append(out, o)
			return Step{}, out, &StepError{Step: n, Branches: out, Message: fmt.Sprintf("%s: the branch condition %s does not hold: the request shows %s (%s) and the step has no else",
				st.Describe(n), st.When, got.Kind, describeSeen(got))}
		}
		o.Else = true
		out = append(out, o)
		st = *st.Else
	}
	return st, out, nil
}

// describeSeen renders what a condition observed for a message.
func describeSeen(s ToolResultSeen) string {
	if s.Kind == ResultMissing {
		return s.Rule
	}
	var b strings.Builder
	fmt.Fprintf(&b, "by %s", s.Rule)
	if s.Tool != "" {
		fmt.Fprintf(&b, ", result of %s", s.Tool)
	}
	fmt.Fprintf(&b, ": %q", clip(s.Text, 120))
	return b.String()
}

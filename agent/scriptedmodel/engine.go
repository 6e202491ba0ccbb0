package scriptedmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentproof/agentproof/canonjson"
)

// shellTools are the names of shell tools the CLIs offer, compared case-insensitively,
// in order of preference: Codex exec_command, OpenCode bash, Claude Code Bash, Gemini
// run_shell_command, and generic names.
var shellTools = []string{"exec_command", "bash", "shell", "shell_command", "run_shell_command", "local_shell"}

// writeTools are the names of file-writing tools the agents offer, compared
// case-insensitively, in order of preference: OpenCode write, Claude Code Write, Gemini
// CLI write_file, and generic names.
var writeTools = []string{"write", "write_file", "create_file", "writefile"}

// readTools are the names of file-reading tools the agents offer, compared
// case-insensitively, in order of preference: OpenCode and Pi read, Claude Code Read,
// Gemini CLI read_file, and a generic name.
var readTools = []string{"read", "read_file", "readfile"}

// writePathParams are the names a read or write tool's path parameter goes by (OpenCode
// filePath, Claude Code file_path, Gemini CLI file_path or absolute_path, Pi path).
var writePathParams = []string{"filePath", "file_path", "absolute_path", "path"}

// shellCommandParams are the names a shell tool's command parameter goes by (Codex
// `cmd`, OpenCode and Claude Code `command`).
var shellCommandParams = []string{"cmd", "command"}

// Reply is what the model answers to one request: a tool call (ToolName, Namespace,
// Arguments as a JSON object text — or, for a freeform tool (Custom), the raw input
// text —, CallID) or text (Text). Step is the 0-based script
// step played, -1 for an auxiliary (tool-less) request.
//
// Hold is the step's hold (a streamed call is held after its first frame until the run's
// hold is released or Hold passes; 0: none).
type Reply struct {
	Step      int
	ToolName  string
	Namespace string
	Custom    bool
	Arguments string
	CallID    string
	Text      string
	Hold      time.Duration
	// Branches are the branch conditions evaluated to pick the step played (none for a
	// step without a condition).
	Branches []BranchOutcome
}

// IsCall reports whether the reply is a tool call.
func (r Reply) IsCall() bool { return r.ToolName != "" }

// StepError is a request that does not fit the script. Step is the 0-based step the
// request asked for (len(steps) when the script is exhausted); the message names it.
type StepError struct {
	Step    int
	Message string
	// Branches are the branch conditions evaluated before the request was refused.
	Branches []BranchOutcome
}

// Error renders the message; it always names the step.
func (e *StepError) Error() string { return e.Message }

// Decide picks the reply to req from the script: a request that offers no tools is
// auxiliary (answered with AuxAnswer, no step used); otherwise the conversation's number
// of assistant turns picks the step, and a step with a branch condition (When) plays
// itself when the condition holds, else its Else. It returns a *StepError naming the
// step when the script is exhausted, a branch condition does not hold on a step
// without an else, the step's Expect is not in the latest input, or no offered tool
// fits the step's role.
func (s *Script) Decide(req *Request) (Reply, error) {
	if len(req.Tools) == 0 {
		return Reply{Step: -1, Text: s.AuxAnswer}, nil
	}
	n := req.AssistantTurns()
	if n >= len(s.Steps) {
		return Reply{}, &StepError{Step: n, Message: fmt.Sprintf("script exhausted: the conversation has %d assistant turns, so it asks for step %d, but the script has %d steps", n, n+1, len(s.Steps))}
	}
	st, branches, err := branch(n, s.Steps[n], req)
	if err != nil {
		return Reply{}, err
	}
	reply, err := s.play(n, st, req)
	if err != nil {
		var se *StepError
		if errors.As(err, &se) {
			se.Branches = branches
		}
		return Reply{}, err
	}
	reply.Branches = branches
	return reply, nil
}

// play is the reply of step n, st (its branch resolved), to req.
func (s *Script) play(n int, st Step, req *Request) (Reply, error) {
	if st.Expect != "" && !strings.Contains(req.LatestInput(), st.Expect) {
		return Reply{}, &StepError{Step: n, Message: fmt.Sprintf("%s: the latest input does not contain %q (got %q)", st.Describe(n), st.Expect, clip(req.LatestInput(), 200))}
	}
	if st.AnswerMatch != nil {
		m := st.AnswerMatch.FindString(req.LatestInput())
		if m == "" {
			return Reply{}, &StepError{Step: n, Message: fmt.Sprintf("%s: the latest input has no match of %s (got %q): no steering message arrived", st.Describe(n), st.AnswerMatch, clip(req.LatestInput(), 200))}
		}
		return Reply{Step: n, Text: m}, nil
	}
	if st.Call == "" {
		return Reply{Step: n, Text: st.Answer}, nil
	}
	role, args := st.Call, st.Args
	if st.Capture != nil {
		input, where := req.LatestInput(), "the latest input"
		if st.CaptureAnywhere {
			input, where = req.Input(), "the conversation's input"
		}
		m := st.Capture.FindStringSubmatch(input)
		if len(m) < 2 {
			return Reply{}, &StepError{Step: n, Message: fmt.Sprintf("%s: %s has no match of %s (got %q): no answer arrived", st.Describe(n), where, st.Capture, clip(input, 200))}
		}
		args = make(map[string]any, len(st.Args))
		for k, v := range st.Args {
			if sv, ok := v.(string); ok {
				v = captured(sv, m)
				if slices.Contains(st.CaptureInts, k) {
					if i, err := strconv.ParseInt(v.(string), 10, 64); err == nil {
						v = i
					}
				}
			}
			args[k] = v
		}
	}
	if role == RoleWrite || role == RoleRead {
		st.Args = args
		tool, fargs, ok, err := fileArgs(role, st.Args, req.Tools)
		if err != nil {
			return Reply{}, &StepError{Step: n, Message: fmt.Sprintf("%s: %v", st.Describe(n), err)}
		}
		if ok {
			return toolReply(n, st, tool, fargs)
		}
		role, args = RoleShell, fargs // no such tool: the shell writes or prints the file
	}
	tool, err := resolveTool(role, req.Tools)
	if err != nil {
		return Reply{}, &StepError{Step: n, Message: fmt.Sprintf("%s: %v", st.Describe(n), err)}
	}
	if role == RoleShell {
		args, err = shellArgs(args, tool, n)
		if err != nil {
			return Reply{}, &StepError{Step: n, Message: fmt.Sprintf("%s: %v", st.Describe(n), err)}
		}
	}
	if tool.Custom {
		return customReply(n, st, tool, args)
	}
	return toolReply(n, st, tool, args)
}

// customReply is the reply calling freeform tool tool: its raw input is the step's
// `input` argument (a string). Errors: the step has no string input.
func customReply(n int, st Step, tool Tool, args map[string]any) (Reply, error) {
	input, ok := args["input"].(string)
	if !ok || len(args) != 1 {
		return Reply{}, &StepError{Step: n, Message: fmt.Sprintf("%s: %s is a freeform tool: the step's args must be exactly {input: <text>}", st.Describe(n), tool.Name)}
	}
	return Reply{Step: n, ToolName: tool.Name, Namespace: tool.Namespace, Custom: true, Arguments: input, CallID: fmt.Sprintf("call_ap_%d", n+1), Hold: st.Hold}, nil
}

// toolReply is the reply calling tool with args.
func toolReply(n int, st Step, tool Tool, args map[string]any) (Reply, error) {
	if args == nil {
		args = map[string]any{}
	}
	b, err := canonjson.Ordered(args) // keys sorted, no HTML escaping
	if err != nil {
		return Reply{}, &StepError{Step: n, Message: fmt.Sprintf("%s: arguments: %v", st.Describe(n), err)}
	}
	return Reply{Step: n, ToolName: tool.Name, Namespace: tool.Namespace, Arguments: string(b), CallID: fmt.Sprintf("call_ap_%d", n+1), Hold: st.Hold}, nil
}

// findTool returns the first offered tool whose name equals (case-insensitively) one
// of names, in the order of names.
func findTool(tools []Tool, names []string) (Tool, bool) {
	for _, want := range names {
		for _, t := range tools {
			if strings.EqualFold(t.Name, want) {
				return t, true
			}
		}
	}
	return Tool{}, false
}

// fileArgs maps a write_file step's {path, content} onto the request's write tool, or
// a read_file step's {path} onto its read tool (ok: that tool and its arguments); when
// the request offers no such tool it returns the shell step's arguments (ok false):
// {command: ShellWrite(path, content)} or {command: ShellRead(path)}.
func fileArgs(role string, args map[string]any, tools []Tool) (Tool, map[string]any, bool, error) {
	path, _ := args["path"].(string)
	content, _ := args["content"].(string)
	names, kind, fallback := writeTools, "write", ShellWrite(path, content)
	if role == RoleRead {
		names, kind, fallback = readTools, "read", ShellRead(path)
	}
	tool, ok := findTool(tools, names)
	if !ok {
		return Tool{}, map[string]any{"command": fallback}, false, nil
	}
	props, _, err := schemaProps(tool)
	if err != nil {
		return Tool{}, nil, false, err
	}
	pathParam := firstParam(props, writePathParams)
	if pathParam == "" {
		return Tool{}, nil, false, fmt.Errorf("%s tool %s has no %s parameter", kind, tool.Name, strings.Join(writePathParams, ", "))
	}
	if role == RoleRead {
		return tool, map[string]any{pathParam: path}, true, nil
	}
	if _, ok := props["content"]; !ok {
		return Tool{}, nil, false, fmt.Errorf("write tool %s has no content parameter", tool.Name)
	}
	return tool, map[string]any{pathParam: path, "content": content}, true, nil
}

// ShellRead is the POSIX shell command that prints the file at path (cat, its argument
// single-quoted): the fallback of a read_file step for agents without a read tool.
func ShellRead(path string) string {
	return "cat -- " + shellQuote(path)
}

// ShellWrite is the POSIX shell command that writes content to path (printf '%s',
// single-quoted arguments): the fallback of a write_file step for agents without a
// write tool.
func ShellWrite(path, content string) string {
	return "printf '%s' " + shellQuote(content) + " > " + shellQuote(path)
}

// schemaProps reads a tool's JSON Schema properties and required list.
func schemaProps(tool Tool) (map[string]struct {
	Type any `json:"type"`
}, []string, error) {
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(tool.Parameters) > 0 {
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil {
			return nil, nil, fmt.Errorf("tool %s: parameters are not a JSON Schema object: %v", tool.Name, err)
		}
	}
	return schema.Properties, schema.Required, nil
}

// resolveTool finds the offered tool for role: for "shell" the first shell tool by
// preference; otherwise the tool named role exactly, or else the single tool whose name
// ends in role after a separator (`_`, `.`, `/`, `:` or `-`; MCP prefixes such as
// mcp__agentproof__finish_task or agentproof_finish_task).
func resolveTool(role string, tools []Tool) (Tool, error) {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	offered := strings.Join(names, ", ")
	if role == RoleShell {
		for _, want := range shellTools {
			for _, t := range tools {
				if strings.EqualFold(t.Name, want) {
					return t, nil
				}
			}
		}
		return Tool{}, fmt.Errorf("the request offers no shell tool (%s); offered: %s", strings.Join(shellTools, ", "), offered)
	}
	var matches []Tool
	for _, t := range tools {
		if t.Name == role {
			return t, nil
		}
		if strings.HasSuffix(t.Name, role) && len(t.Name) > len(role) && strings.ContainsRune("_./:-", rune(t.Name[len(t.Name)-len(role)-1])) {
			matches = append(matches, t)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return Tool{}, fmt.Errorf("the request offers no tool for %q; offered: %s", role, offered)
	}
	var m []string
	for _, t := range matches {
		m = append(m, t.Name)
	}
	return Tool{}, fmt.Errorf("%q matches several offered tools: %s", role, strings.Join(m, ", "))
}

// shellArgs maps a shell step's args onto the tool's schema: `command` becomes the
// tool's command parameter (cmd or command), other args pass through, and required
// string parameters the step leaves unset (such as a description) are filled in.
// firstParam is the first of names that a tool's schema properties declare, "" when
// none is.
func firstParam[V any](props map[string]V, names []string) string {
	for _, p := range names {
		if _, ok := props[p]; ok {
			return p
		}
	}
	return ""
}

func shellArgs(args map[string]any, tool Tool, step int) (map[string]any, error) {
	props, required, err := schemaProps(tool)
	if err != nil {
		return nil, err
	}
	param := firstParam(props, shellCommandParams)
	if param == "" {
		return nil, fmt.Errorf("shell tool %s has no cmd or command parameter", tool.Name)
	}
	out := make(map[string]any, len(args)+1)
	for k, v := range args {
		if k != "command" {
			out[k] = v
		}
	}
	out[param] = args["command"]
	for _, req := range required {
		if _, ok := out[req]; ok {
			continue
		}
		if p, ok := props[req]; ok && p.Type == "string" {
			out[req] = fmt.Sprintf("agentproof scripted step %d", step+1)
		}
	}
	return out, nil
}

// toolNames lists the names of tools (for logs).
func toolNames(tools []Tool) []string {
	out := make([]string, 0, len(tools))
	for _, t := range tools {
		name := t.Name
		if t.Namespace != "" {
			name = t.Namespace + "/" + t.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…" // never a split UTF-8 sequence
}

// captured replaces the capture tokens of s with the submatches m (CaptureToken+"k"
// for k ≥ 2 first, highest k first, so that "$CAPTURE12" is not read as "$CAPTURE1"
// followed by "2"; then CaptureToken for m[1]).
func captured(s string, m []string) string {
	for k := len(m) - 1; k >= 2; k-- {
		s = strings.ReplaceAll(s, CaptureToken+strconv.Itoa(k), m[k])
	}
	return strings.ReplaceAll(s, CaptureToken, m[1])
}

// Package script is the vocabulary of a case's reference script: the turns and steps
// (semantic commands, workspace edits, file waits) agentproof's own agents carry out.
// The catalog declares, validates and renders a script; the reference, wrong, leaky,
// hostile and built-in ACP agents and the scripted model carry it out. It is a leaf, so
// that the agents (and the control-plane server that links them) do not import the
// catalog.
package script

import (
	"regexp"
	"sync"
)

// Script is what the built-in `reference` agent does for a case: one entry per turn
// (run), in order. The `nop` and `wrong` calibration agents derive their behaviour
// from it too (nothing, or the same steps with a wrong nonce). Its JSON form (the json
// tags) is how a rendered script reaches the built-in agent process (package agent).
type Script struct {
	Turns []*Turn `yaml:"turns" json:"turns"`
}

// Turn is one run of the reference agent. Trigger names the wake that starts it (one of
// Triggers): assignment (turn 1), revision_requested, interaction_answered,
// interaction_accepted, approval_resolved or follow_up. Steps run in order. Task (1-based, 0 meaning 1)
// is the task the turn belongs to, counted in the order the agent is first woken on
// each task: a script whose turns all belong to task 1 carries out the same turns on
// every task (the reference agent's behaviour before tasks were counted); one with a
// turn of task 2 or later carries out, on the agent's k-th task, only the turns of
// task k (flow instruction_persistence: a fresh task of the same agent).
type Turn struct {
	Trigger string  `yaml:"trigger" json:"trigger"`
	Task    int     `yaml:"task" json:"task,omitempty"`
	Steps   []*Step `yaml:"steps" json:"steps"`
}

// Step is either one semantic command (Command = a semantic command kind of
// package controlplane, Args its inputs; string args are templates), one
// workspace edit (Edit), one file wait (Wait) or one program run in the workspace (Run). Present marks the command whose comment is the run's
// user-facing message (resultJson.presentationDecision.commentId).
//
// Script-only argument conventions the reference agent resolves at run time:
// write_document without baseRevisionId uses the document's latest revision (null when
// new); request_human_input with targetDocumentKey targets that document's latest
// revision.
//
// FromHome (command steps only) maps an argument name to a path relative to the
// agent's AGENT_HOME whose bytes the agent reads at run time: "contentBase64" gets the
// file's bytes in base64 and also sets "sha256" and "byteSize" from them (a
// register_deliverable of the file as it is); any other argument gets the file's
// text without one trailing newline. A missing file fails the run.
type Step struct {
	Command  string            `yaml:"command" json:"command,omitempty"`
	Args     map[string]any    `yaml:"args" json:"args,omitempty"`
	FromHome map[string]string `yaml:"fromHome" json:"fromHome,omitempty"`
	Present  bool              `yaml:"present" json:"present,omitempty"`
	Edit     *Edit             `yaml:"edit" json:"edit,omitempty"`
	Wait     *Wait             `yaml:"wait" json:"wait,omitempty"`
	Run      *Run              `yaml:"run" json:"run,omitempty"`
}

// Presented is the text a Present step presents as the run's user-facing message: the
// first of its summary, body and reason arguments that is a string (a template, as
// written); ok is false when the step presents nothing (not Present, or none of them a
// string).
func (s *Step) Presented() (text string, ok bool) {
	if !s.Present {
		return "", false
	}
	for _, k := range []string{"summary", "body", "reason"} {
		if v, ok := s.Args[k].(string); ok {
			return v, true
		}
	}
	return "", false
}

// Run is a step that runs a program in the workspace, as a developer runs the tests
// (a coding task's "run the tests, fix, run them again"): Command is the argv (each
// element a template; the first is looked up on the agent's PATH), run with no shell,
// in the workspace, with the agent's own environment, for at most TimeoutMs (ms;
// 1…600000). Its exit code and output do not end the run: they are what the agent
// looks at, not what it is graded by. A real CLI's scripted model runs the same argv
// through the CLI's own shell tool.
type Run struct {
	Command   []string `yaml:"command" json:"command"`
	TimeoutMs int      `yaml:"timeoutMs" json:"timeoutMs"`
}

// Wait is a step that waits in an ordinary bounded file wait (how the
// worker-crash case makes the agent's active execution observable): the agent writes its run id to
// Ready, then waits until Release exists, at most TimeoutMs (ms; 1…600000), and
// fails the run when it does not appear. Both paths are workspace-relative templates.
type Wait struct {
	Ready     string `yaml:"ready" json:"ready"`
	Release   string `yaml:"release" json:"release"`
	TimeoutMs int    `yaml:"timeoutMs" json:"timeoutMs"`
}

// Edit changes one file: Path is relative (template) to Root — the workspace ("" or
// RootWorkspace) or the agent's registered home (RootAgentHome, the
// AGENT_HOME directory the runner saves after the run) — and exactly one of Write
// (replace content), WriteHex (replace content with the bytes whose hexadecimal form
// it is, template: a binary file), Append or Delete is set.
type Edit struct {
	Root     string  `yaml:"root" json:"root,omitempty"`
	Path     string  `yaml:"path" json:"path"`
	Write    *string `yaml:"write" json:"write,omitempty"`
	WriteHex *string `yaml:"writeHex" json:"writeHex,omitempty"`
	Append   *string `yaml:"append" json:"append,omitempty"`
	Delete   bool    `yaml:"delete" json:"delete,omitempty"`
}

// Edit roots (Edit.Root).
const (
	// RootWorkspace: the run's workspace (the default).
	RootWorkspace = "workspace"
	// RootAgentHome: the agent's registered home (AGENT_HOME).
	RootAgentHome = "agent_home"
)

// Triggers are the wakes a Turn may start on.
var Triggers = []string{"assignment", "revision_requested", "interaction_answered", "interaction_accepted", "approval_resolved", "follow_up"}

// NoncePattern is what a per-attempt nonce (the one a script is rendered with) must
// look like: 1–64 ASCII letters, digits, '_' or '-', so that markers built from it stay
// literal in messages, file names and regular expressions.
var NoncePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

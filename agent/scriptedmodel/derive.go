package scriptedmodel

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent/script"
)

// Model scripts of the real-CLI cells are derived from the case's rendered reference
// script (script.Script), so a case declares its behaviour once: run n of the
// CLI plays turn n. Each command step becomes a call of the semantic tool of the same
// name with the same arguments, each workspace edit, each wait and each program run a
// call of the CLI's shell tool (ShellCommand, WaitCommand, RunCommand; an edit of the agent's home writes under
// "$AGENT_HOME"), a command step reading its home (fromHome) a shell call printing the
// files' values and the command with them captured from that tool result (homeReads),
// and the run ends with a text answer: the presented text of the turn
// (the summary, body or reason of its `present` step) or "Done.".

// DefaultFinalAnswer ends a derived run whose turn presents no text.
const DefaultFinalAnswer = "Done."

// NopAnswer is the only reply of a nop script (calibration: a CLI that only talks must
// fail every case).
const NopAnswer = "I have looked at the task and will not do anything."

// FromReference returns one script per turn of ref (see above). It returns an error
// naming the turn and step when a step is not a command, an edit, a wait or a run, or an edit
// or wait path is absolute or leaves the workspace.
func FromReference(ref *script.Script) ([]*Script, error) {
	if ref == nil || len(ref.Turns) == 0 {
		return nil, fmt.Errorf("scripted model: the case has no reference script to derive model scripts from")
	}
	var out []*Script
	for ti, t := range ref.Turns {
		s := &Script{Model: DefaultModel, AuxAnswer: DefaultAuxAnswer}
		answer := DefaultFinalAnswer
		for si, st := range t.Steps {
			where := fmt.Sprintf("reference turn %d step %d", ti+1, si+1)
			switch {
			case st == nil:
				return nil, fmt.Errorf("scripted model: %s is empty", where)
			case st.Edit != nil:
				cmd, err := ShellCommand(st.Edit)
				if err != nil {
					return nil, fmt.Errorf("scripted model: %s: %w", where, err)
				}
				s.Steps = append(s.Steps, Step{Call: RoleShell, Args: map[string]any{"command": cmd}})
			case st.Wait != nil:
				cmd, err := WaitCommand(st.Wait)
				if err != nil {
					return nil, fmt.Errorf("scripted model: %s: %w", where, err)
				}
				s.Steps = append(s.Steps, Step{Call: RoleShell, Args: map[string]any{"command": cmd}})
			case st.Run != nil:
				cmd, err := RunCommand(st.Run)
				if err != nil {
					return nil, fmt.Errorf("scripted model: %s: %w", where, err)
				}
				s.Steps = append(s.Steps, Step{Call: RoleShell, Args: map[string]any{"command": cmd}})
			case st.Command != "":
				args, err := renderArgs(st.Args, func(_, v string) string { return v }, "args")
				if err != nil && st.Args != nil {
					return nil, fmt.Errorf("scripted model: %s: %w", where, err)
				}
				if args == nil {
					args = map[string]any{}
				}
				call := Step{Call: st.Command, Args: args}
				if len(st.FromHome) > 0 {
					// the CLI reads its home with its shell; the call takes the values
					// from that tool result
					cmd, capture, fills, ints := homeReads(st.FromHome)
					s.Steps = append(s.Steps, Step{Call: RoleShell, Args: map[string]any{"command": cmd}})
					for k, v := range fills {
						args[k] = v
					}
					call.Capture, call.CaptureInts = capture, ints
				}
				s.Steps = append(s.Steps, call)
				if text, ok := st.Presented(); ok {
					answer = text
				}
			default:
				return nil, fmt.Errorf("scripted model: %s is not a command, an edit, a wait or a run", where)
			}
		}
		s.Steps = append(s.Steps, Step{Answer: answer})
		out = append(out, s)
	}
	return out, nil
}

// NopScripts returns n scripts that each answer NopAnswer and call no tool.
func NopScripts(n int) []*Script {
	out := make([]*Script, max(n, 1))
	for i := range out {
		out[i] = &Script{Model: DefaultModel, AuxAnswer: DefaultAuxAnswer, Steps: []Step{{Answer: NopAnswer}}}
	}
	return out
}

// ShellCommand is the POSIX shell command that performs a workspace edit relative to
// the working directory — or, with root agent_home, to "$AGENT_HOME" (the agent's
// registered home, from the CLI's environment): write → printf '%s' CONTENT > PATH,
// writeHex → printf with every byte as an octal escape > PATH, append → >>, delete →
// rm -f. Arguments are single-quoted. Errors: an absolute path, a path with "..", an
// edit that is not exactly one of write, writeHex, append and delete, or writeHex that
// is not hexadecimal.
func ShellCommand(e *script.Edit) (string, error) {
	p := e.Path
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") {
		return "", fmt.Errorf("edit path %q must be relative and stay in the workspace", p)
	}
	n := 0
	for _, set := range []bool{e.Write != nil, e.WriteHex != nil, e.Append != nil, e.Delete} {
		if set {
			n++
		}
	}
	if n != 1 {
		return "", fmt.Errorf("edit of %q must set exactly one of write, writeHex, append and delete", p)
	}
	at := shellQuote
	if e.Root == script.RootAgentHome {
		at = func(s string) string { return `"$AGENT_HOME"/` + shellQuote(s) }
	}
	dir := ""
	if i := strings.LastIndex(p, "/"); i > 0 {
		dir = "mkdir -p -- " + at(p[:i]) + " && "
	}
	switch {
	case e.Write != nil:
		return dir + "printf '%s' " + shellQuote(*e.Write) + " > " + at(p), nil
	case e.WriteHex != nil:
		b, err := hex.DecodeString(*e.WriteHex)
		if err != nil {
			return "", fmt.Errorf("edit of %q: writeHex: %w", p, err)
		}
		var esc strings.Builder
		for _, c := range b {
			fmt.Fprintf(&esc, `\%03o`, c)
		}
		return dir + "printf '" + esc.String() + "' > " + at(p), nil
	case e.Append != nil:
		return dir + "printf '%s' " + shellQuote(*e.Append) + " >> " + at(p), nil
	}
	return "rm -f -- " + at(p), nil
}

// WaitCommand is the POSIX shell command of a wait step (script.Wait) relative
// to the working directory: it writes the run id (from the CLI's environment,
// AGENTPROOF_RUN_ID) to Ready, then looks for Release every 50 ms for at most
// TimeoutMs, and fails (exit 1) when it does not appear. Errors: a path that is
// absolute or has "..".
func WaitCommand(w *script.Wait) (string, error) {
	for _, p := range []string{w.Ready, w.Release} {
		if p == "" || strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") {
			return "", fmt.Errorf("wait path %q must be relative and stay in the workspace", p)
		}
	}
	tries := max(w.TimeoutMs/50, 1)
	return fmt.Sprintf(`printf '%%s' "$AGENTPROOF_RUN_ID" > %s && i=0 && while [ ! -e %s ]; do i=$((i+1)); [ "$i" -le %d ] || exit 1; sleep 0.05; done`,
		shellQuote(w.Ready), shellQuote(w.Release), tries), nil
}

// RunCommand is the POSIX shell command of a run step (script.Run): its argv, each
// element single-quoted, so the CLI's shell runs exactly that program with those
// arguments in its working directory (the workspace). The deadline is the CLI's own
// tool timeout. Errors: an empty command.
func RunCommand(r *script.Run) (string, error) {
	if len(r.Command) == 0 || r.Command[0] == "" {
		return "", fmt.Errorf("run needs a command")
	}
	q := make([]string, len(r.Command))
	for i, a := range r.Command {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " "), nil
}

// homeReads derives what a command step's fromHome arguments need from a CLI (see
// script.Step): one shell command that prints each value between markers,
// the expression capturing them (groups in order) and the argument each group fills
// (CaptureToken for group 1, CaptureToken+"2"… after) — contentBase64 takes three
// groups (the base64, the SHA-256 and the size, byteSize filled as an integer) —, and
// the integer arguments. The model reads the files only through the CLI's shell: the
// captured values are what the CLI's tool result carried.
func homeReads(fromHome map[string]string) (cmd string, capture *regexp.Regexp, fills map[string]string, ints []string) {
	var parts, re []string
	fills = map[string]string{}
	group := 0
	token := func() string {
		group++
		if group == 1 {
			return CaptureToken
		}
		return CaptureToken + strconv.Itoa(group)
	}
	args := make([]string, 0, len(fromHome))
	for k := range fromHome {
		args = append(args, k)
	}
	sort.Strings(args)
	for _, arg := range args {
		f := `"$AGENT_HOME"/` + shellQuote(fromHome[arg])
		if arg == "contentBase64" {
			parts = append(parts, `printf 'APF_HOME_B64=%s\nAPF_HOME_SHA=%s\nAPF_HOME_SIZE=%s\n' "$(base64 -w0 < `+f+`)" "$(sha256sum < `+f+` | cut -d' ' -f1)" "$(wc -c < `+f+` | tr -d ' ')"`)
			re = append(re, `APF_HOME_B64=([A-Za-z0-9+/=]+)[\s\S]*?APF_HOME_SHA=([0-9a-f]{64})[\s\S]*?APF_HOME_SIZE=([0-9]+)`)
			fills["contentBase64"], fills["sha256"], fills["byteSize"] = token(), token(), token()
			ints = append(ints, "byteSize")
			continue
		}
		parts = append(parts, `printf 'APF_HOME_TEXT_`+arg+`=%s:APF_END\n' "$(cat `+f+`)"`)
		re = append(re, `APF_HOME_TEXT_`+regexp.QuoteMeta(arg)+`=(.*?):APF_END`)
		fills[arg] = token()
	}
	return strings.Join(parts, " && "), regexp.MustCompile(strings.Join(re, `[\s\S]*?`)), fills, ints
}

// shellQuote single-quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WrongTool is the tool a wrong script calls: no CLI offers it, so the scripted model
// refuses the request naming step 1 and the CLI exits non-zero.
const WrongTool = "no_such_tool"

// WrongScripts returns n scripts whose first step calls WrongTool.
func WrongScripts(n int) []*Script {
	out := make([]*Script, max(n, 1))
	for i := range out {
		out[i] = &Script{Model: DefaultModel, AuxAnswer: DefaultAuxAnswer, Steps: []Step{{Call: WrongTool, Args: map[string]any{}}, {Answer: DefaultFinalAnswer}}}
	}
	return out
}

// ForACP returns the model scripts of a case's reference script for an ACP agent whose
// workspace is the absolute path workspace (docs/acp.md): like FromReference, except
// that a write edit becomes a write_file step at the absolute path (the agent's own
// write tool, which asks the client's permission; the shell for Codex). With warm
// false there is one script per turn (session n plays turn n, per_turn lifecycle);
// with warm true one script holds every turn's steps in order, each turn ending with
// its answer (one session serves every turn and the conversation's assistant turns
// keep counting across prompts). Errors: as FromReference, and a relative workspace.
func ForACP(ref *script.Script, workspace string, warm bool) ([]*Script, error) {
	return forSession(ref, workspace, warm, func(e *script.Edit, path string) (Step, bool) {
		return Step{Call: RoleWrite, Args: map[string]any{"path": path, "content": *e.Write}}, true
	})
}

// forSession derives the scripts of ref (FromReference) for a session agent whose
// workspace is the absolute path workspace, replacing each write edit's step with what
// write makes of it (the edit and its absolute path in the workspace; false keeps the
// derived step), played as oneSession says. Errors: as FromReference, and a relative
// workspace.
func forSession(ref *script.Script, workspace string, warm bool, write func(e *script.Edit, path string) (Step, bool)) ([]*Script, error) {
	if !strings.HasPrefix(workspace, "/") {
		return nil, fmt.Errorf("scripted model: workspace %q must be an absolute path", workspace)
	}
	scripts, err := FromReference(ref)
	if err != nil {
		return nil, err
	}
	for ti, t := range ref.Turns {
		for k, st := range t.Steps { // FromReference made one step per reference step, in order
			if st.Edit == nil || st.Edit.Write == nil {
				continue
			}
			if step, ok := write(st.Edit, strings.TrimRight(workspace, "/")+"/"+st.Edit.Path); ok {
				scripts[ti].Steps[k] = step
			}
		}
	}
	return oneSession(scripts, warm), nil
}

// RolePatch is the freeform patch tool of Codex (apply_patch): a step calling it takes
// the patch text as its `input` argument (PatchAdd).
const RolePatch = "apply_patch"

// ForCodexApp returns the model scripts of a case's reference script for Codex through
// its app-server, whose workspace is the absolute path workspace (docs/clis.md
// "app:codex"): like ForACP, except that a write edit becomes an apply_patch call adding
// the file at the absolute path (PatchAdd: Codex asks to approve the file change; the
// file's content then ends with a newline), while appends, deletes and waits stay
// shell commands (Codex asks to approve the command). Errors: as ForACP.
func ForCodexApp(ref *script.Script, workspace string, warm bool) ([]*Script, error) {
	return forSession(ref, workspace, warm, func(e *script.Edit, path string) (Step, bool) {
		return Step{Call: RolePatch, Args: map[string]any{"input": PatchAdd(path, *e.Write)}}, e.Root == ""
	})
}

// oneSession is scripts as the sessions play them: one script per run (per_turn), or
// with warm one script holding every turn's steps in order (one session serves every
// turn and the conversation's assistant turns keep counting across prompts).
func oneSession(scripts []*Script, warm bool) []*Script {
	if !warm {
		return scripts
	}
	one := &Script{Model: DefaultModel, AuxAnswer: DefaultAuxAnswer}
	for _, s := range scripts {
		one.Steps = append(one.Steps, s.Steps...)
	}
	return []*Script{one}
}

// PatchAdd is the apply_patch patch that adds the file path with content (each line
// of content an added line; the file ends with a newline).
func PatchAdd(path, content string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for _, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + l + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// PiQuestionTool is the native-question tool of agentproof's Pi extension.
const PiQuestionTool = "ask_user"

// PiQuestionValue is what a Pi native-question script captures from the question's tool
// result ({"kind":"input","value":"…"}): a value of letters, digits, '_' and '-' (at
// most 200), which the shell write can carry unquoted-safe.
var PiQuestionValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"value":"([A-Za-z0-9_-]{1,200})"`) })

// ForPiQuestion returns the model scripts of a Pi case whose first run asks a native
// question (docs/pi.md): FromReference's scripts, with the first run starting with a
// call of PiQuestionTool (kind input, title title) and its first workspace write
// writing the human's answer (captured from the tool result, PiQuestionValue) instead
// of the reference's text. Errors: as FromReference, and a first run without a write.
func ForPiQuestion(ref *script.Script, title string) ([]*Script, error) {
	return forPiDialog(ref, "input", title, PiQuestionValue())
}

// PiConfirmValue is what a Pi confirm script captures from the question's tool result
// ({"kind":"confirm","confirmed":false}): true or false (a no and a dismissal are both
// false: Pi cannot tell them apart).
var PiConfirmValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"confirmed":(true|false)`) })

// ForPiConfirm is ForPiQuestion with a yes/no question: the first run calls
// PiQuestionTool with kind confirm and title title, and its first workspace write
// writes the answer Pi gave it (PiConfirmValue: true or false). Errors: as
// ForPiQuestion's.
func ForPiConfirm(ref *script.Script, title string) ([]*Script, error) {
	return forPiDialog(ref, "confirm", title, PiConfirmValue())
}

// forPiDialog is ForPiQuestion and ForPiConfirm: the dialog kind and what the write
// captures from its tool result.
func forPiDialog(ref *script.Script, kind, title string, capture *regexp.Regexp) ([]*Script, error) {
	scripts, err := FromReference(ref)
	if err != nil {
		return nil, err
	}
	first := scripts[0]
	k := -1
	for i, st := range ref.Turns[0].Steps {
		if st.Edit != nil && st.Edit.Write != nil {
			k = i
			break
		}
	}
	if k < 0 {
		return nil, fmt.Errorf("scripted model: the first reference turn has no workspace write for the native question's answer")
	}
	edit := *ref.Turns[0].Steps[k].Edit
	token := CaptureToken
	edit.Write = &token
	cmd, err := ShellCommand(&edit)
	if err != nil {
		return nil, fmt.Errorf("scripted model: reference turn 1 step %d: %w", k+1, err)
	}
	first.Steps[k] = Step{Call: RoleShell, Args: map[string]any{"command": cmd}, Capture: capture}
	ask := Step{Call: PiQuestionTool, Args: map[string]any{"kind": kind, "title": title}}
	first.Steps = append([]Step{ask}, first.Steps...)
	return scripts, nil
}

// PiSteerHold bounds how long a Pi steering script holds its first call (the harness
// releases it once the steer is accepted).
const PiSteerHold = 120 * time.Second

// ForPiSteering returns the model script of a Pi steering case (one run, docs/pi.md): a
// harmless shell call held mid-stream (PiSteerHold, until the harness releases it),
// then the semantic call finishing the task with the marker captured from the steering
// message Pi delivered with the tool result (marker, a regular expression whose first
// group is the marker; no match refuses the request: no steer arrived), then a final
// answer. Errors: a marker expression without a group.
func ForPiSteering(marker *regexp.Regexp, finish string) ([]*Script, error) {
	return ForSteering(marker, finish, Step{Call: RoleShell, Args: map[string]any{"command": "true"}})
}

// ForCodexAppSteering returns the model script of a steering case for Codex through
// its app-server (one run): like ForPiSteering, except that the held call is a progress
// report (progress, a semantic tool Codex calls without asking; it asks before every
// shell command, even `true`) and the marker is taken from anywhere in the
// conversation: Codex adds a steering message to the conversation at once and samples
// again (the held call is asked for once more, before the steer's tool result
// exists). Errors: as ForPiSteering.
func ForCodexAppSteering(marker *regexp.Regexp, progress, finish string) ([]*Script, error) {
	s, err := ForSteering(marker, finish, Step{Call: progress, Args: map[string]any{"body": "Starting; I will follow your message."}})
	if err == nil {
		s[0].Steps[1].CaptureAnywhere = true
	}
	return s, err
}

// ForSteering is ForPiSteering with held as the call held mid-stream (PiSteerHold).
func ForSteering(marker *regexp.Regexp, finish string, held Step) ([]*Script, error) {
	if marker.NumSubexp() < 1 {
		return nil, fmt.Errorf("scripted model: the steering marker expression %s has no group", marker)
	}
	held.Hold = PiSteerHold
	return []*Script{{Model: DefaultModel, AuxAnswer: DefaultAuxAnswer, Steps: []Step{
		held,
		{Call: finish, Args: map[string]any{"summary": CaptureToken}, Capture: marker},
		{Answer: DefaultFinalAnswer},
	}}}, nil
}

// PiFollowUpAnswer is what a Pi follow-up script's model says when it would stop after
// its held call (Pi then delivers the queued follow-up).
const PiFollowUpAnswer = "The command ran. Anything else?"

// ForPiFollowUp returns the model script of a Pi follow-up case (one run, docs/pi.md):
// a harmless shell call held mid-stream (PiSteerHold, until the harness releases it),
// then a text answer (the agent would stop there), then — on the request that carries
// the follow-up Pi delivered when the agent would have stopped — the semantic call
// finishing the task with the marker captured from it (marker, a regular expression
// whose first group is the marker; no match refuses the request: no follow-up arrived,
// or it arrived as a steer before the answer), then a final answer. Errors: a marker
// expression without a group.
func ForPiFollowUp(marker *regexp.Regexp, finish string) ([]*Script, error) {
	if marker.NumSubexp() < 1 {
		return nil, fmt.Errorf("scripted model: the follow-up marker expression %s has no group", marker)
	}
	return []*Script{{Model: DefaultModel, AuxAnswer: DefaultAuxAnswer, Steps: []Step{
		{Call: RoleShell, Args: map[string]any{"command": "true"}, Hold: PiSteerHold},
		{Answer: PiFollowUpAnswer},
		{Call: finish, Args: map[string]any{"summary": CaptureToken}, Capture: marker},
		{Answer: DefaultFinalAnswer},
	}}}, nil
}

// DeniedAnswer is the text a derived script answers with when the agent's runtime
// reported its write as denied (BranchOnDenial): the case's own answer follows it.
const DeniedAnswer = "The permission to write %s was denied, so I did not write it."

// BranchOnDenial makes each script's final answer reactive (a declined-write case):
// when the script writes (its first call of RoleWrite or RolePatch, at 1-based step
// k), its final answer becomes a step with the condition `when: {toolResult: denied,
// step: k}` answering DeniedAnswer (naming file) followed by the original answer, and
// the original answer as its else. So an agent whose runtime never tells its model
// that the write was denied ends with the original answer, which says nothing of a
// denial, and the request log shows the condition that did not hold. Scripts without
// a write, or not ending with a plain answer, are left as they are.
func BranchOnDenial(scripts []*Script, file string) {
	for _, s := range scripts {
		write := -1
		for i, st := range s.Steps {
			if st.Call == RoleWrite || st.Call == RolePatch {
				write = i
				break
			}
		}
		last := len(s.Steps) - 1
		if write < 0 || last <= write || s.Steps[last].Answer == "" || s.Steps[last].When != nil {
			continue
		}
		orig := s.Steps[last]
		s.Steps[last] = Step{
			Answer: strings.TrimSpace(fmt.Sprintf(DeniedAnswer, file) + " " + orig.Answer),
			When:   &When{ToolResult: ResultDenied, Step: write + 1},
			Else:   &orig,
		}
	}
}

// UndoWrites makes scripts cover their tracks (the calibration of no_mutation for a
// real CLI): after every native write step (RoleWrite, with a path and content) comes a
// shell step that writes the same content to the same path and deletes it at once, so
// the file is absent at the end whatever the runtime answered the write, and only a
// watch of the workspace sees it. A branch condition naming a step by number is moved
// to that step's new number.
func UndoWrites(scripts []*Script) {
	for _, s := range scripts {
		expand(s, func(st Step) (before, after []Step) {
			path, _ := st.Args["path"].(string)
			content, _ := st.Args["content"].(string)
			if st.Call != RoleWrite || path == "" {
				return nil, nil
			}
			return nil, []Step{{Call: RoleShell, Args: map[string]any{"command": "printf '%s' " + shellQuote(content) + " > " + shellQuote(path) + " && rm -f -- " + shellQuote(path)}}}
		})
	}
}

// ReadBeforeOverwrite makes scripts read a file before they replace it, as a model
// does: before every native write step (RoleWrite) whose path names a file that exists
// (exists(path), asked when the scripts are derived: the workspace is seeded by then)
// comes a read_file step of that path. Claude Code's Write refuses to overwrite a file
// its session has not read; a derived script that skipped the read would fail the
// runner for the script's omission. A branch condition naming a step by number is
// moved to that step's new number.
func ReadBeforeOverwrite(scripts []*Script, exists func(path string) bool) {
	for _, s := range scripts {
		expand(s, func(st Step) (before, after []Step) {
			path, _ := st.Args["path"].(string)
			if st.Call != RoleWrite || path == "" || !exists(path) {
				return nil, nil
			}
			return []Step{{Call: RoleRead, Args: map[string]any{"path": path}}}, nil
		})
	}
}

// expand puts the steps each returns before and after every step of s, in order, and
// moves each branch condition naming a step by number (1-based) to that step's new
// number.
func expand(s *Script, each func(st Step) (before, after []Step)) {
	var out []Step
	moved := map[int]int{} // 1-based number before → after the insertions
	for i, st := range s.Steps {
		before, after := each(st)
		out = append(out, before...)
		out = append(out, st)
		moved[i+1] = len(out)
		out = append(out, after...)
	}
	for i := range out {
		for st := &out[i]; st != nil; st = st.Else {
			if st.When != nil && st.When.Step > 0 {
				w := *st.When
				w.Step = moved[w.Step]
				st.When = &w
			}
		}
	}
	s.Steps = out
}

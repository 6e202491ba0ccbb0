package reference

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentproof/agentproof/agent/script"
	"github.com/agentproof/agentproof/controlplane"
)

// SourceInstanceID is the PRP source instance of the events the reference agent appends.
const SourceInstanceID = "agentproof-reference"

// Config is what one run of the reference agent needs besides the port and the run id.
//
//   - Script: the case's rendered reference script (nonce substituted); required.
//   - Workspace: absolute path of the run's workspace directory; edits stay inside it.
//   - StateDir: an existing directory private to the agent that outlives its runs (its
//     "home"); the Session lives there.
//   - AgentHome: the agent's registered home (AGENT_HOME, absolute; "" for none): edits
//     with root agent_home and fromHome arguments resolve inside it.
//   - Now: the clock stamped on appended events; nil means time.Now.
//   - ResultNote: when set, one more verification entry of the run result (its
//     commandOrCheck); the leaky calibration agent leaks through it.
type Config struct {
	Script     *script.Script
	Workspace  string
	StateDir   string
	AgentHome  string
	Now        func() time.Time
	ResultNote string
}

// Outcome says what one run of the agent did: Turn is the 1-based script turn carried
// out (0 when the wake fitted no turn and the run ended without work), Disposition the
// reported work disposition, CommentID the presentation comment ("" when none).
type Outcome struct {
	Turn        int
	Disposition controlplane.WorkDisposition
	CommentID   string
	// Output is text the agent prints on its standard output beside its turn line
	// (the leaky agent's stdout leak); "" for the reference and wrong agents.
	Output string
}

// maxAttempts bounds the tries of one port call that fails with a retryable error
// (controlplane.IsRetryable: a lost acknowledgement or transient fault); every try sends
// the same input, so idempotency makes a retry safe.
const maxAttempts = 4

// Execute carries out one run of the reference agent (see the package doc) and returns
// what it did. Errors: an invalid Config; any port error that is not retryable, or still
// retryable after maxAttempts tries (wrapped, with the step that failed); a workspace edit
// that leaves the workspace or fails; a session that cannot be read or written. On an
// error the run is left open: the runner completes it as failed.
func Execute(ctx context.Context, port controlplane.Port, runID string, cfg Config) (Outcome, error) {
	if err := cfg.validate(); err != nil {
		return Outcome{}, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	var rc controlplane.RunContext
	if err := retry(ctx, func() (err error) { rc, err = port.Context(ctx, runID); return err }); err != nil {
		return Outcome{}, fmt.Errorf("reference: reading the run context of %s: %w", runID, err)
	}
	taskID := rc.ActiveTask.ID
	sess, err := LoadSession(cfg.StateDir, taskID)
	if err != nil {
		return Outcome{}, err
	}
	if sess.LastRunID == runID {
		return Outcome{}, fmt.Errorf("reference: run %s already carried out turn %d", runID, sess.TurnsDone)
	}
	r := &runner{port: port, runID: runID, cfg: cfg, sess: sess, now: now}
	k := sess.TurnsDone
	turns := TaskTurns(cfg.Script, max(sess.Ordinal, 1))
	if k >= len(turns) || !Accepts(turns[k].Trigger, rc.Wake) {
		// Nothing of the script fits this wake: hand the task back without work.
		summary := fmt.Sprintf("No work for wake %q: the reference script has %d turns for this task (the agent's task %d) and %d are done.", rc.Wake.Reason, len(turns), max(sess.Ordinal, 1), k)
		d, err := r.complete(ctx, 0, summary, "")
		if err != nil {
			return Outcome{}, err
		}
		return Outcome{Disposition: d}, nil
	}
	turn := turns[k]
	commentID, presented, err := r.steps(ctx, k, turn)
	if err != nil {
		return Outcome{}, err
	}
	summary := presented
	if summary == "" {
		summary = fmt.Sprintf("Turn %d of %d carried out.", k+1, len(turns))
	}
	d, err := r.complete(ctx, k+1, summary, commentID)
	if err != nil {
		return Outcome{}, err
	}
	sess.TurnsDone = k + 1
	sess.LastRunID = runID
	if err := SaveSession(cfg.StateDir, taskID, sess); err != nil {
		return Outcome{}, err
	}
	return Outcome{Turn: k + 1, Disposition: d, CommentID: commentID}, nil
}

// TaskTurns returns the turns of src that the agent carries out on its ordinal-th
// task (1-based; see script.Turn's Task): every turn when no turn belongs to
// a task after the first, else the turns of that task.
func TaskTurns(src *script.Script, ordinal int) []*script.Turn {
	counted := false
	for _, t := range src.Turns {
		counted = counted || t.Task > 1
	}
	if !counted {
		return src.Turns
	}
	var out []*script.Turn
	for _, t := range src.Turns {
		if max(t.Task, 1) == ordinal {
			out = append(out, t)
		}
	}
	return out
}

func (c Config) validate() error {
	var p []string
	if c.Script == nil || len(c.Script.Turns) == 0 {
		p = append(p, "a reference script with at least one turn is required")
	} else {
		for i, t := range c.Script.Turns {
			if t == nil {
				p = append(p, fmt.Sprintf("turn %d is empty", i+1))
			}
		}
	}
	if !filepath.IsAbs(c.Workspace) {
		p = append(p, fmt.Sprintf("workspace %q must be an absolute path", c.Workspace))
	}
	if c.StateDir == "" {
		p = append(p, "a state directory is required")
	}
	if len(p) > 0 {
		return fmt.Errorf("reference: invalid configuration: %s", strings.Join(p, "; "))
	}
	return nil
}

// Accepts reports whether a turn with the given trigger (script.Triggers) is what
// wake asks for. Wake reasons are the control plane's (controlplane.WakeReason) plus
// the assignment of a task:
//
//   - assignment: any wake except a resolved interaction or approval (the first run of
//     a task may be woken as manual, issue_assigned, assignment, issue_commented, resume
//     or scheduled_retry);
//   - revision_requested: interaction_resolved with outcome rejected, or issue_commented
//     (a revision asked for in a comment);
//   - interaction_answered / interaction_accepted: interaction_resolved with outcome
//     answered / accepted;
//   - approval_resolved: approval_resolved;
//   - follow_up: issue_commented, or chat_message (a human chat message after the
//     first).
func Accepts(trigger string, wake controlplane.Wake) bool {
	var p struct {
		Outcome controlplane.InteractionStatus `json:"outcome"`
	}
	_ = json.Unmarshal(wake.Payload, &p)
	resolved := wake.Reason == controlplane.WakeInteractionResolved
	switch trigger {
	case "assignment":
		return !resolved && wake.Reason != controlplane.WakeApprovalResolved
	case "revision_requested":
		return (resolved && p.Outcome == controlplane.InteractionRejected) || wake.Reason == controlplane.WakeIssueCommented
	case "interaction_answered":
		return resolved && p.Outcome == controlplane.InteractionAnswered
	case "interaction_accepted":
		return resolved && p.Outcome == controlplane.InteractionAccepted
	case "approval_resolved":
		return wake.Reason == controlplane.WakeApprovalResolved
	case "follow_up":
		return wake.Reason == controlplane.WakeIssueCommented || wake.Reason == controlplane.WakeChatMessage
	}
	return false
}

// Disposition maps the task's status after a turn to the reported work disposition of
// the run result: done → done, blocked → blocked, and
// anything else → needs_review, which keeps (or puts) the task in review, where the
// human's answer, review or follow-up wakes the agent again.
//
// A turn that waits for a human does not report yielded: the control plane reconciles
// yielded to todo and schedules a scheduled_retry wake (when it completes the run), which a runner
// would deliver as an extra run before the human has answered.
func Disposition(taskStatus controlplane.TaskStatus) controlplane.WorkDisposition {
	switch taskStatus {
	case controlplane.TaskDone:
		return controlplane.WorkDone
	case controlplane.TaskBlocked:
		return controlplane.WorkBlocked
	default:
		return controlplane.WorkNeedsReview
	}
}

// runner carries out one run.
type runner struct {
	port  controlplane.Port
	runID string
	cfg   Config
	sess  *Session
	now   func() time.Time
}

// steps carries out turn k's steps and returns the presentation comment's id and body.
func (r *runner) steps(ctx context.Context, k int, turn *script.Turn) (commentID, body string, err error) {
	for i, st := range turn.Steps {
		where := fmt.Sprintf("turn %d step %d", k+1, i+1)
		if st == nil {
			return "", "", fmt.Errorf("reference: %s is empty", where)
		}
		if st.Edit != nil {
			root := r.cfg.Workspace
			if st.Edit.Root == script.RootAgentHome {
				if root = r.cfg.AgentHome; root == "" {
					return "", "", fmt.Errorf("reference: %s: the edit is in the agent's home, and this run has no AGENT_HOME", where)
				}
			}
			if err := EditWorkspace(root, st.Edit); err != nil {
				return "", "", fmt.Errorf("reference: %s: %w", where, err)
			}
			continue
		}
		if st.Wait != nil {
			if err := WaitInWorkspace(ctx, r.cfg.Workspace, r.runID, st.Wait); err != nil {
				return "", "", fmt.Errorf("reference: %s: %w", where, err)
			}
			continue
		}
		if st.Run != nil {
			if err := RunInWorkspace(ctx, r.cfg.Workspace, st.Run); err != nil {
				return "", "", fmt.Errorf("reference: %s: %w", where, err)
			}
			continue
		}
		cmd, err := r.command(st)
		if err != nil {
			return "", "", fmt.Errorf("reference: %s (%s): %w", where, st.Command, err)
		}
		env := controlplane.CommandEnvelope{
			RunID:          r.runID,
			IdempotencyKey: fmt.Sprintf("agentproof-reference/turn-%d/step-%d", k+1, i+1),
			Command:        cmd,
		}
		var res controlplane.CommandResult
		if err := retry(ctx, func() (err error) { res, err = r.port.ApplyCommand(ctx, env); return err }); err != nil {
			return "", "", fmt.Errorf("reference: %s (%s): %w", where, st.Command, err)
		}
		if controlplane.CommandKind(st.Command) == controlplane.CommandWriteDocument {
			key, _ := st.Args["key"].(string)
			if rev := res.Ref("revision"); rev != "" {
				r.sess.Documents[key] = rev
			}
		}
		if st.Present {
			commentID = res.Ref("comment")
			body = presentedText(st, cmd)
		}
	}
	return commentID, body, nil
}

// command builds the command JSON of a step, resolving the script-only conventions:
// write_document without baseRevisionId uses the document's latest revision known to
// the session (null when new); request_human_input or request_approval with
// targetDocumentKey targets that document's latest revision.
func (r *runner) command(st *script.Step) (json.RawMessage, error) {
	cmd := make(map[string]any, len(st.Args)+1)
	for k, v := range st.Args {
		cmd[k] = v
	}
	if err := r.fromHome(st, cmd); err != nil {
		return nil, err
	}
	cmd["kind"] = st.Command
	switch controlplane.CommandKind(st.Command) {
	case controlplane.CommandWriteDocument:
		if _, ok := cmd["baseRevisionId"]; !ok {
			key, _ := cmd["key"].(string)
			if rev, ok := r.sess.Documents[key]; ok {
				cmd["baseRevisionId"] = rev
			} else {
				cmd["baseRevisionId"] = nil
			}
		}
	case controlplane.CommandRequestHumanInput, controlplane.CommandRequestApproval:
		if key, ok := cmd["targetDocumentKey"]; ok {
			delete(cmd, "targetDocumentKey")
			k, _ := key.(string)
			rev, ok := r.sess.Documents[k]
			if !ok {
				return nil, fmt.Errorf("targetDocumentKey %q names a document this agent has not written", k)
			}
			cmd["targetRevisionId"] = rev
		}
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("encoding the command: %w", err)
	}
	return b, nil
}

// fromHome sets the arguments st.FromHome names from the agent's home (see
// script.Step): contentBase64 with sha256 and byteSize of the bytes, any
// other argument the file's text without one trailing newline. Errors: no
// AGENT_HOME, a path outside it, a file that cannot be read.
func (r *runner) fromHome(st *script.Step, cmd map[string]any) error {
	if len(st.FromHome) == 0 {
		return nil
	}
	if r.cfg.AgentHome == "" {
		return errors.New("the step reads the agent's home, and this run has no AGENT_HOME")
	}
	root, err := os.OpenRoot(r.cfg.AgentHome)
	if err != nil {
		return fmt.Errorf("opening AGENT_HOME: %w", err)
	}
	defer root.Close()
	for arg, rel := range st.FromHome {
		p := filepath.FromSlash(rel)
		if !filepath.IsLocal(p) {
			return fmt.Errorf("fromHome.%s %q: %w", arg, rel, ErrOutsideWorkspace)
		}
		b, err := root.ReadFile(p)
		if err != nil {
			return fmt.Errorf("fromHome.%s: reading %q from AGENT_HOME: %w", arg, rel, err)
		}
		if arg == "contentBase64" {
			sum := sha256.Sum256(b)
			cmd["contentBase64"], cmd["sha256"], cmd["byteSize"] = base64.StdEncoding.EncodeToString(b), hex.EncodeToString(sum[:]), len(b)
			continue
		}
		cmd[arg] = strings.TrimSuffix(string(b), "\n")
	}
	return nil
}

// presentedText is the comment body a commenting command posts: its message argument
// (controlplane.CommandSpec.MessageArg) in the command as sent (cmd, fromHome
// resolved); "" for any other command.
func presentedText(st *script.Step, cmd json.RawMessage) string {
	c, _ := controlplane.LookupCommand(controlplane.CommandKind(st.Command))
	var args map[string]any
	_ = json.Unmarshal(cmd, &args)
	s, _ := args[c.MessageArg].(string)
	return s
}

// complete appends the run's result and terminal events and completes the run; it
// returns the reported disposition. turn is the 1-based turn carried out (0: none).
func (r *runner) complete(ctx context.Context, turn int, summary, commentID string) (controlplane.WorkDisposition, error) {
	var rc controlplane.RunContext
	if err := retry(ctx, func() (err error) { rc, err = r.port.Context(ctx, r.runID); return err }); err != nil {
		return "", fmt.Errorf("reference: reading the run context before completing: %w", err)
	}
	disposition := Disposition(rc.ActiveTask.Status)
	result := runResult(disposition, clip(summary, 12000), commentID, r.runID)
	if r.cfg.ResultNote != "" {
		result["verification"] = append(result["verification"].([]any), map[string]any{"commandOrCheck": r.cfg.ResultNote, "status": "passed"})
	}
	terminal := map[string]any{"turnTerminalState": "completed", "runTerminalState": controlplane.RunSucceeded, "reportedWorkDisposition": disposition}
	turnID := fmt.Sprintf("%s:turn-%d", r.runID, turn)
	emitted := r.now().UTC().Format("2006-01-02T15:04:05.000Z")
	for seq, ev := range []struct {
		typ     string
		payload any
	}{{"run.result.proposed", result}, {"run.terminal", terminal}} {
		payload, err := json.Marshal(ev.payload)
		if err != nil {
			return "", fmt.Errorf("reference: encoding %s: %w", ev.typ, err)
		}
		priority := 1
		if ev.typ == "run.terminal" {
			priority = 0
		}
		raw, err := json.Marshal(controlplane.PRPEvent{
			Schema: "paperclip.prp.event.v1", SourceEventID: fmt.Sprintf("%s:%s:%d", SourceInstanceID, r.runID, seq+1),
			SourceSeq: int64(seq + 1), SourceInstanceID: SourceInstanceID, SourceKind: "runner", RunID: r.runID,
			TurnID: turnID, EventType: ev.typ, SchemaVersion: 1, Priority: priority, EmittedAt: emitted, Payload: payload,
		})
		if err != nil {
			return "", fmt.Errorf("reference: encoding %s: %w", ev.typ, err)
		}
		if err := retry(ctx, func() error { _, err := r.port.AppendEvent(ctx, raw); return err }); err != nil {
			return "", fmt.Errorf("reference: appending %s: %w", ev.typ, err)
		}
	}
	resultJSON, err := json.Marshal(result)
	if err != nil {
		return "", fmt.Errorf("reference: encoding the result: %w", err)
	}
	terminalJSON, err := json.Marshal(terminal)
	if err != nil {
		return "", fmt.Errorf("reference: encoding the terminal: %w", err)
	}
	in, err := json.Marshal(controlplane.CompleteInput{
		Result: resultJSON, Terminal: terminalJSON, TurnID: turnID,
		CallerResultID: r.runID + ":result", CallerDedupeKey: r.runID + ":complete",
	})
	if err != nil {
		return "", fmt.Errorf("reference: encoding the completion: %w", err)
	}
	if err := retry(ctx, func() error { return r.port.CompleteRun(ctx, in) }); err != nil {
		return "", fmt.Errorf("reference: completing run %s: %w", r.runID, err)
	}
	return disposition, nil
}

// runResult is a paperclip.run_result.v1 result; presentationDecision.commentId names
// the run's user-facing comment (what the harness reads as the run's message).
func runResult(disposition controlplane.WorkDisposition, summary, commentID, runID string) map[string]any {
	evidenceRef := "run:" + runID
	res := map[string]any{
		"reportedWorkDisposition": disposition,
		"summary":                 summary,
		"completionClaim": map[string]any{
			"contractRevision":   1,
			"objectiveSatisfied": disposition == controlplane.WorkDone,
			"criteria":           []any{map[string]any{"criterionId": "reference-script-turn", "status": "satisfied", "evidenceRefs": []any{evidenceRef}}},
			"remainingWork":      []any{},
		},
		"evidence":          []any{map[string]any{"kind": "run", "ref": evidenceRef}},
		"verification":      []any{map[string]any{"commandOrCheck": "reference script steps applied", "status": "passed"}},
		"attentionRequests": []any{},
		"artifacts":         []any{},
	}
	if commentID != "" {
		res["presentationDecision"] = map[string]any{"commentId": commentID}
	}
	if disposition == controlplane.WorkBlocked {
		res["blocker"] = map[string]any{"reasonCode": "blocked_by_script", "owner": "board", "unblockAction": "unblock the task", "scope": "task_wide"}
	}
	return res
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// retry calls f until it succeeds, fails with an error that is not retryable, ctx ends,
// or maxAttempts tries failed; it returns the last error.
func retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := range maxAttempts {
		if err = f(); err == nil || !controlplane.IsRetryable(err) {
			return err
		}
		t := time.NewTimer(time.Duration(attempt+1) * 20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
	return err
}

// ErrOutsideWorkspace is returned for an edit path that is not a relative path inside
// the workspace.
var ErrOutsideWorkspace = errors.New("path leaves the workspace")

// waitPoll is how often WaitInWorkspace looks for the release file.
const waitPoll = 20 * time.Millisecond

// WaitInWorkspace carries out a wait step: it writes runID to w.Ready (inside the
// workspace, through an os.Root), then looks every waitPoll for w.Release until it
// exists or w.TimeoutMs passes. Errors: a path outside the workspace
// (ErrOutsideWorkspace), the ready file that cannot be written, the timeout, the
// context's end.
func WaitInWorkspace(ctx context.Context, workspace, runID string, w *script.Wait) error {
	ready, release := filepath.FromSlash(w.Ready), filepath.FromSlash(w.Release)
	if !filepath.IsLocal(ready) || !filepath.IsLocal(release) {
		return fmt.Errorf("wait %q/%q: %w", w.Ready, w.Release, ErrOutsideWorkspace)
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	if err := root.WriteFile(ready, []byte(runID), 0o644); err != nil {
		return fmt.Errorf("wait: writing %q: %w", w.Ready, err)
	}
	deadline := time.NewTimer(time.Duration(w.TimeoutMs) * time.Millisecond)
	defer deadline.Stop()
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	for {
		if _, err := root.Stat(release); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("wait: %q did not appear within %d ms", w.Release, w.TimeoutMs)
		case <-tick.C:
		}
	}
}

// EditWorkspace carries out one workspace edit inside workspace: write replaces the file
// (creating parent directories), append appends (creating the file), delete removes it
// (a missing file is not an error). Paths must be local (filepath.IsLocal) and are
// resolved through os.Root, so neither ".." nor a symbolic link can reach outside the
// workspace (ErrOutsideWorkspace, or the os.Root error). Files are created 0644,
// directories 0755.
func EditWorkspace(workspace string, e *script.Edit) error {
	p := filepath.FromSlash(e.Path)
	if !filepath.IsLocal(p) {
		return fmt.Errorf("edit %q: %w", e.Path, ErrOutsideWorkspace)
	}
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	if dir := filepath.Dir(p); dir != "." && (e.Write != nil || e.Append != nil) {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("edit %q: %w", e.Path, err)
		}
	}
	if dir := filepath.Dir(p); dir != "." && e.WriteHex != nil {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("edit %q: %w", e.Path, err)
		}
	}
	switch {
	case e.Write != nil:
		err = root.WriteFile(p, []byte(*e.Write), 0o644)
	case e.WriteHex != nil:
		var b []byte
		if b, err = hex.DecodeString(*e.WriteHex); err == nil {
			err = root.WriteFile(p, b, 0o644)
		}
	case e.Append != nil:
		var f *os.File
		f, err = root.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, err = f.WriteString(*e.Append)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	case e.Delete:
		err = root.Remove(p)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	default:
		err = errors.New("needs exactly one of write, append or delete")
	}
	if err != nil {
		return fmt.Errorf("edit %q: %w", e.Path, err)
	}
	return nil
}

package reference_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/reference"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func str(s string) *string { return &s }

func TestEditWorkspace(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	tests := []struct {
		name    string
		setup   func(t *testing.T, ws string)
		edits   []*catalog.WorkspaceEdit
		want    map[string]string // workspace-relative path → content; "" value means absent
		wantErr bool
	}{
		{name: "write creates parents", edits: []*catalog.WorkspaceEdit{{Path: "a/b/c.txt", Write: str("x\n")}}, want: map[string]string{"a/b/c.txt": "x\n"}},
		{name: "append creates then appends", edits: []*catalog.WorkspaceEdit{{Path: "f.txt", Append: str("1\n")}, {Path: "f.txt", Append: str("2\n")}}, want: map[string]string{"f.txt": "1\n2\n"}},
		{name: "write replaces", edits: []*catalog.WorkspaceEdit{{Path: "f.txt", Write: str("old")}, {Path: "f.txt", Write: str("new")}}, want: map[string]string{"f.txt": "new"}},
		{name: "delete removes, missing is fine", edits: []*catalog.WorkspaceEdit{{Path: "f.txt", Write: str("x")}, {Path: "f.txt", Delete: true}, {Path: "f.txt", Delete: true}}, want: map[string]string{"f.txt": ""}},
		{name: "dot-dot escapes", edits: []*catalog.WorkspaceEdit{{Path: "../escape.txt", Write: str("x")}}, wantErr: true},
		{name: "inner dot-dot escapes", edits: []*catalog.WorkspaceEdit{{Path: "a/../../escape.txt", Append: str("x")}}, wantErr: true},
		{name: "absolute path", edits: []*catalog.WorkspaceEdit{{Path: filepath.Join(outside, "abs.txt"), Write: str("x")}}, wantErr: true},
		{name: "empty path", edits: []*catalog.WorkspaceEdit{{Path: "", Write: str("x")}}, wantErr: true},
		{name: "no operation", edits: []*catalog.WorkspaceEdit{{Path: "f.txt"}}, wantErr: true},
		{
			name:    "symlink to outside",
			setup:   func(t *testing.T, ws string) { mustSymlink(t, outside, filepath.Join(ws, "link")) },
			edits:   []*catalog.WorkspaceEdit{{Path: "link/escape.txt", Write: str("x")}},
			wantErr: true,
		},
		{
			name: "file symlink to outside",
			setup: func(t *testing.T, ws string) {
				mustSymlink(t, filepath.Join(outside, "target.txt"), filepath.Join(ws, "f.txt"))
			},
			edits:   []*catalog.WorkspaceEdit{{Path: "f.txt", Append: str("x")}},
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, ws)
			}
			var err error
			for _, e := range tc.edits {
				if err = reference.EditWorkspace(ws, e); err != nil {
					break
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			for p, want := range tc.want {
				b, rerr := os.ReadFile(filepath.Join(ws, p))
				switch {
				case want == "" && !errors.Is(rerr, os.ErrNotExist):
					t.Errorf("%s exists (%q, %v), want absent", p, b, rerr)
				case want != "" && string(b) != want:
					t.Errorf("%s = %q (%v), want %q", p, b, rerr, want)
				}
			}
		})
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("edits reached outside the workspace: %v", entries)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestEditOutsideWorkspaceIsTyped(t *testing.T) {
	t.Parallel()
	err := reference.EditWorkspace(t.TempDir(), &catalog.WorkspaceEdit{Path: "../x", Write: str("x")})
	if !errors.Is(err, reference.ErrOutsideWorkspace) {
		t.Fatalf("error %v is not ErrOutsideWorkspace", err)
	}
}

func TestAccepts(t *testing.T) {
	t.Parallel()
	wake := func(reason controlplane.WakeReason, outcome string) controlplane.Wake {
		p, _ := json.Marshal(map[string]string{"outcome": outcome})
		return controlplane.Wake{Reason: reason, Payload: p}
	}
	tests := []struct {
		trigger string
		wake    controlplane.Wake
		want    bool
	}{
		{"assignment", wake("issue_assigned", ""), true},
		{"assignment", wake("manual", ""), true},
		{"assignment", wake("interaction_resolved", "answered"), false},
		{"assignment", wake("approval_resolved", ""), false},
		{"interaction_answered", wake("interaction_resolved", "answered"), true},
		{"interaction_answered", wake("interaction_resolved", "accepted"), false},
		{"interaction_accepted", wake("interaction_resolved", "accepted"), true},
		{"interaction_accepted", wake("interaction_resolved", "rejected"), false},
		{"revision_requested", wake("interaction_resolved", "rejected"), true},
		{"revision_requested", wake("issue_commented", ""), true},
		{"revision_requested", wake("interaction_resolved", "accepted"), false},
		{"follow_up", wake("issue_commented", ""), true},
		{"follow_up", wake("scheduled_retry", ""), false},
		{"approval_resolved", wake("approval_resolved", ""), true},
		{"approval_resolved", wake("manual", ""), false},
		{"unknown", wake("manual", ""), false},
	}
	for _, tc := range tests {
		if got := reference.Accepts(tc.trigger, tc.wake); got != tc.want {
			t.Errorf("Accepts(%s, %s/%s) = %v, want %v", tc.trigger, tc.wake.Reason, tc.wake.Payload, got, tc.want)
		}
	}
}

func TestDisposition(t *testing.T) {
	t.Parallel()
	for status, want := range map[controlplane.TaskStatus]controlplane.WorkDisposition{"done": "done", "blocked": "blocked", "in_review": "needs_review", "in_progress": "needs_review", "todo": "needs_review"} {
		if got := reference.Disposition(status); got != want {
			t.Errorf("Disposition(%s) = %s, want %s", status, got, want)
		}
	}
}

// singleTurn is a one-turn script: progress, an edit, then the presented finish.
func singleTurn(marker string) *catalog.ReferenceScript {
	return &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
		{Command: "report_progress", Args: map[string]any{"body": "working"}},
		{Edit: &catalog.WorkspaceEdit{Path: "out.txt", Write: str(marker + "\n")}},
		{Command: "finish_task", Args: map[string]any{"summary": marker}, Present: true},
	}}}}
}

func newMemoryB(b *testing.B) *controlplane.Memory { return newMemory(b) }

func openB(b *testing.B, m *controlplane.Memory, runID string) { open(b, m, runID, "manual") }

func newMemory(t testing.TB, faults ...*controlplane.FaultRule) *controlplane.Memory {
	t.Helper()
	m, err := controlplane.NewMemory(controlplane.Seed{Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

func open(t testing.TB, m *controlplane.Memory, runID string, reason controlplane.WakeReason) {
	t.Helper()
	if _, err := m.OpenFixtureRun(context.Background(), controlplane.OpenInput{
		Identity:    controlplane.Identity{RunID: runID, SessionID: "s", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"},
		BackendKind: "runner", Wake: &controlplane.Wake{Reason: reason, Payload: json.RawMessage(`{}`)},
	}); err != nil {
		t.Fatal(err)
	}
}

// TestExecuteRetriesLostAcknowledgements: a lost acknowledgement of a command, an event
// and the completion is retried with the same input, and each effect happens once.
func TestExecuteRetriesLostAcknowledgements(t *testing.T) {
	t.Parallel()
	m := newMemory(t,
		&controlplane.FaultRule{ID: "f1", Operation: "apply_command", CommandKind: "finish_task", Effect: "lost_ack", Remaining: 1, Code: "ack_lost"},
		&controlplane.FaultRule{ID: "f2", Operation: "append_event", Effect: "retryable_error", Remaining: 1, Code: "transient"},
		&controlplane.FaultRule{ID: "f3", Operation: "complete_run", Effect: "lost_ack", Remaining: 1, Code: "ack_lost"},
	)
	open(t, m, "run-1", "manual")
	ws, state := t.TempDir(), t.TempDir()
	out, err := reference.Execute(context.Background(), m, "run-1", reference.Config{Script: singleTurn("MARK"), Workspace: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if out.Turn != 1 || out.Disposition != "done" || out.CommentID == "" {
		t.Fatalf("outcome %+v", out)
	}
	st, _ := m.Snapshot(context.Background())
	if n := len(st.Comments); n != 2 {
		t.Errorf("%d comments, want 2 (progress and finish, once each)", n)
	}
	if st.Tasks[0].Status != "done" || st.Runs[0].Status != "succeeded" {
		t.Errorf("task %s, run %s", st.Tasks[0].Status, st.Runs[0].Status)
	}
	for _, f := range st.Faults {
		if f.Remaining != 0 {
			t.Errorf("fault %s was not hit", f.ID)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(b) != "MARK\n" {
		t.Errorf("out.txt = %q", b)
	}
}

// TestExecuteWakeWithoutTurn: a wake the next turn does not accept ends the run without
// work and does not advance the session, so the right wake later still finds its turn.
func TestExecuteWakeWithoutTurn(t *testing.T) {
	t.Parallel()
	script := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{
		{Trigger: "assignment", Steps: []*catalog.ReferenceStep{{Command: "request_review", Args: map[string]any{"summary": "T1"}, Present: true}}},
		{Trigger: "follow_up", Steps: []*catalog.ReferenceStep{{Command: "finish_task", Args: map[string]any{"summary": "T2"}, Present: true}}},
	}}
	m := newMemory(t)
	ws, state := t.TempDir(), t.TempDir()
	cfg := reference.Config{Script: script, Workspace: ws, StateDir: state}
	ctx := context.Background()
	open(t, m, "run-1", "manual")
	if out, err := reference.Execute(ctx, m, "run-1", cfg); err != nil || out.Turn != 1 {
		t.Fatalf("run-1: %+v, %v", out, err)
	}
	open(t, m, "run-2", "scheduled_retry")
	out, err := reference.Execute(ctx, m, "run-2", cfg)
	if err != nil || out.Turn != 0 || out.Disposition != "needs_review" {
		t.Fatalf("run-2 (stray wake): %+v, %v", out, err)
	}
	open(t, m, "run-3", "issue_commented")
	if out, err := reference.Execute(ctx, m, "run-3", cfg); err != nil || out.Turn != 2 || out.Disposition != "done" {
		t.Fatalf("run-3: %+v, %v", out, err)
	}
	st, _ := m.Snapshot(ctx)
	var bodies []string
	for _, c := range st.Comments {
		bodies = append(bodies, c.Body)
	}
	if strings.Join(bodies, ",") != "T1,T2" {
		t.Errorf("comments %v, want T1,T2", bodies)
	}
	s, err := reference.LoadSession(state, "task-1")
	if err != nil || s.TurnsDone != 2 || s.LastRunID != "run-3" {
		t.Errorf("session %+v, %v", s, err)
	}
}

func TestExecuteErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("config", func(t *testing.T) {
		t.Parallel()
		_, err := reference.Execute(ctx, newMemory(t), "run-1", reference.Config{Workspace: "relative"})
		if err == nil || !strings.Contains(err.Error(), "script") || !strings.Contains(err.Error(), "absolute") || !strings.Contains(err.Error(), "state directory") {
			t.Fatalf("error %v does not list every problem", err)
		}
	})
	t.Run("unknown run", func(t *testing.T) {
		t.Parallel()
		_, err := reference.Execute(ctx, newMemory(t), "nope", reference.Config{Script: singleTurn("M"), Workspace: t.TempDir(), StateDir: t.TempDir()})
		if controlplane.CodeOf(err) != "run_missing" {
			t.Fatalf("error %v, want run_missing", err)
		}
	})
	t.Run("same run twice", func(t *testing.T) {
		t.Parallel()
		m := newMemory(t)
		open(t, m, "run-1", "manual")
		cfg := reference.Config{Script: singleTurn("M"), Workspace: t.TempDir(), StateDir: t.TempDir()}
		if _, err := reference.Execute(ctx, m, "run-1", cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := reference.Execute(ctx, m, "run-1", cfg); err == nil {
			t.Fatal("carrying out the same run twice succeeded")
		}
	})
	t.Run("edit escapes", func(t *testing.T) {
		t.Parallel()
		m := newMemory(t)
		open(t, m, "run-1", "manual")
		script := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
			{Edit: &catalog.WorkspaceEdit{Path: "../../etc/x", Write: str("x")}},
		}}}}
		_, err := reference.Execute(ctx, m, "run-1", reference.Config{Script: script, Workspace: t.TempDir(), StateDir: t.TempDir()})
		if !errors.Is(err, reference.ErrOutsideWorkspace) {
			t.Fatalf("error %v, want ErrOutsideWorkspace", err)
		}
		st, _ := m.Snapshot(ctx)
		if st.Runs[0].Status != "running" {
			t.Errorf("run is %s; a failed agent leaves it to the runner", st.Runs[0].Status)
		}
	})
	t.Run("command rejected", func(t *testing.T) {
		t.Parallel()
		m := newMemory(t)
		open(t, m, "run-1", "manual")
		script := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
			{Command: "finish_task", Args: map[string]any{"summary": ""}},
		}}}}
		_, err := reference.Execute(ctx, m, "run-1", reference.Config{Script: script, Workspace: t.TempDir(), StateDir: t.TempDir()})
		if controlplane.CodeOf(err) != "semantic_command_invalid" {
			t.Fatalf("error %v, want semantic_command_invalid", err)
		}
	})
	t.Run("corrupt session", func(t *testing.T) {
		t.Parallel()
		m := newMemory(t)
		open(t, m, "run-1", "manual")
		state := t.TempDir()
		if err := os.WriteFile(filepath.Join(state, "reference-session.json"), []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := reference.Execute(ctx, m, "run-1", reference.Config{Script: singleTurn("M"), Workspace: t.TempDir(), StateDir: state}); err == nil {
			t.Fatal("a corrupt session was accepted")
		}
	})
}

func TestSessionRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := &reference.Session{TurnsDone: 2, Documents: map[string]string{"plan": "rev-2"}, LastRunID: "run-2"}
	if err := reference.SaveSession(dir, "task-a", a); err != nil {
		t.Fatal(err)
	}
	if err := reference.SaveSession(dir, "task-b", &reference.Session{TurnsDone: 1, Documents: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	got, err := reference.LoadSession(dir, "task-a")
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("LoadSession = %+v, %v; want %+v", got, err, a)
	}
	fresh, err := reference.LoadSession(dir, "task-c")
	if err != nil || fresh.TurnsDone != 0 || fresh.Documents == nil {
		t.Fatalf("fresh session %+v, %v", fresh, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reference-session.json"), []byte(`{"schema":"other/v9","tasks":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := reference.LoadSession(dir, "task-a"); err == nil || !strings.Contains(err.Error(), "other/v9") {
		t.Fatalf("wrong schema accepted: %v", err)
	}
	if _, err := reference.LoadSession("", "task-a"); err == nil {
		t.Fatal("empty state directory accepted")
	}
}

func TestWrongNonce(t *testing.T) {
	t.Parallel()
	for _, nonce := range []string{"a", "0", "n0nce42", "0123456789abcdef", "f", "abcdef0123456789abcdef0123456789"} {
		w := reference.WrongNonce(nonce)
		if w == nonce || strings.Contains(w, nonce) || strings.Contains(nonce, w) || !catalog.NoncePattern().MatchString(w) {
			t.Errorf("WrongNonce(%q) = %q", nonce, w)
		}
		if again := reference.WrongNonce(nonce); again != w {
			t.Errorf("WrongNonce(%q) is not deterministic: %q then %q", nonce, w, again)
		}
	}
}

func TestWrongScript(t *testing.T) {
	t.Parallel()
	const nonce = "abc123"
	script := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
		{Edit: &catalog.WorkspaceEdit{Path: "f-" + nonce + ".txt", Append: str("T1-" + nonce + "\n")}},
		{Command: "request_human_input", Args: map[string]any{"payload": map[string]any{"questions": []any{map[string]any{"prompt": "q " + nonce}}}, "title": "plain"}},
		{Command: "finish_task", Args: map[string]any{"summary": "M_" + nonce}, Present: true},
	}}}}
	before, _ := json.Marshal(script)
	wrong, err := reference.WrongScript(script, nonce)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(script)
	if string(before) != string(after) {
		t.Fatal("WrongScript modified its input")
	}
	got, _ := json.Marshal(wrong)
	w := reference.WrongNonce(nonce)
	if strings.Contains(string(got), nonce) {
		t.Errorf("the wrong script still contains the nonce: %s", got)
	}
	if want := strings.ReplaceAll(string(before), nonce, w); string(got) != want {
		t.Errorf("wrong script\n%s\nwant\n%s", got, want)
	}
	if _, err := reference.WrongScript(script, "zzz"); err == nil {
		t.Error("a nonce absent from the script was accepted")
	}
	if _, err := reference.WrongScript(script, ""); err == nil {
		t.Error("an empty nonce was accepted")
	}
}

// TestExecuteAgentHomeAcrossTasks: turn 1 (the agent's first task) writes a text and a
// binary into AGENT_HOME; the agent's second task carries out only its own turn, which
// registers the binary as a deliverable (bytes, SHA-256 and size read from the home at
// run time) and presents the text read back from the home.
func TestExecuteAgentHomeAcrossTasks(t *testing.T) {
	t.Parallel()
	script := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{
		{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
			{Edit: &catalog.WorkspaceEdit{Root: catalog.EditRootAgentHome, Path: "notes/deep/recall.txt", Write: str("NESTED-7\n")}},
			{Edit: &catalog.WorkspaceEdit{Root: catalog.EditRootAgentHome, Path: "bin/key.bin", WriteHex: str("00ff80fe07")}},
			{Command: "finish_task", Args: map[string]any{"summary": "saved"}, Present: true},
		}},
		{Trigger: "assignment", Task: 2, Steps: []*catalog.ReferenceStep{
			{Command: "register_deliverable", Args: map[string]any{"filename": "key.bin", "contentType": "application/octet-stream", "title": "key"},
				FromHome: map[string]string{"contentBase64": "bin/key.bin"}},
			{Command: "finish_task", FromHome: map[string]string{"summary": "notes/deep/recall.txt"}, Present: true},
		}},
	}}
	m := newMemory(t)
	ws, state, home := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := reference.Config{Script: script, Workspace: ws, StateDir: state, AgentHome: home}
	ctx := context.Background()
	open(t, m, "run-1", "manual")
	if out, err := reference.Execute(ctx, m, "run-1", cfg); err != nil || out.Turn != 1 {
		t.Fatalf("run-1: %+v, %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(home, "bin", "key.bin")); err != nil || string(b) != "\x00\xff\x80\xfe\x07" {
		t.Fatalf("bin/key.bin = %q, %v", b, err)
	}
	if _, err := m.OpenFixtureRun(ctx, controlplane.OpenInput{
		Identity:    controlplane.Identity{RunID: "run-2", SessionID: "s2", CompanyID: "company-1", IssueID: newTask(t, m), AgentID: "actor-1"},
		BackendKind: "runner", Wake: &controlplane.Wake{Reason: "manual", Payload: json.RawMessage(`{}`)},
	}); err != nil {
		t.Fatal(err)
	}
	out, err := reference.Execute(ctx, m, "run-2", cfg)
	if err != nil || out.Turn != 1 || out.Disposition != "done" {
		t.Fatalf("run-2 (the second task): %+v, %v", out, err)
	}
	st, _ := m.Snapshot(ctx)
	if len(st.Artifacts) != 1 || st.Artifacts[0].ByteSize != 5 || st.Artifacts[0].TaskID != st.Tasks[1].ID {
		t.Fatalf("artifacts %+v", st.Artifacts)
	}
	var last string
	for _, c := range st.Comments {
		last = c.Body
	}
	if last != "NESTED-7" {
		t.Errorf("the second task's message is %q, want the home text NESTED-7", last)
	}
	// without the home, the second task's turn fails instead of inventing bytes
	if err := os.RemoveAll(filepath.Join(home, "bin")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.OpenFixtureRun(ctx, controlplane.OpenInput{
		Identity:    controlplane.Identity{RunID: "run-3", SessionID: "s3", CompanyID: "company-1", IssueID: newTask(t, m), AgentID: "actor-1"},
		BackendKind: "runner", Wake: &controlplane.Wake{Reason: "manual", Payload: json.RawMessage(`{}`)},
	}); err != nil {
		t.Fatal(err)
	}
	if out, err := reference.Execute(ctx, m, "run-3", cfg); err != nil || out.Turn != 0 {
		t.Fatalf("run-3 (a third task, no turns of its own): %+v, %v", out, err)
	}
}

// newTask creates a todo task assigned to actor-1 through the board and returns its id.
func newTask(t *testing.T, m *controlplane.Memory) string {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"title": "another task", "assigneeActorId": "actor-1"})
	r, err := m.ApplyBoard(context.Background(), controlplane.BoardOp{Kind: controlplane.BoardCreateIssue, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

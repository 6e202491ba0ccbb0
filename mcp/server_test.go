package mcp_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/mcp"
)

// TestCommandTools: command tools change the real control plane's state through the
// agent API: progress and finish post comments, finish moves the task to done, a
// document is written and revised (baseRevisionId resolved to the latest), the read
// tools see it, and the presented comment is what State.RunMessage returns once the
// run result names it.
func TestCommandTools(t *testing.T) {
	t.Parallel()
	w := newWorld(t, controlplane.Seed{})

	var ctxOut controlplane.RunContext
	w.ok(t, "get_task_context", nil, &ctxOut)
	if ctxOut.RunID != "run-1" || ctxOut.ActiveTask.ID != "task-1" || ctxOut.ActiveTask.Status != "in_progress" {
		t.Fatalf("get_task_context = %+v", ctxOut)
	}

	var progress mcp.CommandResult
	w.ok(t, "report_progress", map[string]any{"body": "half way"}, &progress)
	if progress.Disposition != "applied" || progress.CommentID == "" || progress.Presented {
		t.Fatalf("report_progress = %+v, want applied, a comment, not presented", progress)
	}

	var doc1, doc2 mcp.CommandResult
	w.ok(t, "write_document", map[string]any{"key": "plan", "title": "Plan", "body": "v1"}, &doc1)
	w.ok(t, "write_document", map[string]any{"key": "plan", "title": "Plan", "body": "v2", "changeSummary": "more"}, &doc2)
	if doc1.Disposition != "applied" || doc2.Disposition != "applied" {
		t.Fatalf("write_document twice = %+v, %+v", doc1, doc2)
	}
	var list struct {
		TaskID    string                `json:"taskId"`
		Documents []mcp.DocumentSummary `json:"documents"`
	}
	w.ok(t, "list_documents", nil, &list)
	if list.TaskID != "task-1" || len(list.Documents) != 1 || list.Documents[0].Key != "plan" || list.Documents[0].Revisions != 2 {
		t.Fatalf("list_documents = %+v", list)
	}
	var latest, first mcp.DocumentRevision
	w.ok(t, "read_document", map[string]any{"key": "plan"}, &latest)
	w.ok(t, "read_document", map[string]any{"key": "plan", "revision": 1}, &first)
	if latest.Body != "v2" || !latest.Latest || latest.Revision != 2 || first.Body != "v1" || first.Latest {
		t.Fatalf("read_document = %+v / %+v", latest, first)
	}

	var fin mcp.CommandResult
	w.ok(t, "finish_task", map[string]any{"summary": "all done"}, &fin)
	if fin.Disposition != "applied" || fin.CommentID == "" || !fin.Presented {
		t.Fatalf("finish_task = %+v, want applied and presented", fin)
	}
	st := w.snapshot(t)
	if tk := taskByID(st, "task-1"); tk == nil || tk.Status != "done" {
		t.Fatalf("task-1 after finish_task: %+v", tk)
	}
	var bodies []string
	for _, c := range st.Comments {
		bodies = append(bodies, c.Body)
	}
	if strings.Join(bodies, "|") != "half way|all done" {
		t.Fatalf("comments %q", bodies)
	}

	p, err := agent.ReadPresentation(w.stateDir, "run-1")
	if err != nil || p == nil || p.CommentID != fin.CommentID || p.Text != "all done" || p.Tool != "finish_task" {
		t.Fatalf("presentation = %+v, %v; want comment %s", p, err, fin.CommentID)
	}
	// The message rule: a result naming the presented comment makes it the message.
	var run *controlplane.Run
	for _, r := range st.Runs {
		if r.ID == "run-1" {
			run = r
		}
	}
	if run == nil {
		t.Fatal("run-1 missing from the snapshot")
	}
	if got := st.RunMessage(run); got != "half way\nall done" {
		t.Fatalf("message without a presentation decision = %q", got)
	}
	withDecision := *run
	withDecision.Result = json.RawMessage(`{"result":{"presentationDecision":{"commentId":"` + p.CommentID + `"}}}`)
	if got := st.RunMessage(&withDecision); got != "all done" {
		t.Fatalf("message with the presented comment = %q, want %q", got, "all done")
	}
}

// TestDenialsAndDuplicates: the control plane's denials come back as tool errors whose
// text starts with its code (never the token); the same call twice is one command (the
// second a duplicate); a scripted retryable fault is retried transparently.
func TestDenialsAndDuplicates(t *testing.T) {
	t.Parallel()
	w := newWorld(t, controlplane.Seed{Faults: []*controlplane.FaultRule{{ID: "fault-1", Operation: "apply_command",
		CommandKind: "report_progress", Effect: "retryable_error", Remaining: 1, Code: "scripted_retryable_error"}}})

	var a, b mcp.CommandResult
	w.ok(t, "report_progress", map[string]any{"body": "once"}, &a)
	w.ok(t, "report_progress", map[string]any{"body": "once"}, &b)
	if a.Disposition != "applied" || b.Disposition != "duplicate" || a.CommandID != b.CommandID {
		t.Fatalf("same call twice = %+v, %+v; want applied then duplicate of the same command", a, b)
	}
	if n := len(w.snapshot(t).Comments); n != 1 {
		t.Fatalf("%d comments after a duplicate call, want 1", n)
	}

	cases := []struct {
		tool string
		args map[string]any
		code string
	}{
		{"decide_approval", map[string]any{"approvalId": "approval-9", "decision": "approved", "note": "ok"}, "operation_not_authorized: "},
		{"read_document", map[string]any{"key": "nope"}, "document_missing: "},
		{"request_human_input", map[string]any{"interactionKind": "confirmation", "title": "t", "prompt": "p",
			"continuationPolicy": "none", "targetDocumentKey": "nope"}, "document_missing: "},
		{"write_document", map[string]any{"key": "plan", "title": "Plan", "body": "x", "baseRevisionId": "revision-404"}, "document_revision_conflict: "},
		{"finish_task", map[string]any{"summary": "x", "extra": true}, "invalid_arguments: "},
		{"finish_task", map[string]any{}, "invalid_arguments: "},
	}
	for _, c := range cases {
		text, isErr := w.call(t, c.tool, c.args)
		if !isErr || !strings.HasPrefix(text, c.code) || strings.Contains(text, w.token) {
			t.Errorf("%s(%v) = %q (isError %v), want a tool error starting %q", c.tool, c.args, text, isErr, c.code)
		}
	}
	// finish, then finish again with another summary: the task is done.
	w.ok(t, "finish_task", map[string]any{"summary": "first"}, nil)
	text, isErr := w.call(t, "finish_task", map[string]any{"summary": "second"})
	if !isErr || !strings.HasPrefix(text, "task_transition_illegal: ") {
		t.Fatalf("finish_task on a done task = %q (isError %v)", text, isErr)
	}
	// present: false on finish_task keeps the earlier presentation.
	if p, err := agent.ReadPresentation(w.stateDir, "run-1"); err != nil || p == nil || p.Text != "first" {
		t.Fatalf("presentation = %+v, %v", p, err)
	}
}

// TestPresentOptions: report_progress presents only with present: true, and
// present: false on a turn-ending tool records nothing.
func TestPresentOptions(t *testing.T) {
	t.Parallel()
	w := newWorld(t, controlplane.Seed{})
	w.ok(t, "request_review", map[string]any{"summary": "look", "present": false}, nil)
	if p, err := agent.ReadPresentation(w.stateDir, "run-1"); err != nil || p != nil {
		t.Fatalf("presentation after present:false = %+v, %v; want none", p, err)
	}
	var r mcp.CommandResult
	w.ok(t, "report_progress", map[string]any{"body": "the answer", "present": true}, &r)
	p, err := agent.ReadPresentation(w.stateDir, "run-1")
	if err != nil || p == nil || p.CommentID != r.CommentID || p.Text != "the answer" || p.Tool != "report_progress" {
		t.Fatalf("presentation = %+v, %v", p, err)
	}
	if _, err := os.Stat(agent.PresentationPath(w.stateDir, "run-1")); err != nil {
		t.Fatal(err)
	}
}

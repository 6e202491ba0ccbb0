package conformance

import (
	"context"
	"strings"

	"github.com/agentproof/agentproof/controlplane"
)

// JourneyCases returns the cases of the control-plane behaviour the product journeys
// rely on beyond spec §10 (docs/journeys.md): a human can accept only the plan
// revision that is current. They run after Cases.
func JourneyCases() []Case {
	return []Case{
		{"journey/01-accept-superseded-revision", journey01},
		{"journey/02-approval-targets-revision", journey02},
		{"journey/03-agent-names-untitled-task", journey03},
	}
}

// journey01: a confirmation about plan revision 1 is still pending when revision 2 is
// written; accepting it is target_revision_superseded (409), rejecting it is not; a
// confirmation about revision 2 is accepted.
func journey01(ctx context.Context, h Harness) error {
	e, err := openDefault(ctx, h, defaultSeed, "control_plane:interactions")
	if err != nil {
		return err
	}
	write := func(key, body string, base any) (string, error) {
		res, err := e.cmd("run-1", key, "write_document", map[string]any{"key": "plan", "title": "Plan", "body": body, "baseRevisionId": base})
		return refOf(res, "revision"), err
	}
	ask := func(key, target string) (string, error) {
		res, err := e.cmd("run-1", key, "request_human_input", map[string]any{"interactionKind": "confirmation", "title": "Plan", "prompt": "Accept?",
			"targetRevisionId": target, "continuationPolicy": "none"})
		return refOf(res, "interaction"), err
	}
	resolve := func(key, id string, outcome controlplane.InteractionStatus) error {
		_, err := e.cmd("run-1", key, "resolve_human_input", map[string]any{"interactionId": id, "outcome": outcome, "result": map[string]any{}})
		return err
	}
	rev1, err := write("k1", "1. one\n2. two\n", nil)
	if err != nil {
		return noErr(err, "write revision 1")
	}
	old, err := ask("k2", rev1)
	if err != nil {
		return noErr(err, "ask about revision 1")
	}
	rev2, err := write("k3", "1. one\n2. two\n3. three\n", rev1)
	if err != nil {
		return noErr(err, "write revision 2")
	}
	if err := wantCode(resolve("k4", old, controlplane.InteractionAccepted), controlplane.CodeTargetRevisionSuperseded); err != nil {
		return failf("accepting the confirmation of superseded revision %s: %v", rev1, err)
	}
	if c := controlplane.CodeTargetRevisionSuperseded.Class(); c != controlplane.ClassConflict {
		return failf("target_revision_superseded has class %v, want conflict (409)", c)
	}
	if err := resolve("k5", old, controlplane.InteractionRejected); err != nil {
		return noErr(err, "rejecting the superseded confirmation")
	}
	cur, err := ask("k6", rev2)
	if err != nil {
		return noErr(err, "ask about revision 2")
	}
	if err := resolve("k7", cur, controlplane.InteractionAccepted); err != nil {
		return noErr(err, "accepting the current revision")
	}
	return nil
}

// journey02: request_approval records its targetRevisionId (which must be the latest
// revision: interaction_target_stale otherwise); approving an approval whose revision
// was superseded is target_revision_superseded, rejecting it is not.
func journey02(ctx context.Context, h Harness) error {
	doc := &controlplane.Document{ID: "document-1", TaskID: "task-1", Key: "plan", Title: "Plan", Format: "markdown", LatestRevisionID: "revision-2",
		Revisions: []*controlplane.DocumentRevision{
			{ID: "revision-1", DocumentID: "document-1", Revision: 1, Body: "1. one\n2. two\n", CreatedAt: "2026-08-09T00:00:00.000Z"},
			{ID: "revision-2", DocumentID: "document-1", Revision: 2, Body: "1. one\n2. two\n3. three\n", CreatedAt: "2026-08-09T00:00:01.000Z"},
		}}
	seed := approvalSeed("approver", "actor-2", "task-1")
	seed.Documents = []*controlplane.Document{doc}
	seed.Approvals[0].TargetRevisionID = ptr("revision-1")
	e, err := openDefault(ctx, h, seed, "governance:approvals:decide", "governance:approvals:request")
	if err != nil {
		return err
	}
	_, err = e.cmd("run-1", "k1", "decide_approval", map[string]any{"approvalId": "approval-1", "decision": "approved", "note": "plan revision-1"})
	if err := wantCode(err, controlplane.CodeTargetRevisionSuperseded); err != nil {
		return failf("approving superseded revision-1: %v", err)
	}
	request := func(key, target string) (controlplane.CommandResult, error) {
		return e.cmd("run-1", key, "request_approval", map[string]any{"approvalType": "plan", "payload": map[string]any{}, "targetRevisionId": target})
	}
	if _, err := request("k2", "revision-1"); wantCode(err, controlplane.CodeInteractionTargetStale) != nil {
		return failf("requesting an approval of superseded revision-1: %v", wantCode(err, controlplane.CodeInteractionTargetStale))
	}
	res, err := request("k3", "revision-2")
	if err != nil {
		return noErr(err, "requesting an approval of revision-2")
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	id := refOf(res, "approval")
	for _, ap := range st.Approvals {
		if ap.ID == id && (ap.TargetRevisionID == nil || *ap.TargetRevisionID != "revision-2") {
			return failf("approval %s has targetRevisionId %v, want revision-2", id, ap.TargetRevisionID)
		}
	}
	_, err = e.cmd("run-1", "k4", "decide_approval", map[string]any{"approvalId": "approval-1", "decision": "rejected", "note": "superseded"})
	return noErr(err, "rejecting superseded approval-1")
}

// journey03 (seed 000 "Prompt-only task title fixtures"): the board creates a task
// with an empty title (one of only whitespace is refused); its run names it with
// set_task_title (trimmed; an empty title is semantic_command_invalid); the saved title
// survives a restart, and the change is the command's audit record, attributed to the
// run and its actor, whose idempotency record holds the title given.
func journey03(ctx context.Context, h Harness) error {
	e, err := boardSetup(ctx, h)
	if err != nil {
		return err
	}
	if _, err := e.board(controlplane.BoardCreateIssue, map[string]any{"title": "  "}, ""); wantCode(err, controlplane.CodeBoardInputInvalid) != nil {
		return failf("creating an issue titled only by whitespace: %v", wantCode(err, controlplane.CodeBoardInputInvalid))
	}
	created, err := e.board(controlplane.BoardCreateIssue, map[string]any{"title": "", "assigneeActorId": "actor-1"}, "")
	if err != nil {
		return noErr(err, "creating an untitled issue")
	}
	task := created.ID
	if _, err := e.open("run-t", task, "actor-1"); err != nil {
		return noErr(err, "opening the run of the untitled task")
	}
	if _, err := e.cmd("run-t", "t0", "set_task_title", map[string]any{"title": " "}); wantCode(err, controlplane.CodeSemanticCommandInvalid) != nil {
		return failf("set_task_title with an empty title: %v", wantCode(err, controlplane.CodeSemanticCommandInvalid))
	}
	res, err := e.cmd("run-t", "t1", "set_task_title", map[string]any{"title": " Rotate the API keys "})
	if err != nil {
		return noErr(err, "set_task_title")
	}
	if err := e.restart(); err != nil {
		return err
	}
	st, err := e.snap()
	if err != nil {
		return err
	}
	title := ""
	for _, t := range st.Tasks {
		if t.ID == task {
			title = t.Title
		}
	}
	if title != "Rotate the API keys" {
		return failf("task %s title after restart %q, want %q", task, title, "Rotate the API keys")
	}
	audited := false
	for _, a := range st.Audit {
		if a.EntityID == res.CommandID {
			audited = a.RunID != nil && *a.RunID == "run-t" && a.ActorID != nil && *a.ActorID == "actor-1"
		}
	}
	if !audited {
		return failf("command %s has no audit record attributed to run-t and actor-1", res.CommandID)
	}
	for _, rec := range st.Idempotency {
		if rec.Result.CommandID == res.CommandID && !strings.Contains(rec.InputCanonical, "Rotate the API keys") {
			return failf("idempotency record of %s holds %s, not the title given", res.CommandID, rec.InputCanonical)
		}
	}
	return nil
}

// refOf returns the id of the first entity ref "<prefix>:<id>" of res, or "".
func refOf(res controlplane.CommandResult, prefix string) string {
	for _, r := range res.EntityRefs {
		if id, ok := strings.CutPrefix(r, prefix+":"); ok {
			return id
		}
	}
	return ""
}

package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
)

// allClaims is every claim a command may require.
var allClaims = []string{
	"control_plane:interactions", "dependencies:write", "delegation:tasks:assign", "delegation:tasks:create",
	"governance:approvals:request", "governance:approvals:decide", "governance:approvals:comment", "workspace:control",
	"control_plane:budget", "control_plane:release", "control_plane:wakes",
}

func p[T any](v T) *T { return &v }

// richSeed exercises most entity kinds: two actors (the first an approver), four tasks,
// a blocker, an approval requested by actor-2, a workspace service and two faults.
func richSeed() controlplane.Seed {
	task := func(id string, status controlplane.TaskStatus, assignee string) *controlplane.Task {
		t := &controlplane.Task{ID: id, CompanyID: "company-1", Identifier: "MCK-" + id, Title: "Task " + id, Status: status, Priority: "medium", WorkMode: "standard"}
		if assignee != "" {
			t.AssigneeActorID = p(assignee)
		}
		return t
	}
	return controlplane.Seed{
		Actors: []*controlplane.Actor{
			{ID: "actor-1", CompanyID: "company-1", Name: "One", Role: "approver", Status: "active", BudgetID: "budget-actor-1", CapabilityGrants: allClaims},
			{ID: "actor-2", CompanyID: "company-1", Name: "Two", Role: "engineer", Status: "active", BudgetID: "budget-actor-2", CapabilityGrants: []string{}},
		},
		Tasks:             []*controlplane.Task{task("task-1", "todo", "actor-1"), task("task-2", "todo", "actor-2"), task("task-3", "blocked", "actor-2"), task("task-4", "backlog", "")},
		OutOfScopeTaskIDs: []string{"task-foreign"},
		Blockers:          []*controlplane.Blocker{{ID: "blocker-1", TaskID: "task-3", BlockedByTaskID: "task-1", CreatedAt: "2026-08-09T00:00:00.000Z"}},
		Approvals: []*controlplane.Approval{{ID: "approval-1", CompanyID: "company-1", TaskIDs: []string{"task-1", "task-2"}, Type: "deploy", Status: "pending",
			RequestedByActorID: p("actor-2"), Payload: json.RawMessage(`{}`), CreatedAt: "2026-08-09T00:00:00.000Z"},
			{ID: "approval-2", CompanyID: "company-1", TaskIDs: []string{"task-1"}, Type: "deploy", Status: "pending",
				RequestedByActorID: p("actor-1"), Payload: json.RawMessage(`{}`), CreatedAt: "2026-08-09T00:00:00.000Z"}},
		WorkspaceServices: []*controlplane.WorkspaceService{{ID: "service-1", TaskID: "task-1", Name: "preview", Status: "stopped", LastTransitionAt: "2026-08-09T00:00:00.000Z"}},
		Faults: []*controlplane.FaultRule{
			{ID: "fault-1", Operation: "apply_command", CommandKind: "report_progress", Effect: "lost_ack", Remaining: 1, Code: "lost"},
			{ID: "fault-2", Operation: "apply_command", CommandKind: "create_task", Effect: "retryable_error", Remaining: 1, Code: "flaky"},
		},
	}
}

func mustMemory(t testing.TB, seed controlplane.Seed) *controlplane.Memory {
	t.Helper()
	m, err := controlplane.NewMemory(seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

func openRun(t testing.TB, m *controlplane.Memory, runID, taskID, actorID, source string) {
	t.Helper()
	err := m.OpenRun(context.Background(), controlplane.OpenInput{
		Identity:         controlplane.Identity{RunID: runID, SessionID: "s-" + runID, CompanyID: "company-1", IssueID: taskID, AgentID: actorID},
		BackendKind:      "mock",
		SourceInstanceID: source,
		Capabilities:     allClaims,
		Wake:             &controlplane.Wake{Reason: "manual", Payload: json.RawMessage(`{"token":"t0k3n","x":{"api_key":"k"}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func cmd(kind string, fields map[string]any) json.RawMessage {
	c := map[string]any{"kind": kind}
	for k, v := range fields {
		c[k] = v
	}
	b, _ := json.Marshal(c)
	return b
}

var sensitiveRE = regexp.MustCompile(`(?i)authorization|credential|api.?key|secret|token`)

// checkInvariants asserts the state-level properties every operation keeps on m.
func checkInvariants(t testing.TB, m *controlplane.Memory) {
	t.Helper()
	ctx := context.Background()
	st, err := m.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision != int64(len(st.Decisions)) {
		t.Fatalf("revision %d != %d decision records", st.Revision, len(st.Decisions))
	}
	if len(st.Audit) > len(st.Decisions) {
		t.Fatalf("%d audit records > %d decisions", len(st.Audit), len(st.Decisions))
	}
	for i, d := range st.Decisions {
		if d.StateRevision != int64(i+1) {
			t.Fatalf("decision %d has stateRevision %d", i, d.StateRevision)
		}
	}
	// A task has at most one checkout run, and that run is bound to the task.
	runs := map[string]*controlplane.Run{}
	for _, r := range st.Runs {
		runs[r.ID] = r
	}
	holders := map[string]string{}
	for _, tk := range st.Tasks {
		if tk.CheckoutRunID == nil {
			continue
		}
		if other, dup := holders[*tk.CheckoutRunID]; dup {
			t.Fatalf("run %s checks out both %s and %s", *tk.CheckoutRunID, other, tk.ID)
		}
		holders[*tk.CheckoutRunID] = tk.ID
		if r := runs[*tk.CheckoutRunID]; r != nil && r.TaskID != tk.ID {
			t.Fatalf("task %s checked out by run %s of task %s", tk.ID, r.ID, r.TaskID)
		}
	}
	for _, r := range st.Runs {
		if r.Status != "running" {
			continue
		}
		for _, tk := range st.Tasks {
			if tk.ID == r.TaskID && tk.CheckoutRunID != nil && *tk.CheckoutRunID == r.ID && (tk.ExecutionRunID == nil || *tk.ExecutionRunID != r.ID) {
				t.Fatalf("running run %s owns the checkout of %s but not its execution lock", r.ID, tk.ID)
			}
		}
	}
	// Wake payloads never hold a value under a sensitive key.
	payloads := []json.RawMessage{}
	for _, w := range st.Wakes {
		payloads = append(payloads, w.Payload)
	}
	for _, r := range st.Runs {
		payloads = append(payloads, r.Wake.Payload)
	}
	for _, pl := range payloads {
		var v any
		if err := json.Unmarshal(pl, &v); err != nil {
			t.Fatalf("wake payload %s: %v", pl, err)
		}
		if path := leakPath(v, "$"); path != "" {
			t.Fatalf("wake payload holds a value under sensitive key %s: %s", path, pl)
		}
	}
	// The unresolved-blocker graph is acyclic and has no self-edges.
	status := map[string]controlplane.TaskStatus{}
	for _, tk := range st.Tasks {
		status[tk.ID] = tk.Status
	}
	adj := map[string][]string{}
	for _, b := range st.Blockers {
		if b.TaskID == b.BlockedByTaskID {
			t.Fatalf("self blocker %s", b.ID)
		}
		if status[b.BlockedByTaskID] != "done" {
			adj[b.TaskID] = append(adj[b.TaskID], b.BlockedByTaskID)
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		for _, next := range adj[n] {
			if color[next] == grey || (color[next] == white && visit(next)) {
				return true
			}
		}
		color[n] = black
		return false
	}
	for n := range adj {
		if color[n] == white && visit(n) {
			t.Fatalf("unresolved blocker graph has a cycle through %s", n)
		}
	}
	// Serialize → Restore → Serialize is a fixed point.
	s1, err := m.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := controlplane.Restore(s1)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	s2, err := r.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s1, s2) {
		t.Fatalf("serialize → restore → serialize is not a fixed point")
	}
}

func leakPath(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if sensitiveRE.MatchString(k) && val != controlplane.RedactedValue {
				return path + "." + k
			}
			if l := leakPath(val, path+"."+k); l != "" {
				return l
			}
		}
	case []any:
		for i, val := range x {
			if l := leakPath(val, fmt.Sprintf("%s[%d]", path, i)); l != "" {
				return l
			}
		}
	}
	return ""
}

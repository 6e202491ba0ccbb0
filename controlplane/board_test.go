package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

func boardOps() []BoardOp {
	op := func(kind BoardKind, in string) BoardOp { return BoardOp{Kind: kind, Input: json.RawMessage(in)} }
	return []BoardOp{
		op(BoardCreateEnvironment, `{"name":"local","kind":"local"}`),
		op(BoardCreateAgent, `{"name":"Eng","role":"engineer","capabilityGrants":["b","a","a"],"adapterConfig":{"z":1,"a":{"type":"secret_ref","secretId":"s","version":"latest"}}}`),
		op(BoardCreateProject, `{"name":"Core"}`),
		op(BoardCreateIssue, `{"title":"T","assigneeActorId":"fixture-actor-0001","workMode":"planning"}`),
		op(BoardComment, `{"issueId":"fixture-task-0001","body":"hi"}`),
		op(BoardCreateEnvironment, `{"name":"other","kind":"local"}`),
		op(BoardCreateIssue, `{"title":"T","assigneeActorId":"nobody"}`),
		op(BoardCreateIssue, `{"title":"T","surprise":true}`),
		op("drop_tables", `{}`),
	}
}

// TestBoardOperationsDeterministic: the same operations on two bare companies give
// byte-identical states; failures leave only their denied decision; wakes follow
// assignment and comments.
func TestBoardOperationsDeterministic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var states [][]byte
	for range 2 {
		m, err := NewMemory(Seed{Bare: true, Company: &Company{ID: "c", Name: "C", IssuePrefix: "C", BudgetID: "b"}})
		if err != nil {
			t.Fatal(err)
		}
		var codes []string
		for _, op := range boardOps() {
			before, _ := m.Serialize(ctx)
			revBefore := m.st.Revision
			_, err := m.ApplyBoard(ctx, op)
			codes = append(codes, string(CodeOf(err)))
			if err != nil {
				after, _ := m.Serialize(ctx)
				if m.st.Revision != revBefore+1 || len(m.st.Decisions) == 0 || m.st.Decisions[len(m.st.Decisions)-1].Outcome != "denied" {
					t.Fatalf("%s: a failure must record exactly one denied decision", op.Kind)
				}
				if bytes.Equal(before, after) {
					t.Fatalf("%s: the denied decision is missing from the state", op.Kind)
				}
			}
		}
		want := []string{"", "", "", "", "", "environment_conflict", "actor_missing", "board_input_invalid", "board_input_invalid"}
		for i := range want {
			if codes[i] != want[i] {
				t.Fatalf("operation %d: code %q, want %q", i, codes[i], want[i])
			}
		}
		ws, _ := m.ListWakes(ctx, "")
		if len(ws) != 2 || ws[0].Reason != "issue_assigned" || ws[1].Reason != "issue_commented" {
			t.Fatalf("wakes %+v", ws)
		}
		if len(m.st.Tasks) != 1 || len(m.st.Actors) != 1 || string(m.st.Actors[0].AdapterConfig) != `{"a":{"secretId":"s","type":"secret_ref","version":"latest"},"z":1}` {
			t.Fatalf("state: %d tasks, %d actors, adapterConfig %s", len(m.st.Tasks), len(m.st.Actors), m.st.Actors[0].AdapterConfig)
		}
		b, _ := m.Serialize(ctx)
		r, err := Restore(b)
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := r.Serialize(ctx)
		if !bytes.Equal(b, rb) {
			t.Fatal("restore changes a board company's state")
		}
		states = append(states, b)
	}
	if !bytes.Equal(states[0], states[1]) {
		t.Fatal("the same board operations gave different states")
	}
}

// TestBoardKindWireForm: a BoardKind is the plain string in JSON both ways; every listed
// kind is Valid and records "board_<kind>" decisions; a kind outside the typed set
// (and the internal blob kind) is not Valid, and ApplyBoard refuses it with
// board_input_invalid, recorded under the operation board_operation.
func TestBoardKindWireForm(t *testing.T) {
	t.Parallel()
	js, err := json.Marshal(BoardOp{Kind: BoardRetryRun, Input: json.RawMessage(`{}`)})
	if err != nil || string(js) != `{"kind":"retry_run","input":{}}` {
		t.Fatalf("Marshal = %s, %v", js, err)
	}
	var op BoardOp
	if err := json.Unmarshal([]byte(`{"kind":"drop_tables","input":{}}`), &op); err != nil || op.Kind != "drop_tables" {
		t.Fatalf("Unmarshal = %+v, %v", op, err)
	}
	for _, k := range BoardKinds {
		if !k.Valid() || k.Operation() != "board_"+string(k) {
			t.Errorf("%s: valid %v, operation %q", k, k.Valid(), k.Operation())
		}
	}
	if op.Kind.Valid() || boardPutBlob.Valid() {
		t.Errorf("drop_tables or put_blob is Valid")
	}
	m, err := NewMemory(Seed{Bare: true, Company: &Company{ID: "c", Name: "C", IssuePrefix: "C", BudgetID: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.ApplyBoard(context.Background(), op)
	last := m.st.Decisions[len(m.st.Decisions)-1]
	if CodeOf(err) != CodeBoardInputInvalid || last.Operation != "board_operation" || last.Outcome != DecisionDenied {
		t.Fatalf("ApplyBoard(drop_tables) = %v; last decision %+v", err, last)
	}
}

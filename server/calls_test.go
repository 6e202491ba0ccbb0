package server_test

import (
	"context"
	"testing"

	"github.com/agentproof/agentproof/api"
)

// TestAgentCallLedger: every request of a run's agent token is one agent call, in
// order, named in the MCP tools' terms (discovery reads, commands by kind, refused ones
// too); the board reads the ledger; a run whose token this process never minted is not
// recorded, one whose token it minted is, even without calls; an agent token
// cannot read it.
func TestAgentCallLedger(t *testing.T) {
	t.Parallel()
	w := newBoardWorld(t)
	co := "/api/companies/" + w.co.ID()
	steps := []struct {
		method, path, body string
		status             int
	}{
		{"GET", co + "/runs/run-1/context", "", 200},
		{"GET", co + "/runs/run-1/documents", "", 200},
		{"POST", co + "/commands", `{"runId":"run-1","idempotencyKey":"c1","command":{"kind":"set_task_title","title":"Rotate the API keys"}}`, 200},
		{"POST", co + "/commands", `{"runId":"run-1","idempotencyKey":"c2","command":{"kind":"set_task_title","title":" "}}`, 400},
		{"GET", co + "/calls-of-nothing", "", 404},
	}
	for _, s := range steps {
		if status, _, b := call(t, w.base, s.method, s.path, w.runTok, []byte(s.body)); status != s.status {
			t.Fatalf("%s %s: %d %s, want %d", s.method, s.path, status, b, s.status)
		}
	}
	got, err := w.co.RunCalls(context.Background(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []api.AgentCall{
		{Seq: 1, Tool: "get_task_context", Class: api.CallDiscovery, Status: 200},
		{Seq: 2, Tool: "list_documents", Class: api.CallDiscovery, Status: 200},
		{Seq: 3, Tool: "set_task_title", Class: api.CallCommand, Status: 200},
		{Seq: 4, Tool: "set_task_title", Class: api.CallCommand, Status: 400},
	}
	if !got.Recorded || got.Truncated || len(got.Calls) != len(want) {
		t.Fatalf("ledger %+v, want %d recorded calls", got, len(want))
	}
	for i, c := range got.Calls {
		c.At = ""
		if c != want[i] {
			t.Errorf("call %d = %+v, want %+v", i+1, c, want[i])
		}
	}
	none, err := w.co.RunCalls(context.Background(), "run-2")
	if err != nil || none.Recorded || len(none.Calls) != 0 {
		t.Errorf("a run without calls: %+v %v, want not recorded", none, err)
	}
	w.in.run.Server.MintAgentToken(w.co.ID(), w.agent, "run-3")
	silent, err := w.co.RunCalls(context.Background(), "run-3")
	if err != nil || !silent.Recorded || len(silent.Calls) != 0 {
		t.Errorf("a run whose token was minted and that made no call: %+v %v, want recorded, no calls", silent, err)
	}
	if status, _, _ := call(t, w.base, "GET", co+"/runs/run-1/calls", w.runTok, nil); status != 403 {
		t.Errorf("an agent token reading the ledger: %d, want 403", status)
	}
}

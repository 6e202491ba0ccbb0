package controlplane_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

// TestCreateIssueWorkModes: create_issue accepts every case workMode of the catalog
// and every task work mode of the state machine (standard, ask, planning, skill_test),
// stores it on the task, and refuses any other value with board_input_invalid.
func TestCreateIssueWorkModes(t *testing.T) {
	t.Parallel()
	modes := map[string]controlplane.Code{"skill_test": ""} // mode → wanted code
	for _, m := range catalog.WorkModes {
		modes[m] = ""
	}
	for _, m := range []string{"review", "lazy", "", "ASK"} {
		modes[m] = controlplane.CodeBoardInputInvalid
	}
	for mode, code := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			m, err := controlplane.NewMemory(controlplane.Seed{Bare: true, Company: &controlplane.Company{ID: "c", Name: "C", IssuePrefix: "C", BudgetID: "b"}})
			if err != nil {
				t.Fatal(err)
			}
			in, _ := json.Marshal(map[string]string{"title": "T", "workMode": mode})
			res, err := m.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardCreateIssue, Input: in})
			if controlplane.CodeOf(err) != code {
				t.Fatalf("workMode %q: code %q (%v), want %q", mode, controlplane.CodeOf(err), err, code)
			}
			if code != "" {
				return
			}
			st, err := m.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Tasks) != 1 || st.Tasks[0].ID != res.ID || st.Tasks[0].WorkMode != mode {
				t.Fatalf("workMode %q: tasks %+v", mode, st.Tasks)
			}
		})
	}
}

package heartbeat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// TestPermissionLifecycle: the board decider opens a pending permission per request
// and delivers the human's answer as the offered option of the chosen kind; a closed
// permission (answered, or cancelled when the turn ended) refuses every further answer
// with interaction_already_resolved; unknown permissions, other companies' and
// decisions that are not approve or decline are refused by code; a permission left
// pending by a server that stopped is cancelled when the next runner loads it.
func TestPermissionLifecycle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := New(nil, Config{Dir: dir, Home: t.TempDir(), Executable: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.put(&Record{Schema: api.HeartbeatRunSchema, RunID: "hb-c1-w1", CompanyID: "c1", TaskID: "t1", State: api.RunLaunching}); err != nil {
		t.Fatal(err)
	}
	j := job{company: "c1", task: &controlplane.Task{ID: "t1"}, actor: &controlplane.Actor{ID: "a1"}}
	d := boardDecider{r: r, j: j, run: "hb-c1-w1"}
	opts := []session.PermissionOption{{ID: "yes", Name: "Allow once", Kind: session.PermissionAllowOnce}, {ID: "no", Name: "Reject", Kind: session.PermissionRejectOnce}}
	code := func(err error) controlplane.Code {
		var ce *controlplane.Error
		if errors.As(err, &ce) {
			return ce.Code
		}
		return ""
	}
	waitPending := func(n int) api.Permission {
		t.Helper()
		for range 500 {
			if ps := r.Permissions("c1", "t1"); len(ps) == n && ps[n-1].Status == api.PermissionPending {
				return ps[n-1]
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatalf("permission %d never pending: %+v", n, r.Permissions("c1", ""))
		return api.Permission{}
	}

	// Declined: the reject-once option is delivered.
	got := make(chan session.PermissionDecision, 1)
	go func() {
		dec, err := d.Decide(context.Background(), session.PermissionRequest{Seq: 1, Turn: 1, ToolCallID: "tc1", Title: "Write proof.txt", Kind: "edit", Options: opts})
		if err != nil {
			t.Error(err)
		}
		got <- dec
	}()
	p := waitPending(1)
	if p.ToolCallID != "tc1" || p.Kind != "edit" || len(p.Options) != 2 || p.RunID != "hb-c1-w1" {
		t.Errorf("permission card %+v", p)
	}
	for _, bad := range []struct {
		company, id string
		decision    api.PermissionDecisionKind
		want        controlplane.Code
	}{
		{"c1", "perm-nope", api.PermissionApprove, controlplane.CodeInteractionMissing},
		{"c2", p.ID, api.PermissionApprove, controlplane.CodeInteractionMissing},
		{"c1", p.ID, "allow", controlplane.CodeInteractionOutcomeInvalid},
	} {
		if _, err := r.DecidePermission(bad.company, bad.id, bad.decision, "board"); code(err) != bad.want {
			t.Errorf("DecidePermission(%s, %s, %s) = %v, want %s", bad.company, bad.id, bad.decision, err, bad.want)
		}
	}
	closed, err := r.DecidePermission("c1", p.ID, api.PermissionDecline, "board")
	if err != nil || closed.Status != api.PermissionDeclined || closed.OptionID != "no" || closed.ResolvedBy != "board" {
		t.Fatalf("decline: %+v, %v", closed, err)
	}
	if dec := <-got; dec.OptionID != "no" || dec.Cancelled {
		t.Errorf("the agent was told %+v, want option no", dec)
	}
	if _, err := r.DecidePermission("c1", p.ID, api.PermissionApprove, "board"); code(err) != controlplane.CodeInteractionAlreadyResolved {
		t.Errorf("a repeated answer: %v", err)
	}

	// The turn ends while pending: cancelled, and a late answer is refused.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		dec, _ := d.Decide(ctx, session.PermissionRequest{Seq: 2, Turn: 1, ToolCallID: "tc2", Kind: "edit", Options: opts})
		got <- dec
	}()
	p2 := waitPending(2)
	cancel()
	if dec := <-got; !dec.Cancelled {
		t.Errorf("a cancelled turn's permission told the agent %+v", dec)
	}
	if ps := r.Permissions("c1", "t1"); ps[1].Status != api.PermissionCancelled || ps[1].ResolvedBy != RunnerActor {
		t.Errorf("after the turn ended: %+v", ps[1])
	}
	if _, err := r.DecidePermission("c1", p2.ID, api.PermissionApprove, "board"); code(err) != controlplane.CodeInteractionAlreadyResolved {
		t.Errorf("a stale answer: %v", err)
	}

	// An agent that offers no allow option cannot be approved.
	go func() {
		dec, _ := d.Decide(context.Background(), session.PermissionRequest{Seq: 3, ToolCallID: "tc3", Options: opts[1:]})
		got <- dec
	}()
	p3 := waitPending(3)
	if _, err := r.DecidePermission("c1", p3.ID, api.PermissionApprove, "board"); code(err) != controlplane.CodeInteractionOutcomeInvalid {
		t.Errorf("approve without an allow option: %v", err)
	}

	// A new runner on the same records closes what was left pending.
	r2, err := New(nil, Config{Dir: dir, Home: t.TempDir(), Executable: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	ps := r2.Permissions("c1", "")
	if len(ps) != 3 || ps[0].Status != api.PermissionDeclined || ps[2].Status != api.PermissionCancelled || ps[2].Reason == "" {
		t.Fatalf("after a restart: %+v", ps)
	}
	if _, err := r2.DecidePermission("c1", p3.ID, api.PermissionDecline, "board"); code(err) != controlplane.CodeInteractionAlreadyResolved {
		t.Errorf("an answer after the restart: %v", err)
	}
	r.closeRunPermissions("hb-c1-w1", "test over")
	<-got

	// A Stop closes a pending permission on the board before the driver cancels the
	// turn: the agent is told "cancelled" only once the driver's cancel ends the
	// request's context (ACP: session/cancel goes out first).
	stopCtx, driverCancel := context.WithCancel(context.Background())
	defer driverCancel()
	go func() {
		dec, _ := d.Decide(stopCtx, session.PermissionRequest{Seq: 4, ToolCallID: "tc4", Options: opts})
		got <- dec
	}()
	waitPending(4)
	r.closeRunPermissions("hb-c1-w1", "stopped")
	select {
	case dec := <-got:
		t.Fatalf("the agent was answered %+v before the driver's cancel", dec)
	case <-time.After(cancelAnswerWait / 4):
	}
	driverCancel()
	if dec := <-got; !dec.Cancelled {
		t.Errorf("a stopped permission told the agent %+v", dec)
	}
}

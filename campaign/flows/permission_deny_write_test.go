package flows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

// TestWrites: the declined-write flow declines a permission whose tool kind can change
// the workspace or whose locations name the case's file, and approves the rest (the
// semantic tools of the MCP server that Claude Code and Gemini CLI ask for, reads).
func TestWrites(t *testing.T) {
	t.Parallel()
	s := &Session{Workspace: "/ws", Rendered: &catalog.RenderedCase{WorkspaceFile: "proof.txt"}}
	tests := []struct {
		name string
		p    api.Permission
		want bool
	}{
		{"edit", api.Permission{Kind: "edit", Locations: []string{"/ws/proof.txt"}}, true},
		{"edit elsewhere", api.Permission{Kind: "edit", Locations: []string{"/ws/other.txt"}}, true},
		{"delete", api.Permission{Kind: "delete"}, true},
		{"move", api.Permission{Kind: "move"}, true},
		{"command", api.Permission{Kind: "execute", Title: "printf '%s' x > proof.txt"}, true},
		{"unknown kind at the file", api.Permission{Kind: "other", Locations: []string{"/ws/proof.txt"}}, true},
		{"relative location", api.Permission{Locations: []string{"proof.txt"}}, true},
		{"mcp tool", api.Permission{Kind: "other", Title: "mcp__agentproof__finish_task"}, false},
		{"no kind", api.Permission{Title: "finish_task"}, false},
		{"read of the file's directory", api.Permission{Kind: "read", Locations: []string{"/ws"}}, false},
		{"fetch", api.Permission{Kind: "fetch"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := writes(tt.p, s); got != tt.want {
				t.Errorf("writes(%+v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

// permissionBoard is a board with one task whose run asks the permissions perms and
// never settles; it records the decisions it is sent. Board methods a permission flow
// does not call are left to the embedded nil interface (a call panics).
type permissionBoard struct {
	Board
	perms     []api.Permission
	decisions []api.PermissionDecisionKind
}

func (b *permissionBoard) Snapshot(context.Context) (controlplane.State, error) {
	return controlplane.State{}, nil
}

func (b *permissionBoard) HeartbeatRuns(context.Context) ([]api.HeartbeatRun, error) {
	return nil, nil
}

func (b *permissionBoard) Permissions(context.Context, string) ([]api.Permission, error) {
	return b.perms, nil
}

func (b *permissionBoard) DecidePermission(_ context.Context, id string, d api.PermissionDecisionKind) (api.Permission, error) {
	b.decisions = append(b.decisions, d)
	for i, p := range b.perms {
		if p.ID == id {
			b.perms[i].Status = api.PermissionApproved
		}
	}
	return api.Permission{}, nil
}

// TestUnanswerablePermission: a permission that offers the human no option of the
// decision the case demands (a write with no reject option, in the declined-write
// flow; no allow option, in the approved one) is the candidate's problem, named with
// the options offered; the flow sends no answer and ends at once instead of waiting
// for its deadline or calling it the harness's fault.
func TestUnanswerablePermission(t *testing.T) {
	t.Parallel()
	allowOnly := []api.PermissionOption{{OptionID: "allow", Name: "Allow", Kind: "allow_once"}}
	rejectOnly := []api.PermissionOption{{OptionID: "reject", Name: "Reject", Kind: "reject_once"}}
	tests := []struct {
		name    string
		options []api.PermissionOption
		play    func(context.Context, *Session) Outcome
		want    string
	}{
		{"decline with no reject option", allowOnly, playPermissionDeny, "offers no option to decline (options offered: [allow_once])"},
		{"approve with no allow option", rejectOnly, func(ctx context.Context, s *Session) Outcome {
			return answerPermissions(ctx, s, api.PermissionApprove)
		}, "offers no option to approve (options offered: [reject_once])"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			board := &permissionBoard{perms: []api.Permission{{ID: "perm-1", Kind: "edit", Title: "write proof.txt",
				Locations: []string{"/ws/proof.txt"}, Options: tt.options, Status: api.PermissionPending}}}
			s := &Session{Board: board, TaskID: "task-1", Workspace: "/ws", TurnTimeout: 10 * time.Second, Poll: time.Millisecond,
				Rendered: &catalog.RenderedCase{WorkspaceFile: "proof.txt"}}
			out := tt.play(context.Background(), s)
			if out.Err != nil {
				t.Fatalf("Err = %v, want a problem (the candidate's), not a fault", out.Err)
			}
			if len(out.Problems) != 1 || !strings.Contains(out.Problems[0], tt.want) {
				t.Fatalf("Problems = %q, want one containing %q", out.Problems, tt.want)
			}
			if len(board.decisions) != 0 {
				t.Errorf("decisions sent = %v, want none", board.decisions)
			}
		})
	}
}

// TestOptionFor: approve takes allow_once before allow_always, decline reject_once
// before reject_always, whatever their order; another decision, or no option of its
// kinds, is no option.
func TestOptionFor(t *testing.T) {
	t.Parallel()
	p := api.Permission{Options: []api.PermissionOption{{OptionID: "aa", Kind: "allow_always"}, {OptionID: "ra", Kind: "reject_always"},
		{OptionID: "ao", Kind: "allow_once"}}}
	for _, tt := range []struct {
		d    api.PermissionDecisionKind
		id   string
		ok   bool
		from api.Permission
	}{
		{api.PermissionApprove, "ao", true, p},
		{api.PermissionDecline, "ra", true, p},
		{"maybe", "", false, p},
		{api.PermissionDecline, "", false, api.Permission{Options: []api.PermissionOption{{OptionID: "a", Kind: "allow_once"}}}},
	} {
		if id, ok := tt.from.OptionFor(tt.d); id != tt.id || ok != tt.ok {
			t.Errorf("OptionFor(%s) = %q, %v; want %q, %v", tt.d, id, ok, tt.id, tt.ok)
		}
	}
}

package flows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/verdict"
)

// Board is the part of the board API a flow uses: one company's state and heartbeat
// run records, and the human's actions; ApplyBoard is any board write, keyed when the
// BoardOp carries an IdempotencyKey (docs/files.md "Idempotent board writes").
// *client.Company implements it.
type Board interface {
	Snapshot(ctx context.Context) (controlplane.State, error)
	HeartbeatRuns(ctx context.Context) ([]api.HeartbeatRun, error)
	ResolveInteraction(ctx context.Context, interaction string, req api.ResolveInteractionRequest) (controlplane.BoardResult, error)
	DecideApproval(ctx context.Context, approval string, req api.DecideApprovalRequest) (controlplane.BoardResult, error)
	Comment(ctx context.Context, issue, body string) (controlplane.BoardResult, error)
	// Permissions lists the task's permission interactions (an ACP agent's permission
	// requests), DecidePermission answers one as the human, CancelRun is the Stop API.
	Permissions(ctx context.Context, task string) ([]api.Permission, error)
	DecidePermission(ctx context.Context, id string, decision api.PermissionDecisionKind) (api.Permission, error)
	CancelRun(ctx context.Context, runID, cancellationRequestID string) (api.CancelRunResponse, error)
	// SteerRun is the Steer button: the human's message posted as a comment and
	// delivered into the run's running Pi turn with steer.
	SteerRun(ctx context.Context, runID, body string) (api.SteerRunResponse, error)
	ApplyBoard(ctx context.Context, op controlplane.BoardOp) (controlplane.BoardResult, error)
	// ChatMessage posts a human message in a conversation ("/new" starts a new session
	// generation).
	ChatMessage(ctx context.Context, conversation, body string) (controlplane.BoardResult, error)
}

// Session is what a flow plays with: the board, the task the fixtures created, the
// case as declared and as rendered for the attempt, the workspace (for checks of the
// warm flow), the per-turn deadline (0 for none), how often to look when the board
// has no change feed or it failed (default 25 ms; see ChangeWaiter),
// how to restart the server (nil when the harness cannot; it returns the board of the
// new server), the running server's base URL and a board of the same company whose
// requests go to another base URL (both nil when the harness cannot: the lost-
// acknowledgement probe sends through its proxy with them) and where to log what the
// human did (nil for nowhere), and what to call when a turn's run settles (nil for
// nothing).
type Session struct {
	Board  Board
	TaskID string
	// ConversationID is the conversation of a chat case (TaskID is its backing task);
	// "" otherwise.
	ConversationID string
	Case           *catalog.Case
	Rendered       *catalog.RenderedCase
	Workspace      string
	TurnTimeout    time.Duration
	Poll           time.Duration
	Restart        func(ctx context.Context) (Board, error)
	// Crash kills the server with SIGKILL (no shutdown: a crash) and starts a new one
	// on the same home, returning its board; nil when the harness cannot.
	Crash     func(ctx context.Context) (Board, error)
	ServerURL func() string
	BoardAt   func(baseURL string) Board
	Log       func(format string, args ...any)
	// TurnSettled, when set, is called once per turn n (1-based) when its run first
	// settles, before the human acts on it (the attempt snapshots the workspace there
	// for its per-turn diff).
	TurnSettled func(ctx context.Context, n int)
	settled     map[int]bool
	// ReleaseModel releases the scripted model's held step of run n (1-based; a step
	// with hold_ms streams its tool call's first frame and waits): it reports whether
	// the attempt has a scripted model with that run. Nil without a scripted model.
	ReleaseModel func(run int) bool
	// ModelHolding reports whether the scripted model is holding run n's (1-based)
	// step mid-call now (the tool call's first frame sent, the rest held until
	// ReleaseModel). Nil without a scripted model.
	ModelHolding func(run int) bool
}

func (s *Session) log(format string, args ...any) {
	if s.Log != nil {
		s.Log(format, args...)
	}
}

// Outcome is what a flow did and saw: Submitted holds the time the human submitted
// each turn after the first (turn 1 is the task's creation, the fixtures' doing; a
// fresh task's creation submits its first turn),
// Problems the flow contract violations it observed (the candidate's), Err what
// stopped it, or nil (see the package doc).
type Outcome struct {
	Submitted []time.Time
	Problems  []string
	Err       error
	// Tasks are the tasks the flow created for the agent besides the fixtures' one
	// (flow instruction_persistence's fresh task), in order: their runs are the turns
	// after the fixtures' task's.
	Tasks []string
	// Killed are the runs whose agent process the flow killed with SIGKILL (flow
	// crash_retry): what that process left outside its process group is the
	// kill's doing, not the candidate's (the attempt notes it when the runner killed
	// it).
	Killed []string
	// Final is the last whole look at the board (state and records), taken after the
	// flow's last action — the look a flow that only waits ends on (single_turn,
	// process_exit: final), or Run's look of the runs it counts — so that observe can
	// grade it instead of looking again. nil when the flow ended with an error or a
	// problem, or Run took no look.
	Final *Look
	// final is the flow's own last settled view, when it ended on one without acting
	// after it (Run then counts the runs in it instead of looking again).
	final *view
}

// Look is one look at the board: the company state, then the heartbeat runner's
// records of the company's runs.
type Look struct {
	State   controlplane.State
	Records []api.HeartbeatRun
}

// DeadlineError is a missed per-turn deadline: Turn is 1-based, Limit the case's
// turnTimeoutMs.
type DeadlineError struct {
	Turn  int
	Limit time.Duration
}

// Error names the turn and the limit.
func (e *DeadlineError) Error() string {
	return fmt.Sprintf("turn %d deadline (%d ms) missed", e.Turn, e.Limit.Milliseconds())
}

// BoardFault blames a failed board call on the harness: the board is agentproof's own
// server, and the human's actions are agentproof's own. It is transient (retried in a
// fresh attempt) when the call may succeed later — the error is not a control-plane
// error (a network failure, a closed connection) or is one marked retryable — and
// permanent otherwise (the board refused the request). what says what the human was
// doing ("answering question q-1").
func BoardFault(what string, err error) *verdict.Fault {
	var ce *controlplane.Error
	transient := !errors.As(err, &ce) || controlplane.IsRetryable(err)
	return verdict.HarnessFault(fmt.Errorf("%s: %w", what, err), transient)
}

// permanent is a permanent harness fault.
func permanent(err error) *verdict.Fault { return verdict.HarnessFault(err, false) }

// followup returns the case's one follow-up. Its flow's registry entry needs exactly
// one (a catalog.Need of FieldFollowups, whose What names it in the error); a case
// without exactly one is a harness fault (permanent): catalog loading refuses such a
// case, so only a catalog loaded without the flows' contracts gets here.
func (s *Session) followup() (string, error) {
	n := 0
	if s.Rendered != nil {
		n = len(s.Rendered.Followups)
	}
	if n != 1 {
		what := ""
		for _, need := range registry[s.Case.Flow].Needs {
			if need.Field == catalog.FieldFollowups && need.What != "" {
				what = " (" + need.What + ")"
			}
		}
		return "", permanent(fmt.Errorf("flow %s needs exactly one follow-up%s, the case has %d", s.Case.Flow, what, n))
	}
	return s.Rendered.Followups[0], nil
}

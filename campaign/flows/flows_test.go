package flows

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentproof/agentproof/agent/reference"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/verdict"
)

// The flows play the human against the real control-plane server package, in process
// (httptest, no child process). The agent side is played in process too, by the
// built-in reference agent's own code (package agent/reference) through the board
// token, which may act on any run: "reference" carries out the case's reference
// script, "nop" ends every run without work, "idle" never takes a wake.

func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	fsys := fstest.MapFS{}
	err := fs.WalkDir(catalog.DefaultFS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(catalog.DefaultFS(), p)
		fsys[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load(fsys, catalog.WithFlows(Contracts()...))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// world is one company on an in-process server with a task assigned to an agent; the
// server can be restarted on its home (restart), so co, url and token are those of the
// server running now.
type world struct {
	home string
	task string
	// conversation is a chat cell's conversation (task is its backing task), else ""
	conversation string
	// agent is the agent under test: the only actor whose wakes runAgent takes (a chat
	// cell's handoff worker has no runner, as in a real cell)
	agent     string
	workspace string
	// agentHome is the reference agent's AGENT_HOME: a plain directory no runner
	// saves (the heartbeat runner does that, not this world)
	agentHome string
	// refusable: a run the agent could not carry out (a refused command) is completed
	// as failed in process, as the heartbeat runner does, instead of failing the test
	refusable bool

	mu    sync.Mutex
	srv   *server.Server
	ts    *httptest.Server
	co    *client.Company
	token string
}

func (w *world) company() *client.Company { w.mu.Lock(); defer w.mu.Unlock(); return w.co }
func (w *world) url() string              { w.mu.Lock(); defer w.mu.Unlock(); return w.ts.URL }

// boardAt is the company's board at another base URL (a proxy in front of the server).
func (w *world) boardAt(base string) Board {
	w.mu.Lock()
	defer w.mu.Unlock()
	return heartbeatless{client.New(base, w.token, nil).Company(w.co.ID())}
}

// restart closes the server and opens a new one on the same home.
func (w *world) restart(ctx context.Context) (Board, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ts.Close()
	w.srv.Close()
	s, err := server.Open(ctx, server.Options{Home: w.home})
	if err != nil {
		return nil, err
	}
	w.srv, w.ts = s, httptest.NewServer(s.Handler())
	w.token = s.BoardToken()
	w.co = client.New(w.ts.URL, w.token, nil).Company(w.co.ID())
	return heartbeatless{w.co}, nil
}

func newWorld(t *testing.T, rc *catalog.RenderedCase, flow catalog.Flow, workMode string, grants []string) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{home: t.TempDir(), workspace: t.TempDir(), agentHome: t.TempDir()}
	s, err := server.Open(ctx, server.Options{Home: w.home})
	if err != nil {
		t.Fatal(err)
	}
	w.srv, w.ts, w.token = s, httptest.NewServer(s.Handler()), s.BoardToken()
	t.Cleanup(func() { w.mu.Lock(); defer w.mu.Unlock(); w.ts.Close(); w.srv.Close() })
	co, err := client.New(w.ts.URL, w.token, nil).CreateCompany(ctx, "flows", "FLO")
	if err != nil {
		t.Fatal(err)
	}
	w.co = co
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ag, err := co.CreateAgent(ctx, api.CreateAgentRequest{Name: "agent", Role: "engineer", CapabilityGrants: nonNilStrings(grants)})
	if err != nil {
		t.Fatal(err)
	}
	w.agent = ag.ID
	if f, _ := Lookup(flow); f.Chat {
		// as the fixtures do: the handoff worker (no runner takes its wakes) and a
		// conversation whose first message is the prompt
		if _, err := co.CreateAgent(ctx, api.CreateAgentRequest{Name: ChatWorkerName, Role: "engineer", CapabilityGrants: []string{}}); err != nil {
			t.Fatal(err)
		}
		cv, err := co.CreateConversation(ctx, api.CreateConversationRequest{Title: "flows " + rc.Nonce, AssigneeActorID: ag.ID, Body: &rc.Prompt})
		if err != nil {
			t.Fatal(err)
		}
		c, err := co.Conversation(ctx, cv.ID)
		if err != nil {
			t.Fatal(err)
		}
		w.task, w.conversation = c.TaskID, cv.ID
		return w
	}
	req := api.CreateIssueRequest{Title: "flows " + rc.Nonce, AssigneeActorID: &ag.ID}
	if rc.Prompt != "" {
		req.Description = &rc.Prompt
	}
	if workMode != "" {
		req.WorkMode = &workMode
	}
	task, err := co.CreateIssue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	w.task = task.ID
	return w
}

// runAgent plays the agent until ctx ends: every scheduled wake of the task that has
// no run yet (and is still current) is opened as a run and carried out with script.
func (w *world) runAgent(ctx context.Context, t *testing.T, script *catalog.ReferenceScript) {
	state := t.TempDir()
	for ctx.Err() == nil {
		co := w.company()
		st, err := co.Snapshot(ctx)
		if err == nil {
			w.takeWakes(ctx, t, co, st, script, state)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (w *world) takeWakes(ctx context.Context, t *testing.T, co *client.Company, st controlplane.State, script *catalog.ReferenceScript, state string) {
	runs := map[string]bool{}
	for _, r := range st.Runs {
		runs[r.ID] = true
	}
	for _, wk := range st.Wakes {
		var task *controlplane.Task
		for _, x := range st.Tasks {
			if x.ID == wk.TaskID {
				task = x
			}
		}
		runID := "run-" + wk.ID
		if wk.Status != "scheduled" || runs[runID] || task == nil || task.CheckoutRunID != nil || wk.ActorID != w.agent {
			continue
		}
		resume := task.Status == "done" || task.Status == "cancelled"
		if resume && wk.Reason != "issue_commented" {
			continue
		}
		in := controlplane.OpenInput{Identity: controlplane.Identity{RunID: runID, SessionID: "session-" + runID, CompanyID: st.Company.ID, IssueID: task.ID, AgentID: wk.ActorID},
			BackendKind: "flows-test", SourceInstanceID: "flows-test", Wake: &controlplane.Wake{Reason: wk.Reason, Payload: wk.Payload}, Resume: resume}
		if _, err := co.OpenFixtureRun(ctx, in); err != nil {
			continue // taken meanwhile, or not yet takeable
		}
		_, err := reference.Execute(ctx, co, runID, reference.Config{Script: script, Workspace: w.workspace, StateDir: state, AgentHome: w.agentHome})
		switch {
		case err != nil && w.refusable:
			in, _ := json.Marshal(controlplane.NativeRunResult{RunID: runID, Status: controlplane.RunFailed, Summary: err.Error()})
			w.mu.Lock()
			srv := w.srv
			w.mu.Unlock()
			sc := srv.Store().Company(co.ID())
			ev, _ := json.Marshal(controlplane.NativeEvent{EventID: runID + ":completed", RunID: runID, Sequence: 1, Type: "run.completed"})
			if _, cerr := sc.AppendEvent(ctx, ev); cerr != nil {
				t.Errorf("ending the failed run %s: %v", runID, cerr)
			}
			if cerr := sc.CompleteRun(ctx, in); cerr != nil {
				t.Errorf("completing the failed run %s: %v", runID, cerr)
			}
		case err != nil && ctx.Err() == nil && w.company() == co:
			t.Errorf("agent run %s: %v", runID, err) // (a run a restart cut short is not the agent's error)
		}
		return // one run at a time: look again
	}
}

// heartbeatless is the in-process server's board without heartbeat records (no runner
// runs here: runs settle by their status alone).
type heartbeatless struct{ *client.Company }

func (heartbeatless) HeartbeatRuns(context.Context) ([]api.HeartbeatRun, error) { return nil, nil }

// refusing is a board whose human actions the server refuses.
type refusing struct{ Board }

func (refusing) ResolveInteraction(context.Context, string, api.ResolveInteractionRequest) (controlplane.BoardResult, error) {
	return controlplane.BoardResult{}, &controlplane.Error{Code: "interaction_missing", Message: "no such interaction"}
}

// replaying is a board that answers a second resolution of the same interaction as
// done without asking the server: a control plane that accepts an older plan revision.
type replaying struct {
	Board
	mu   sync.Mutex
	seen map[string]bool
}

func (b *replaying) ResolveInteraction(ctx context.Context, id string, req api.ResolveInteractionRequest) (controlplane.BoardResult, error) {
	b.mu.Lock()
	again := b.seen[id]
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	b.seen[id] = true
	b.mu.Unlock()
	if again {
		return controlplane.BoardResult{}, nil
	}
	return b.Board.ResolveInteraction(ctx, id, req)
}

// untargeted drops the targetDocumentKey of every step: the agent asks for approval
// of no revision.
func untargeted(s *catalog.ReferenceScript) {
	for _, turn := range s.Turns {
		for _, st := range turn.Steps {
			delete(st.Args, "targetDocumentKey")
		}
	}
}

// unkeyed is a board that drops every write's Idempotency-Key (a control plane
// without idempotent board writes): the replay of a lost acknowledgement then creates
// a second comment.
type unkeyed struct{ Board }

func (u unkeyed) ApplyBoard(ctx context.Context, op controlplane.BoardOp) (controlplane.BoardResult, error) {
	op.IdempotencyKey = ""
	return u.Board.ApplyBoard(ctx, op)
}

// replyOnly keeps only the script's first turn: the agent replies and then ends every
// later run without work.
func replyOnly(s *catalog.ReferenceScript) { s.Turns = s.Turns[:1] }

// newWakes is a board whose /new is answered with a wake (a control plane that starts a
// provider run for it).
type newWakes struct{ Board }

func (b newWakes) ChatMessage(ctx context.Context, conv, body string) (controlplane.BoardResult, error) {
	res, err := b.Board.ChatMessage(ctx, conv, body)
	if err == nil && body == controlplane.ChatNewText {
		res.ScheduledWakeIDs = append(res.ScheduledWakeIDs, "wake-for-new")
	}
	return res, err
}

// nopScript is a script whose one turn fits no wake: every run ends without work.
var nopScript = &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "follow_up"}}}

// TestFlows plays every implemented flow against the real server: the reference agent
// meets each flow's contract, an agent that does nothing breaks it (a problem: the
// candidate's), and the harness's own failures are faults of the harness, never
// problems of the candidate.
func TestFlows(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	tests := []struct {
		name    string
		cell    string
		agent   string                         // reference, nop or idle
		script  func(*catalog.ReferenceScript) // changes the rendered reference script
		board   func(Board) Board
		restart bool
		// crash: the session can kill the server (a restart here: no runner runs)
		crash bool
		// impostor: the heartbeat records name a real process that is not the run's
		// (it must survive the flow)
		impostor bool
		timeout  time.Duration
		// poll is the session's poll period (0: 5 ms); an hour proves that the flow
		// was woken by the board's change feed (ChangeWaiter), never by its poll
		poll time.Duration
		// ungranted: the agent is created without the cell's capability grants
		ungranted bool
		problem   string // a substring of a problem, "" for none
		fault     verdict.Origin
		err       string // a substring of Err, "" for none
	}{
		{name: "single turn", cell: "grader-calibration.reference.local.message-marker", agent: "reference"},
		{name: "single turn, woken by the change feed only", cell: "grader-calibration.reference.local.message-marker", agent: "reference", poll: time.Hour},
		{name: "warm three turns, woken by the change feed only", cell: "grader-calibration.reference.local.warm-three-turn", agent: "reference", poll: time.Hour},
		{name: "single turn, the agent does nothing", cell: "grader-calibration.reference.local.message-marker", agent: "nop"},
		{name: "process exit", cell: "calibration.fixture-pass.local.process-exit", agent: "nop"},
		{name: "question resume", cell: "grader-calibration.reference.local.structured-question-resume", agent: "reference"},
		{name: "question resume, no question", cell: "grader-calibration.reference.local.structured-question-resume", agent: "nop", problem: "no pending question after run 1"},
		{name: "question resume, the board refuses the answer", cell: "grader-calibration.reference.local.structured-question-resume", agent: "reference",
			board: func(b Board) Board { return refusing{b} }, fault: verdict.Harness, err: "answering question"},
		{name: "question restart, the harness cannot restart", cell: "grader-calibration.reference.local.structured-question-restart-resume", agent: "reference",
			fault: verdict.Harness, err: "cannot restart"},
		{name: "plan revision", cell: "grader-calibration.reference.local.plan-revise-accept", agent: "reference"},
		{name: "plan revision, no plan", cell: "grader-calibration.reference.local.plan-revise-accept", agent: "nop", problem: "no plan confirmation pending after run 1"},
		{name: "plan revision, the control plane accepts the older revision", cell: "grader-calibration.reference.local.plan-revise-accept", agent: "reference",
			board: func(b Board) Board { return &replaying{Board: b} }, fault: verdict.Harness, err: "accepted confirmation"},
		{name: "plan approval", cell: "journey-calibration.reference.local.plan-approve-complete", agent: "reference"},
		// A grant the case did not give is the harness's setup, not the candidate's.
		{name: "plan approval without the capability grant", cell: "journey-calibration.reference.local.plan-approve-complete", agent: "reference", ungranted: true,
			fault: verdict.Harness, err: "harness setup: no pending plan approval after run 1; request_approval of run"},
		{name: "plan approval, no approval", cell: "journey-calibration.reference.local.plan-approve-complete", agent: "nop", problem: "no pending plan approval after run 1"},
		{name: "plan approval of no revision", cell: "journey-calibration.reference.local.plan-approve-complete", agent: "reference", script: untargeted,
			problem: "targets no plan revision"},
		{name: "blocker guidance", cell: "journey-calibration.reference.local.blocker-guidance", agent: "reference"},
		{name: "blocker guidance, the agent never blocks", cell: "journey-calibration.reference.local.blocker-guidance", agent: "nop", problem: "not blocked on a question"},
		{name: "warm three turns", cell: "grader-calibration.reference.local.warm-three-turn", agent: "reference"},
		{name: "warm three turns, no file", cell: "grader-calibration.reference.local.warm-three-turn", agent: "nop", problem: "after turn 1 the workspace file"},
		{name: "instruction persistence, no runner saves the home", cell: "agent-files.reference.local.instruction-persistence", agent: "reference", restart: true,
			fault: verdict.Harness, err: "without a save receipt of the agent's home"},
		{name: "instruction persistence, the harness cannot restart", cell: "agent-files.reference.local.instruction-persistence", agent: "reference",
			fault: verdict.Harness, err: "that can restart the server"},
		{name: "server crash retry, the harness cannot kill the server", cell: "board-idempotency.reference.local.server-crash-retry", agent: "reference",
			fault: verdict.Harness, err: "kill and restart the server"},
		{name: "server crash retry, the agent never waits", cell: "board-idempotency.reference.local.server-crash-retry", agent: "nop", crash: true,
			problem: "ended before the agent wrote its run id"},
		{name: "lost acknowledgement", cell: "board-idempotency.reference.local.lost-acknowledgement", agent: "reference", restart: true},
		{name: "lost acknowledgement, the agent does nothing", cell: "board-idempotency.reference.local.lost-acknowledgement", agent: "nop", restart: true},
		{name: "lost acknowledgement, a board that forgets its keys", cell: "board-idempotency.reference.local.lost-acknowledgement", agent: "reference", restart: true,
			board: func(b Board) Board { return unkeyed{b} }, fault: verdict.Harness, err: "not the committed"},
		{name: "lost acknowledgement, the harness cannot restart", cell: "board-idempotency.reference.local.lost-acknowledgement", agent: "reference",
			fault: verdict.Harness, err: "can address and restart the server"},
		{name: "crash retry, the agent never waits", cell: "board-idempotency.reference.local.crash-retry", agent: "nop", problem: "run 1 ended before the agent wrote its run id"},
		{name: "crash retry, a process that is not the run's is never signalled", cell: "board-idempotency.reference.local.crash-retry", agent: "reference",
			impostor: true, fault: verdict.Harness, err: "not positively identified, so it was not signalled"},
		{name: "agent chat", cell: "agent-chat-calibration.reference.local.chat-handoff", agent: "reference"},
		{name: "agent chat, the agent never replies", cell: "agent-chat-calibration.reference.local.chat-handoff", agent: "nop", problem: "did not reply in the chat in run 1"},
		{name: "agent chat, the agent replies but never hands off", cell: "agent-chat-calibration.reference.local.chat-handoff", agent: "reference", script: replyOnly,
			problem: "did not hand the work off in run 2"},
		{name: "agent chat, the control plane wakes the agent for /new", cell: "agent-chat-calibration.reference.local.chat-handoff", agent: "reference",
			board: func(b Board) Board { return newWakes{b} }, fault: verdict.Harness, err: "/new must start no provider run"},
		{name: "a turn deadline", cell: "grader-calibration.reference.local.message-marker", agent: "idle", timeout: 200 * time.Millisecond, err: "turn 1 deadline (200 ms) missed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cell := c.Cell(tt.cell)
			if cell == nil {
				t.Fatalf("no cell %s", tt.cell)
			}
			rc, err := cell.Render("0123456789abcdef")
			if err != nil {
				t.Fatal(err)
			}
			grants := cell.CapabilityGrants
			if tt.ungranted {
				grants = nil
			}
			w := newWorld(t, rc, cell.Case.Flow, cell.Case.WorkMode, grants)
			w.refusable = tt.ungranted
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var agentDone sync.WaitGroup
			if tt.agent != "idle" {
				script := rc.Reference
				if tt.script != nil {
					tt.script(script)
				}
				if tt.agent == "nop" {
					script = nopScript
				}
				agentDone.Go(func() { w.runAgent(ctx, t, script) })
			}
			var b Board = heartbeatless{w.company()}
			if tt.board != nil {
				b = tt.board(b)
			}
			var victim *exec.Cmd
			if tt.impostor {
				var ticks uint64
				victim, ticks = sleeper(t)
				b = impostor{b, victim.Process.Pid, ticks}
			}
			s := &Session{Board: b, TaskID: w.task, ConversationID: w.conversation, Case: cell.Case, Rendered: rc, Workspace: w.workspace, TurnTimeout: tt.timeout, Poll: cmp.Or(tt.poll, 5*time.Millisecond), Log: t.Logf}
			if tt.restart {
				s.ServerURL, s.BoardAt = w.url, w.boardAt
				s.Restart = func(ctx context.Context) (Board, error) {
					b, err := w.restart(ctx)
					if err == nil && tt.board != nil {
						b = tt.board(b)
					}
					return b, err
				}
			}
			if tt.crash {
				s.Crash = w.restart
			}
			out := Run(ctx, s)
			cancel()
			agentDone.Wait()
			checkOutcome(t, out, tt.problem, tt.fault, tt.err)
			checkFinal(t, out, w)
			if victim != nil && !alive(victim) {
				t.Error("the flow signalled a process it had not identified")
			}
		})
	}
}

// checkFinal: a flow that ended without an error or a problem hands observe its last
// look (Outcome.Final), and that look is the end state: the same runs with the same
// statuses as a look taken now.
func checkFinal(t *testing.T, out Outcome, w *world) {
	t.Helper()
	if out.Err != nil || len(out.Problems) > 0 {
		if out.Final != nil {
			t.Error("a flow that ended with an error or a problem handed on a final look")
		}
		return
	}
	if out.Final == nil {
		t.Fatal("the flow ended cleanly without a final look")
	}
	now, err := w.company().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	runs := func(st controlplane.State) string {
		var b strings.Builder
		for _, r := range st.Runs {
			fmt.Fprintf(&b, "%s:%s ", r.ID, r.Status)
		}
		return b.String()
	}
	if got, want := runs(out.Final.State), runs(now); got != want {
		t.Errorf("the final look's runs are %q, the board's now %q", got, want)
	}
}

func checkOutcome(t *testing.T, out Outcome, problem string, origin verdict.Origin, errPart string) {
	t.Helper()
	problems := strings.Join(out.Problems, "; ")
	switch {
	case problem == "" && problems != "" && errPart == "":
		t.Errorf("problems %q, want none", problems)
	case problem != "" && !strings.Contains(problems, problem):
		t.Errorf("problems %q, want one containing %q", problems, problem)
	}
	switch {
	case errPart == "" && out.Err != nil:
		t.Errorf("err = %v, want none", out.Err)
	case errPart != "" && (out.Err == nil || !strings.Contains(out.Err.Error(), errPart)):
		t.Errorf("err = %v, want one containing %q", out.Err, errPart)
	}
	if origin != "" {
		if f := verdict.FaultOf(out.Err); f == nil || f.Origin != origin {
			t.Errorf("fault %+v, want origin %s", f, origin)
		}
	}
	var de *DeadlineError
	if errors.As(out.Err, &de) && verdict.FaultOf(out.Err) != nil {
		t.Errorf("a deadline must not be a fault of its own: %v", out.Err)
	}
}

// TestRegistry: the registry's flows have valid contracts, the default catalog loads
// with them (every default case meets its flow's contract), and a flow nothing plays is
// refused by the catalog and a harness fault when played anyway (a catalog loaded
// without catalog.WithFlows).
func TestRegistry(t *testing.T) {
	t.Parallel()
	names, contracts := Names(), Contracts()
	if len(names) != len(registry) || len(contracts) != len(registry) || len(names) == 0 {
		t.Fatalf("Names() = %v, Contracts() has %d, registry has %d", names, len(contracts), len(registry))
	}
	for i, c := range contracts {
		if err := c.Valid(); err != nil || c.Name != names[i] {
			t.Errorf("contract %d: %+v: %v", i, c, err)
		}
	}
	if _, err := catalog.Default(catalog.WithFlows(contracts...)); err != nil {
		t.Fatalf("the default catalog breaks a flow's contract or names a flow nothing plays: %v", err)
	}
	out := Run(context.Background(), &Session{Case: &catalog.Case{Flow: "everyday_workflow"}})
	if f := verdict.FaultOf(out.Err); f == nil || f.Origin != verdict.Harness || !strings.Contains(f.Error(), "everyday_workflow") {
		t.Errorf("a flow nothing plays: %v", out.Err)
	}
	if _, ok := Lookup("everyday_workflow"); ok {
		t.Error("everyday_workflow has an implementation")
	}
}

// TestBoardFault: a board error that may pass is transient, a refusal permanent; both
// are the harness's.
func TestBoardFault(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err   error
		class verdict.FailureClass
	}{
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), verdict.TransientInfrastructure},
		{&controlplane.Error{Code: "board_input_invalid", Message: "bad"}, verdict.PermanentInfrastructure},
		{fmt.Errorf("wrapped: %w", &controlplane.Error{Code: "x", Message: "y", Retryable: true}), verdict.TransientInfrastructure},
	} {
		f := BoardFault("doing it", tt.err)
		if f.Origin != verdict.Harness || f.Class != tt.class || !strings.HasPrefix(f.Error(), "doing it: ") {
			t.Errorf("BoardFault(%v) = %+v", tt.err, f)
		}
	}
}

// nonNilStrings is s, or [] for nil (the board wants a list of grants).
func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

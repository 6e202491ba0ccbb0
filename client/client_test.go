package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server"
)

// world is a real server on 127.0.0.1 with a fixture company (the state machine's defaults:
// company-1, actor-1, task-1) whose run-1 is open; report_progress fails once with a
// scripted retryable fault.
type world struct {
	run   *server.Running
	board *Client
	co    *Company
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	r, err := server.Start(ctx, server.Options{Home: t.TempDir()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Shutdown(ctx)
	})
	board := New(r.URL, r.BoardToken(), nil)
	co, err := board.CreateFixtureCompany(ctx, controlplane.Seed{Faults: []*controlplane.FaultRule{{ID: "fault-1",
		Operation: "apply_command", CommandKind: "report_progress", Effect: "retryable_error", Remaining: 1, Code: "scripted_retryable_error"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := co.OpenFixtureRun(ctx, controlplane.OpenInput{BackendKind: "mock", Identity: controlplane.Identity{
		RunID: "run-1", SessionID: "s-1", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"}}); err != nil {
		t.Fatal(err)
	}
	return &world{run: r, board: board, co: co}
}

// agent returns the company as the agent of run sees it through DialAgent.
func (w *world) agent(t *testing.T, company, token string) controlplane.Port {
	t.Helper()
	p, err := DialAgent(context.Background(), w.run.URL+"/api/companies/"+company, token)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantError checks that err is a *controlplane.Error with code and retryable, whose
// message says something, and whose Error() starts with the code.
func wantError(t *testing.T, err error, code controlplane.Code, retryable bool) {
	t.Helper()
	var e *controlplane.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *controlplane.Error %s", err, err, code)
	}
	if e.Code != code || e.Retryable != retryable || controlplane.IsRetryable(err) != retryable {
		t.Fatalf("error %+v, want code %s retryable %v", e, code, retryable)
	}
	if strings.TrimSpace(e.Message) == "" || !strings.HasPrefix(err.Error(), string(code)+": ") {
		t.Fatalf("error %q has no message or does not start with its code", err)
	}
}

var progress = json.RawMessage(`{"kind":"report_progress","body":"half way"}`)

// TestErrorMapping: error bodies of the real server come back as *controlplane.Error
// with the server's code and retryable flag, for board and agent calls; a scripted
// retryable fault is retryable and the retry is applied.
func TestErrorMapping(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	agent := w.agent(t, w.co.ID(), w.run.MintAgentToken(w.co.ID(), "actor-1", "run-1"))
	cases := []struct {
		name      string
		call      func() error
		code      controlplane.Code
		retryable bool
	}{
		{"unknown company (404)", func() error { _, err := w.board.Company("company-9999").Snapshot(ctx); return err }, "company_missing", false},
		{"route not served: no heartbeat runner (404)", func() error { _, err := w.board.HeartbeatRun(ctx, "run-1"); return err }, "not_found", false},
		{"board input invalid (400)", func() error {
			_, err := w.co.CreateIssue(ctx, api.CreateIssueRequest{Title: "t", WorkMode: ptr("lazy")})
			return err
		}, "board_input_invalid", false},
		{"unknown assignee (404)", func() error {
			_, err := w.co.CreateIssue(ctx, api.CreateIssueRequest{Title: "t", AssigneeActorID: ptr("nobody")})
			return err
		}, "actor_missing", false},
		{"checkout conflict (409)", func() error {
			return w.co.OpenRun(ctx, controlplane.OpenInput{BackendKind: "mock", Identity: controlplane.Identity{
				RunID: "run-2", SessionID: "s-2", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"}})
		}, "checkout_conflict", false},
		{"scripted fault (503)", func() error {
			_, err := agent.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "k1", Command: progress})
			return err
		}, "scripted_retryable_error", true},
	}
	for _, c := range cases { // in order: the fault fires once
		wantError(t, c.call(), c.code, c.retryable)
	}
	res, err := agent.ApplyCommand(ctx, controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "k1", Command: progress})
	if err != nil || res.Disposition != "applied" {
		t.Fatalf("retry after the retryable fault: %+v, %v; want applied", res, err)
	}
}

// TestAuthFailures: 401 (no, wrong or forged token, or the agent token of a run that
// does not exist) and 403 (an agent token on a board route or another company) come
// back as *controlplane.Error unauthorized and forbidden, never retryable.
func TestAuthFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	other, err := w.board.CreateCompany(ctx, "Other", "OTH")
	if err != nil {
		t.Fatal(err)
	}
	tok := w.run.MintAgentToken(w.co.ID(), "actor-1", "run-1")
	forged := tok[:len(tok)-4] + "AAAA"
	if forged == tok {
		forged = tok[:len(tok)-4] + "BBBB"
	}
	env := controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: "a1", Command: progress}
	cases := []struct {
		name string
		call func() error
		code controlplane.Code
	}{
		{"no token", func() error { _, err := New(w.run.URL, "", nil).Companies(ctx); return err }, "unauthorized"},
		{"wrong board token", func() error { _, err := New(w.run.URL, "not-the-token", nil).Companies(ctx); return err }, "unauthorized"},
		{"forged agent token", func() error { _, err := w.agent(t, w.co.ID(), forged).Context(ctx, "run-1"); return err }, "unauthorized"},
		{"agent token on a board route", func() error { _, err := w.agent(t, w.co.ID(), tok).Snapshot(ctx); return err }, "forbidden"},
		{"agent token of a run that does not exist", func() error {
			_, err := w.agent(t, w.co.ID(), w.run.MintAgentToken(w.co.ID(), "actor-1", "run-2")).ApplyCommand(ctx, env)
			return err
		}, "unauthorized"},
		{"agent token on another company", func() error { _, err := w.agent(t, other.ID(), tok).Context(ctx, "run-1"); return err }, "forbidden"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, c.call(), c.code, false)
		})
	}
	// the same agent token is accepted where it belongs
	if _, err := w.agent(t, w.co.ID(), tok).Context(ctx, "run-1"); err != nil {
		t.Fatalf("the agent's own context: %v", err)
	}
}

// TestBodyRejections: an oversized body is 413 request_too_large naming the limit; a
// body the server cannot decode strictly (an unknown field, as from a newer client;
// trailing data) and an id the server refuses are invalid_request naming the problem.
func TestBodyRejections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	big := strings.Repeat("a", api.MaxBodyBytes+1)
	cases := []struct {
		name, code, says string
		call             func() error
	}{
		{"oversized typed body", "request_too_large", "1048576 bytes", func() error {
			_, err := w.co.CreateIssue(ctx, api.CreateIssueRequest{Title: big})
			return err
		}},
		{"oversized raw body", "request_too_large", "1048576 bytes", func() error {
			_, err := w.co.AppendEvent(ctx, json.RawMessage(`{"eventId":"`+big+`"}`))
			return err
		}},
		{"unknown field", "invalid_request", `unknown field "plan"`, func() error {
			return w.board.do(ctx, "POST", "/api/companies", map[string]string{"name": "N", "issuePrefix": "N", "plan": "pro"}, nil)
		}},
		{"trailing data", "invalid_request", "trailing data", func() error {
			return w.board.do(ctx, "POST", "/api/companies", []byte(`{"name":"N","issuePrefix":"N"} {}`), nil)
		}},
		{"wrong type", "invalid_request", "malformed request body", func() error {
			return w.board.do(ctx, "POST", w.co.prefix+"/issues", []byte(`{"title":5}`), nil)
		}},
		{"traversal in an id", "invalid_request", "not a valid id", func() error {
			_, err := w.co.Comment(ctx, "../task-1", "hi")
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			wantError(t, err, controlplane.Code(c.code), false)
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %q does not say %q", err, c.says)
			}
		})
	}
}

// TestNonAPIFailures: an answer that is not an error body (a proxy's 502 text) and a
// request that never got an answer (its context cancelled) are errors without a code,
// naming the request; the context's error stays in the chain.
func TestNonAPIFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer proxy.Close()
	_, err := New(proxy.URL, "t", nil).Companies(ctx)
	if err == nil || controlplane.CodeOf(err) != "" || !strings.Contains(err.Error(), "GET /api/companies: HTTP 502 without an error body") {
		t.Fatalf("a 502 text answer: %v, want an error without a code naming the request and status", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = New(proxy.URL, "t", nil).Companies(cancelled)
	if !errors.Is(err, context.Canceled) || controlplane.CodeOf(err) != "" || controlplane.IsRetryable(err) || !strings.Contains(err.Error(), "client: GET /api/companies") {
		t.Fatalf("a cancelled request: %v, want a transport error without a code naming the request", err)
	}
}

func ptr(s string) *string { return &s }

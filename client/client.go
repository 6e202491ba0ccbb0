// Package client speaks the control-plane HTTP API (package server, wire types in
// package api). A Client holds the base URL and a bearer token (the board token or a
// per-run agent token); Company returns a controlplane.Port for one company, so that
// conformance.Run passes unchanged over HTTP, plus the board operations. Error bodies
// {code, message, retryable} come back as *controlplane.Error.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// Client calls one control-plane server.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// New returns a client of the server at base (http://127.0.0.1:PORT) with a bearer
// token. hc nil means a client with keep-alive connections and no timeout (use
// contexts).
func New(base, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	}
	return &Client{base: base, token: token, hc: hc}
}

// do sends one request; in is JSON-encoded unless it is []byte (sent as is); out, when
// non-nil, receives the JSON response ([]byte pointer: the raw body). A non-2xx
// response returns its *controlplane.Error; transport failures return wrapped errors
// without a code.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.doWith(ctx, method, path, in, out, nil)
}

// doWith is do with write options (an Idempotency-Key header, a raw body's content
// type).
func (c *Client) doWith(ctx context.Context, method, path string, in, out any, opts []WriteOption) error {
	var body io.Reader
	if in != nil {
		b, ok := in.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(in); err != nil {
				return fmt.Errorf("client: encoding %s %s: %w", method, path, err)
			}
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("client: %s %s: reading the response: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e controlplane.Error
		if json.Unmarshal(rb, &e) != nil || e.Code == "" {
			return fmt.Errorf("client: %s %s: HTTP %d without an error body", method, path, resp.StatusCode)
		}
		return &e
	}
	if out == nil {
		return nil
	}
	if p, ok := out.(*[]byte); ok {
		*p = rb
		return nil
	}
	if err := json.Unmarshal(rb, out); err != nil {
		return fmt.Errorf("client: %s %s: decoding the response: %w", method, path, err)
	}
	return nil
}

// WriteOption sets something on a write request.
type WriteOption func(*http.Request)

// IdempotencyKey makes a board write idempotent (the Idempotency-Key header, at most
// api.MaxIdempotencyKeyBytes bytes): a replay with the same key returns the response
// the server stored (same ids); the same key with a different request is 409
// idempotency_conflict. An empty key sends no header.
func IdempotencyKey(key string) WriteOption {
	return func(r *http.Request) {
		if key != "" {
			r.Header.Set(api.IdempotencyKeyHeader, key)
		}
	}
}

func rawBody(r *http.Request) { r.Header.Set("Content-Type", "application/octet-stream") }

// CreateCompany creates a board company (bare, with its local environment).
func (c *Client) CreateCompany(ctx context.Context, name, issuePrefix string) (*Company, error) {
	var out api.Company
	if err := c.do(ctx, "POST", "/api/companies", api.CreateCompanyRequest{Name: name, IssuePrefix: issuePrefix}, &out); err != nil {
		return nil, err
	}
	co := c.Company(out.ID)
	co.localEnv = out.LocalEnvironmentID
	return co, nil
}

// CreateFixtureCompany creates a company whose state machine starts from seed (built
// locally, uploaded as its serialized state so that nil and empty lists keep their
// meaning).
func (c *Client) CreateFixtureCompany(ctx context.Context, seed controlplane.Seed) (*Company, error) {
	m, err := controlplane.NewMemory(seed)
	if err != nil {
		return nil, err
	}
	state, err := m.Serialize(ctx)
	if err != nil {
		return nil, err
	}
	var out api.Company
	if err := c.do(ctx, "POST", "/api/companies", api.CreateCompanyRequest{State: state}, &out); err != nil {
		return nil, err
	}
	return c.Company(out.ID), nil
}

// Companies lists the instance's company ids.
func (c *Client) Companies(ctx context.Context) ([]string, error) {
	var out api.CompanyList
	if err := c.do(ctx, "GET", "/api/companies", nil, &out); err != nil {
		return nil, err
	}
	ids := make([]string, len(out.Companies))
	for i, co := range out.Companies {
		ids[i] = co.ID
	}
	return ids, nil
}

// Company returns the handle of company id (no request is made).
func (c *Client) Company(id string) *Company {
	return &Company{c: c, id: id, prefix: "/api/companies/" + url.PathEscape(id)}
}

// Company is one company over HTTP; it implements controlplane.Port.
type Company struct {
	c        *Client
	id       string
	prefix   string
	localEnv string // the local environment's id, when CreateCompany was told it
}

// LocalEnvironmentID is the id of the local environment the server created the
// company with, as the creation answered it ("" for a company not created by this
// client's CreateCompany, or by a server that does not say).
func (co *Company) LocalEnvironmentID() string { return co.localEnv }

var _ controlplane.Port = (*Company)(nil)

// ID returns the instance company id.
func (co *Company) ID() string { return co.id }

// Start implements controlplane.Port.
func (co *Company) Start(ctx context.Context) error {
	return co.c.do(ctx, "POST", co.prefix+"/start", nil, nil)
}

// Stop implements controlplane.Port.
func (co *Company) Stop(ctx context.Context) error {
	return co.c.do(ctx, "POST", co.prefix+"/stop", nil, nil)
}

// OpenRun implements controlplane.Port.
func (co *Company) OpenRun(ctx context.Context, in controlplane.OpenInput) error {
	return co.c.do(ctx, "POST", co.prefix+"/checkouts", in, nil)
}

// OpenFixtureRun implements controlplane.Port.
func (co *Company) OpenFixtureRun(ctx context.Context, in controlplane.OpenInput) (controlplane.RunContext, error) {
	var out controlplane.RunContext
	err := co.c.do(ctx, "POST", co.prefix+"/runs", in, &out)
	return out, err
}

// Context implements controlplane.Port.
func (co *Company) Context(ctx context.Context, runID string) (controlplane.RunContext, error) {
	var out controlplane.RunContext
	err := co.c.do(ctx, "GET", co.prefix+"/runs/"+url.PathEscape(runID)+"/context", nil, &out)
	return out, err
}

// AppendEvent implements controlplane.Port (the event bytes are sent as they are).
func (co *Company) AppendEvent(ctx context.Context, event json.RawMessage) (controlplane.Receipt, error) {
	var out controlplane.Receipt
	err := co.c.do(ctx, "POST", co.prefix+"/events", []byte(event), &out)
	return out, err
}

// ReplayEvents implements controlplane.Port.
func (co *Company) ReplayEvents(ctx context.Context, q controlplane.ReplayQuery) (controlplane.Replay, error) {
	v := url.Values{}
	v.Set("sourceInstanceId", q.SourceInstanceID)
	v.Set("afterSourceSeq", strconv.FormatInt(q.AfterSourceSeq, 10))
	v.Set("limit", strconv.Itoa(q.Limit))
	var out controlplane.Replay
	err := co.c.do(ctx, "GET", co.prefix+"/runs/"+url.PathEscape(q.RunID)+"/events?"+v.Encode(), nil, &out)
	return out, err
}

func commandRequest(env controlplane.CommandEnvelope) api.CommandRequest {
	req := api.CommandRequest{RunID: env.RunID, IdempotencyKey: env.IdempotencyKey, ExpectedRevision: env.ExpectedRevision}
	if json.Valid(env.Command) {
		req.Command = env.Command
	} else {
		t := string(env.Command)
		req.CommandText = &t
	}
	return req
}

// ApplyCommand implements controlplane.Port.
func (co *Company) ApplyCommand(ctx context.Context, env controlplane.CommandEnvelope) (controlplane.CommandResult, error) {
	var out controlplane.CommandResult
	err := co.c.do(ctx, "POST", co.prefix+"/commands", commandRequest(env), &out)
	return out, err
}

// TryApplyCommand implements controlplane.Port.
func (co *Company) TryApplyCommand(ctx context.Context, env controlplane.CommandEnvelope) (controlplane.CommandOutcome, error) {
	var out controlplane.CommandOutcome
	err := co.c.do(ctx, "POST", co.prefix+"/commands/try", commandRequest(env), &out)
	return out, err
}

// LoadSessionCheckpoint implements controlplane.Port.
func (co *Company) LoadSessionCheckpoint(ctx context.Context) (json.RawMessage, error) {
	var out api.Checkpoint
	if err := co.c.do(ctx, "GET", co.prefix+"/session/checkpoint", nil, &out); err != nil {
		return nil, err
	}
	if len(out.Checkpoint) == 0 || string(out.Checkpoint) == "null" {
		return nil, nil
	}
	return out.Checkpoint, nil
}

// CheckpointSession implements controlplane.Port.
func (co *Company) CheckpointSession(ctx context.Context, snapshot json.RawMessage) error {
	return co.c.do(ctx, "PUT", co.prefix+"/session/checkpoint", []byte(snapshot), nil)
}

// CompleteRun implements controlplane.Port.
func (co *Company) CompleteRun(ctx context.Context, input json.RawMessage) error {
	return co.c.do(ctx, "POST", co.prefix+"/complete", []byte(input), nil)
}

// Snapshot implements controlplane.Port.
func (co *Company) Snapshot(ctx context.Context) (controlplane.State, error) {
	var out controlplane.State
	err := co.c.do(ctx, "GET", co.prefix+"/snapshot", nil, &out)
	return out, err
}

// DecisionRecords implements controlplane.Port.
func (co *Company) DecisionRecords(ctx context.Context) ([]controlplane.Decision, error) {
	var out api.DecisionList
	err := co.c.do(ctx, "GET", co.prefix+"/decisions", nil, &out)
	return out.Decisions, err
}

// Serialize implements controlplane.Port (the server's bytes, unchanged).
func (co *Company) Serialize(ctx context.Context) ([]byte, error) {
	var out []byte
	err := co.c.do(ctx, "GET", co.prefix+"/state", nil, &out)
	return out, err
}

// CreateSecret stores a secret and returns its reference.
func (co *Company) CreateSecret(ctx context.Context, req api.CreateSecretRequest) (api.SecretRef, error) {
	var out api.SecretRef
	err := co.c.do(ctx, "POST", co.prefix+"/secrets", req, &out)
	return out, err
}

func (co *Company) board(ctx context.Context, method, path string, in any, opts []WriteOption) (controlplane.BoardResult, error) {
	var out controlplane.BoardResult
	err := co.c.doWith(ctx, method, co.prefix+path, in, &out, opts)
	return out, err
}

// CreateAgent is board operation create_agent.
func (co *Company) CreateAgent(ctx context.Context, req api.CreateAgentRequest) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/agents", req, nil)
}

// CreateProject is board operation create_project.
func (co *Company) CreateProject(ctx context.Context, req api.CreateProjectRequest) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/projects", req, nil)
}

// CreateEnvironment is board operation create_environment.
func (co *Company) CreateEnvironment(ctx context.Context, req api.CreateEnvironmentRequest) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/environments", req, nil)
}

// CreateIssue is board operation create_issue.
func (co *Company) CreateIssue(ctx context.Context, req api.CreateIssueRequest) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/issues", req, nil)
}

// Comment is board operation comment on issue. A keyed (idempotent) comment, like
// every keyed board write, goes through ApplyBoard with the BoardOp's IdempotencyKey.
func (co *Company) Comment(ctx context.Context, issue, body string) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/issues/"+url.PathEscape(issue)+"/comments", api.CommentRequest{Body: body}, nil)
}

// Issues lists the company's issues (GET /issues): every task but the conversations'
// backing tasks.
func (co *Company) Issues(ctx context.Context) ([]*controlplane.Task, error) {
	var out api.IssueList
	err := co.c.do(ctx, "GET", co.prefix+"/issues", nil, &out)
	return out.Issues, err
}

// CreateConversation is board operation create_conversation; the result's id is the
// conversation's.
func (co *Company) CreateConversation(ctx context.Context, req api.CreateConversationRequest) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/conversations", req, nil)
}

// ChatMessage is board operation chat_message: a human message in conversation, or
// "/new" (a new session generation, no wake).
func (co *Company) ChatMessage(ctx context.Context, conversation, body string) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/conversations/"+url.PathEscape(conversation)+"/messages", api.ChatMessageRequest{Body: body}, nil)
}

// Conversation returns a conversation with every message and handoff.
func (co *Company) Conversation(ctx context.Context, id string) (controlplane.Conversation, error) {
	var out controlplane.Conversation
	err := co.c.do(ctx, "GET", co.prefix+"/conversations/"+url.PathEscape(id), nil, &out)
	return out, err
}

// ResolveInteraction is board operation resolve_interaction.
func (co *Company) ResolveInteraction(ctx context.Context, interaction string, req api.ResolveInteractionRequest) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/interactions/"+url.PathEscape(interaction)+"/resolve", req, nil)
}

// DecideApproval is board operation decide_approval.
func (co *Company) DecideApproval(ctx context.Context, approval string, req api.DecideApprovalRequest) (controlplane.BoardResult, error) {
	return co.board(ctx, "POST", "/approvals/"+url.PathEscape(approval)+"/decide", req, nil)
}

// Wakes lists scheduled wakes due at or before dueBy ("" for all).
func (co *Company) Wakes(ctx context.Context, dueBy string) ([]controlplane.ScheduledWake, error) {
	var out api.WakeList
	path := "/wakes"
	if dueBy != "" {
		path += "?dueBy=" + url.QueryEscape(dueBy)
	}
	err := co.c.do(ctx, "GET", co.prefix+path, nil, &out)
	return out.Wakes, err
}

// RunDocuments returns the documents of run's active task with every revision (agent
// route GET /runs/{run}/documents).
func (co *Company) RunDocuments(ctx context.Context, runID string) (api.DocumentList, error) {
	var out api.DocumentList
	err := co.c.do(ctx, "GET", co.prefix+"/runs/"+url.PathEscape(runID)+"/documents", nil, &out)
	return out, err
}

// RunCalls returns the run's agent calls as the server saw them (GET
// /api/companies/{company}/runs/{run}/calls, board token).
func (co *Company) RunCalls(ctx context.Context, runID string) (api.AgentCallList, error) {
	var out api.AgentCallList
	err := co.c.do(ctx, "GET", co.prefix+"/runs/"+url.PathEscape(runID)+"/calls", nil, &out)
	return out, err
}

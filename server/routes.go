package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/controlplane/store"
)

// idPattern bounds every id in a path: no separators, no dot segments, no traversal.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_:@+=-]{0,127}$`) })

var issuePrefixPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z][A-Z0-9]{0,9}$`) })

// route is one registered route (also the source of the OpenAPI document's paths).
type route struct {
	method, pattern string
	board           bool // board token only
	request         any  // request body type (nil: none, json.RawMessage: any JSON)
	response        any  // success body type (nil: 204)
	status          int
	summary         string
	h               func(ctx context.Context, r *http.Request, p principal) (any, error)
	more            []int // further success statuses answering the response body (h returns withStatus)
	// idempotent: the route takes an Idempotency-Key header from the board (see
	// api.IdempotencyKeyHeader); every other route, and every agent token, is refused
	// one.
	idempotent bool
}

// rawBytes marks a route's request or response body as raw bytes
// (application/octet-stream) instead of JSON: an upload's body is read whole, bounded by
// api.MaxFileBytes instead of api.MaxBodyBytes and not checked as JSON text; a download
// handler returns a download, served with Range support.
type rawBytes struct{}

// completePattern is the completion route's pattern.
const completePattern = "/api/companies/{company}/complete"

// afterRunEnd reports whether rt also accepts the agent token of a run that ended:
// only the completion, so that an agent can retry a completion whose acknowledgement
// was lost (the handler then accepts only an identical retry).
func (rt route) afterRunEnd() bool {
	return rt.method == http.MethodPost && rt.pattern == completePattern
}

func (s *Server) table() []route {
	boardOp := func(kind controlplane.BoardKind, newReq func() any) func(ctx context.Context, r *http.Request, p principal) (any, error) {
		return s.board(kind, newReq)
	}
	return []route{
		{method: "POST", pattern: "/api/companies", board: true, request: api.CreateCompanyRequest{}, response: api.Company{}, status: 201, summary: "create a company", h: s.createCompany},
		{method: "GET", pattern: "/api/companies", board: true, response: api.CompanyList{}, status: 200, summary: "list companies", h: s.listCompanies},
		{method: "POST", pattern: "/api/companies/{company}/secrets", board: true, request: api.CreateSecretRequest{}, response: api.SecretRef{}, status: 201, summary: "store a secret (the value is never returned)", h: s.createSecret},
		{method: "POST", pattern: "/api/companies/{company}/start", board: true, status: 204, summary: "start the company's control plane", h: s.inCompany(s.start)},
		{method: "POST", pattern: "/api/companies/{company}/stop", board: true, status: 204, summary: "stop the company's control plane", h: s.inCompany(s.stop)},
		{method: "POST", pattern: "/api/companies/{company}/agents", board: true, request: api.CreateAgentRequest{}, response: api.BoardResult{}, status: 201, summary: "create an agent", idempotent: true,
			h: boardOp(controlplane.BoardCreateAgent, func() any { return &api.CreateAgentRequest{} })},
		{method: "POST", pattern: "/api/companies/{company}/projects", board: true, request: api.CreateProjectRequest{}, response: api.BoardResult{}, status: 201, summary: "create a project", idempotent: true,
			h: boardOp(controlplane.BoardCreateProject, func() any { return &api.CreateProjectRequest{} })},
		{method: "POST", pattern: "/api/companies/{company}/environments", board: true, request: api.CreateEnvironmentRequest{}, response: api.BoardResult{}, status: 201, summary: "create an environment", idempotent: true,
			h: boardOp(controlplane.BoardCreateEnvironment, func() any { return &api.CreateEnvironmentRequest{} })},
		{method: "POST", pattern: "/api/companies/{company}/issues", board: true, request: api.CreateIssueRequest{}, response: api.BoardResult{}, status: 201, summary: "create an issue", idempotent: true,
			h: boardOp(controlplane.BoardCreateIssue, func() any { return &api.CreateIssueRequest{} })},
		{method: "POST", pattern: "/api/companies/{company}/issues/{issue}/comments", board: true, request: api.CommentRequest{}, response: api.BoardResult{}, status: 201, summary: "comment on an issue", idempotent: true,
			h: boardOp(controlplane.BoardComment, func() any { return &api.CommentRequest{} })},
		{method: "GET", pattern: "/api/companies/{company}/issues", board: true, response: api.IssueList{}, status: 200,
			summary: "list the issues: every task but the conversations' backing tasks", h: s.listIssues},
		{method: "POST", pattern: "/api/companies/{company}/conversations", board: true, request: api.CreateConversationRequest{}, response: api.BoardResult{}, status: 201,
			summary: "start an agent chat (its backing task is no issue); a body is the first message and wakes the agent", idempotent: true,
			h: boardOp(controlplane.BoardCreateConversation, func() any { return &api.CreateConversationRequest{} })},
		{method: "POST", pattern: "/api/companies/{company}/conversations/{conversation}/messages", board: true, request: api.ChatMessageRequest{}, response: api.BoardResult{}, status: 201,
			summary: "post a human chat message (wakes the agent); \"/new\" starts a new session generation and wakes nobody", idempotent: true,
			h: boardOp(controlplane.BoardChatMessage, func() any { return &api.ChatMessageRequest{} })},
		{method: "GET", pattern: "/api/companies/{company}/conversations/{conversation}", board: true, response: controlplane.Conversation{}, status: 200,
			summary: "a conversation: its generation, every message and every handoff", h: s.getConversation},
		{method: "POST", pattern: "/api/companies/{company}/interactions/{interaction}/resolve", board: true, request: api.ResolveInteractionRequest{}, response: api.BoardResult{}, status: 200, summary: "resolve an interaction", idempotent: true,
			h: boardOp(controlplane.BoardResolveInteraction, func() any { return &api.ResolveInteractionRequest{} })},
		{method: "POST", pattern: "/api/companies/{company}/approvals/{approval}/decide", board: true, request: api.DecideApprovalRequest{}, response: api.BoardResult{}, status: 200, summary: "decide an approval", idempotent: true,
			h: boardOp(controlplane.BoardDecideApproval, func() any { return &api.DecideApprovalRequest{} })},
		{method: "POST", pattern: "/api/companies/{company}/runs/{run}/retry", board: true, response: api.BoardResult{}, status: 201,
			summary: "Retry a failed or interrupted run: its task returns to todo and its agent gets a retry wake (payload retryOf); the result's id is the wake", idempotent: true,
			h: s.inCompany(s.retryRun)},
		{method: "POST", pattern: "/api/companies/{company}/blobs", request: rawBytes{}, response: api.BlobRef{}, status: 201,
			summary: "upload bytes (at most " + strconv.Itoa(api.MaxFileBytes) + "), stored by their SHA-256; board or agent token", idempotent: true, h: s.inCompany(s.uploadBlob)},
		{method: "GET", pattern: "/api/companies/{company}/blobs/{sha256}", response: rawBytes{}, status: 200, more: []int{206},
			summary: "download stored bytes by SHA-256 (Range requests; an agent only those of the files and artifacts it may read)", h: s.inCompany(s.downloadBlob)},
		{method: "PUT", pattern: "/api/companies/{company}/files", board: true, request: api.PutFileRequest{}, response: api.BoardResult{}, status: 200,
			summary: "write a managed file (scope company or agent_home) to an uploaded blob; expectedSha256 guards a lost update", idempotent: true,
			h: boardOp(controlplane.BoardPutFile, func() any { return &api.PutFileRequest{} })},
		{method: "GET", pattern: "/api/companies/{company}/files", response: api.FileList{}, status: 200,
			summary: "list managed files (query scope, owner); an agent sees the company's files and its own home", h: s.inCompany(s.listFiles)},
		{method: "GET", pattern: "/api/companies/{company}/files/{file}/content", response: rawBytes{}, status: 200, more: []int{206},
			summary: "download a managed file (Range requests)", h: s.fileContent},
		{method: "GET", pattern: "/api/companies/{company}/artifacts/{artifact}/content", response: rawBytes{}, status: 200, more: []int{206},
			summary: "download an artifact's bytes (Range requests; an agent only its own task's)", h: s.artifactContent},
		{method: "GET", pattern: "/api/companies/{company}/home-receipts", board: true, response: api.HomeReceiptList{}, status: 200,
			summary: "list agent home save receipts (query actor, run)", h: s.inCompany(s.homeReceipts)},
		{method: "GET", pattern: "/api/companies/{company}/file-conflicts", board: true, response: api.FileConflictList{}, status: 200,
			summary: "list agent home file conflicts (query actor, status)", h: s.fileConflicts},
		{method: "POST", pattern: "/api/companies/{company}/file-conflicts/{conflict}/resolve", board: true, request: api.ResolveFileConflictRequest{}, response: api.BoardResult{}, status: 200,
			summary: "resolve a home file conflict against the reviewed current SHA-256 (409 file_conflict_stale when it changed)", idempotent: true,
			h: boardOp(controlplane.BoardResolveFileConflict, func() any { return &api.ResolveFileConflictRequest{} })},
		{method: "GET", pattern: "/api/companies/{company}/wakes", board: true, response: api.WakeList{}, status: 200, summary: "list scheduled wakes (query dueBy)", h: s.listWakes},
		{method: "GET", pattern: "/api/companies/{company}/runs/{run}/calls", board: true, response: api.AgentCallList{}, status: 200,
			summary: "the run's agent calls as the server saw them, in order (discovery reads, commands, uploads, protocol); kept in the serving process only", h: s.inCompany(s.runCalls)},
		{method: "GET", pattern: "/api/companies/{company}/decisions", board: true, response: api.DecisionList{}, status: 200, summary: "list decision records", h: s.inCompany(s.decisions)},
		{method: "GET", pattern: "/api/changes", board: true, response: api.Changes{}, status: 200,
			summary: "the instance's change sequence number; with after and waitMs (at most " + strconv.Itoa(api.MaxChangesWaitMs) + ") it answers once the number is above after or the wait passed (long-poll)", h: s.changes},
		{method: "GET", pattern: "/api/companies/{company}/state", board: true, response: json.RawMessage{}, status: 200, summary: "the serialized state (canonical JSON)", h: s.inCompany(s.state)},
		{method: "GET", pattern: "/api/companies/{company}/snapshot", board: true, response: json.RawMessage{}, status: 200, summary: "the state as a JSON object", h: s.inCompany(s.snapshot)},
		{method: "POST", pattern: "/api/companies/{company}/runs", board: true, request: controlplane.OpenInput{}, response: controlplane.RunContext{}, status: 201, summary: "open (check out) a run; returns its context", h: s.inCompany(s.openRun)},
		{method: "POST", pattern: "/api/companies/{company}/checkouts", board: true, request: controlplane.OpenInput{}, status: 204, summary: "open (check out) a run without reading its context", h: s.inCompany(s.checkout)},
		{method: "GET", pattern: "/api/companies/{company}/runs/{run}/context", response: controlplane.RunContext{}, status: 200, summary: "a run's context", h: s.inCompany(s.runContext)},
		{method: "GET", pattern: "/api/companies/{company}/runs/{run}/documents", response: api.DocumentList{}, status: 200, summary: "the documents of the run's active task, every revision", h: s.inCompany(s.runDocuments)},
		{method: "GET", pattern: "/api/companies/{company}/runs/{run}/events", response: controlplane.Replay{}, status: 200, summary: "replay PRP events (query sourceInstanceId, afterSourceSeq, limit)", h: s.inCompany(s.replay)},
		{method: "POST", pattern: "/api/companies/{company}/events", request: json.RawMessage{}, response: controlplane.Receipt{}, status: 200, summary: "append a PRP or native run event", h: s.inCompany(s.appendEvent)},
		{method: "POST", pattern: "/api/companies/{company}/commands", request: api.CommandRequest{}, response: controlplane.CommandResult{}, status: 200, summary: "apply a semantic command", h: s.applyCommand},
		{method: "POST", pattern: "/api/companies/{company}/commands/try", request: api.CommandRequest{}, response: controlplane.CommandOutcome{}, status: 200, summary: "apply a semantic command; state-machine errors folded into the outcome", h: s.tryCommand},
		{method: "POST", pattern: completePattern, request: json.RawMessage{}, status: 204, summary: "complete a run (after the run ended, its agent token is accepted only for an identical retry of the completion)", h: s.inCompany(s.complete)},
		{method: "GET", pattern: "/api/companies/{company}/session/checkpoint", response: api.Checkpoint{}, status: 200, summary: "the active run's session checkpoint", h: s.inCompany(s.loadCheckpoint)},
		{method: "PUT", pattern: "/api/companies/{company}/session/checkpoint", request: json.RawMessage{}, status: 204, summary: "store the active run's session checkpoint", h: s.inCompany(s.checkpoint)},
	}
}

// serveMux is an http.ServeMux that records every pattern registered on it, so that a
// test can check that every served route is in the OpenAPI document, and that bounds
// the reading of every request's body (bodyTimeout, from the moment the mux receives
// the request). Every mux of this package is one.
type serveMux struct {
	*http.ServeMux
	patterns    []string
	bodyTimeout time.Duration
}

func newServeMux(bodyTimeout time.Duration) *serveMux {
	return &serveMux{ServeMux: http.NewServeMux(), bodyTimeout: bodyTimeout}
}

// ServeHTTP sets the body deadline (setBodyDeadline), then routes the request.
func (m *serveMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setBodyDeadline(w, m.bodyTimeout)
	m.ServeMux.ServeHTTP(w, r)
}

// Handle registers h for pattern (http.ServeMux.Handle) and records pattern.
func (m *serveMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

// HandleFunc registers h for pattern (http.ServeMux.HandleFunc) and records pattern.
func (m *serveMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// handleOpenAPI serves GET /openapi.json: the document of routes, which must be every
// route mux serves besides the document itself and the catch-all.
// The document is built on its first request, not when the server starts: most
// instances (an attempt's) are never asked for it, and building it is a large part
// of a start.
func handleOpenAPI(mux *serveMux, routes []route) {
	doc := sync.OnceValue(func() []byte { return openAPI(routes) })
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc())
	})
}

// routes is the API handler. A request to no route is authenticated first: without a
// valid token it is 401 unauthorized, like every route but /openapi.json (which is
// public), so that the route table answers only to callers holding a token; with one
// it is 404 not_found.
func (s *Server) routes() http.Handler {
	mux := newServeMux(s.bodyTimeout)
	for _, rt := range s.table() {
		mux.HandleFunc(rt.method+" "+rt.pattern, s.wrap(rt))
	}
	handleOpenAPI(mux, s.table())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.authenticate(r); err != nil {
			writeError(w, err)
			return
		}
		writeError(w, &controlplane.Error{Code: controlplane.CodeNotFound, Message: "no route " + r.Method + " " + r.URL.Path})
	})
	return mux
}

// wrap serves rt: authentication (an agent token only while its run runs; after the
// run ended, only rt.afterRunEnd routes accept it), path ids, the body (read whole
// within the body deadline, then checkJSONText), the handler and its response.
func (s *Server) wrap(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body []byte // the request body once read (an agent call's command kind)
		p, err := s.authenticate(r)
		if err != nil {
			writeError(w, err)
			return
		}
		if err := checkPathIDs(r); err != nil {
			writeError(w, err)
			return
		}
		if !p.board {
			if rt.board {
				writeError(w, errForbidden("this route needs the board token"))
				return
			}
			if c := r.PathValue("company"); c != p.agent.Company {
				writeError(w, errForbidden("the agent token belongs to another company"))
				return
			}
			// Every request of the run's token from here on is one of its agent calls
			// (calls.go), answered or refused.
			rec := &statusRecorder{ResponseWriter: w}
			w = rec
			defer func() {
				tool, class := callTool(rt, body)
				s.calls.record(p.agent.Company, p.agent.Run, tool, class, cmp.Or(rec.status, http.StatusOK))
			}()
			if p, err = s.runLive(r.Context(), p); err != nil {
				writeError(w, err)
				return
			}
			if p.ended != "" && !rt.afterRunEnd() {
				writeError(w, errRunEnded(p))
				return
			}
		}
		if err := checkIdempotencyKey(r, rt, p); err != nil {
			writeError(w, err)
			return
		}
		if body, err = readRouteBody(w, r, rt); err != nil {
			writeError(w, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		out, err := rt.h(r.Context(), r, p)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.feed.bump() // what it changed is in memory now: wake the change waits
		}
		if err != nil {
			writeError(w, err)
			return
		}
		respond(w, r, rt, out)
	}
}

// checkPathIDs checks the ids in r's path (company, run, issue, interaction,
// approval, file, artifact, conflict, sha256): each one given must be a valid id.
// The error is an invalid-input error naming the first bad one.
func checkPathIDs(r *http.Request) error {
	for _, name := range []string{"company", "run", "issue", "interaction", "approval", "file", "artifact", "conflict", "sha256"} {
		if v := r.PathValue(name); v != "" && !idPattern().MatchString(v) {
			return invalid(fmt.Sprintf("%s id %q is not a valid id", name, v))
		}
	}
	return nil
}

// readRouteBody reads r's body whole, within the body deadline: at most
// api.MaxFileBytes for a route that takes raw bytes, else api.MaxBodyBytes of JSON
// text that checkJSONText accepts. Errors are readRequestBody's or checkJSONText's.
func readRouteBody(w http.ResponseWriter, r *http.Request, rt route) ([]byte, error) {
	_, raw := rt.request.(rawBytes)
	limit := int64(api.MaxBodyBytes)
	if raw {
		limit = api.MaxFileBytes
	}
	body, err := readRequestBody(w, r, limit)
	if err == nil && len(body) > 0 && !raw {
		err = checkJSONText(body)
	}
	return body, err
}

// respond writes handler result out for rt: a download is served as one, a route
// with no response answers 204, and otherwise out (or a withStatus's body with its
// status, instead of the route's) is written as JSON (a rawBody as it is).
func respond(w http.ResponseWriter, r *http.Request, rt route, out any) {
	if d, ok := out.(download); ok {
		serveDownload(w, r, d)
		return
	}
	if rt.response == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	status := rt.status
	if ws, ok := out.(withStatus); ok {
		status, out = ws.status, ws.body
	}
	if b, ok := out.(rawBody); ok {
		w.WriteHeader(status)
		w.Write(b)
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeError(w, fmt.Errorf("server: encoding the response: %w", err))
		return
	}
	w.WriteHeader(status)
	w.Write(b)
}

// rawBody is a response already encoded as JSON.
type rawBody []byte

// withStatus is a response body answered with one of its route's more statuses
// instead of the route's status.
type withStatus struct {
	status int
	body   any
}

func invalid(msg string) error {
	return &controlplane.Error{Code: controlplane.CodeInvalidRequest, Message: msg}
}

// StatusOf maps an error to its HTTP status by its code's class (controlplane.Class):
// 400 invalid input, 401/403 auth, 404 missing, 408 a body too slow, 409 conflicts, 413
// too large, 503 retryable faults and store unavailability, 500 internal errors and
// errors without a code, 422 other state-machine refusals.
func StatusOf(err error) int {
	var e *controlplane.Error
	if !errors.As(err, &e) {
		return http.StatusInternalServerError
	}
	if e.Retryable {
		return http.StatusServiceUnavailable
	}
	return classStatus[e.Code.Class()]
}

// classStatus is the HTTP status of each code class.
var classStatus = map[controlplane.Class]int{
	controlplane.ClassRefused:      http.StatusUnprocessableEntity,
	controlplane.ClassInvalid:      http.StatusBadRequest,
	controlplane.ClassUnauthorized: http.StatusUnauthorized,
	controlplane.ClassForbidden:    http.StatusForbidden,
	controlplane.ClassMissing:      http.StatusNotFound,
	controlplane.ClassConflict:     http.StatusConflict,
	controlplane.ClassTooLarge:     http.StatusRequestEntityTooLarge,
	controlplane.ClassTimeout:      http.StatusRequestTimeout,
	controlplane.ClassUnavailable:  http.StatusServiceUnavailable,
	controlplane.ClassInternal:     http.StatusInternalServerError,
}

func writeError(w http.ResponseWriter, err error) {
	var e *controlplane.Error
	if !errors.As(err, &e) {
		e = &controlplane.Error{Code: controlplane.CodeInternalError, Message: "internal error"}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(StatusOf(e))
	b, _ := json.Marshal(e)
	w.Write(b)
}

// readBody returns the body wrap read and checked (readRequestBody, checkJSONText).
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, invalid("reading the request body: " + err.Error())
	}
	return b, nil
}

// DecodeStrict decodes one JSON object from b into v, rejecting unknown fields, wrong
// types and trailing data with an invalid_request *Error.
func DecodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("malformed request body: " + err.Error())
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("malformed request body: trailing data after the JSON object")
	}
	return nil
}

func decodeBody(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	return DecodeStrict(b, v)
}

func (s *Server) pathCompany(r *http.Request) (*store.Company, error) {
	return s.company(r.PathValue("company"))
}

// companyHandler answers a route of one company, the path's.
type companyHandler func(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error)

// inCompany is the preamble of every route under /api/companies/{company}: it resolves
// the path's company (an error when this server does not serve it), then runs h.
func (s *Server) inCompany(h companyHandler) func(ctx context.Context, r *http.Request, p principal) (any, error) {
	return func(ctx context.Context, r *http.Request, p principal) (any, error) {
		c, err := s.pathCompany(r)
		if err != nil {
			return nil, err
		}
		return h(ctx, r, p, c)
	}
}

// pathState answers the path's company and a snapshot of its state (the
// preamble of every read-only route over the company's state).
func (s *Server) pathState(ctx context.Context, r *http.Request) (*store.Company, controlplane.State, error) {
	c, err := s.pathCompany(r)
	if err != nil {
		return nil, controlplane.State{}, err
	}
	st, err := c.Snapshot(ctx)
	if err != nil {
		return nil, controlplane.State{}, err
	}
	return c, st, nil
}

// ---- board handlers ----

func (s *Server) createCompany(ctx context.Context, r *http.Request, _ principal) (any, error) {
	var req api.CreateCompanyRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if len(req.State) > 0 {
		if req.Name != "" || req.IssuePrefix != "" {
			return nil, invalid("state excludes name and issuePrefix")
		}
		id, err := s.inst.CreateCompany(ctx, req.State)
		if err != nil {
			return nil, err
		}
		return api.Company{ID: id}, nil
	}
	var problems []string
	if strings.TrimSpace(req.Name) == "" {
		problems = append(problems, "name is required")
	}
	if !issuePrefixPattern().MatchString(req.IssuePrefix) {
		problems = append(problems, "issuePrefix must be 1-10 upper-case letters or digits, starting with a letter")
	}
	if len(problems) > 0 {
		return nil, invalid(strings.Join(problems, "; "))
	}
	id, err := s.inst.CreateBoardCompany(ctx, req.Name, req.IssuePrefix)
	if err != nil {
		return nil, err
	}
	c := s.inst.Company(id)
	env, err := c.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardCreateEnvironment,
		Input: json.RawMessage(`{"kind":"local","name":"local"}`)})
	if err != nil {
		return nil, fmt.Errorf("server: creating the local environment: %w", err)
	}
	return api.Company{ID: id, LocalEnvironmentID: env.ID}, nil
}

func (s *Server) listCompanies(context.Context, *http.Request, principal) (any, error) {
	out := api.CompanyList{Companies: []api.Company{}}
	for _, id := range s.inst.Companies() {
		out.Companies = append(out.Companies, api.Company{ID: id})
	}
	return out, nil
}

func (s *Server) createSecret(ctx context.Context, r *http.Request, _ principal) (any, error) {
	var req api.CreateSecretRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	return s.PutSecret(ctx, r.PathValue("company"), req)
}

func (s *Server) start(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	return nil, c.Start(ctx)
}

func (s *Server) stop(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	return nil, c.Stop(ctx)
}

// board decodes a typed request, checks secret references, adds the path ids and
// applies the board operation.
func (s *Server) board(kind controlplane.BoardKind, newReq func() any) func(ctx context.Context, r *http.Request, p principal) (any, error) {
	return func(ctx context.Context, r *http.Request, _ principal) (any, error) {
		c, err := s.pathCompany(r)
		if err != nil {
			return nil, err
		}
		req := newReq()
		raw, err := readBody(r)
		if err != nil {
			return nil, err
		}
		if err := DecodeStrict(raw, req); err != nil {
			return nil, err
		}
		var input any = req
		switch v := req.(type) {
		case *api.CreateIssueRequest:
			// title is required and may be "" (an untitled task the agent names)
			var present struct {
				Title *string `json:"title"`
			}
			if json.Unmarshal(raw, &present) == nil && present.Title == nil {
				return nil, &controlplane.Error{Code: controlplane.CodeBoardInputInvalid, Message: "issue title is required (\"\" for an untitled task the agent names)"}
			}
		case *api.CreateAgentRequest:
			if err := s.checkSecretRefs(ctx, c.ID(), v.AdapterConfig); err != nil {
				return nil, err
			}
		case *api.CreateEnvironmentRequest:
			if err := s.checkSecretRefs(ctx, c.ID(), v.Config); err != nil {
				return nil, err
			}
		case *api.CommentRequest:
			input = map[string]any{"issueId": r.PathValue("issue"), "body": v.Body}
		case *api.ChatMessageRequest:
			input = map[string]any{"conversationId": r.PathValue("conversation"), "body": v.Body}
		case *api.ResolveInteractionRequest:
			input = map[string]any{"interactionId": r.PathValue("interaction"), "outcome": v.Outcome, "result": v.Result}
		case *api.DecideApprovalRequest:
			input = map[string]any{"approvalId": r.PathValue("approval"), "decision": v.Decision, "note": v.Note}
		case *api.ResolveFileConflictRequest:
			input = map[string]any{"conflictId": r.PathValue("conflict"), "resolution": v.Resolution, "currentSha256": v.CurrentSHA256}
		}
		b, err := json.Marshal(input)
		if err != nil {
			return nil, invalid(err.Error())
		}
		return c.ApplyBoard(ctx, controlplane.BoardOp{Kind: kind, Input: b, IdempotencyKey: idempotencyKey(r)})
	}
}

func (s *Server) listWakes(ctx context.Context, r *http.Request, _ principal) (any, error) {
	dueBy, err := stateTime("dueBy", r.URL.Query().Get("dueBy"))
	if err != nil {
		return nil, err
	}
	ws, err := s.DueWakes(ctx, r.PathValue("company"), dueBy)
	if err != nil {
		return nil, err
	}
	return api.WakeList{Wakes: ws}, nil
}

// runCalls answers the run's agent-call ledger (calls.go).
func (s *Server) runCalls(_ context.Context, r *http.Request, _ principal, _ *store.Company) (any, error) {
	return s.calls.list(r.PathValue("company"), r.PathValue("run")), nil
}

func (s *Server) decisions(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	ds, err := c.DecisionRecords(ctx)
	if err != nil {
		return nil, err
	}
	return api.DecisionList{Decisions: ds}, nil
}

func (s *Server) state(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	b, err := c.Serialize(ctx)
	return rawBody(b), err
}

// listIssues answers the issue list (controlplane.Issues of the company's state).
func (s *Server) listIssues(ctx context.Context, r *http.Request, _ principal) (any, error) {
	_, st, err := s.pathState(ctx, r)
	if err != nil {
		return nil, err
	}
	return api.IssueList{Issues: controlplane.Issues(st)}, nil
}

// getConversation answers one conversation (conversation_missing when unknown).
func (s *Server) getConversation(ctx context.Context, r *http.Request, _ principal) (any, error) {
	_, st, err := s.pathState(ctx, r)
	if err != nil {
		return nil, err
	}
	cv := controlplane.ConversationOf(st, r.PathValue("conversation"))
	if cv == nil {
		return nil, &controlplane.Error{Code: controlplane.CodeConversationMissing, Message: "conversation " + r.PathValue("conversation") + " does not exist"}
	}
	return cv, nil
}

func (s *Server) snapshot(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	b, err := c.SnapshotJSON(ctx)
	if err != nil {
		return nil, err
	}
	return rawBody(b), nil
}

func (s *Server) openRun(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	var in controlplane.OpenInput
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	return c.OpenFixtureRun(ctx, in)
}

func (s *Server) checkout(ctx context.Context, r *http.Request, _ principal, c *store.Company) (any, error) {
	var in controlplane.OpenInput
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	return nil, c.OpenRun(ctx, in)
}

// ---- agent handlers ----

// agentRun checks that p may act on run (the board may act on any).
func (s *Server) agentRun(ctx context.Context, c *store.Company, p principal, run string) error {
	if p.board {
		return nil
	}
	if err := p.mayAct(c.ID(), run); err != nil {
		return err
	}
	actor, _, err := c.RunActor(ctx, run)
	if err != nil {
		return err
	}
	if actor != p.agent.Actor {
		return errForbidden("the agent token belongs to another actor")
	}
	return nil
}

// activeRunFor checks an agent's token against the company's active run.
func (s *Server) activeRunFor(ctx context.Context, c *store.Company, p principal) error {
	if p.board {
		return nil
	}
	run, ok, err := c.ActiveRun(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return errForbidden("there is no active run for this agent token")
	}
	return s.agentRun(ctx, c, p, run)
}

func (s *Server) runContext(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error) {
	if err := s.agentRun(ctx, c, p, r.PathValue("run")); err != nil {
		return nil, err
	}
	return c.Context(ctx, r.PathValue("run"))
}

// runDocuments lists the documents of run's active task (the read side of write_document
// for agents, which may not read the snapshot), in creation order.
func (s *Server) runDocuments(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error) {
	run := r.PathValue("run")
	if err := s.agentRun(ctx, c, p, run); err != nil {
		return nil, err
	}
	rc, err := c.Context(ctx, run)
	if err != nil {
		return nil, err
	}
	st, err := c.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := api.DocumentList{TaskID: rc.ActiveTask.ID, Documents: []*controlplane.Document{}}
	for _, d := range st.Documents {
		if d.TaskID == rc.ActiveTask.ID {
			out.Documents = append(out.Documents, d)
		}
	}
	return out, nil
}

func (s *Server) replay(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error) {
	run := r.PathValue("run")
	if err := s.agentRun(ctx, c, p, run); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	rq := controlplane.ReplayQuery{RunID: run, SourceInstanceID: q.Get("sourceInstanceId")}
	if v := q.Get("afterSourceSeq"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, invalid("afterSourceSeq must be an integer")
		}
		rq.AfterSourceSeq = n
	}
	rq.Limit = math.MaxInt32 // absent: every event
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, invalid("limit must be an integer")
		}
		rq.Limit = n
	}
	return c.ReplayEvents(ctx, rq)
}

// runOf returns the runId member of a JSON object body ("" when absent or not JSON).
func runOf(b []byte) string {
	var h struct {
		RunID string `json:"runId"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.RunID
}

func (s *Server) appendEvent(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error) {
	b, err := keyedBody(r, "eventId", "sourceEventId")
	if err != nil {
		return nil, err
	}
	if !p.board {
		if err := s.agentRun(ctx, c, p, runOf(b)); err != nil {
			return nil, err
		}
	}
	return c.AppendEvent(ctx, b)
}

func (s *Server) envelope(ctx context.Context, r *http.Request, p principal) (*store.Company, controlplane.CommandEnvelope, error) {
	c, err := s.pathCompany(r)
	if err != nil {
		return nil, controlplane.CommandEnvelope{}, err
	}
	var req api.CommandRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, controlplane.CommandEnvelope{}, err
	}
	if err := checkKeyLength("idempotencyKey", req.IdempotencyKey); err != nil {
		return nil, controlplane.CommandEnvelope{}, err
	}
	env := controlplane.CommandEnvelope{RunID: req.RunID, IdempotencyKey: req.IdempotencyKey, ExpectedRevision: req.ExpectedRevision, Command: req.Command}
	if req.CommandText != nil {
		if req.Command != nil {
			return nil, env, invalid("command and commandText are exclusive")
		}
		env.Command = json.RawMessage(*req.CommandText)
	}
	if err := s.agentRun(ctx, c, p, req.RunID); err != nil {
		return nil, env, err
	}
	if err := controlplane.CheckRecordNames(env.Command); err != nil {
		return nil, env, err
	}
	return c, env, nil
}

func (s *Server) applyCommand(ctx context.Context, r *http.Request, p principal) (any, error) {
	c, env, err := s.envelope(ctx, r, p)
	if err != nil {
		return nil, err
	}
	return c.ApplyCommand(ctx, env)
}

func (s *Server) tryCommand(ctx context.Context, r *http.Request, p principal) (any, error) {
	c, env, err := s.envelope(ctx, r, p)
	if err != nil {
		return nil, err
	}
	return c.TryApplyCommand(ctx, env)
}

func (s *Server) complete(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error) {
	b, err := keyedBody(r, "callerDedupeKey", "callerResultId")
	if err != nil {
		return nil, err
	}
	if !p.board {
		if run := runOf(b); run != "" {
			err = s.agentRun(ctx, c, p, run)
		} else {
			err = s.activeRunFor(ctx, c, p)
		}
	}
	if err == nil {
		err = c.CompleteRun(ctx, b)
	}
	if err != nil && p.ended != "" {
		// After the run ended, its token serves only an identical retry of its own
		// completion (the state machine answers it as a duplicate).
		return nil, errRunEnded(p)
	}
	return nil, err
}

func (s *Server) loadCheckpoint(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error) {
	if err := s.activeRunFor(ctx, c, p); err != nil {
		return nil, err
	}
	cp, err := c.LoadSessionCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	return api.Checkpoint{Checkpoint: cp}, nil
}

func (s *Server) checkpoint(ctx context.Context, r *http.Request, p principal, c *store.Company) (any, error) {
	if err := s.activeRunFor(ctx, c, p); err != nil {
		return nil, err
	}
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return nil, c.CheckpointSession(ctx, b)
}

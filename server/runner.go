package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server/heartbeat"
)

// RunnerOptions configure the heartbeat runner of Serve. Executable is the
// absolute path of the agentproof binary the built-in and fixture drivers run (""
// means os.Executable()); MaxConcurrent and PollInterval are heartbeat.Config's.
type RunnerOptions struct {
	Executable    string
	MaxConcurrent int
	PollInterval  time.Duration
	// ProcessMarker is heartbeat.Config's: an extra marker every agent process carries.
	ProcessMarker string
	// KnownDigests is heartbeat.Config's: executable digests the caller observed.
	KnownDigests []api.KnownDigest
	// ExecutableDigest is heartbeat.Config's: Executable's digest, still being made
	// when the instance starts (nil: none).
	ExecutableDigest func() (api.KnownDigest, bool)
	// PiTools is heartbeat.Config's: the semantic tools of rpc:pi runs.
	PiTools []agent.PiTool
}

// HeartbeatDir is the directory of heartbeat run records inside the instance home.
const HeartbeatDir = "heartbeat"

// Serving is a Running server with its heartbeat runner.
type Serving struct {
	*Running
	Runner *heartbeat.Runner
}

// Serve opens the instance, listens on addr and serves the HTTP API plus the heartbeat
// routes (Stop API, run records), with the heartbeat runner taking wakes (package
// heartbeat). Errors: Open's, a listen failure, runner recovery failures.
func Serve(ctx context.Context, opts Options, addr string, ro RunnerOptions) (*Serving, error) {
	home, err := filepath.Abs(opts.Home)
	if err != nil {
		return nil, fmt.Errorf("server: home: %w", err)
	}
	opts.Home = home
	exe := ro.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("server: locating the agentproof executable: %w", err)
		}
	}
	s, ln, err := listen(ctx, opts, addr)
	if err != nil {
		return nil, err
	}
	url := "http://" + ln.Addr().String()
	rn, err := heartbeat.New(runnerHost{s: s, url: url}, heartbeat.Config{Dir: filepath.Join(home, HeartbeatDir), Home: home,
		Executable: exe, MaxConcurrent: ro.MaxConcurrent, PollInterval: ro.PollInterval, ProcessMarker: ro.ProcessMarker, KnownDigests: ro.KnownDigests, ExecutableDigest: ro.ExecutableDigest, OnChange: s.NoteChange, PiTools: ro.PiTools, Ephemeral: opts.Ephemeral})
	if err != nil {
		ln.Close()
		s.Close()
		return nil, err
	}
	r := serve(s, ln, s.heartbeatHandler(rn))
	if err := rn.Start(ctx); err != nil {
		r.Shutdown(context.Background())
		return nil, err
	}
	return &Serving{Running: r, Runner: rn}, nil
}

// Shutdown stops the runner first (its agent processes are stopped and their runs
// completed while the store is still open), then the HTTP server and the store.
func (sv *Serving) Shutdown(ctx context.Context) error {
	err := sv.Runner.Shutdown(ctx)
	if serr := sv.Running.Shutdown(ctx); err == nil {
		err = serr
	}
	return err
}

// runnerHost adapts a Server to heartbeat.Host.
type runnerHost struct {
	s   *Server
	url string
}

func (h runnerHost) Companies() []string { return h.s.inst.Companies() }

func (h runnerHost) Company(id string) (heartbeat.Company, bool) {
	c := h.s.inst.Company(id)
	if c == nil {
		return nil, false
	}
	return c, true
}

func (h runnerHost) MintAgentToken(company, actor, run string) string {
	return h.s.MintAgentToken(company, actor, run)
}

func (h runnerHost) ResolveSecret(ctx context.Context, company string, ref api.SecretRef) (string, error) {
	return h.s.ResolveSecret(ctx, company, ref)
}

func (h runnerHost) AgentAPIURL(company string) string { return h.url + "/api/companies/" + company }

// heartbeatTable is the heartbeat routes of rn (board token only; also in the OpenAPI
// document Serve serves):
//
//	POST /api/heartbeat-runs/{run}/cancel        Stop (body api.CancelRunRequest, optional)
//	POST /api/heartbeat-runs/{run}/steer         Steer a running session turn: Pi, Codex's app-server (body api.SteerRunRequest)
//	GET  /api/heartbeat-runs/{run}               the run's api.HeartbeatRun
//	GET  /api/companies/{company}/heartbeat-runs  api.HeartbeatRunList
//	GET  /api/companies/{company}/permissions     api.PermissionList (?taskId= filters)
//	POST /api/companies/{company}/permissions/{permission}/decision
//	                                              the human's answer (api.PermissionDecisionRequest)
func (s *Server) heartbeatTable(rn *heartbeat.Runner) []route {
	return []route{
		{method: "POST", pattern: "/api/heartbeat-runs/{run}/cancel", board: true, request: api.CancelRunRequest{}, response: api.CancelRunResponse{},
			status: http.StatusAccepted, more: []int{http.StatusOK}, idempotent: true,
			summary: "Stop a heartbeat run (202 reserved, 200 joined an earlier Stop); an empty body is a Stop without a cancellationRequestId",
			h:       cancelRun(rn)},
		{method: "POST", pattern: "/api/heartbeat-runs/{run}/steer", board: true, request: api.SteerRunRequest{}, response: api.SteerRunResponse{},
			status: http.StatusOK, idempotent: true,
			summary: "Steer a running session turn (the Steer button; Pi, Codex's app-server): post the message as the human's comment on the run's task and deliver it into the running turn with the agent's steer; a comment posted otherwise while a Pi turn runs is a follow-up; 409 run_not_steerable",
			h: func(ctx context.Context, r *http.Request, _ principal) (any, error) {
				var req api.SteerRunRequest
				if err := decodeBody(r, &req); err != nil {
					return nil, err
				}
				return rn.Steer(ctx, r.PathValue("run"), req, idempotencyKey(r))
			}},
		{method: "POST", pattern: "/api/heartbeat-runs/{run}/retry", board: true, response: api.RetryRunResponse{}, status: http.StatusCreated, idempotent: true,
			summary: "Retry a failed or interrupted heartbeat run: a retry wake for its agent and task, and the id of the run opened for it (bound by retryOf); 409 run_not_retryable or run_already_retried",
			h: func(ctx context.Context, r *http.Request, _ principal) (any, error) {
				return rn.Retry(ctx, r.PathValue("run"), idempotencyKey(r))
			}},
		{method: "GET", pattern: "/api/heartbeat-runs/{run}", board: true, response: api.HeartbeatRun{}, status: http.StatusOK,
			summary: "the heartbeat runner's record of a run",
			h: func(_ context.Context, r *http.Request, _ principal) (any, error) {
				rec, ok := rn.Run(r.PathValue("run"))
				if !ok {
					return nil, &api.Error{Code: controlplane.CodeRunMissing, Message: "no heartbeat run " + r.PathValue("run")}
				}
				return rec, nil
			}},
		{method: "GET", pattern: "/api/companies/{company}/heartbeat-runs", board: true, response: api.HeartbeatRunList{}, status: http.StatusOK,
			summary: "the company's heartbeat run records in the order their wakes were taken",
			h: func(_ context.Context, r *http.Request, _ principal) (any, error) {
				if _, err := s.pathCompany(r); err != nil {
					return nil, err
				}
				return api.HeartbeatRunList{Runs: rn.Runs(r.PathValue("company"))}, nil
			}},
		{method: "GET", pattern: "/api/companies/{company}/permissions", board: true, response: api.PermissionList{}, status: http.StatusOK,
			summary: "the company's permission interactions (an ACP agent's permission requests) in the order they were asked; ?taskId= keeps one task's",
			h: func(_ context.Context, r *http.Request, _ principal) (any, error) {
				if _, err := s.pathCompany(r); err != nil {
					return nil, err
				}
				return api.PermissionList{Permissions: rn.Permissions(r.PathValue("company"), r.URL.Query().Get("taskId"))}, nil
			}},
		{method: "POST", pattern: "/api/companies/{company}/permissions/{permission}/decision", board: true, request: api.PermissionDecisionRequest{},
			response: api.Permission{}, status: http.StatusOK,
			summary: "answer a pending permission interaction (approve or decline); 409 interaction_already_resolved when it was answered or cancelled before",
			h: func(_ context.Context, r *http.Request, _ principal) (any, error) {
				if _, err := s.pathCompany(r); err != nil {
					return nil, err
				}
				var req api.PermissionDecisionRequest
				if err := decodeBody(r, &req); err != nil {
					return nil, err
				}
				return rn.DecidePermission(r.PathValue("company"), r.PathValue("permission"), req.Decision, heartbeat.LocalBoardActor)
			}},
	}
}

// cancelRun is the Stop route's handler: the body's optional cancellationRequestId,
// the request's idempotency key and its canonical digest go to the runner's Cancel; a
// Stop that joined an earlier one answers 200 instead of 202.
func cancelRun(rn *heartbeat.Runner) func(ctx context.Context, r *http.Request, _ principal) (any, error) {
	return func(ctx context.Context, r *http.Request, _ principal) (any, error) {
		b, err := readBody(r)
		if err != nil {
			return nil, err
		}
		var req api.CancelRunRequest
		if len(b) > 0 {
			if err := DecodeStrict(b, &req); err != nil {
				return nil, err
			}
		}
		if err := checkKeyLength("cancellationRequestId", req.CancellationRequestID); err != nil {
			return nil, err
		}
		canon, _ := json.Marshal(req)
		out, err := rn.Cancel(ctx, r.PathValue("run"), heartbeat.StopRequest{RequestID: req.CancellationRequestID, Actor: heartbeat.LocalBoardActor,
			IdempotencyKey: idempotencyKey(r), RequestSHA256: controlplane.SHA256Hex(canon)})
		if err != nil {
			return nil, err
		}
		if out.Disposition == api.CancelJoined {
			return withStatus{http.StatusOK, out}, nil
		}
		return out, nil
	}
}

// heartbeatHandler serves the heartbeat routes (heartbeatTable) and the OpenAPI
// document of every route, and hands every other request to the API handler, kicking
// the runner after each state-changing request.
func (s *Server) heartbeatHandler(rn *heartbeat.Runner) http.Handler {
	mux := newServeMux(s.bodyTimeout)
	hb := s.heartbeatTable(rn)
	for _, rt := range hb {
		mux.HandleFunc(rt.method+" "+rt.pattern, s.wrap(rt))
	}
	handleOpenAPI(mux, append(s.table(), hb...))
	apiHandler := s.Handler()
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiHandler.ServeHTTP(w, r)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			rn.Kick()
		}
	}))
	return mux
}

// HeartbeatRoutes are the heartbeat routes as "METHOD PATTERN" (for example
// "POST /api/heartbeat-runs/{run}/steer"), in table order: what `agentproof serve
// --help` must list.
func HeartbeatRoutes() []string {
	var out []string
	for _, rt := range (&Server{}).heartbeatTable(nil) {
		out = append(out, rt.method+" "+rt.pattern)
	}
	return out
}

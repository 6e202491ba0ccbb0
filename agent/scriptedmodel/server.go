package scriptedmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/canonjson"
	"github.com/agentproof/agentproof/redact"
)

// LogSchema tags every request-log line.
const LogSchema = "agentproof.model-request/v1"

// Options configure a Server.
//
//   - Script: the script to play (required).
//   - Log: where each request's log entry goes as one JSON line (evidence); may be nil.
//   - Secrets: values redacted from logged headers and bodies besides sensitive headers
//     (authorization, x-api-key, cookie, …) which are always redacted.
//   - Clock: the time source for `created` fields and log times (default time.Now).
//   - Chunked: write every SSE frame in random 1–7-byte pieces, each flushed;
//     ChunkSeed seeds the piece sizes.
//   - Hold, KeepAlive: hold the first frame of every stream for Hold while sending a
//     `: keepalive` comment every KeepAlive. Zero: no hold.
type Options struct {
	Script    *Script
	Log       io.Writer
	Secrets   *redact.Set
	Clock     func() time.Time
	Chunked   bool
	ChunkSeed uint64
	Hold      time.Duration
	KeepAlive time.Duration
	// Run is the 1-based run this server plays in a RunSet (0 outside one); it is
	// copied into every log entry.
	Run int
}

// LogEntry is one logged request: sequence number (1-based), time (RFC 3339, UTC),
// method, path (query kept apart), headers (lower-case names; sensitive ones and secret
// values redacted), wire format, the tools offered, the step played (1-based; 0 for an
// auxiliary request, -1 when none fits), what the model answered (Reply: "call NAME",
// "answer", "aux answer") or the error, the HTTP status, the body size and its SHA-256,
// and the sanitised body; ToolResult is the request's latest tool result as the model
// classified it (ClassifyToolResult) and Branches the branch conditions evaluated to
// pick the step (each with what it observed and whether it held).
type LogEntry struct {
	Schema  string              `json:"schema"`
	Seq     int                 `json:"seq"`
	Run     int                 `json:"run,omitempty"`
	Time    string              `json:"time"`
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   string              `json:"query,omitempty"`
	Headers map[string][]string `json:"headers"`
	Format  Format              `json:"format,omitempty"`
	Stream  bool                `json:"stream,omitempty"`
	Tools   []string            `json:"tools,omitempty"`
	Step    int                 `json:"step"`
	Reply   string              `json:"reply,omitempty"`
	// ToolResult and Branches: see above.
	ToolResult *ToolResultSeen `json:"toolResult,omitempty"`
	Branches   []BranchOutcome `json:"branches,omitempty"`
	Error      string          `json:"error,omitempty"`
	Status     int             `json:"status"`
	Usage      *Usage          `json:"usage,omitempty"`
	BodyBytes  int             `json:"body_bytes"`
	BodySHA    string          `json:"body_sha256,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
}

// Server is the scripted model: an http.Handler serving POST /v1/responses, POST
// /v1/chat/completions, POST /v1/messages, POST /v1beta/models/<model>:<method> (Gemini),
// GET /v1/models and HEAD /. It is safe for concurrent use.
type Server struct {
	opts Options
	mux  *http.ServeMux

	mu      sync.Mutex
	seq     int
	entries []LogEntry
	logErr  error
	rng     *rand.Rand

	hold holdGate
}

// holdGate counts releases of held steps: Release adds one; a held step takes one,
// waiting for it when there is none (so a release that comes before the hold is not
// lost).
type holdGate struct {
	mu       sync.Mutex
	tokens   int
	released int
	waiting  int // held steps waiting for a release now
	wake     chan struct{}
}

func (g *holdGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokens++
	g.released++
	if g.wake != nil {
		close(g.wake)
		g.wake = nil
	}
}

// wait takes one release, waiting at most max or until ctx ends; it reports whether a
// release was taken.
func (g *holdGate) wait(ctx context.Context, max time.Duration) bool {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	g.mu.Lock()
	g.waiting++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}()
	for {
		g.mu.Lock()
		if g.tokens > 0 {
			g.tokens--
			g.mu.Unlock()
			return true
		}
		if g.wake == nil {
			g.wake = make(chan struct{})
		}
		ch := g.wake
		g.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Release releases the run's held step (a call step with hold_ms that is streaming, or
// the next one to stream): the call completes. Each release frees one hold. The harness
// calls it once a steering message was acknowledged, so that the model's next request
// carries it. It is a call of the harness's only: the model's HTTP API, which the
// agent reaches, has no control route.
func (s *Server) Release() { s.hold.release() }

// Holding reports whether a held step of the run is streaming now, waiting for its
// release (its tool call's first frame sent, the rest held): the moment a steering
// message reaches the agent mid-call.
func (s *Server) Holding() bool {
	s.hold.mu.Lock()
	defer s.hold.mu.Unlock()
	return s.hold.waiting > 0
}

// Released reports how many releases the server has had.
func (s *Server) Released() int {
	s.hold.mu.Lock()
	defer s.hold.mu.Unlock()
	return s.hold.released
}

// New returns a Server playing opts.Script. It returns an error when the script is nil.
func New(opts Options) (*Server, error) {
	if opts.Script == nil {
		return nil, errors.New("scripted model: no script")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = time.Second
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), rng: rand.New(rand.NewPCG(opts.ChunkSeed, 0x5eed))}
	s.mux.HandleFunc("POST /v1/responses", s.model(FormatResponses))
	s.mux.HandleFunc("POST /v1/chat/completions", s.model(FormatChat))
	s.mux.HandleFunc("POST /v1/messages", s.model(FormatMessages))
	s.mux.HandleFunc("POST /v1beta/models/{action}", s.gemini)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("/", s.other)
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Requests returns a copy of every request logged so far, in arrival order.
func (s *Server) Requests() []LogEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.entries)
}

// LogError returns the first error writing the request log, if any.
func (s *Server) LogError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logErr
}

// begin numbers a request and starts its log entry.
func (s *Server) begin(r *http.Request, body []byte) LogEntry {
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	e := LogEntry{
		Schema: LogSchema, Seq: seq, Run: s.opts.Run, Time: s.opts.Clock().UTC().Format(time.RFC3339Nano),
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Headers: s.headers(r.Header),
		BodyBytes: len(body), Step: -1,
	}
	if len(body) > 0 {
		e.BodySHA = canonjson.SHA256Hex(body)
		if clean, err := s.opts.Secrets.SanitizeJSONBytes("request body", body); err == nil {
			var compact json.RawMessage
			if json.Unmarshal(clean, &compact) == nil {
				e.Body = compact
			}
		}
	}
	return e
}

// finish records e in memory and in the log.
func (s *Server) finish(e LogEntry) {
	line, err := json.Marshal(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, e)
	if s.opts.Log == nil {
		return
	}
	if err == nil {
		_, err = s.opts.Log.Write(append(line, '\n'))
	}
	if err != nil && s.logErr == nil {
		s.logErr = fmt.Errorf("writing the model request log: %w", err)
	}
}

// headers copies h with lower-case names, redacting sensitive headers whole and secret
// values or shapes inside the others.
func (s *Server) headers(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		name := strings.ToLower(k)
		for _, v := range vs {
			if redact.SensitiveKey(name) {
				v = redact.Redacted
			} else {
				v = s.opts.Secrets.RedactText(v)
			}
			out[name] = append(out[name], v)
		}
	}
	return out
}

// apiError is the error body every format accepts: Anthropic's {type:"error", error:{…}}
// is a superset of OpenAI's {error:{type, message}}.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	body := encode(object{
		{Key: "type", Value: "error"},
		{Key: "error", Value: object{{Key: "type", Value: typ}, {Key: "message", Value: msg}, {Key: "code", Value: typ}}},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// ErrorPrefix starts every error message of the scripted model, so that a CLI's error
// output shows where it came from.
const ErrorPrefix = "agentproof scripted model: "

func (s *Server) model(f Format) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		e := s.begin(r, body)
		e.Format = f
		fail := func(status int, typ, msg string) {
			e.Status, e.Error = status, msg
			writeError(w, status, typ, ErrorPrefix+msg)
			s.finish(e)
		}
		if err != nil {
			fail(http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("reading the request body: %v", err))
			return
		}
		req, err := DecodeRequest(f, body)
		if err != nil {
			fail(http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		if f == FormatGemini {
			// The method, not the body, says whether to stream; the model is in the path.
			req.Stream = strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
			if model, _, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":"); ok && req.Model == "" {
				req.Model = model
			}
		}
		e.Stream, e.Tools = req.Stream, toolNames(req.Tools)
		if tr, ok := req.LatestToolResult(); ok {
			e.ToolResult = &tr
		}
		reply, err := s.opts.Script.Decide(req)
		if err != nil {
			var se *StepError
			if errors.As(err, &se) {
				e.Step, e.Branches = se.Step+1, se.Branches
			}
			fail(http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		e.Step, e.Branches = reply.Step+1, reply.Branches
		switch {
		case reply.Step < 0:
			e.Reply = "aux answer"
		case reply.IsCall():
			e.Reply = "call " + reply.ToolName
		default:
			e.Reply = "answer"
		}
		m := Meta{ID: fmt.Sprintf("ap_%d", e.Seq), Created: s.opts.Clock().Unix(), Model: s.opts.Script.Model, Usage: s.usage(len(body), reply)}
		if req.Model != "" {
			m.Model = req.Model
		}
		e.Usage, e.Status = &m.Usage, http.StatusOK
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(Body(f, reply, m))
			s.finish(e)
			return
		}
		released := s.stream(r.Context(), w, StreamFrames(f, reply, m, req.IncludeUsage), reply.Hold)
		switch {
		case reply.Hold > 0 && released:
			e.Reply += " (held mid-call until released)"
		case reply.Hold > 0:
			e.Reply += fmt.Sprintf(" (held mid-call; not released within %v)", reply.Hold)
		}
		s.finish(e)
	}
}

// gemini routes POST /v1beta/models/<model>:<method>: streamGenerateContent (streamed
// whatever the body says) and generateContent play the script; countTokens answers an
// estimate; other methods get 404.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	switch {
	case strings.HasSuffix(action, ":streamGenerateContent"), strings.HasSuffix(action, ":generateContent"):
		s.model(FormatGemini)(w, r)
	case strings.HasSuffix(action, ":countTokens"):
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		e := s.begin(r, body)
		e.Format, e.Status, e.Step = FormatGemini, http.StatusOK, 0
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(encode(object{{Key: "totalTokens", Value: max(1, (len(body)+3)/4)}}))
		s.finish(e)
	default:
		s.other(w, r)
	}
}

// usage is the script's fixed usage, or an estimate: a token per 4 bytes of request
// body and of output (at least 1 each).
func (s *Server) usage(bodyBytes int, reply Reply) Usage {
	if u := s.opts.Script.Usage; u != nil {
		return *u
	}
	out := len(reply.Text) + len(reply.Arguments) + len(reply.ToolName)
	return Usage{InputTokens: max(1, (bodyBytes+3)/4), OutputTokens: max(1, (out+3)/4)}
}

// stream writes frames as text/event-stream, flushing after every frame (or piece, in
// chunked mode), after the optional keep-alive hold. With hold > 0 it stops after the
// first frame (the model is mid-tool-call) and sends `: keepalive` comments until the
// run's hold is released or hold passes, then writes the rest; it reports whether a
// release ended the hold.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, frames []Frame, hold time.Duration) (released bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if s.opts.Hold > 0 {
		deadline := time.NewTimer(s.opts.Hold)
		tick := time.NewTicker(s.opts.KeepAlive)
		defer deadline.Stop()
		defer tick.Stop()
	hold:
		for {
			select {
			case <-ctx.Done():
				return
			case <-deadline.C:
				break hold
			case <-tick.C:
				if !write([]byte(": keepalive\n\n")) {
					return
				}
			}
		}
	}
	for i, f := range frames {
		if i == 1 && hold > 0 {
			done := make(chan struct{})
			go func() {
				defer close(done)
				released = s.hold.wait(ctx, hold)
			}()
			tick := time.NewTicker(s.opts.KeepAlive)
		held:
			for {
				select {
				case <-done:
					break held
				case <-tick.C:
					if !write([]byte(": keepalive\n\n")) {
						tick.Stop()
						<-done
						return
					}
				}
			}
			tick.Stop()
		}
		b := f.Bytes()
		if !s.opts.Chunked {
			if !write(b) {
				return
			}
			continue
		}
		for _, piece := range s.pieces(b) {
			if !write(piece) {
				return
			}
		}
	}
	return released
}

// pieces splits b into random 1–7-byte pieces (chunked mode).
func (s *Server) pieces(b []byte) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for len(b) > 0 {
		n := min(len(b), 1+s.rng.IntN(7))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// models answers GET /v1/models with the script's model in a shape both OpenAI
// ({object:"list", data:[{id, object:"model", …}]}) and Anthropic ({data:[{type:"model",
// id, display_name, …}], has_more}) clients read.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	e := s.begin(r, nil)
	id := s.opts.Script.Model
	body := encode(object{
		{Key: "object", Value: "list"},
		{Key: "data", Value: []any{object{
			{Key: "id", Value: id}, {Key: "object", Value: "model"}, {Key: "type", Value: "model"},
			{Key: "created", Value: 0}, {Key: "created_at", Value: "1970-01-01T00:00:00Z"},
			{Key: "owned_by", Value: "agentproof"}, {Key: "display_name", Value: id},
		}}},
		{Key: "has_more", Value: false}, {Key: "first_id", Value: id}, {Key: "last_id", Value: id},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
	e.Status, e.Step = http.StatusOK, 0
	s.finish(e)
}

// other answers HEAD / and GET / with 200 (Claude Code's reachability check) and
// anything else with 404, logging each.
func (s *Server) other(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	e := s.begin(r, body)
	if r.URL.Path == "/" && (r.Method == http.MethodHead || r.Method == http.MethodGet) {
		e.Status, e.Step = http.StatusOK, 0
		w.WriteHeader(http.StatusOK)
		s.finish(e)
		return
	}
	e.Status = http.StatusNotFound
	e.Error = fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)
	writeError(w, http.StatusNotFound, "not_found_error", ErrorPrefix+e.Error)
	s.finish(e)
}

// Running is a scripted model listening on a loopback address.
type Running struct {
	// Addr is the listening address, host:port.
	Addr string
	// URL is the OpenAI-style base URL, "http://ADDR/v1".
	URL    string
	server *http.Server
	done   chan error

	closeOnce sync.Once
	closeErr  error
}

// AddrError is a listen address the scripted model refuses: it serves only loopback.
type AddrError struct {
	Addr   string
	Reason string
}

// Error renders "scripted model address ADDR: REASON".
func (e *AddrError) Error() string {
	return fmt.Sprintf("scripted model address %q: %s", e.Addr, e.Reason)
}

// Listen starts serving s on addr (host:port; the host must be a loopback address or
// "localhost", port 0 picks a free one). It returns an *AddrError for a non-loopback
// host and the listen error otherwise.
func (s *Server) Listen(addr string) (*Running, error) {
	return listen(addr, s)
}

// listen serves h on a loopback addr (see Server.Listen).
func listen(addr string, h http.Handler) (*Running, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &AddrError{Addr: addr, Reason: err.Error()}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, &AddrError{Addr: addr, Reason: "the scripted model listens only on a loopback address (127.0.0.1, ::1, localhost)"}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("scripted model: %w", err)
	}
	r := &Running{Addr: ln.Addr().String(), server: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan error, 1)}
	r.URL = "http://" + r.Addr + "/v1"
	go func() { r.done <- r.server.Serve(ln) }()
	return r, nil
}

// Close stops accepting requests and waits up to the context's deadline for the
// requests in flight to finish (and be logged). Later calls return the first result.
func (r *Running) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		err := r.server.Shutdown(ctx)
		if serr := <-r.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		r.closeErr = err
	})
	return r.closeErr
}

package scriptedmodel

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// RunSet serves one script per run of an agent: run n (1-based) of a real CLI talks to
// /runs/<n>/v1/… (each run is a fresh CLI conversation, so each has its own script and
// its own step count). Requests for a run without a script, or outside /runs/<n>/, get
// HTTP 400 with a JSON error naming the run, and are logged like every other request.
// All runs share one request log (each entry carries its run). It is safe for
// concurrent use.
type RunSet struct {
	servers []*Server
	log     *lockedWriter
	other   *Server
}

// NewRunSet returns a RunSet playing scripts[i] as run i+1 with opts (opts.Script and
// opts.Run are set per run; opts.Log is shared, writes serialised). It returns an error
// when scripts is empty or one is nil.
func NewRunSet(scripts []*Script, opts Options) (*RunSet, error) {
	if len(scripts) == 0 {
		return nil, fmt.Errorf("scripted model: no run scripts")
	}
	rs := &RunSet{}
	if opts.Log != nil {
		rs.log = &lockedWriter{w: opts.Log}
		opts.Log = rs.log
	}
	for i, sc := range scripts {
		o := opts
		o.Script, o.Run = sc, i+1
		s, err := New(o)
		if err != nil {
			return nil, fmt.Errorf("scripted model run %d: %w", i+1, err)
		}
		rs.servers = append(rs.servers, s)
	}
	o := opts
	o.Script, o.Run = scripts[0], 0
	rs.other, _ = New(o)
	return rs, nil
}

// ServeHTTP routes /runs/<n>/… to run n's server with the prefix stripped.
func (rs *RunSet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/runs/")
	num, tail, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || n > len(rs.servers) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		e := rs.other.begin(r, body)
		e.Status = http.StatusBadRequest
		if ok && err == nil {
			e.Error = fmt.Sprintf("no model script for run %d: the case's model scripts cover %d run(s)", n, len(rs.servers))
		} else {
			e.Error = fmt.Sprintf("no run in path %s (want /runs/<n>/v1/…)", r.URL.Path)
		}
		writeError(w, http.StatusBadRequest, "invalid_request_error", ErrorPrefix+e.Error)
		rs.other.finish(e)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + tail
	r2.URL.RawPath = ""
	rs.servers[n-1].ServeHTTP(w, r2)
}

// Requests returns every logged request of every run (runs in order, then arrival
// order), plus refused requests outside any run (Run 0) first.
func (rs *RunSet) Requests() []LogEntry {
	out := slices.Clone(rs.other.Requests())
	for _, s := range rs.servers {
		out = append(out, s.Requests()...)
	}
	return out
}

// Release releases the held step of run n (1-based; see Server.Release). It reports
// whether the run exists. Only the harness calls it: nothing over HTTP does.
func (rs *RunSet) Release(n int) bool {
	if n < 1 || n > len(rs.servers) {
		return false
	}
	rs.servers[n-1].Release()
	return true
}

// Holding reports whether run n's (1-based) held step is streaming now, waiting for
// its release (Server.Holding); false for a run the set does not have.
func (rs *RunSet) Holding(n int) bool {
	if n < 1 || n > len(rs.servers) {
		return false
	}
	return rs.servers[n-1].Holding()
}

// Runs is the number of run scripts.
func (rs *RunSet) Runs() int { return len(rs.servers) }

// LogError returns the first error writing the request log, if any.
func (rs *RunSet) LogError() error {
	for _, s := range append([]*Server{rs.other}, rs.servers...) {
		if err := s.LogError(); err != nil {
			return err
		}
	}
	return nil
}

// Listen serves the set on addr like Server.Listen (loopback only); Running.URL is
// then the root "http://ADDR" (runs below it at /runs/<n>/v1).
func (rs *RunSet) Listen(addr string) (*Running, error) {
	r, err := listen(addr, rs)
	if err != nil {
		return nil, err
	}
	r.URL = "http://" + r.Addr
	return r, nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

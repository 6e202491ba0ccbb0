package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// Running is a Server accepting HTTP requests on a listener.
type Running struct {
	*Server
	// Addr is the listening address (host:port); URL is "http://" + Addr.
	Addr, URL string
	hs        *http.Server
	done      chan error

	stopOnce sync.Once
	stopErr  error
}

// Start opens the instance and serves it on addr (for example 127.0.0.1:0). Errors:
// Open's, and a listen failure.
func Start(ctx context.Context, opts Options, addr string) (*Running, error) {
	s, ln, err := listen(ctx, opts, addr)
	if err != nil {
		return nil, err
	}
	return serve(s, ln, s.Handler()), nil
}

// listen opens the instance and listens on addr. Errors: Open's, and a listen failure
// (the instance is closed again).
func listen(ctx context.Context, opts Options, addr string) (*Server, net.Listener, error) {
	s, err := Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("server: listening on %s: %w", addr, err)
	}
	return s, ln, nil
}

// serve serves h for s on ln until Shutdown; the serve loop's end (nil once shut down)
// goes to the Running's done.
func serve(s *Server, ln net.Listener, h http.Handler) *Running {
	r := &Running{Server: s, Addr: ln.Addr().String(), URL: "http://" + ln.Addr().String(), done: make(chan error, 1),
		hs: s.httpServer(h)}
	go func() {
		err := r.hs.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		r.done <- err
	}()
	return r
}

// Shutdown stops accepting connections, waits for in-flight requests (until ctx is
// done), then commits and closes the store. It returns the first error. It is
// idempotent: a later call (a test's cleanup after a restart that failed) returns the
// first call's result at once instead of waiting for a serve loop that has ended.
func (r *Running) Shutdown(ctx context.Context) error {
	r.stopOnce.Do(func() {
		r.feed.close() // a waiting GET /api/changes answers now instead of holding the drain
		err := r.hs.Shutdown(ctx)
		if serr := <-r.done; err == nil {
			err = serr
		}
		if cerr := r.Server.Close(); err == nil {
			err = cerr
		}
		r.stopErr = err
	})
	return r.stopErr
}

package server

// ServedPatterns returns every pattern registered on r's muxes: its HTTP handler's
// and, when that is the heartbeat handler of Serve, the API handler's it delegates to.
func ServedPatterns(r *Running) []string {
	out := append([]string(nil), r.hs.Handler.(*serveMux).patterns...)
	if api := r.Server.handler.(*serveMux); api != r.hs.Handler {
		out = append(out, api.patterns...)
	}
	return out
}

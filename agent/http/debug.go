package http

import "net/http/pprof"

// debugRoutes serve Go's profiles under /debug/pprof/ when the agent runs
// with enable_debug (as Nomad's); they need agent write under ACLs.
func (s *HTTPServer) debugRoutes() {
	if !s.cfg.EnableDebug {
		return
	}
	s.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

package server

import (
	"net/http"
	"net/http/pprof"
)

// adminOnly serves h, an endpoint that only reads, under the admin API's rule (gate, made
// read-only): with an admin token, requests must carry it (401 otherwise); without one,
// only loopback clients are served (403 otherwise).
func adminOnly(gate adminGate, what string, h http.Handler) http.Handler {
	gate.readOnly = true
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gate.serve(w, r, what) {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// pprofHandler serves Go's profiles under /debug/pprof/ (CPU, heap, goroutines, trace),
// for an operator looking into where a gateway spends its time.
func pprofHandler(gate adminGate) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return adminOnly(gate, "/debug/pprof", mux)
}

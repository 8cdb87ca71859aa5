package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2a-gateway/gateway/internal/httpguard"
)

// hostHint is the end of a 421 answer to a refused Host: the flags that serve it.
const hostHint = "if the gateway is reached under that name, add it to --allowed-hosts (GATEWAY_ALLOWED_HOSTS) or set --public-url"

// guard puts the listener-wide guards in front of mux (issue #15 items 2 and 7): a Host
// outside the allow-list is refused with 421 before anything else (DNS rebinding), then
// the request body, if any, is bounded in time and rate (see internal/httpguard).
//
// A WebSocket's reader runs under this handler for the connection's life, and any frame
// more above it doubles the reader's stack, 4 KiB more on every idle connection
// (BenchmarkWSIdleConnMemory: 27.0 KiB per connection with one more frame, 23.3 KiB as
// before without). So this handler routes GET /ws itself, to ws, in place of the
// ServeMux's frame (the mux keeps the route for HEAD and unclean paths), and keeps its
// own frame small: the work is in admit, never inlined.
func (s *Server) guard(mux, ws http.Handler, hosts *httpguard.Hosts) http.Handler {
	g := &frontGuard{mux: mux, ws: ws, hosts: hosts, log: s.log.With("component", "http")}
	g.body = httpguard.BodyLimits{
		Timeout: s.cfg.BodyTimeout,
		MinRate: s.cfg.BodyMinRate,
		OnCut: func(r *http.Request, err *httpguard.BodyError) {
			g.log.InfoContext(r.Context(), "request body cut", "remote", r.RemoteAddr, "path", r.URL.Path,
				"bytes", err.Received, "after", err.After, "min_rate_missed", err.Rate)
		},
	}
	return g
}

// frontGuard is the handler of guard. It is a type of its own, not a HandlerFunc: the
// adapter would be one more frame.
type frontGuard struct {
	mux, ws http.Handler
	hosts   *httpguard.Hosts
	body    httpguard.BodyLimits
	log     *slog.Logger
}

// ServeHTTP admits r (see admit), then routes GET /ws to ws and the rest to mux.
func (g *frontGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case !g.admit(w, r):
	case r.Method == http.MethodGet && r.URL.Path == "/ws":
		g.ws.ServeHTTP(w, r)
	default:
		g.mux.ServeHTTP(w, r)
	}
}

// admit refuses r (421) when its Host is not served, and reports false; else it bounds
// r's body and reports true.
//
//go:noinline
func (g *frontGuard) admit(w http.ResponseWriter, r *http.Request) bool {
	if !g.hosts.Allowed(r.Host) {
		g.log.DebugContext(r.Context(), "host refused", "host", r.Host, "remote", r.RemoteAddr, "path", r.URL.Path)
		httpguard.Refuse(w, r.Host, hostHint)
		return false
	}
	g.body.Guard(w, r)
	return true
}

// allowedHosts is the Host allow-list of c: --allowed-hosts, the --public-url host and
// the --addr host (IP literals and localhost are always served). Errors: an
// --allowed-hosts entry or a --public-url that cannot be read.
func (c *Config) allowedHosts() (*httpguard.Hosts, error) {
	entries := strings.Split(c.AllowedHosts, ",")
	if host, _, err := net.SplitHostPort(c.Addr); err == nil {
		entries = append(entries, host)
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("--public-url %q: want an absolute URL, e.g. https://gateway.example/", c.PublicURL)
		}
		entries = append(entries, u.Hostname())
	}
	hosts, err := httpguard.NewHosts(entries...)
	if err != nil {
		return nil, fmt.Errorf("--allowed-hosts: %w", err)
	}
	return hosts, nil
}

// wsAllowedOrigins are the browser Origins allowed on GET /ws: --ws-allowed-origins,
// the origin of --public-url, and, when the gateway listens on loopback (at addr, the
// bound address), its loopback origins. The request's Host is never one of them: a
// DNS rebinding page sends its own name as both Host and Origin.
func (c *Config) wsAllowedOrigins(addr net.Addr) []string {
	out := c.wsOrigins()
	if u, err := url.Parse(c.PublicURL); err == nil && c.PublicURL != "" && u.Host != "" {
		out = append(out, originOf(u.Scheme, u.Hostname(), u.Port()))
	}
	host, _, err := net.SplitHostPort(c.Addr)
	tcp, ok := addr.(*net.TCPAddr)
	if err != nil || !ok || !isLoopbackHost(host) {
		return out
	}
	port := fmt.Sprint(tcp.Port)
	for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
		out = append(out, originOf("http", name, port))
	}
	return out
}

// originOf is the serialized origin of scheme://host:port (the port left out when it
// is the scheme's default, as browsers send it).
func originOf(scheme, host, port string) string {
	scheme = strings.ToLower(scheme)
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + strings.ToLower(host)
}

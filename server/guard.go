package server

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2a-gateway/gateway/internal/httpguard"
	"github.com/labstack/echo/v4"
)

// hostHint is the end of a 421 answer to a refused Host: the flags that serve it.
const hostHint = "if the gateway is reached under that name, add it to --allowed-hosts (GATEWAY_ALLOWED_HOSTS) or set --public-url"

// guard is the listener-wide guard, the router's first middleware (issue #15 items 2
// and 7): a Host outside the allow-list is refused with 421 before anything else (DNS
// rebinding), then the request body, if any, is bounded in time and rate (see
// internal/httpguard).
func (s *Server) guard() echo.MiddlewareFunc {
	log := s.log.With("component", "http")
	body := httpguard.BodyLimits{
		Timeout: s.cfg.BodyTimeout,
		MinRate: s.cfg.BodyMinRate,
		OnCut: func(r *http.Request, err *httpguard.BodyError) {
			log.InfoContext(r.Context(), "request body cut", "remote", r.RemoteAddr, "path", r.URL.Path,
				"bytes", err.Received, "after", err.After, "min_rate_missed", err.Rate)
		},
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if !s.hosts.Allowed(r.Host) {
				log.DebugContext(r.Context(), "host refused", "host", r.Host, "remote", r.RemoteAddr, "path", r.URL.Path)
				httpguard.Refuse(c.Response(), r.Host, hostHint)
				return nil
			}
			body.Guard(c.Response(), r)
			return next(c)
		}
	}
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

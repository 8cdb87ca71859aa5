package server

import (
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/a2a-gateway/gateway/a2a"
)

// mountHTTPJSON adds the HTTP+JSON binding (a2a.HTTPJSONHandler) to e, after every other
// route: it is echo's catch-all, so an existing route always wins, and the binding
// serves only its own paths (any other path keeps echo's 404, or its 405 for another
// method of a route, before authentication).
// Its {tenant} never takes a name of another top-level route (reservedTenants). The
// binding's requests meet what POST / meets: the request id and the guard's body bounds
// (before routing), the trace context and server span, peer authentication, the body
// limit and the request metrics of tcfg; it serves the same handler (the runner behind
// the rate limit).
func (s *Server) mountHTTPJSON(e *echo.Echo, tcfg a2a.TransportConfig) {
	rest := a2a.NewHTTPJSONHandler(s.handler, a2a.HTTPJSONConfig{TransportConfig: tcfg, ReservedTenants: reservedTenants(e.Routes())})
	allowed := staticMethods(e.Routes())
	only := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if rest.Routes(r.URL.EscapedPath()) {
				return next(c)
			}
			if allow, ok := allowed[r.URL.Path]; ok { // another route's path, another method: its 405, as before
				c.Response().Header().Set(echo.HeaderAllow, allow)
				return echo.ErrMethodNotAllowed
			}
			return echo.ErrNotFound
		}
	}
	e.Any("/*", echo.WrapHandler(rest), only, s.traceRequest(bindingHTTPJSON), echo.WrapMiddleware(s.peerAuth))
}

// staticMethods maps the paths of routes without parameters ("/", "/a2a", "/healthz")
// to their methods ("GET, HEAD"): a request for one of them with another method reaches
// the catch-all, which answers it 405 as echo did before there was one.
func staticMethods(routes []*echo.Route) map[string]string {
	methods := map[string][]string{}
	for _, r := range routes {
		if strings.ContainsAny(r.Path, ":*") || r.Method == echo.RouteNotFound || slices.Contains(methods[r.Path], r.Method) {
			continue
		}
		methods[r.Path] = append(methods[r.Path], r.Method)
	}
	out := make(map[string]string, len(methods))
	for p, ms := range methods {
		slices.Sort(ms)
		out[p] = strings.Join(ms, ", ")
	}
	return out
}

// reservedTenants are the first path segments of routes: "/admin/v1/…" reserves
// "admin", "/console*" "console", "/.well-known/…" ".well-known".
func reservedTenants(routes []*echo.Route) []string {
	var out []string
	for _, r := range routes {
		first, _, _ := strings.Cut(strings.TrimPrefix(r.Path, "/"), "/")
		first = strings.TrimRight(first, "*")
		if first != "" && !strings.ContainsAny(first, ":") && !slices.Contains(out, first) {
			out = append(out, first)
		}
	}
	slices.Sort(out)
	return out
}

package server

import (
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/a2a-gateway/gateway/a2a"
)

// mountHTTPJSON adds the HTTP+JSON binding (a2a.HTTPJSONHandler) to e, after every other
// route: it is echo's catch-all, so an existing route always wins, and the binding
// serves only its own paths (any other path keeps echo's 404, before authentication).
// Its {tenant} never takes a name of another top-level route (reservedTenants). The
// binding's requests meet what POST / meets: the request id and the guard's body bounds
// (before routing), the trace context and server span, peer authentication, the body
// limit and the request metrics of tcfg; it serves the same handler (the runner behind
// the rate limit).
func (s *Server) mountHTTPJSON(e *echo.Echo, tcfg a2a.TransportConfig) {
	rest := a2a.NewHTTPJSONHandler(s.handler, a2a.HTTPJSONConfig{TransportConfig: tcfg, ReservedTenants: reservedTenants(e.Routes())})
	only := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !rest.Routes(c.Request().URL.EscapedPath()) {
				return echo.ErrNotFound
			}
			return next(c)
		}
	}
	e.Any("/*", echo.WrapHandler(rest), only, s.traceRequest, echo.WrapMiddleware(s.peerAuth))
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

package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/console"
)

// docsURL is where a person who opened the gateway's URL in a browser reads on.
const docsURL = "https://github.com/a2a-gateway/gateway#readme"

// consoleURL is the operator console's URL under base (a URL ending in "/").
func consoleURL(base string) string {
	return strings.TrimSuffix(base, "/") + console.Prefix
}

// rootPage answers GET / (POST / is the JSON-RPC endpoint): a short plain-text page for
// a person who opened the URL, naming the agent, its card, the endpoints, the operator
// console and the docs. The URLs are those this request reached (the endpoint: card's
// URL when configured).
func (s *Server) rootPage(card a2a.CardConfig) echo.HandlerFunc {
	return func(c echo.Context) error {
		base := a2a.RequestBaseURL(c.Request())
		endpoint := card.URL
		if endpoint == "" {
			endpoint = base
		}
		info := a2a.BuildCard(card, endpoint)
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n\n%s\n\n", info.Name, info.Description)
		b.WriteString("This is an Agent2Agent (A2A) protocol endpoint: agents talk to it in JSON-RPC 2.0\n(A2A v1.0 and v0.3), not browsers.\n\n")
		fmt.Fprintf(&b, "  Agent card:  GET %s%s\n", base, strings.TrimPrefix(a2a.CardPath, "/"))
		fmt.Fprintf(&b, "  JSON-RPC:    POST %s  (Content-Type: application/json)\n", endpoint)
		fmt.Fprintf(&b, "  WebSocket:   GET %sws\n", base)
		b.WriteString("  Health:      GET /healthz, GET /readyz\n")
		fmt.Fprintf(&b, "  Console:     GET %s  (for the operator: conversations, timelines, live replies;\n               loopback only, or with --admin-token)\n\n", consoleURL(base))
		fmt.Fprintf(&b, "Docs: the README at %s, and 'gateway serve --help'.\n", docsURL)
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		return c.String(http.StatusOK, b.String())
	}
}

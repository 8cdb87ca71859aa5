package server

import (
	"net/http"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/tools"
)

// cardConfig is the agent card of this server: public (GET /.well-known/agent-card.json),
// declaring the bearer scheme and the authenticated extended card when peers
// authenticate, and the interfaces served: JSON-RPC (v1.0 and v0.3) and HTTP+JSON
// (v1.0), all at the public URL. Its Last-Modified is left to a2a.NewCardHandler: the time the routes
// were built, at start-up, when the configuration it reflects was loaded.
func (s *Server) cardConfig() a2a.CardConfig {
	c := a2a.CardConfig{URL: s.cfg.PublicURL, BearerAuth: s.tokens.enabled(), HTTPJSON: true,
		PushNotifications: s.runner != nil && s.runner.PushSupported()}
	if s.cfg.toolMode() != tools.ModeNone {
		c.Extensions = []a2a.CardExtension{{URI: tools.HopsExtension, Description: toolsHopsDescription}}
	}
	if s.push != nil {
		c.Extensions = append(c.Extensions, s.push.cardExtension())
	}
	if s.grpcLn != nil {
		c.Interfaces = append(c.Interfaces, s.grpcCardInterface())
	}
	return c
}

// extendedCard answers GetExtendedAgentCard (and v0.3's
// agent/getAuthenticatedExtendedCard) on every transport, HTTP and WebSocket alike, in
// the dialect of the method: the pure v1.0 card for GetExtendedAgentCard, the union card
// for v0.3. It is declared and served only when peers authenticate: the request has then
// passed peerAuth (on a WebSocket, r is the upgrade request), and the card is the public
// one. Without peer authentication the card does not declare it, and the call is refused
// as the spec says for an undeclared extended card: UnsupportedOperationError (-32004)
// in v1.0 (§3.3.4), AuthenticatedExtendedCardNotConfiguredError (-32007) in v0.3.
func (s *Server) extendedCard(r *http.Request, d a2a.Dialect) ([]byte, error) {
	if !s.tokens.enabled() {
		if d == a2a.V1 {
			return nil, a2a.Errorf(a2a.ErrUnsupportedOperation, "this agent's card does not declare capabilities.extendedAgentCard: the extended card needs peer authentication, which is off")
		}
		return nil, a2a.Errorf(a2a.ErrExtendedCardNotConfigured, "this agent's card does not declare supportsAuthenticatedExtendedCard: the extended card needs peer authentication, which is off")
	}
	return a2a.CardJSONFor(s.cardConfig(), r, d)
}

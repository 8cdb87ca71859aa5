package main

import (
	"net/http"

	"github.com/a2a-gateway/gateway/a2a"
)

// cardConfig is the agent card of this server: public (GET /.well-known/agent-card.json),
// declaring the bearer scheme when peers authenticate.
func (s *Server) cardConfig() a2a.CardConfig {
	return a2a.CardConfig{URL: s.cfg.PublicURL, BearerAuth: s.tokens.enabled()}
}

// extendedCard answers GetExtendedAgentCard (and v0.3's
// agent/getAuthenticatedExtendedCard) on every transport, HTTP and WebSocket alike: the
// request has passed peerAuth by then (on a WebSocket, r is the upgrade request), and the
// card is the public one.
func (s *Server) extendedCard(r *http.Request) ([]byte, error) {
	return a2a.CardJSON(s.cardConfig(), r)
}

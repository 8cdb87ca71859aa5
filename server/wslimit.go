package server

import (
	"net"
	"net/http"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/turn"
)

// wsConnsPerPeer is streaming.Config.MaxConnsPerPeer for --max-ws-conns-per-peer, whose 0
// means no limit (streaming's 0 means its default).
func (c *Config) wsConnsPerPeer() int {
	if c.MaxWSConnsPerPeer <= 0 {
		return -1
	}
	return c.MaxWSConnsPerPeer
}

// wsPeer names the peer a GET /ws counts against for --max-ws-conns-per-peer: the peer its
// token authenticated (peerAuth runs first); without peer tokens every caller is "local",
// so callers are told apart by their IP.
func wsPeer(r *http.Request) string {
	peer := turn.PeerFrom(r.Context())
	if peer != contextid.LocalOwner {
		return peer
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return peer + "@" + host
}

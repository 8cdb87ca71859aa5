package streaming

import (
	"fmt"
	"net"
	"net/http"
)

// DefaultMaxConnsPerPeer is the number of WebSocket connections one peer may hold open at
// once when Config.MaxConnsPerPeer is 0: enough for a client with a few tabs or workers
// (each connection multiplexes up to MaxInFlight calls and streams), few enough that one
// peer cannot hold thousands of idle sockets (~19 KiB each).
const DefaultMaxConnsPerPeer = 16

// peerOf names the peer an upgrade request counts against: Config.PeerOf, or the remote
// IP without it.
func (h *Handler) peerOf(r *http.Request) string {
	if h.cfg.PeerOf != nil {
		return h.cfg.PeerOf(r)
	}
	return remoteIP(r)
}

// remoteIP is the IP of r's remote address (RemoteAddr itself when it has no port).
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// admitPeer counts a connection (or an upgrade in progress) of peer, and reports false
// without counting it when the peer is at Config.MaxConnsPerPeer. Every true is matched by
// one releasePeer.
func (h *Handler) admitPeer(peer string) bool {
	if h.cfg.MaxConnsPerPeer < 0 {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.perPeer[peer] >= h.cfg.MaxConnsPerPeer {
		return false
	}
	h.perPeer[peer]++
	return true
}

func (h *Handler) releasePeer(peer string) {
	if h.cfg.MaxConnsPerPeer < 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.perPeer[peer]--; h.perPeer[peer] <= 0 {
		delete(h.perPeer, peer) // the map holds connected peers only
	}
}

// refusePeer answers an upgrade over the peer's connection limit: 429, with a body that
// says which limit and what to do, before anything is upgraded.
func (h *Handler) refusePeer(w http.ResponseWriter, r *http.Request, peer string) {
	if h.cfg.OnLimit != nil {
		h.cfg.OnLimit("ws_conns")
	}
	h.log.DebugContext(r.Context(), "websocket connection refused: peer at its connection limit", "peer", peer, "limit", h.cfg.MaxConnsPerPeer)
	w.Header().Set("Retry-After", "1")
	http.Error(w, fmt.Sprintf("too many WebSocket connections: this peer has %d open, the limit; close one (each connection carries up to %d calls and streams) and retry",
		h.cfg.MaxConnsPerPeer, h.cfg.MaxInFlight), http.StatusTooManyRequests)
}

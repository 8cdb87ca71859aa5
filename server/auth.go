package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/turn"
)

// authRealm is the realm of the WWW-Authenticate challenge on the A2A routes.
const authRealm = "a2a-gateway"

// peerTokens maps the inbound bearer tokens of the configured peers to their names.
// Tokens are kept only as SHA-256 digests: a lookup hashes the presented token and
// compares it with every digest in constant time, without an early exit, so neither the
// time taken nor the order of the list tells how close a guess was or which peer matched.
type peerTokens struct {
	digests [][sha256.Size]byte
	peers   []string // peers[i] presents the token hashed in digests[i]
}

// newPeerTokens collects the accept tokens of peers. Peers without accept tokens (only
// called by us) add nothing.
func newPeerTokens(peers []Peer) *peerTokens {
	t := &peerTokens{}
	for _, p := range peers {
		for _, tok := range p.Accept {
			t.digests = append(t.digests, sha256.Sum256([]byte(tok)))
			t.peers = append(t.peers, p.Name)
		}
	}
	return t
}

// enabled reports whether any peer token is configured; without one every caller is the
// peer "local" (and Validate keeps the listener on loopback).
func (t *peerTokens) enabled() bool { return len(t.digests) > 0 }

// lookup returns the peer that presents token, and false when none does.
func (t *peerTokens) lookup(token string) (string, bool) {
	sum := sha256.Sum256([]byte(token))
	match := -1
	for i := range t.digests {
		eq := subtle.ConstantTimeCompare(sum[:], t.digests[i][:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return "", false
	}
	return t.peers[match], true
}

// bearerToken returns the credential of an "Authorization: Bearer <token>" header (the
// scheme is case-insensitive, RFC 7235), and false when there is none.
func bearerToken(r *http.Request) (string, bool) { return bearerValue(r.Header.Get("Authorization")) }

// bearerValue returns the credential of an Authorization value "Bearer <token>" (HTTP header
// or gRPC metadata), and false when there is none.
func bearerValue(authorization string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// peerAuth wraps an A2A route (POST /, POST /a2a, GET /ws) with peer authentication. With
// peer tokens configured, a request must carry "Authorization: Bearer <token>" of a
// configured peer; that peer's name becomes the request's caller (turn.WithPeer), which
// owns the conversations it creates. Anything else is answered 401 with a Bearer
// challenge and no detail, before the body is read; a source (remote IP) that presented
// too many invalid tokens is answered 429 without its token being compared (authlimit.go).
// The identity comes from the
// credential only: nothing in the body or its metadata can name a peer. Without peer
// tokens every request's caller is the peer "local" (contextid.LocalOwner), set here:
// the runner refuses a request that names no caller. The request id is already set
// (requestIDMiddleware, before routing).
func (s *Server) peerAuth(next http.Handler) http.Handler { return s.authPeers(next, false) }

// wsAuth is peerAuth for GET /ws, which also admits the console's operator: a request
// without a bearer token that carries a valid console session cookie (see
// console.Handler.Operator; the Live page's socket) is marked turn.WithOperator. When peer
// tokens are configured it has no peer of its own: its caller is contextid.LocalOwner, as
// on a gateway without them (what it was before callers were explicit), and it may only
// follow conversations: any peer's, naming the owner, or local's, naming none (see
// wsSubscribeAs, wsSubscribeOnly). The Origin check of the WebSocket handler applies to
// it as to everyone.
func (s *Server) wsAuth(next http.Handler) http.Handler { return s.authPeers(next, true) }

// operator reports whether r carries a valid console session.
func (s *Server) operator(r *http.Request) bool { return s.console != nil && s.console.Operator(r) }

// wsSubscribeAs lets a conversations/subscribe name the context's owner: the caller's own
// peer, or any peer for the operator (streaming.Config.SubscribeAs).
func wsSubscribeAs(ctx context.Context, peer string) (context.Context, bool) {
	if turn.IsOperator(ctx) || peer == turn.PeerFrom(ctx) {
		return turn.WithPeer(ctx, peer), true
	}
	return ctx, false
}

// wsSubscribeOnly reports whether a connection is the operator's without a peer identity
// (peer tokens configured): it may only follow conversations (streaming.Config.SubscribeOnly).
func (s *Server) wsSubscribeOnly(ctx context.Context) bool {
	return s.tokens.enabled() && turn.IsOperator(ctx)
}

func (s *Server) authPeers(next http.Handler, operators bool) http.Handler {
	if !s.tokens.enabled() {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := turn.WithPeer(r.Context(), contextid.LocalOwner)
			if operators && s.operator(r) {
				ctx = turn.WithOperator(ctx)
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	log := s.log.With("component", "auth")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authThrottled(w, r) {
			return
		}
		tok, ok := bearerToken(r)
		if !ok && operators && s.operator(r) {
			next.ServeHTTP(w, r.WithContext(turn.WithOperator(turn.WithPeer(r.Context(), contextid.LocalOwner))))
			return
		}
		reason := "missing"
		if ok {
			var peer string
			if peer, ok = s.tokens.lookup(tok); ok {
				next.ServeHTTP(w, r.WithContext(turn.WithPeer(r.Context(), peer)))
				return
			}
			reason = "invalid"
			s.authFailed(r.Context(), authSource(r), log)
		}
		s.metrics.authFailure(reason)
		log.DebugContext(r.Context(), "peer authentication failed", "reason", reason, "remote", r.RemoteAddr, "path", r.URL.Path)
		unauthorized(w)
	})
}

// unauthorized answers 401 with the Bearer challenge and a generic line: nothing tells a
// missing token from a wrong one, or names a peer. The connection is closed after it:
// the body is never read, and net/http would otherwise drain up to 256 KiB of it before
// answering (a slow body would hold the 401 back).
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	w.Header().Set("WWW-Authenticate", `Bearer realm="`+authRealm+`"`)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte("unauthorized\n"))
}

// logAuthMode records at startup how peers are identified (names only, never tokens).
func logAuthMode(ctx context.Context, log *slog.Logger, peers []Peer, t *peerTokens) {
	if !t.enabled() {
		log.InfoContext(ctx, "peer authentication off: every caller is peer \"local\"")
		return
	}
	var names []string
	for _, p := range peers {
		if len(p.Accept) > 0 {
			names = append(names, p.Name)
		}
	}
	log.InfoContext(ctx, "peer authentication on: A2A requests need a peer's bearer token", "peers", names, "tokens", len(t.digests))
}

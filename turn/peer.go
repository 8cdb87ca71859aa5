package turn

import (
	"context"

	"github.com/a2a-gateway/gateway/conversations/contextid"
)

type peerKey struct{}

// WithPeer returns ctx carrying the authenticated peer identity of the request.
func WithPeer(ctx context.Context, peer string) context.Context {
	return context.WithValue(ctx, peerKey{}, peer)
}

// PeerFrom returns the peer identity in ctx, or contextid.LocalOwner when none is set.
func PeerFrom(ctx context.Context) string {
	if p, ok := ctx.Value(peerKey{}).(string); ok && p != "" {
		return p
	}
	return contextid.LocalOwner
}

package turn

import (
	"context"

	"github.com/a2a-gateway/gateway/contextid"
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

type operatorKey struct{}

// WithOperator returns ctx marked as the operator's: a request the console's login
// session authenticated (cmd/gateway), which may follow any peer's conversation live
// (conversations/subscribe with "peer"). It names no peer; see [IsOperator].
func WithOperator(ctx context.Context) context.Context {
	return context.WithValue(ctx, operatorKey{}, true)
}

// IsOperator reports whether ctx was marked by [WithOperator].
func IsOperator(ctx context.Context) bool {
	v, _ := ctx.Value(operatorKey{}).(bool)
	return v
}

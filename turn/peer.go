package turn

import (
	"context"
	"fmt"

	"github.com/a2a-gateway/gateway/a2a"
)

type peerKey struct{}

// WithPeer returns ctx carrying the request's caller: the peer its credential
// authenticated, or contextid.LocalOwner on a gateway that authenticates no peers (the
// transport names that caller too; nothing defaults to it). The caller owns the
// conversations it creates and sees only its own tasks. Every transport that calls the
// Runner sets it: a request that reaches the Runner without one is refused
// (errNoCaller).
func WithPeer(ctx context.Context, peer string) context.Context {
	return context.WithValue(ctx, peerKey{}, peer)
}

// PeerFrom returns the caller WithPeer put in ctx, and "" when there is none: a request
// without a caller is nobody's, never a default peer's.
func PeerFrom(ctx context.Context) string {
	p, _ := ctx.Value(peerKey{}).(string)
	return p
}

// errNoCaller refuses a request that reached the Runner without a caller (WithPeer): a
// transport was wired without peer identification. It is an internal error: the peer
// gets "internal error" and the transport logs this text once per request.
var errNoCaller = fmt.Errorf("%w: the request reached the turn runner without a caller (its transport does not call turn.WithPeer); refused", a2a.ErrInternal)

// caller returns the request's caller, or errNoCaller. Every a2a.Handler and
// a2a.PushHandler method, and SubscribeContext, reads the caller through it, once, and
// passes it on.
func caller(ctx context.Context) (string, error) {
	if p := PeerFrom(ctx); p != "" {
		return p, nil
	}
	return "", errNoCaller
}

type operatorKey struct{}

// WithOperator returns ctx marked as the operator's: a request the console's login
// session authenticated (server), which may follow any peer's conversation live
// (conversations/subscribe with "peer"). It names no peer; see [IsOperator].
func WithOperator(ctx context.Context) context.Context {
	return context.WithValue(ctx, operatorKey{}, true)
}

// IsOperator reports whether ctx was marked by [WithOperator].
func IsOperator(ctx context.Context) bool {
	v, _ := ctx.Value(operatorKey{}).(bool)
	return v
}

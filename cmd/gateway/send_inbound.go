package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/a2a-gateway/gateway/peers"
)

// targetUsageError explains a TARGET that resolves to nothing usable (exit 2). The
// contextId of an inbound conversation that cannot be continued from here says why, and
// what can be done instead.
func (cmd *sendCommand) targetUsageError(dir *peers.Directory, target string, err error) error {
	var ie *peers.InboundError
	if !errors.As(err, &ie) {
		return targetUsageError(target, err, cmd.o.ops.config.noConfigHint())
	}
	if slices.Contains(ie.Owners, peers.LocalOwner) {
		return usageError{fmt.Sprintf("target %q is a conversation that a caller without a token started with the local gateway (peer %q): send continues it by sending to that gateway, but none answers at --server %s; start it, or point --server at it",
			target, peers.LocalOwner, cmd.o.ops.server)}
	}
	msg := fmt.Sprintf("target %q is a conversation that the peer %s started with this gateway (inbound): only that peer can continue it, by sending to this gateway with contextId %s",
		target, strings.Join(ie.Owners, ", "), shellQuote(ie.ContextID))
	for _, owner := range ie.Owners {
		if t, err := dir.Resolve(owner); err == nil && t.Kind == peers.KindPeer && !t.Prefix {
			msg += fmt.Sprintf("; 'gateway send %s MESSAGE' starts a conversation of your own with its agent", shellQuote(dir.PeerTarget(peers.Peer{Name: t.Name})))
		}
	}
	return usageError{msg + "; 'gateway send --list' shows the targets"}
}

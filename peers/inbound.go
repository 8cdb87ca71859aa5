package peers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/a2a-gateway/gateway/contextid"
)

// LocalOwner is the ledger owner of the conversations that callers without a token start
// with the local gateway (it runs without peer tokens).
const LocalOwner = contextid.LocalOwner

// WithGateway returns a copy of d that knows the local gateway's A2A URL (its --server,
// which answered), so that the contextId of an inbound conversation of [LocalOwner]
// resolves to [KindLocal]: the message goes to the gateway itself, as a caller without a
// token, and continues that conversation there.
func (d *Directory) WithGateway(url string) *Directory {
	c := *d
	c.gateway = url
	return &c
}

// Local returns the inbound conversations of [LocalOwner] that can be continued (none
// without [Directory.WithGateway]).
func (d *Directory) Local() []Conversation {
	if d.gateway == "" {
		return nil
	}
	var out []Conversation
	for _, c := range d.inbound {
		if c.Owner == LocalOwner {
			out = append(out, c)
		}
	}
	return out
}

// inboundTarget resolves s as the contextId of an inbound conversation; ok is false when
// no inbound conversation has it.
func (d *Directory) inboundTarget(target, s string) (t Target, ok bool, err error) {
	var owners []string
	for _, c := range d.inbound {
		if c.ContextID != s {
			continue
		}
		if c.Owner == LocalOwner && d.gateway != "" {
			return Target{Kind: KindLocal, URL: d.gateway, ContextID: c.ContextID, Owner: LocalOwner}, true, nil
		}
		owners = append(owners, c.Owner)
	}
	if len(owners) == 0 {
		return Target{}, false, nil
	}
	slices.Sort(owners)
	return Target{}, true, &InboundError{Target: target, ContextID: s, Owners: slices.Compact(owners)}
}

// InboundError is returned by [Directory.Resolve] for the contextId of an inbound
// conversation that cannot be continued from here: one that a peer with a token started
// (only that peer can continue it: the conversation is its, under its identity), or one
// of [LocalOwner] when no local gateway is known ([Directory.WithGateway]). It unwraps
// to [ErrNotSendable].
type InboundError struct {
	Target, ContextID string
	// Owners are the conversation's callers, sorted: peer names, or [LocalOwner].
	Owners []string
}

// Error implements error.
func (e *InboundError) Error() string {
	if slices.Contains(e.Owners, LocalOwner) {
		return fmt.Sprintf("target %q is a conversation that a caller without a token started with the local gateway (peer %q); it is continued by sending to that gateway, and none answers", e.Target, LocalOwner)
	}
	return fmt.Sprintf("target %q is a conversation that the peer %s started with this gateway (inbound); only that peer can continue it, by sending to this gateway with contextId %q",
		e.Target, strings.Join(e.Owners, ", "), e.ContextID)
}

// Unwrap returns [ErrNotSendable].
func (e *InboundError) Unwrap() error { return ErrNotSendable }

// Package peers is the peer directory of `gateway send`: the configured peers, the
// outbound conversations the ledger knows, and the TARGET grammar that names either
// (DESIGN S-1).
//
// # Targets
//
// One optional "a2a:" prefix (any case) is stripped, then the rest is tried, in order, as
//
//  1. a configured peer's name (case-insensitive): a new conversation with it;
//  2. an http(s):// URL: a new conversation with that endpoint;
//  3. the contextId of a known outbound conversation (case-sensitive): continue it with
//     its peer; else the contextId of an inbound conversation of [LocalOwner] (a caller
//     without a token started it with the local gateway): continue it by sending to that
//     gateway, once [Directory.WithGateway] names it ([KindLocal]);
//  4. a prefix of exactly one sendable peer's name (case-insensitive).
//
// A prefix of several names, or a contextId known with several peers, is an
// [*AmbiguousError]; the contextId of an inbound conversation that cannot be continued
// from here (a peer with a token started it: only that peer can continue it; or no local
// gateway answers) is an [*InboundError]; anything else is [ErrUnknownTarget]. [Directory.PeerTarget] and
// [Directory.ConversationTarget] return, for each entry, a string that [Directory.Resolve]
// maps back to exactly that entry, so that a listing never prints a target that fails
// (the Hermes "No home channel set" bug).
//
// # Owners
//
// An outbound conversation is stored in the ledger under the owner "out:" + peer, where
// peer is the configured name, or the URL for a raw-URL target ([Owner], [PeerOfOwner]).
// The "out:" prefix cannot collide with inbound owners: peer names are letters, digits,
// '-', '_' and '.' only.
//
// # Proxies
//
// [NewTransport] reaches loopback, private (RFC 1918, IPv6 ULA), link-local and CGNAT
// (100.64.0.0/10, Tailscale) hosts directly and everything else through the proxy that
// the environment names (HTTP_PROXY, HTTPS_PROXY, NO_PROXY).
//
// # Imports
//
// internal/netx (the direct-dial rule [NewTransport] applies, shared with every outbound
// client of the gateway), contextid (the local owner's name) and the
// standard library (a2a is allowed, not needed).
package peers

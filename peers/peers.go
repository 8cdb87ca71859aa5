package peers

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Peer is a configured peer with its secrets read from the environment. A peer may be
// called by us (URL, Token), call us (Accept), or both.
type Peer struct {
	Name string
	URL  string // "": the peer only calls us
	// Token is the bearer token we send to the peer ("" for none).
	Token string
	// Accept are the bearer tokens the peer presents to us (inbound), rotation included.
	Accept []string
}

// OwnerPrefix starts the ledger owner of every outbound conversation.
const OwnerPrefix = "out:"

// Owner returns the ledger owner of an outbound conversation the operator started with
// peer (a configured name, or the URL of a raw-URL target): "out:" + peer.
func Owner(peer string) string { return OwnerPrefix + peer }

// viaSep separates, in the owner of an outbound conversation an agent's tools started,
// the peer called from the inbound owner whose turn called it. Neither a peer name nor
// an inbound owner can hold it ([ValidName]).
const viaSep = "@"

// TurnOwner returns the ledger owner of an outbound conversation the agent's tools
// started with the configured peer during a turn of the inbound owner via (a peer's
// identity, or the local owner): "out:" + peer + "@" + via. Each inbound owner's tools
// have their own outbound conversations: another peer's turn can neither list, read nor
// continue them, since the owner is part of the conversation's storage key.
func TurnOwner(peer, via string) string { return OwnerPrefix + peer + viaSep + via }

// ParseOwner splits an outbound conversation's owner into the peer it is with and, for
// one a turn's tools started ([TurnOwner]), the inbound owner of that turn ("" for one
// the operator started). ok is false for an owner that is not outbound (or names no
// peer). An owner is read as a turn's only when both halves are valid names, so a
// raw-URL owner holding "@" (in its path) stays the operator's.
func ParseOwner(owner string) (peer, via string, ok bool) {
	p, ok := strings.CutPrefix(owner, OwnerPrefix)
	if !ok || p == "" {
		return "", "", false
	}
	if name, v, cut := strings.Cut(p, viaSep); cut && ValidName(name) && ValidName(v) {
		return name, v, true
	}
	return p, "", true
}

// PeerOfOwner returns the peer of an outbound conversation's owner, and false for an
// owner that is not outbound (or names no peer).
func PeerOfOwner(owner string) (string, bool) {
	p, _, ok := ParseOwner(owner)
	return p, ok
}

// ValidName reports whether s is made only of the characters a peer name may hold:
// letters, digits, '-', '_' and '.' (and is not empty). Such a name holds neither ':'
// nor "@", so it can never be mistaken for an outbound owner or split one.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

// Conversation is an outbound conversation the ledger knows.
type Conversation struct {
	ContextID    string
	Owner        string // as stored: "out:" + Peer
	Peer         string // the configured name, or the URL of a raw-URL conversation
	Turns        int
	LastActivity time.Time
}

// Kind says what a [Target] names.
type Kind int

// Target kinds.
const (
	KindPeer         Kind = iota + 1 // a configured peer: a new conversation
	KindURL                          // a URL that is no configured name: a new conversation
	KindConversation                 // a known conversation: continue it
	// KindLocal is an inbound conversation of [LocalOwner] (a caller without a token
	// started it with the local gateway): continue it by sending to the local gateway
	// itself (see [Directory.WithGateway]); the gateway records the turn.
	KindLocal
)

// String returns "peer", "url" or "conversation".
func (k Kind) String() string {
	switch k {
	case KindPeer:
		return "peer"
	case KindURL:
		return "url"
	case KindConversation:
		return "conversation"
	case KindLocal:
		return "local conversation"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Target is what a TARGET string resolved to: where to send and under which ledger
// owner to record.
type Target struct {
	Kind Kind
	// Name is the configured peer's name; "" for a raw URL (and a conversation with one).
	Name string
	// URL is the peer's A2A URL.
	URL string
	// Token is the peer's bearer token: the configured peer's, or for a raw URL that of
	// the configured peer with the same URL ("" when none).
	Token string
	// ContextID is the conversation's contextId (KindConversation and KindLocal only).
	ContextID string
	// Owner is the ledger owner the exchange is recorded under: the known conversation's
	// own owner, else Owner(Name or URL).
	Owner string
	// Prefix is set when the target matched as a unique prefix of Name.
	Prefix bool
}

// Peer returns the peer as the ledger names it: Name, or URL for a raw URL.
func (t Target) Peer() string {
	if t.Name != "" {
		return t.Name
	}
	return t.URL
}

// Directory resolves targets against the configured peers, the known outbound
// conversations and the local gateway's inbound ones. It is immutable and safe for
// concurrent use.
type Directory struct {
	peers   []Peer
	convs   []Conversation // outbound
	inbound []Conversation // inbound: Owner and Peer are the caller's identity
	gateway string         // the local gateway's A2A URL ("": none answers)
}

// NewDirectory returns the directory of peers (config order) and convs (as listed,
// typically newest first). A conversation whose owner is not outbound is an inbound one
// (a peer called the local gateway): its contextId resolves to [KindLocal] for
// [LocalOwner] once [Directory.WithGateway] names the gateway, and to an
// [*InboundError] otherwise.
func NewDirectory(peers []Peer, convs []Conversation) *Directory {
	d := &Directory{peers: slices.Clone(peers)}
	for _, c := range convs {
		if c.Owner == "" {
			c.Owner = Owner(c.Peer)
		}
		p, ok := PeerOfOwner(c.Owner)
		if !ok {
			c.Peer = c.Owner
			d.inbound = append(d.inbound, c)
			continue
		}
		c.Peer = p
		d.convs = append(d.convs, c)
	}
	return d
}

// Peers returns the peers that can be sent to (those with a URL), in config order.
func (d *Directory) Peers() []Peer {
	var out []Peer
	for _, p := range d.peers {
		if p.URL != "" {
			out = append(out, p)
		}
	}
	return out
}

// Conversations returns the known outbound conversations.
func (d *Directory) Conversations() []Conversation { return slices.Clone(d.convs) }

// stripPrefix removes one leading "a2a:" (any case).
func stripPrefix(s string) string {
	if len(s) >= 4 && strings.EqualFold(s[:4], "a2a:") {
		return s[4:]
	}
	return s
}

// isURL reports whether s starts with http:// or https:// (any case).
func isURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// Resolve maps a TARGET string to what it names (see the package doc for the grammar).
// The string is taken as it is: no spaces are trimmed, since a contextId may hold them.
// Errors: [ErrUnknownTarget] (wrapped, naming the target) for an empty target, a
// malformed URL or no match; [ErrNotSendable] (wrapped) for a peer without a URL or a
// conversation whose peer is no longer configured; [*AmbiguousError] for several matches.
func (d *Directory) Resolve(target string) (Target, error) {
	s := stripPrefix(target)
	if s == "" {
		return Target{}, fmt.Errorf("empty target: %w", ErrUnknownTarget)
	}
	// 1. A configured name.
	for _, p := range d.peers {
		if strings.EqualFold(p.Name, s) {
			return d.peerTarget(target, p, false)
		}
	}
	// 2. A URL.
	if isURL(s) {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || u.User != nil {
			return Target{}, fmt.Errorf("target %q: want http(s)://host[:port]/path, without user:password@: %w", target, ErrUnknownTarget)
		}
		return Target{Kind: KindURL, URL: s, Token: d.tokenFor(s), Owner: Owner(s)}, nil
	}
	// 3. A known contextId.
	var found []Conversation
	for _, c := range d.convs {
		if c.ContextID == s {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		if t, ok, err := d.inboundTarget(target, s); ok {
			return t, err
		}
	case 1:
		return d.conversationTarget(target, found[0])
	default:
		cands := make([]string, len(found))
		for i, c := range found {
			cands[i] = c.Peer
		}
		slices.Sort(cands)
		return Target{}, &AmbiguousError{Target: target, ContextID: s, Candidates: slices.Compact(cands)}
	}
	// 4. A unique prefix of a sendable name.
	var cands []Peer
	for _, p := range d.peers {
		if p.URL != "" && len(p.Name) >= len(s) && strings.EqualFold(p.Name[:len(s)], s) {
			cands = append(cands, p)
		}
	}
	switch len(cands) {
	case 0:
		return Target{}, fmt.Errorf("target %q: %w", target, ErrUnknownTarget)
	case 1:
		return d.peerTarget(target, cands[0], true)
	}
	names := make([]string, len(cands))
	for i, p := range cands {
		names[i] = p.Name
	}
	slices.Sort(names)
	return Target{}, &AmbiguousError{Target: target, Candidates: names}
}

func (d *Directory) peerTarget(target string, p Peer, prefix bool) (Target, error) {
	if p.URL == "" {
		return Target{}, fmt.Errorf("target %q: peer %q has no url (it only calls us): %w", target, p.Name, ErrNotSendable)
	}
	return Target{Kind: KindPeer, Name: p.Name, URL: p.URL, Token: p.Token, Owner: Owner(p.Name), Prefix: prefix}, nil
}

func (d *Directory) conversationTarget(target string, c Conversation) (Target, error) {
	t := Target{Kind: KindConversation, ContextID: c.ContextID, Owner: c.Owner}
	if isURL(c.Peer) {
		t.URL, t.Token = c.Peer, d.tokenFor(c.Peer)
		return t, nil
	}
	for _, p := range d.peers {
		if strings.EqualFold(p.Name, c.Peer) && p.URL != "" {
			t.Name, t.URL, t.Token = p.Name, p.URL, p.Token
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("target %q: conversation %q was with peer %q, which is no longer configured with a url: %w",
		target, c.ContextID, c.Peer, ErrNotSendable)
}

// tokenFor returns the token of the configured peer whose URL is u (ignoring a trailing
// slash), or "".
func (d *Directory) tokenFor(u string) string {
	for _, p := range d.peers {
		if p.URL != "" && strings.TrimRight(p.URL, "/") == strings.TrimRight(u, "/") {
			return p.Token
		}
	}
	return ""
}

// PeerTarget returns a string that Resolve maps to a new conversation with p: its name,
// or "a2a:" + its name. It returns "" if p cannot be sent to or no such string names it.
func (d *Directory) PeerTarget(p Peer) string {
	for _, s := range []string{p.Name, "a2a:" + p.Name} {
		if t, err := d.Resolve(s); err == nil && t.Kind == KindPeer && t.Name == p.Name && !t.Prefix {
			return s
		}
	}
	return ""
}

// ConversationTarget returns a string that Resolve maps to continuing c: its contextId,
// or "a2a:" + its contextId when that is needed (a contextId that itself starts with
// "a2a:"). It returns "" when no target names c: its contextId is shadowed by a peer
// name or a URL, is known with several peers, or its peer is no longer configured. Such a
// conversation is continued with its peer as the target and an explicit contextId.
func (d *Directory) ConversationTarget(c Conversation) string {
	owner := c.Owner
	if owner == "" {
		owner = Owner(c.Peer)
	}
	for _, s := range []string{c.ContextID, "a2a:" + c.ContextID} {
		if t, err := d.Resolve(s); err == nil && (t.Kind == KindConversation || t.Kind == KindLocal) && t.ContextID == c.ContextID && t.Owner == owner {
			return s
		}
	}
	return ""
}

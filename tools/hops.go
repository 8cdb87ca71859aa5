package tools

import (
	"encoding/json"
	"net/url"
	"strings"
)

// HopsExtension is the A2A extension (declared in the agent card, the key of a
// message's metadata) that carries a call's hop count and chain.
const HopsExtension = "https://github.com/a2a-gateway/gateway/extensions/hops/v1"

// DefaultHopLimit is the hop limit when Config.HopLimit is zero.
const DefaultHopLimit = 4

// Hops is the value under [HopsExtension]: how many agent-to-agent calls led to this
// message, and through which gateways and conversations (oldest first).
type Hops struct {
	Hop   int    `json:"hop"`
	Chain []Link `json:"chain"`
}

// Link is one step of a chain: the gateway that called (its A2A URL) and the
// conversation the call was made from.
type Link struct {
	URL       string `json:"url"`
	ContextID string `json:"contextId"`
}

// hopsOf reads the hop data of an inbound message's metadata (zero when absent or
// malformed: a message from outside counts as hop 0).
func hopsOf(meta map[string]any) Hops {
	v, ok := meta[HopsExtension]
	if !ok {
		return Hops{}
	}
	raw, err := json.Marshal(v)
	var h Hops
	if err != nil || json.Unmarshal(raw, &h) != nil || h.Hop < 0 {
		return Hops{}
	}
	return h
}

// next is the hop data of a call made from contextID at the gateway self.
func (h Hops) next(self, contextID string) Hops {
	chain := append(h.Chain[:len(h.Chain):len(h.Chain)], Link{URL: self, ContextID: contextID})
	return Hops{Hop: h.Hop + 1, Chain: chain}
}

// loops reports the link of the chain that a call to peerURL (in contextID, "" for a new
// conversation) would return to, if any.
func (h Hops) loops(peerURL, contextID string) (Link, bool) {
	for _, l := range h.Chain {
		if sameURL(l.URL, peerURL) || (contextID != "" && l.ContextID == contextID) {
			return l, true
		}
	}
	return Link{}, false
}

// sameURL compares two A2A URLs by scheme, host and path, ignoring case where URLs do and
// a trailing slash.
func sameURL(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil || a == "" || b == "" {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimRight(ua.Path, "/") == strings.TrimRight(ub.Path, "/")
}

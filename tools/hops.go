package tools

import (
	"net/url"
	"strings"

	"github.com/a2a-gateway/gateway/a2a"
)

// HopsExtension is the key of the hop data in a message's metadata ([a2a.HopsExtension]).
const HopsExtension = a2a.HopsExtension

// DefaultHopLimit is the hop limit when Config.HopLimit is zero.
const DefaultHopLimit = 4

// hopsOf reads the hop data of an inbound message's metadata. The turn refused a
// message whose hop data is malformed before it stored anything (turn.checkHops), so an
// error here means none was given: zero, as for a message from outside.
func hopsOf(meta map[string]any) a2a.Hops {
	h, err := a2a.ParseHops(meta)
	if err != nil {
		return a2a.Hops{}
	}
	return h
}

// loops reports the link of chain h that a call to peerURL (in contextID, "" for a new
// conversation) would return to, if any.
func loops(h a2a.Hops, peerURL, contextID string) (a2a.HopLink, bool) {
	for _, l := range h.Chain {
		if sameURL(l.URL, peerURL) || (contextID != "" && l.ContextID == contextID) {
			return l, true
		}
	}
	return a2a.HopLink{}, false
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

package a2a

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
)

// HopsExtension is the A2A extension (declared in the agent card, the key of a
// message's metadata) that carries an agent-to-agent call's hop count and chain.
const HopsExtension = "https://github.com/a2a-gateway/gateway/extensions/hops/v1"

// Bounds of a well-formed [Hops] value: a larger hop count or a longer chain is refused
// rather than trusted (no gateway's hop limit comes near them).
const (
	MaxHop      = 1000
	MaxHopChain = 64
)

// Hops is the value under [HopsExtension]: how many agent-to-agent calls led to a
// message, and through which gateways and conversations (oldest first).
type Hops struct {
	Hop   int       `json:"hop"`
	Chain []HopLink `json:"chain"`
}

// HopLink is one step of a chain: the gateway that called (its A2A URL) and the
// conversation the call was made from.
type HopLink struct {
	URL       string `json:"url"`
	ContextID string `json:"contextId"`
}

// HopsError says why a message's hop metadata is refused; Field is where, as a
// params path ("message.metadata[…].hop").
type HopsError struct {
	Field  string
	Reason string
}

func (e *HopsError) Error() string { return e.Field + ": " + e.Reason }

// ParseHops reads the [HopsExtension] value of a message's metadata. A message without
// the key has the zero Hops (a message from outside is hop 0). A value that is present
// but malformed is a [*HopsError], never read as zero: a hop count that is not a whole
// number in [0, MaxHop] (a string such as "99", -1, 1.5), a chain that is not a list of
// {url, contextId} strings, or one longer than MaxHopChain.
func ParseHops(meta map[string]any) (Hops, error) {
	v, ok := meta[HopsExtension]
	if !ok {
		return Hops{}, nil
	}
	field := "message.metadata[" + HopsExtension + "]"
	obj, ok := v.(map[string]any)
	if !ok {
		return Hops{}, &HopsError{Field: field, Reason: "must be an object {hop, chain}"}
	}
	hop, err := parseHop(obj["hop"])
	if err != nil {
		return Hops{}, &HopsError{Field: field + ".hop", Reason: err.Error()}
	}
	chain, err := parseChain(obj["chain"])
	if err != nil {
		return Hops{}, &HopsError{Field: field + ".chain", Reason: err.Error()}
	}
	return Hops{Hop: hop, Chain: chain}, nil
}

// parseHop reads a hop count: a JSON number (float64 or json.Number, as decoders give
// it) holding a whole number in [0, MaxHop].
func parseHop(v any) (int, error) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case json.Number:
		x, err := n.Float64()
		if err != nil {
			return 0, fmt.Errorf("must be a whole number from 0 to %d", MaxHop)
		}
		f = x
	case int:
		f = float64(n)
	case nil:
		return 0, fmt.Errorf("is required (a whole number from 0 to %d)", MaxHop)
	default:
		return 0, fmt.Errorf("must be a number, not %s", jsonKind(v))
	}
	if f != math.Trunc(f) || f < 0 || f > MaxHop {
		return 0, fmt.Errorf("must be a whole number from 0 to %d", MaxHop)
	}
	return int(f), nil
}

// parseChain reads a chain: absent or a list of at most MaxHopChain {url, contextId}
// objects whose url is an http(s) URL.
func parseChain(v any) ([]HopLink, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("must be a list, not %s", jsonKind(v))
	}
	if len(list) > MaxHopChain {
		return nil, fmt.Errorf("has %d links, more than %d", len(list), MaxHopChain)
	}
	chain := make([]HopLink, 0, len(list))
	for i, item := range list {
		obj, ok := item.(map[string]any)
		u, uok := obj["url"].(string)
		c, cok := obj["contextId"].(string)
		_, hasCtx := obj["contextId"]
		if !ok || !uok || (hasCtx && !cok) || !httpURL(u) {
			return nil, fmt.Errorf("[%d] must be {\"url\": an http(s) URL, \"contextId\": a string}", i)
		}
		chain = append(chain, HopLink{URL: u, ContextID: c})
	}
	return chain, nil
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https"))
}

// jsonKind names the JSON type of a decoded value, for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// Next is the hop data of a call made from contextID at the gateway self: one more hop,
// the chain extended by that link.
func (h Hops) Next(self, contextID string) Hops {
	chain := append(h.Chain[:len(h.Chain):len(h.Chain)], HopLink{URL: self, ContextID: contextID})
	return Hops{Hop: h.Hop + 1, Chain: chain}
}

// Merge is h raised by o: the larger hop count, and h's chain followed by the links of
// o's that h lacks. A caller cannot lower what a conversation already carried by sending
// a smaller count (or none) on a later message.
func (h Hops) Merge(o Hops) Hops {
	out := Hops{Hop: max(h.Hop, o.Hop), Chain: h.Chain[:len(h.Chain):len(h.Chain)]}
	for _, l := range o.Chain {
		found := false
		for _, m := range out.Chain {
			if m == l {
				found = true
				break
			}
		}
		if !found {
			out.Chain = append(out.Chain, l)
		}
	}
	return out
}

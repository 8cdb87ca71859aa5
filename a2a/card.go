package a2a

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"time"
)

// CardPath is the well-known path of the agent card.
const CardPath = "/.well-known/agent-card.json"

// Extension URIs the gateway declares in its card.
const (
	// ExtAppendOnly: replies stream as append-only artifact chunks (no message editing);
	// each SSE frame's id is its sequence number and Last-Event-ID resumes after it.
	ExtAppendOnly = "https://github.com/a2a-gateway/gateway/ext/append-only-replies/v1"
	// ExtHistoryBoundary: the agent receives prior turns of the context wrapped in a
	// "reference only, not new instructions" boundary.
	ExtHistoryBoundary = "https://github.com/a2a-gateway/gateway/ext/history-boundary/v1"
)

// CardConfig describes the agent behind the gateway for its card. Zero fields get
// defaults.
type CardConfig struct {
	Name        string // "" = "A2A conversation gateway"
	Description string
	Version     string // "" = "0.1.0"
	// URL is the public JSON-RPC endpoint; "" = derived per request from its Host.
	URL string
	// BearerAuth declares the bearer security scheme (peer tokens configured) and, with
	// it, the authenticated extended card (supportsAuthenticatedExtendedCard,
	// capabilities.extendedAgentCard): the JSON-RPC endpoint must then authenticate
	// every request, GetExtendedAgentCard included. Without it the card declares no
	// extended card: the spec has it "available only" to authenticated callers.
	BearerAuth bool
	// PushNotifications declares capabilities.pushNotifications: the push config methods
	// are served (push enabled).
	PushNotifications bool
	// Extensions are further extensions to declare (URI, description), after the
	// gateway's own.
	Extensions []CardExtension
	// HTTPJSON declares the HTTP+JSON binding (v1.0, [HTTPJSONHandler]) at URL in
	// supportedInterfaces. It is not offered to v0.3 clients (additionalInterfaces): the
	// v0.3 REST mapping (/v1/...) is not served.
	HTTPJSON bool
	// Interfaces are further supportedInterfaces of the v1.0 card, after the JSON-RPC and
	// HTTP+JSON ones (other bindings, e.g. GRPC). They are not offered to v0.3 clients
	// (additionalInterfaces), whose protocol they do not speak.
	Interfaces []CardInterface
	// Modified is the card's Last-Modified time (when its configuration was loaded);
	// zero: the time [NewCardHandler] is called.
	Modified time.Time
}

// Card is the union agent card: the v1.0 fields and the v0.3 fields side by side, so
// clients of either version read it.
type Card struct {
	Name                              string                `json:"name"`
	Description                       string                `json:"description"`
	Version                           string                `json:"version"`
	SupportedInterfaces               []cardInterfaceV1     `json:"supportedInterfaces"`
	ProtocolVersion                   string                `json:"protocolVersion"`
	URL                               string                `json:"url"`
	PreferredTransport                string                `json:"preferredTransport"`
	AdditionalInterfaces              []cardInterfaceV03    `json:"additionalInterfaces"`
	Capabilities                      cardCapabilities      `json:"capabilities"`
	DefaultInputModes                 []string              `json:"defaultInputModes"`
	DefaultOutputModes                []string              `json:"defaultOutputModes"`
	Skills                            []cardSkill           `json:"skills"`
	SupportsAuthenticatedExtendedCard bool                  `json:"supportsAuthenticatedExtendedCard"`
	SecuritySchemes                   map[string]any        `json:"securitySchemes,omitempty"`
	Security                          []map[string][]string `json:"security,omitempty"`
	SecurityRequirements              []map[string]any      `json:"securityRequirements,omitempty"`

	bearer bool // cfg.BearerAuth, for V1
}

// CardV1 is the pure v1.0 agent card (the v1.0 AgentCard schema allows no other member):
// what a request that says A2A-Version 1.0 gets.
type CardV1 struct {
	Name                 string             `json:"name"`
	Description          string             `json:"description"`
	Version              string             `json:"version"`
	SupportedInterfaces  []cardInterfaceV1  `json:"supportedInterfaces"`
	Capabilities         cardCapabilitiesV1 `json:"capabilities"`
	DefaultInputModes    []string           `json:"defaultInputModes"`
	DefaultOutputModes   []string           `json:"defaultOutputModes"`
	Skills               []cardSkill        `json:"skills"`
	SecuritySchemes      map[string]any     `json:"securitySchemes,omitempty"`
	SecurityRequirements []map[string]any   `json:"securityRequirements,omitempty"`
}

type cardCapabilitiesV1 struct {
	Streaming         bool            `json:"streaming"`
	PushNotifications bool            `json:"pushNotifications"`
	ExtendedAgentCard bool            `json:"extendedAgentCard"`
	Extensions        []cardExtension `json:"extensions"`
}

// V1 returns the card's v1.0 members only, with the security scheme in its v1.0 form.
func (c *Card) V1() *CardV1 {
	v := &CardV1{
		Name: c.Name, Description: c.Description, Version: c.Version,
		SupportedInterfaces: c.SupportedInterfaces,
		Capabilities: cardCapabilitiesV1{
			Streaming: c.Capabilities.Streaming, PushNotifications: c.Capabilities.PushNotifications,
			ExtendedAgentCard: c.Capabilities.ExtendedAgentCard, Extensions: c.Capabilities.Extensions,
		},
		DefaultInputModes: c.DefaultInputModes, DefaultOutputModes: c.DefaultOutputModes,
		Skills: c.Skills,
	}
	if c.bearer {
		v.SecuritySchemes = map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "bearer"}}}
		v.SecurityRequirements = c.SecurityRequirements
	}
	return v
}

type cardInterfaceV1 struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type cardInterfaceV03 struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// CardInterface is a further interface a [CardConfig] declares: a binding of protocol
// version 1.0 at URL, or, when URL is "", at the card endpoint's host with Port (gRPC's
// URL is host:port, specification §10).
type CardInterface struct {
	Binding string // protocolBinding: "GRPC", "HTTP+JSON"
	URL     string
	Port    string
}

// url returns i's URL for a card whose JSON-RPC endpoint is endpoint.
func (i CardInterface) url(endpoint string) string {
	if i.URL != "" {
		return i.URL
	}
	host := endpoint
	if u, err := neturl.Parse(endpoint); err == nil && u.Host != "" {
		host = u.Hostname()
	}
	return net.JoinHostPort(host, i.Port)
}

// CardExtension is an extension a [CardConfig] declares besides the gateway's own.
type CardExtension struct {
	URI         string
	Description string
	// Params are the extension's parameters (its "params" object); nil: none. A
	// [CardURL] value is published as an absolute URL on the card's endpoint.
	Params map[string]any
}

// CardURL is a card extension parameter naming a path of this server ("/x"): the card
// publishes it resolved against its endpoint URL.
type CardURL string

type cardExtension struct {
	URI         string         `json:"uri"`
	Description string         `json:"description"`
	Required    bool           `json:"required"`
	Params      map[string]any `json:"params,omitempty"`
}

type cardCapabilities struct {
	Streaming              bool            `json:"streaming"`
	PushNotifications      bool            `json:"pushNotifications"`
	StateTransitionHistory bool            `json:"stateTransitionHistory"`
	ExtendedAgentCard      bool            `json:"extendedAgentCard"`
	Extensions             []cardExtension `json:"extensions"`
}

type cardSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

// BuildCard returns the card for an endpoint at url.
func BuildCard(cfg CardConfig, url string) *Card {
	if cfg.Name == "" {
		cfg.Name = "A2A conversation gateway"
	}
	if cfg.Description == "" {
		cfg.Description = "Multi-turn A2A conversations: one running task per contextId, a durable append-only ledger, prior turns injected as reference only, append-only streaming."
	}
	if cfg.Version == "" {
		cfg.Version = "0.1.0"
	}
	c := &Card{
		Name:        cfg.Name,
		Description: cfg.Description,
		Version:     cfg.Version,
		SupportedInterfaces: []cardInterfaceV1{
			{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		},
		ProtocolVersion:      "0.3.0",
		URL:                  url,
		PreferredTransport:   "JSONRPC",
		AdditionalInterfaces: []cardInterfaceV03{{URL: url, Transport: "JSONRPC"}},
		Capabilities: cardCapabilities{
			Streaming:         true,
			PushNotifications: cfg.PushNotifications,
			ExtendedAgentCard: cfg.BearerAuth,
			Extensions: []cardExtension{
				{URI: ExtAppendOnly, Description: "Replies stream as append-only artifact chunks with one stable artifactId (append: true after the first, lastChunk: true on the last); no message is ever edited or replaced, and the final reply equals the concatenation of the chunks, byte for byte. Every event carries its context's sequence number (SSE id:, WebSocket result.seq); events are stored before they are sent. To resume: SubscribeToTask or tasks/resubscribe with Last-Event-ID (also after the task ended), or conversations/subscribe {contextId, afterSeq} on GET /ws; what was missed is replayed from the ledger, then the stream continues live, with no gap and no duplicate."},
				{URI: ExtHistoryBoundary, Description: "The agent behind the gateway receives the prior turns of the contextId wrapped in a boundary marking them as reference only, not new instructions; only original messages are stored."},
			},
		},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []cardSkill{{
			ID:          "conversation",
			Name:        "Multi-turn conversation",
			Description: "Send messages with a contextId to hold a conversation; the agent sees the earlier turns of that context.",
			Tags:        []string{"conversation", "chat", "multi-turn"},
			Examples:    []string{"hello", "continue where we left off"},
		}},
		SupportsAuthenticatedExtendedCard: cfg.BearerAuth,
		bearer:                            cfg.BearerAuth,
	}
	c.addInterfaces(cfg, url)
	for _, e := range cfg.Extensions {
		c.Capabilities.Extensions = append(c.Capabilities.Extensions, cardExtension{URI: e.URI, Description: e.Description, Params: cardParams(e.Params, url)})
	}
	if cfg.BearerAuth {
		c.SecuritySchemes = map[string]any{"bearer": map[string]any{
			"type": "http", "scheme": "bearer",
			"httpAuthSecurityScheme": map[string]any{"scheme": "bearer"},
		}}
		c.Security = []map[string][]string{{"bearer": {}}}
		c.SecurityRequirements = []map[string]any{{"schemes": map[string]any{"bearer": map[string]any{"list": []string{}}}}}
	}
	return c
}

// addInterfaces declares HTTP+JSON and cfg.Interfaces after the JSON-RPC v1.0
// interface (the first, preferred one) and before the v0.3 one, so that the first
// interface of each binding is its v1.0 one.
func (c *Card) addInterfaces(cfg CardConfig, url string) {
	v1 := c.SupportedInterfaces[:1:1]
	if cfg.HTTPJSON {
		// The base its paths are appended to ("/message:send"): no trailing slash.
		v1 = append(v1, cardInterfaceV1{URL: strings.TrimSuffix(url, "/"), ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"})
	}
	for _, i := range cfg.Interfaces {
		v1 = append(v1, cardInterfaceV1{URL: i.url(url), ProtocolBinding: i.Binding, ProtocolVersion: "1.0"})
	}
	c.SupportedInterfaces = append(v1, c.SupportedInterfaces[1:]...)
}

// cardParams returns params with each [CardURL] resolved against the endpoint base.
func cardParams(params map[string]any, base string) map[string]any {
	if params == nil {
		return nil
	}
	out := make(map[string]any, len(params))
	for k, v := range params {
		if p, ok := v.(CardURL); ok {
			v = resolveCardURL(base, string(p))
		}
		out[k] = v
	}
	return out
}

// resolveCardURL resolves ref against base (an absolute endpoint URL); a base that does
// not parse leaves ref as it is.
func resolveCardURL(base, ref string) string {
	b, err := neturl.Parse(base)
	r, rerr := neturl.Parse(ref)
	if err != nil || rerr != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}

// RequestBaseURL returns the endpoint URL of the server that r reached ("http://host/").
func RequestBaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host + "/"
}

// CardJSON returns the union card JSON for a request: cfg.URL, or the URL the request
// reached.
func CardJSON(cfg CardConfig, r *http.Request) ([]byte, error) {
	return CardJSONFor(cfg, r, V03)
}

// CardJSONFor returns the card JSON for a request in dialect d: the pure v1.0 card for
// [V1], the union of both versions for [V03] (v0.3 clients and clients that name no
// version read it). The endpoint is cfg.URL, or the URL the request reached.
func CardJSONFor(cfg CardConfig, r *http.Request, d Dialect) ([]byte, error) {
	url := cfg.URL
	if url == "" {
		url = RequestBaseURL(r)
	}
	c := BuildCard(cfg, url)
	if d == V1 {
		return json.Marshal(c.V1())
	}
	return json.Marshal(c)
}

// NewCardHandler serves the agent card with caching headers (Cache-Control, ETag,
// Last-Modified; If-None-Match and If-Modified-Since answer 304). A request whose
// A2A-Version header (or query parameter) is 1.0 (Major.Minor; any patch) gets the pure
// v1.0 card; any other gets the union card: no version and 0.3, and also a version the
// gateway does not speak (1.1, 2.0), which is not refused: the card is how a client
// learns the versions served (supportedInterfaces[].protocolVersion), and answering 1.1
// in the 1.0 format would claim a version the gateway does not implement.
func NewCardHandler(cfg CardConfig) http.Handler {
	modified := cfg.Modified
	if modified.IsZero() {
		modified = time.Now()
	}
	modified = modified.UTC().Truncate(time.Second) // HTTP dates have whole seconds
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		d, _, _ := headerDialect(r)
		b, err := CardJSONFor(cfg, r, d)
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		sum := sha256.Sum256(b)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("ETag", etag)
		h.Set("Last-Modified", modified.Format(http.TimeFormat))
		h.Set("Vary", "Host, A2A-Version")
		if notModified(r, etag, modified) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(b)
	})
}

// notModified evaluates the conditional headers (RFC 9110 §13.2.2): If-None-Match when
// present, otherwise If-Modified-Since.
func notModified(r *http.Request, etag string, modified time.Time) bool {
	if inm := strings.TrimSpace(r.Header.Get("If-None-Match")); inm != "" {
		return inm == "*" || strings.Contains(inm, etag)
	}
	ims, err := http.ParseTime(r.Header.Get("If-Modified-Since"))
	return err == nil && !modified.After(ims)
}

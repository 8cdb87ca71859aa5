package peers

import (
	"net/http"

	"github.com/a2a-gateway/gateway/internal/netx"
)

// NewTransport returns the transport of `gateway send`: a clone of http.DefaultTransport
// whose proxy is http.ProxyFromEnvironment except for local and CGNAT (Tailscale) hosts,
// which are always reached directly (a proxy from the environment cannot reach a
// Tailscale or LAN peer; Hermes #78397). The rule is [netx.IsLocalHost], shared with the
// relay agent and the chat backends.
func NewTransport() *http.Transport { return netx.NewTransport() }

package agent

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/a2a-gateway/gateway/internal/netx/netxtest"
)

// TestHTTPClientDialsLocalDirect: a chat backend without a configured client reaches a
// model server on a Tailscale (CGNAT) or LAN address directly although HTTP_PROXY is set
// (the rule of internal/netx; the table of hosts is netx's). The relay agent's default
// client is a2aclient's, checked in a2a/client.
func TestHTTPClientDialsLocalDirect(t *testing.T) {
	t.Parallel()
	netxtest.CheckDirect(t, func() func(*http.Request) (*url.URL, error) {
		return newHTTPClient().Transport.(*http.Transport).Proxy
	})
}

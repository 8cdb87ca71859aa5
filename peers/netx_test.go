package peers

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/a2a-gateway/gateway/internal/netx/netxtest"
)

// TestNewTransportDialsLocalDirect: `gateway send` reaches a Tailscale (CGNAT) or LAN
// peer directly although HTTP_PROXY is set (the rule of internal/netx; the table of hosts
// is netx's).
func TestNewTransportDialsLocalDirect(t *testing.T) {
	t.Parallel()
	netxtest.CheckDirect(t, func() func(*http.Request) (*url.URL, error) { return NewTransport().Proxy })
}

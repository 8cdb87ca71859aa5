package peers

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// cgnat is 100.64.0.0/10 (RFC 6598), where Tailscale puts its nodes.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// IsLocalHost reports whether host (a URL's Hostname) is localhost or a loopback,
// private (RFC 1918, IPv6 ULA), link-local, unspecified or CGNAT (100.64.0.0/10)
// address. Names other than localhost are not resolved: they are not local.
func IsLocalHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || cgnat.Contains(ip)
}

// BypassLocal returns a proxy func for [http.Transport] that reaches local hosts (see
// [IsLocalHost]) directly and asks next for every other request.
func BypassLocal(next func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		if IsLocalHost(req.URL.Hostname()) {
			return nil, nil
		}
		return next(req)
	}
}

// NewTransport returns a clone of http.DefaultTransport whose proxy is
// http.ProxyFromEnvironment except for local hosts, which are always reached directly (a
// proxy from the environment cannot reach a Tailscale or LAN peer; Hermes #78397).
func NewTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = BypassLocal(http.ProxyFromEnvironment)
	return tr
}

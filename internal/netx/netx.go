package netx

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// cgnat is 100.64.0.0/10 (RFC 6598), where Tailscale puts its nodes.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// IsLocalHost reports whether host (a URL's Hostname, with or without brackets and an
// IPv6 zone) is localhost, a name under .localhost, or a loopback, private, link-local,
// unspecified or CGNAT address (an IPv4-mapped IPv6 address counts as its IPv4 address).
// Other names are not resolved: they are not local.
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

// ProxyUnlessLocal returns a proxy func for [http.Transport] that reaches local hosts
// (see [IsLocalHost]) directly and asks proxy about every other request; a nil proxy is
// [http.ProxyFromEnvironment].
func ProxyUnlessLocal(proxy func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	return func(req *http.Request) (*url.URL, error) {
		if IsLocalHost(req.URL.Hostname()) {
			return nil, nil
		}
		return proxy(req)
	}
}

// NewTransport returns a clone of [http.DefaultTransport] whose proxy is
// [http.ProxyFromEnvironment] except for local hosts, which are always reached directly.
func NewTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = ProxyUnlessLocal(http.ProxyFromEnvironment)
	return tr
}

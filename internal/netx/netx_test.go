package netx

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/internal/netx/netxtest"
)

// Hosts is the one table of the direct-dial rule. The callers' tests (peers, a2a/client,
// agent) check that their transports follow it for a CGNAT host, so that a caller that
// stops using this package fails.
var hosts = []struct {
	host   string
	direct bool
}{
	{"localhost", true},
	{"LOCALHOST.", true},
	{"agent.localhost", true},
	{"127.0.0.1", true},
	{"127.9.9.9", true},
	{"::1", true},
	{"[::1]", true},
	{"0.0.0.0", true},
	{"10.1.2.3", true},
	{"172.16.0.1", true},
	{"172.31.255.255", true},
	{"192.168.1.10", true},
	{"fc00::1", true},
	{"fd7a:115c:a1e0::1", true}, // Tailscale IPv6 (ULA)
	{"fe80::1", true},
	{"fe80::1%eth0", true},
	{"169.254.1.1", true},
	{"100.64.0.1", true},      // Tailscale (CGNAT)
	{"100.100.100.100", true}, // Tailscale's MagicDNS address
	{"100.127.255.254", true}, // end of 100.64.0.0/10
	{"::ffff:10.0.0.1", true}, // IPv4-mapped
	{"::ffff:100.64.0.1", true},
	{"100.63.255.255", false},
	{"100.128.0.1", false},
	{"172.32.0.1", false},
	{"8.8.8.8", false},
	{"2001:db8::1", false},
	{"agent.example", false},
	{"localhost.example", false},
	{"macmini", false}, // names are not resolved
	{"", false},
}

func TestIsLocalHost(t *testing.T) {
	t.Parallel()
	for _, tt := range hosts {
		if got := IsLocalHost(tt.host); got != tt.direct {
			t.Errorf("IsLocalHost(%q) = %v, want %v", tt.host, got, tt.direct)
		}
	}
}

func TestProxyUnlessLocal(t *testing.T) {
	t.Parallel()
	proxy, _ := url.Parse("http://proxy.example:3128")
	fn := ProxyUnlessLocal(func(*http.Request) (*url.URL, error) { return proxy, nil })
	for _, tt := range hosts {
		if tt.host == "" || tt.host == "[::1]" || tt.host == "fe80::1%eth0" {
			continue // not a URL host as written
		}
		u := &url.URL{Scheme: "http", Host: tt.host, Path: "/"}
		if strings.Contains(tt.host, ":") {
			u.Host = "[" + tt.host + "]:8080"
		}
		req := &http.Request{Method: http.MethodGet, URL: u}
		got, err := fn(req)
		if err != nil {
			t.Fatalf("proxy(%s) error = %v", u, err)
		}
		if direct := got == nil; direct != tt.direct {
			t.Errorf("proxy(%s) = %v, want direct %v", u, got, tt.direct)
		}
	}
}

func TestNewTransport(t *testing.T) {
	t.Parallel()
	tr := NewTransport()
	if tr.Proxy == nil {
		t.Fatal("NewTransport().Proxy = nil, want the environment's proxy for non-local hosts")
	}
	if tr == http.DefaultTransport {
		t.Fatal("NewTransport() returned http.DefaultTransport, want a clone")
	}
}

// TestNewTransportDrift runs the caller check on this package's own transport.
func TestNewTransportDrift(t *testing.T) {
	t.Parallel()
	netxtest.CheckDirect(t, func() func(*http.Request) (*url.URL, error) { return NewTransport().Proxy })
}

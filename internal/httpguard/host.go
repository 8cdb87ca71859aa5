package httpguard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Hosts is an allow-list of the Host names a listener serves. Always served: IP
// literals (an address cannot be rebound to another server: a browser sends an IP as
// Host only to that IP), "localhost", and requests without a Host (HTTP/1.0 clients);
// every other name must be listed. The zero value serves only those.
type Hosts struct {
	any   bool
	names map[string]bool // lower-case names served on any port
	ports map[string]bool // lower-case "name:port" pairs served on that port only
}

// NewHosts returns the allow-list of entries: host names, each with an optional
// ":port" (then only that port is served under that name), compared case-insensitively;
// "*" serves any Host. Empty entries are ignored. Errors: an entry that is not a host
// name (it names the entry).
func NewHosts(entries ...string) (*Hosts, error) {
	h := &Hosts{names: map[string]bool{}, ports: map[string]bool{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case e == "*":
			h.any = true
			continue
		case strings.ContainsAny(e, "/ @?#"):
			return nil, fmt.Errorf("allowed host %q: want a host name with an optional :port, not a URL", e)
		}
		name, port := splitHostPort(e)
		if name == "" {
			return nil, fmt.Errorf("allowed host %q: no host name", e)
		}
		if port == "" {
			h.names[name] = true
		} else {
			h.ports[net.JoinHostPort(name, port)] = true
		}
	}
	return h, nil
}

// splitHostPort splits a Host header value ("name", "name:port", "[v6]", "[v6]:port")
// and returns the name lower-cased, without brackets and without one trailing dot.
func splitHostPort(hostport string) (name, port string) {
	name = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		name, port = h, p
	} else {
		name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	}
	return strings.ToLower(strings.TrimSuffix(name, ".")), port
}

// Allowed reports whether a request with Host header host is served.
func (h *Hosts) Allowed(host string) bool {
	if host == "" || h.any {
		return true
	}
	name, port := splitHostPort(host)
	if name == "localhost" || h.names[name] {
		return true
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	return port != "" && h.ports[net.JoinHostPort(name, port)]
}

// Refuse answers 421 Misdirected Request with a short text that names the refused Host
// (cut to 100 bytes) and hint (e.g. which flag to set), and closes the connection (the
// body is not read).
func Refuse(w http.ResponseWriter, host, hint string) {
	if len(host) > 100 {
		host = host[:100] + "..."
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Connection", "close")
	w.WriteHeader(http.StatusMisdirectedRequest)
	fmt.Fprintf(w, "misdirected request: this server does not serve the host %q; %s\n", host, hint)
}

// Handler returns next behind the allow-list: a request whose Host is not allowed is
// answered by [Refuse] with hint, before next sees it.
func (h *Hosts) Handler(next http.Handler, hint string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.Allowed(r.Host) {
			Refuse(w, r.Host, hint)
			return
		}
		next.ServeHTTP(w, r)
	})
}

package push

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// ErrRefused is matched (errors.Is) by every [*URLError]: the guard would not send to
// the URL.
var ErrRefused = errors.New("push URL refused")

// URLError is the guard's refusal of a webhook URL: a malformed URL, a scheme other than
// https (http only with [GuardOptions.AllowHTTP]), a host that does not resolve, or a
// resolved address in a refused range. errors.Is(err, [ErrRefused]) holds for it.
type URLError struct {
	URL    string // the URL as given, with any password redacted
	Reason string // why, e.g. "127.0.0.1 is a loopback address (allow it with --push-allow)"
	// Err is the underlying failure when the host could not be resolved (a DNS error),
	// nil for a refusal by the guard's rules. A delivery whose host does not resolve is
	// retried; one the rules refuse is not.
	Err error
}

func (e *URLError) Error() string {
	return fmt.Sprintf("push URL %q refused: %s", e.URL, e.Reason)
}

// Unwrap returns [ErrRefused] and the lookup error, if any.
func (e *URLError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrRefused, e.Err}
	}
	return []error{ErrRefused}
}

// Resolver looks host names up; [net.DefaultResolver] is one, and tests pass their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// GuardOptions configure a [Guard]. The zero value refuses every non-public address and
// every http URL, and resolves with [net.DefaultResolver].
type GuardOptions struct {
	// Allow are address ranges allowed although a refused range holds them (e.g. a
	// receiver on 10.1.2.0/24). A single address is a /32 or /128 prefix.
	Allow []netip.Prefix
	// AllowHosts are host names (case-insensitive, exact) whose every address is
	// allowed. The name is still resolved once per attempt and only what it resolved
	// to is dialled.
	AllowHosts []string
	// AllowHTTP allows http URLs; without it only https is.
	AllowHTTP bool
	// Resolver resolves host names; nil: net.DefaultResolver.
	Resolver Resolver
}

// Guard decides which webhook URLs may be called: it is the SSRF guard (server-side
// request forgery) of push delivery. It is safe for concurrent use.
type Guard struct {
	allow     []netip.Prefix
	hosts     []string
	allowHTTP bool
	resolver  Resolver
}

// NewGuard returns a guard with opts.
func NewGuard(opts GuardOptions) *Guard {
	g := &Guard{allowHTTP: opts.AllowHTTP, resolver: opts.Resolver}
	for _, p := range opts.Allow {
		g.allow = append(g.allow, p.Masked())
	}
	for _, h := range opts.AllowHosts {
		g.hosts = append(g.hosts, canonicalHost(h))
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	return g
}

// target is a URL the guard checked: the addresses its host resolved to, each allowed,
// which are the only ones the delivery dials.
type target struct {
	addrs  []netip.Addr
	port   string
	byName bool // the host is in AllowHosts: its addresses are allowed whatever they are
}

// CheckURL reports whether rawURL may be a webhook: nil, or a [*URLError] saying why
// not. It resolves the host (an address literal is its own answer) and checks every
// address it resolved to. It is called when a config is set; every delivery checks
// again, on the addresses it then dials. A host that does not resolve now (no DNS, a
// name not yet published) is not refused: nothing is sent to it here, and each delivery
// resolves it again, is retried while it does not resolve, and is refused if it then
// resolves to a refused address.
func (g *Guard) CheckURL(ctx context.Context, rawURL string) error {
	_, err := g.resolve(ctx, rawURL)
	if ue, ok := err.(*URLError); ok && ue.Err != nil {
		return nil
	}
	return err
}

// resolve parses and checks rawURL, resolves its host once and checks each address.
func (g *Guard) resolve(ctx context.Context, rawURL string) (*target, error) {
	u, err := g.parse(rawURL)
	if err != nil {
		return nil, err
	}
	t := &target{port: u.Port(), byName: slices.Contains(g.hosts, canonicalHost(u.Hostname()))}
	if t.port == "" {
		t.port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		t.addrs = []netip.Addr{a.WithZone("")}
	} else if t.addrs, err = g.resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, &URLError{URL: u.Redacted(), Reason: fmt.Sprintf("host %s does not resolve: %v", host, err), Err: err}
	} else if len(t.addrs) == 0 {
		return nil, &URLError{URL: u.Redacted(), Reason: fmt.Sprintf("host %s resolves to no address", host), Err: errors.New("no address")}
	}
	if t.byName {
		return t, nil
	}
	for _, a := range t.addrs {
		if why := g.refusal(a); why != "" {
			return nil, &URLError{URL: u.Redacted(), Reason: refusalReason(host, a, why)}
		}
	}
	return t, nil
}

// refusalReason says why host's address a is refused.
func refusalReason(host string, a netip.Addr, why string) string {
	s := a.String() + " is " + why
	if h := strings.Trim(host, "[]"); h != a.String() {
		s = "host " + host + " resolves to " + s
	}
	return s + " (allow it with --push-allow)"
}

// parse checks rawURL's form: absolute, http(s) as allowed, a host, no user info.
func (g *Guard) parse(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &URLError{URL: "(not a URL)", Reason: "not a URL"}
	}
	refuse := func(reason string) error { return &URLError{URL: u.Redacted(), Reason: reason} }
	switch {
	case u.Scheme == "http" && !g.allowHTTP:
		return nil, refuse("the scheme is http; only https is allowed (allow http with --push-allow-http)")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, refuse("want an https URL")
	case u.Hostname() == "":
		return nil, refuse("the URL has no host")
	case u.User != nil:
		return nil, refuse("the URL carries user info; give credentials as the config's authentication instead")
	}
	return u, nil
}

// canonicalHost lower-cases a host name and drops a trailing dot and brackets.
func canonicalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// allowed reports whether a may be dialled (nil) or why not.
func (g *Guard) allowed(a netip.Addr) error {
	if why := g.refusal(a); why != "" {
		return &URLError{URL: a.String(), Reason: refusalReason(a.String(), a, why)}
	}
	return nil
}

// Refused ranges that netip has no predicate for.
var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598 shared address space
	thisNet   = netip.MustParsePrefix("0.0.0.0/8")     // RFC 1122 "this network"
	reserved4 = netip.MustParsePrefix("240.0.0.0/4")   // RFC 1112 reserved, and broadcast
	nat64     = netip.MustParsePrefix("64:ff9b::/96")  // RFC 6052: an IPv4 address inside
	metadata  = netip.MustParseAddr("169.254.169.254") // cloud instance metadata
	ietf4     = netip.MustParsePrefix("192.0.0.0/24")  // RFC 6890 IETF protocol assignments
	bench4    = netip.MustParsePrefix("198.18.0.0/15") // RFC 2544 benchmarking
	siteLocal = netip.MustParsePrefix("fec0::/10")     // deprecated site-local
	discard6  = netip.MustParsePrefix("100::/64")      // RFC 6666 discard-only
	sixToFour = netip.MustParsePrefix("2002::/16")     // 6to4: an IPv4 address inside
	teredo    = netip.MustParsePrefix("2001::/32")     // Teredo tunnels
	docs6     = netip.MustParsePrefix("2001:db8::/32") // documentation
	v4compat  = netip.MustParsePrefix("::/96")         // deprecated IPv4-compatible
	docs4     = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24")}
)

// refusal returns why a is refused ("" when it is allowed): its kind, as in "a
// loopback address". An address inside an Allow prefix is allowed, in its IPv4-mapped
// form as well.
func (g *Guard) refusal(a netip.Addr) string {
	a = a.WithZone("")
	for _, p := range g.allow {
		if p.Contains(a) || p.Contains(a.Unmap()) {
			return ""
		}
	}
	u := a.Unmap()
	if u.Is6() && (nat64.Contains(u) || sixToFour.Contains(u)) {
		if why := g.refusal(embeddedV4(u)); why != "" {
			return "an IPv6 address holding " + embeddedV4(u).String() + ", " + why
		}
		return ""
	}
	return kind(u)
}

// kind names the refused range holding u (an unmapped address), or "".
func kind(u netip.Addr) string {
	switch {
	case u.IsLoopback():
		return "a loopback address"
	case u == metadata:
		return "a link-local address (the cloud metadata service)"
	case u.IsLinkLocalUnicast():
		return "a link-local address"
	case u.IsPrivate():
		return "a private address"
	case cgnat.Contains(u):
		return "a CGNAT (shared, RFC 6598) address"
	case u.IsMulticast() || u.IsLinkLocalMulticast() || u.IsInterfaceLocalMulticast():
		return "a multicast address"
	case u.IsUnspecified():
		return "the unspecified address"
	case thisNet.Contains(u), reserved4.Contains(u), ietf4.Contains(u), bench4.Contains(u),
		siteLocal.Contains(u), discard6.Contains(u), teredo.Contains(u), docs6.Contains(u),
		v4compat.Contains(u), slices.ContainsFunc(docs4, func(p netip.Prefix) bool { return p.Contains(u) }):
		return "a reserved address"
	}
	return ""
}

// embeddedV4 returns the IPv4 address inside a NAT64 (last 32 bits) or 6to4 (bits
// 16–47) address.
func embeddedV4(a netip.Addr) netip.Addr {
	b := a.As16()
	if sixToFour.Contains(a) {
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
}

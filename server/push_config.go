package server

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/push"
)

// bindPush defines the push-notification flags (part of bindServe).
func bindPush(e *envFlags, cfg *Config) {
	e.Bool(&cfg.Push, "push", true, "A2A push notifications: peers may register webhooks for their tasks, and the gateway posts each task update to them, signed, retried for --push-retry-for, resumed after a restart. On by default; with --store postgres it also needs --push-signing-key (without one push stays off, as the start-up log says)")
	e.List(&cfg.PushAllow, "push-allow", "a `CIDR` (10.1.2.0/24), an address or a host name that webhooks may reach although it is loopback, private, link-local, CGNAT, multicast or otherwise not public (the SSRF guard refuses those); repeat the flag or separate with commas")
	e.Bool(&cfg.PushAllowHTTP, "push-allow-http", false, "allow http:// webhooks (default: https only)")
	e.Duration(&cfg.PushRetryFor, "push-retry-for", 24*time.Hour, "how long a push notification is retried (exponential backoff from 1s to 5m, with jitter) before it is given up")
	e.String(&cfg.PushSigningKey, "push-signing-key", "", "PEM `FILE` of the Ed25519 key that signs push notifications (openssl genpkey -algorithm ed25519 -out FILE); its public key is served at GET /.well-known/jwks.json. Default <data-dir>/push-signing.key, created (mode 0600) if missing; required with --store postgres, so that every instance signs with the same key")
}

// List binds a repeatable flag whose values may also be comma-separated; its default
// comes from the GATEWAY_* variable or the config file (comma-separated), and the
// command line, when it gives the flag, replaces that default.
func (e *envFlags) List(p *[]string, name, usage string) {
	if v, ok := e.env(name); ok {
		*p = splitList(v)
	}
	e.fs.Var(&listFlag{p: p}, name, usage+" (env "+envName(name)+", comma-separated)")
}

// listFlag is a repeatable flag.Value; its first Set replaces the default.
type listFlag struct {
	p   *[]string
	set bool
}

func (f *listFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return strings.Join(*f.p, ",")
}

func (f *listFlag) Set(s string) error {
	if !f.set {
		*f.p, f.set = nil, true
	}
	*f.p = append(*f.p, splitList(s)...)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// pushProblems reports bad push settings (part of Validate).
func (c *Config) pushProblems() []error {
	var errs []error
	if _, err := c.pushGuardOptions(); err != nil {
		errs = append(errs, err)
	}
	if c.PushRetryFor < 0 {
		errs = append(errs, errors.New("--push-retry-for must not be negative"))
	}
	return errs
}

// pushGuardOptions turns --push-allow and --push-allow-http into the SSRF guard's
// options. Errors: an entry that is neither a CIDR, an address nor a host name.
func (c *Config) pushGuardOptions() (push.GuardOptions, error) {
	opts := push.GuardOptions{AllowHTTP: c.PushAllowHTTP}
	var errs []error
	for _, v := range c.PushAllow {
		if p, err := netip.ParsePrefix(v); err == nil {
			opts.Allow = append(opts.Allow, p)
		} else if a, err := netip.ParseAddr(strings.Trim(v, "[]")); err == nil {
			opts.Allow = append(opts.Allow, netip.PrefixFrom(a, a.BitLen()))
		} else if validHostName(v) {
			opts.AllowHosts = append(opts.AllowHosts, v)
		} else {
			errs = append(errs, fmt.Errorf("--push-allow %q: want a CIDR (10.1.2.0/24), an IP address or a host name (no scheme, port or path)", v))
		}
	}
	return opts, errors.Join(errs...)
}

// validHostName reports whether s is a DNS name: dot-separated labels of letters,
// digits and hyphens.
func validHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// pushKeyPath is the signing key's file: --push-signing-key, or the data dir's default.
func (c *Config) pushKeyPath() string {
	if c.PushSigningKey != "" {
		return c.PushSigningKey
	}
	return filepath.Join(c.DataDir, "push-signing.key")
}

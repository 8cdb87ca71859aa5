package server

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/a2a-gateway/gateway/push"
)

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

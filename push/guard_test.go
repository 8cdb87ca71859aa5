package push

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestCheckURLRefuses is the guard's table: every refused range, with and without an
// Allow prefix or host, in IPv4, IPv6 and IPv4-mapped forms.
func TestCheckURLRefuses(t *testing.T) {
	t.Parallel()
	res := newResolver(map[string][]string{
		"hook.example":     {"127.0.0.1"},
		"public.example":   {"93.184.216.34"},
		"metadata.example": {"169.254.169.254"},
		"lan.example":      {"192.168.1.5"},
	})
	tests := []struct {
		url  string
		opts GuardOptions
		why  string // "" = allowed; else a part of the refusal's reason
	}{
		{"https://93.184.216.34/hook", GuardOptions{}, ""},
		{"https://public.example/hook", GuardOptions{}, ""},
		{"https://[2606:2800:220:1:248:1893:25c8:1946]/hook", GuardOptions{}, ""},
		{"http://127.0.0.1/x", GuardOptions{AllowHTTP: true}, "127.0.0.1 is a loopback address"},
		{"https://127.0.0.1/x", GuardOptions{}, "loopback"},
		{"https://127.9.9.9:8443/x", GuardOptions{}, "loopback"},
		{"http://[::1]/x", GuardOptions{AllowHTTP: true}, "::1 is a loopback address"},
		{"https://[::ffff:127.0.0.1]/x", GuardOptions{}, "loopback"},
		{"https://169.254.169.254/latest/meta-data/", GuardOptions{}, "cloud metadata"},
		{"https://[::ffff:169.254.169.254]/", GuardOptions{}, "cloud metadata"},
		{"https://169.254.1.1/", GuardOptions{}, "link-local"},
		{"https://[fe80::1%25eth0]/", GuardOptions{}, "link-local"},
		{"https://10.0.0.1/", GuardOptions{}, "10.0.0.1 is a private address"},
		{"https://172.16.0.1/", GuardOptions{}, "private"},
		{"https://192.168.1.1/", GuardOptions{}, "private"},
		{"https://[::ffff:10.0.0.1]/", GuardOptions{}, "private"},
		{"https://[fd00::1]/", GuardOptions{}, "private"},
		{"https://100.64.0.1/", GuardOptions{}, "100.64.0.1 is a CGNAT"},
		{"https://100.127.255.254/", GuardOptions{}, "CGNAT"},
		{"https://224.0.0.1/", GuardOptions{}, "multicast"},
		{"https://[ff02::1]/", GuardOptions{}, "multicast"},
		{"https://0.0.0.0/", GuardOptions{}, "unspecified"},
		{"https://[::]/", GuardOptions{}, "unspecified"},
		{"https://0.1.2.3/", GuardOptions{}, "reserved"},
		{"https://255.255.255.255/", GuardOptions{}, "reserved"},
		{"https://[64:ff9b::a00:1]/", GuardOptions{}, "holding 10.0.0.1"},
		{"https://[2002:7f00:1::]/", GuardOptions{}, "holding 127.0.0.1"},
		{"https://hook.example/x", GuardOptions{}, "host hook.example resolves to 127.0.0.1"},
		{"https://metadata.example/x", GuardOptions{}, "cloud metadata"},
		{"https://nowhere.example/x", GuardOptions{}, ""}, // checked at each delivery
		{"http://93.184.216.34/hook", GuardOptions{}, "only https is allowed"},
		{"ftp://93.184.216.34/hook", GuardOptions{}, "want an https URL"},
		{"https:///hook", GuardOptions{}, "no host"},
		{"/hook", GuardOptions{}, "want an https URL"},
		{"https://user:secret@93.184.216.34/hook", GuardOptions{}, "user info"},
		{"%zz", GuardOptions{}, "not a URL"},
		// Allowed by the operator.
		{"http://127.0.0.1:8080/x", GuardOptions{AllowHTTP: true, Allow: loopback}, ""},
		{"https://[::ffff:127.0.0.1]/x", GuardOptions{Allow: loopback}, ""},
		{"https://10.1.2.3/", GuardOptions{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.2.0/24")}}, ""},
		{"https://10.1.3.3/", GuardOptions{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.2.0/24")}}, "private"},
		{"https://lan.example/", GuardOptions{AllowHosts: []string{"LAN.example."}}, ""},
		{"https://hook.example/", GuardOptions{AllowHosts: []string{"lan.example"}}, "loopback"},
		{"https://[64:ff9b::a00:1]/", GuardOptions{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, ""},
	}
	for _, tt := range tests {
		opts := tt.opts
		opts.Resolver = res
		err := NewGuard(opts).CheckURL(t.Context(), tt.url)
		if tt.why == "" {
			if err != nil {
				t.Errorf("CheckURL(%q) = %v, want allowed", tt.url, err)
			}
			continue
		}
		var ue *URLError
		if !errors.As(err, &ue) || !errors.Is(err, ErrRefused) {
			t.Errorf("CheckURL(%q) = %v (%T), want a *URLError matching ErrRefused", tt.url, err, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.why) {
			t.Errorf("CheckURL(%q) = %q, want it to say %q", tt.url, err, tt.why)
		}
	}
}

func TestURLErrorMessage(t *testing.T) {
	t.Parallel()
	err := NewGuard(GuardOptions{AllowHTTP: true}).CheckURL(t.Context(), "http://127.0.0.1/x")
	want := `push URL "http://127.0.0.1/x" refused: 127.0.0.1 is a loopback address (allow it with --push-allow)`
	if err == nil || err.Error() != want {
		t.Errorf("CheckURL = %v, want %s", err, want)
	}
	err = NewGuard(GuardOptions{}).CheckURL(t.Context(), "https://user:hunter2@127.0.0.1/x")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("CheckURL = %v, want a refusal without the password", err)
	}
}

// TestCheckURLEveryAddress: a name with one public and one private address is refused.
func TestCheckURLEveryAddress(t *testing.T) {
	t.Parallel()
	res := &multiResolver{addrs: []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1")}}
	err := NewGuard(GuardOptions{Resolver: res}).CheckURL(t.Context(), "https://mixed.example/")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "10.0.0.1") {
		t.Errorf("CheckURL = %v, want a refusal naming 10.0.0.1", err)
	}
}

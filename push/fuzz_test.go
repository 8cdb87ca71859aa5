package push

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"testing"
	"time"
)

// FuzzVerify: Verify never panics on any header value, and accepts a header only for
// the body it was made for.
func FuzzVerify(f *testing.F) {
	s := testSigner()
	good := s.Sign(Delivery{ID: "ev", TaskID: "t", Body: []byte("body")}, time.Unix(0, 0))
	f.Add(good, []byte("body"))
	f.Add(good, []byte("bodY"))
	f.Add("a.b.c", []byte(""))
	f.Add("..", []byte("x"))
	jwks := s.JWKS()
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		_, err := Verify(jwks, header, body)
		if err != nil && !errors.Is(err, ErrBadSignature) {
			t.Fatalf("Verify error %v does not match ErrBadSignature", err)
		}
		if err == nil && header == good && string(body) != "body" {
			t.Fatalf("the signature of %q verified for %q", "body", body)
		}
	})
}

// FuzzCheckURL: CheckURL never panics, and a URL it allows (whose host is an address:
// nothing is resolved) names an address no refused range holds.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://93.184.216.34/x", "http://127.0.0.1/", "https://[::ffff:10.0.0.1]/", "https://[64:ff9b::7f00:1]/", "https://[fe80::1%25eth0]/"} {
		f.Add(s)
	}
	g := NewGuard(GuardOptions{AllowHTTP: true, Resolver: &multiResolver{}})
	f.Fuzz(func(t *testing.T, raw string) {
		if err := g.CheckURL(context.Background(), raw); err != nil {
			return
		}
		u, _ := url.Parse(raw)
		a, err := netip.ParseAddr(u.Hostname())
		if err != nil {
			t.Fatalf("allowed %q whose host is not an address (the resolver answers nothing)", raw)
		}
		if why := kind(a.WithZone("").Unmap()); why != "" {
			t.Fatalf("allowed %q: %s is %s", raw, a, why)
		}
	})
}

package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/push"
)

// TestPushServed: with push on, the signing key is created in the data dir (0600) and
// kept across a restart, its JWK Set is served, the card points at it, and /metrics has
// the push series.
func TestPushServed(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Push = true
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	jwks := pushGet(t, c, s.URL()+".well-known/jwks.json", nil)
	var set struct{ Keys []map[string]string }
	if err := json.Unmarshal(jwks, &set); err != nil || len(set.Keys) != 1 || set.Keys[0]["crv"] != "Ed25519" {
		t.Fatalf("JWKS %s: %v", jwks, err)
	}
	kid := set.Keys[0]["kid"]
	if fi, err := os.Stat(filepath.Join(cfg.DataDir, "push-signing.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v (mode %v), want 0600", err, fi)
	}
	for _, hdr := range []map[string]string{nil, {"A2A-Version": "1.0"}} {
		var card struct {
			Capabilities struct {
				Extensions []struct {
					URI    string
					Params map[string]string
				}
			}
		}
		body := pushGet(t, c, s.URL()+".well-known/agent-card.json", hdr)
		if err := json.Unmarshal(body, &card); err != nil {
			t.Fatal(err)
		}
		if hdr != nil {
			checkPureV1(t, "the v1.0 card with push on", body)
		}
		i := slices.IndexFunc(card.Capabilities.Extensions, func(e struct {
			URI    string
			Params map[string]string
		}) bool {
			return e.URI == push.SigningExtension
		})
		if i < 0 {
			t.Fatalf("card (%v) without the push-signing extension", hdr)
		}
		if p := card.Capabilities.Extensions[i].Params; p["jwksUrl"] != s.URL()+".well-known/jwks.json" || p["kid"] != kid || p["alg"] != "EdDSA" {
			t.Errorf("card (%v): params %v, want jwksUrl %s and kid %s", hdr, p, s.URL()+".well-known/jwks.json", kid)
		}
	}
	// The card declares push (the turn side) exactly when a deliverer runs.
	if on := cardPushOn(t, c, s.URL()); on != (s.pushOutbox() != nil) {
		t.Errorf("card pushNotifications %v, but a deliverer runs: %v", on, s.pushOutbox() != nil)
	}
	m := string(pushGet(t, c, s.URL()+"metrics", nil))
	for _, series := range []string{`gateway_push_deliveries_total{outcome="delivered"} 0`, `gateway_push_deliveries_total{outcome="refused"} 0`,
		"gateway_push_delivery_seconds_count 0", "gateway_push_queue_depth 0", "gateway_push_oldest_undelivered_seconds 0"} {
		if !strings.Contains(m, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	stopServer(t, s)
	s2 := startServer(t, cfg)
	if again := pushGet(t, c, s2.URL()+".well-known/jwks.json", nil); !bytes.Equal(again, jwks) {
		t.Errorf("after a restart the JWKS is %s, want the same key %s", again, jwks)
	}
}

func TestPushOff(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t) // Push false
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	resp, err := c.Get(s.URL() + ".well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("JWKS with push off: %d, want 404", resp.StatusCode)
	}
	if card := pushGet(t, c, s.URL()+".well-known/agent-card.json", nil); bytes.Contains(card, []byte(push.SigningExtension)) {
		t.Errorf("card with push off declares push signing: %s", card)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "push-signing.key")); !os.IsNotExist(err) {
		t.Errorf("key file with push off: %v, want none", err)
	}
}

// TestPushSharedStoreKey: over a shared store push needs a key file given to every
// instance; without --push-signing-key it is off and says so, with a missing file the
// start fails, with a key every instance loads the same one.
func TestPushSharedStoreKey(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Push, cfg.Store = true, "postgres://gw@db.example/gw"
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if p, err := newPushService(t.Context(), cfg, log); p != nil || err != nil || !strings.Contains(logs.String(), "push notifications are off") || !strings.Contains(logs.String(), "--push-signing-key") {
		t.Errorf("shared store without a key: %v, %v, log %q; want off, said", p, err, logs.String())
	}
	cfg.PushSigningKey = filepath.Join(t.TempDir(), "key.pem")
	if _, err := newPushService(t.Context(), cfg, log); err == nil {
		t.Error("shared store with a missing key file: no error")
	}
	if _, err := os.Stat(cfg.PushSigningKey); !os.IsNotExist(err) {
		t.Errorf("a shared store's key was created by the instance: %v", err)
	}
	want, err := push.LoadOrCreateKey(cfg.PushSigningKey)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPushService(t.Context(), cfg, log)
	if err != nil || p.signer.KeyID() != want.KeyID() {
		t.Errorf("shared store with a key: %v, want kid %s", err, want.KeyID())
	}
}

// TestPushDelivered is the end-to-end check of delivery through the gateway: a v0.3
// send with a push config to a receiver on 127.0.0.1 (allowed with --push-allow) gets
// its task's events, each signed with the key of the gateway's JWKS. It needs the turn
// side's outbox.
func TestPushDelivered(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []http.Header
	var bodies [][]byte
	rc := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r.Header.Clone()), append(bodies, b)
		mu.Unlock()
	}))
	defer rc.Close()
	cfg := testConfig(t)
	cfg.Push, cfg.PushAllow, cfg.PushAllowHTTP = true, []string{"127.0.0.1"}, true
	s := startServer(t, cfg)
	if s.pushOutbox() == nil {
		t.Fatal("push is on but the runner has no outbox")
	}
	c := newHTTPClient(t)
	res := postRPC(t, c, s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":true,"pushNotificationConfig":{"url":"`+rc.URL+`/hook","token":"tok-1"}},"message":{"kind":"message","role":"user","messageId":"m1","contextId":"push-e2e","parts":[{"kind":"text","text":"hello"}]}}}`)
	if res.Error != nil {
		t.Fatalf("send with a push config: %+v", res.Error)
	}
	testutil.WaitFor(t, "a notification of the completed task", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) > 0 && bytes.Contains(bodies[len(bodies)-1], []byte("completed"))
	})
	jwks := pushGet(t, c, s.URL()+".well-known/jwks.json", nil)
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(bodies[0], []byte(`"working"`)) {
		t.Errorf("first notification %s, want the task working (in order: working, then completed)", bodies[0])
	}
	ids := map[string]bool{}
	for i, h := range got {
		if _, err := push.Verify(jwks, h.Get(push.SignatureHeader), bodies[i]); err != nil {
			t.Errorf("notification %d: %v", i, err)
		}
		id := h.Get("X-A2A-Event-Id")
		if h.Get("X-A2A-Notification-Token") != "tok-1" || id == "" || ids[id] || !bytes.Contains(bodies[i], []byte(id)) {
			t.Errorf("notification %d: token %q, event id %q (seen before: %v; want it in the body too) %s", i, h.Get("X-A2A-Notification-Token"), id, ids[id], bodies[i])
		}
		ids[id] = true
	}
}

// pushGet fetches url with headers and returns its body (status 200 required).
func pushGet(t *testing.T, c *http.Client, url string, headers map[string]string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}

// cardPushOn reports whether the card at base declares capabilities.pushNotifications.
func cardPushOn(t *testing.T, c *http.Client, base string) bool {
	t.Helper()
	var card struct {
		Capabilities struct{ PushNotifications bool }
	}
	if err := json.Unmarshal(pushGet(t, c, base+".well-known/agent-card.json", nil), &card); err != nil {
		t.Fatal(err)
	}
	return card.Capabilities.PushNotifications
}

// TestPushGuardOptions: --push-allow's entries (CIDRs, addresses, bracketed IPv6, host
// names) become the SSRF guard's allowed prefixes and hosts.
func TestPushGuardOptions(t *testing.T) {
	t.Parallel()
	cfg := Config{PushAllow: []string{"127.0.0.1", "hooks.lan", "10.0.0.0/8", "[::1]"}}
	g, err := cfg.pushGuardOptions()
	want := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	if err != nil || !slices.Equal(g.Allow, want) || !slices.Equal(g.AllowHosts, []string{"hooks.lan"}) {
		t.Errorf("pushGuardOptions() = %v, hosts %v, %v; want %v [hooks.lan]", g.Allow, g.AllowHosts, err, want)
	}
}

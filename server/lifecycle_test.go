package server

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRootPage: GET / answers a short page that names the agent, its card, the JSON-RPC
// endpoint and the docs (issue #15 item 16: a JSON "Method Not Allowed"); POST / is still
// JSON-RPC.
func TestRootPage(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	resp, err := c.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d %q, want 200", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want text/plain", ct)
	}
	for _, want := range []string{"A2A conversation gateway", s.URL() + ".well-known/agent-card.json", "POST " + s.URL(), "GET " + s.URL() + "ws", "README"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("GET / body lacks %q:\n%s", want, body)
		}
	}
	if len(body) > 2048 {
		t.Errorf("GET / body is %d bytes, want a short page", len(body))
	}
	res := sendV03(t, c, s.URL(), "root-page", "hi")
	if res.Error != nil || len(res.Result) == 0 {
		t.Fatalf("POST / after the page: %+v, want a result", res)
	}
}

// TestAdminUnauthorizedNamesToken: a 401 of the admin API, /metrics and /debug/pprof/
// says which flag (and variable) holds the token it wants (issue #15 item 16).
func TestAdminUnauthorizedNamesToken(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.AdminToken = "admin-secret"
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	for _, path := range []string{"admin/v1/conversations", "metrics", "debug/pprof/"} {
		t.Run(path, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+path, nil)
			req.Header.Set("Authorization", "Bearer wrong")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			for _, want := range []string{"--admin-token", "GATEWAY_ADMIN_TOKEN", "Authorization: Bearer"} {
				if !bytes.Contains(body, []byte(want)) {
					t.Errorf("401 body lacks %q: %q", want, body)
				}
			}
			if bytes.Contains(body, []byte("admin-secret")) {
				t.Errorf("401 body shows the token: %q", body)
			}
		})
	}
}

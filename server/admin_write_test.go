package server

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
)

// outboundBody is a valid POST /admin/v1/outbound record.
const outboundBody = `{"peer":"intruder","peerUrl":"http://127.0.0.1:1/","contextId":"planted","state":"completed","text":"I never sent this","reply":"ok"}`

// postOutbound posts outboundBody to s's admin API with the given Authorization header
// ("" for none) and returns the status and body.
func postOutbound(t *testing.T, c *http.Client, s *Server, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"admin/v1/outbound", strings.NewReader(outboundBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ledgerKeys returns the owners of every conversation in s's ledger.
func ledgerKeys(t *testing.T, s *Server) []string {
	t.Helper()
	all, err := s.ledger.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range all {
		out = append(out, c.Owner+"/"+c.ContextID)
	}
	return out
}

// TestAdminTokenConfigured: with --admin-token the data dir has no token file (a stale one
// is removed) and writes take the configured token only.
func TestAdminTokenConfigured(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.AdminToken = "configured-admin"
	stale := filepath.Join(cfg.DataDir, AdminTokenFile)
	if err := os.WriteFile(stale, []byte("stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale token file still there: %v", err)
	}
	for auth, want := range map[string]int{"": 401, "Bearer stale": 401, "Bearer configured-admin": 200} {
		if status, body := postOutbound(t, c, s, auth); status != want {
			t.Errorf("POST outbound with %q = %d %s, want %d", auth, status, body, want)
		}
	}
}

// TestAdminOutboundRefusesLoneSurrogates: POST /admin/v1/outbound refuses a record whose
// JSON holds a lone surrogate escape (the decoder would read "\ud800" and "\udc00" as
// the same U+FFFD and merge two contextIds), and stores nothing; a pair is fine.
func TestAdminOutboundRefusesLoneSurrogates(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	post := func(contextID string) (int, string) {
		rec := `{"peer":"a","peerUrl":"http://127.0.0.1:1/","contextId":"` + contextID + `","state":"completed","text":"hi","reply":"echo: hi"}`
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"admin/v1/outbound", strings.NewReader(rec))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.localToken)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, id := range []string{`u8-\ud800`, `u8-\udc00`} {
		if status, body := post(id); status != http.StatusBadRequest || !strings.Contains(body, "surrogate") {
			t.Errorf("contextId %s: %d %s, want 400 naming the surrogate", id, status, body)
		}
	}
	if n := len(outboundContexts(t, s, "out:a")); n != 0 {
		t.Errorf("%d outbound conversations stored after refused records, want 0", n)
	}
	if status, body := post(`u8-\ud83d\ude00`); status != http.StatusOK {
		t.Errorf("a surrogate pair: %d %s, want 200", status, body)
	}
}

// TestAdminWriteNeedsTokenFromLoopback (issue #15 item 8): loopback is no identity for
// writes. A gateway without --admin-token refuses POST /admin/v1/outbound from loopback
// without a token (401 naming --admin-token, nothing stored) and takes the token it wrote
// to its data dir (mode 0600); reads from loopback still need no token.
func TestAdminWriteNeedsTokenFromLoopback(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s := startServer(t, cfg)
	c := newHTTPClient(t)

	status, body := postOutbound(t, c, s, "")
	if status != http.StatusUnauthorized || !strings.Contains(body, "--admin-token") {
		t.Errorf("POST outbound from loopback without a token = %d %q, want 401 naming --admin-token", status, body)
	}
	if status, _ := postOutbound(t, c, s, "Bearer wrong"); status != http.StatusUnauthorized {
		t.Errorf("POST outbound with a wrong token = %d, want 401", status)
	}
	if got := ledgerKeys(t, s); len(got) != 0 {
		t.Fatalf("refused writes stored conversations %v", got)
	}

	path := filepath.Join(cfg.DataDir, AdminTokenFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the token file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	token := strings.TrimSpace(string(b))
	if token == "" || token != s.localToken {
		t.Fatalf("token file holds %q, the gateway takes %q", token, s.localToken)
	}
	if status, body := postOutbound(t, c, s, "Bearer "+token); status != http.StatusOK {
		t.Fatalf("POST outbound with the file's token = %d %s, want 200", status, body)
	}
	if got := ledgerKeys(t, s); len(got) != 1 || got[0] != "out:intruder/planted" {
		t.Errorf("conversations = %v, want the one recorded with the token", got)
	}

	// Reads from loopback need no token.
	resp, err := c.Get(s.URL() + "admin/v1/conversations")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET conversations from loopback without a token = %d, want 200", resp.StatusCode)
	}
	// Profiles only read, also the symbol lookup that takes POST.
	resp, err = c.Post(s.URL()+"debug/pprof/symbol", "text/plain", strings.NewReader("0x1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST /debug/pprof/symbol from loopback without a token = %d, want 200 (it only reads)", resp.StatusCode)
	}
}

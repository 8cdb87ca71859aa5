package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// clientFrom is an HTTP client whose connections come from the local address ip (any
// 127.0.0.0/8 address works on loopback), so that one test can be several sources.
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// statusOf POSTs a GetTask with "Authorization: Bearer token" and returns the status and
// the Retry-After header.
func statusOf(ctx context.Context, c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}}`))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}

// TestAuthFailuresThrottled (issue 15 item 10d): 2,000 wrong tokens from one source are
// answered mostly 429 with a Retry-After (the token no longer compared), while a correct
// token from another source is served. Every one of them used to get a 401 at full speed.
func TestAuthFailuresThrottled(t *testing.T) {
	t.Parallel()
	s := startServer(t, peersConfig(t))
	attacker, peer := clientFrom(t, "127.0.0.1"), clientFrom(t, "127.0.0.2")
	counts := map[int]int{}
	retryAfter := ""
	start := time.Now()
	for i := range 2000 {
		status, ra, err := statusOf(t.Context(), attacker, s.URL(), fmt.Sprintf("guess-%04d-abcdefghijklmnop", i))
		if err != nil {
			t.Fatal(err)
		}
		counts[status]++
		if status == http.StatusTooManyRequests {
			retryAfter = ra
		}
	}
	elapsed := time.Since(start)
	t.Logf("2,000 wrong tokens in %v: %v", elapsed.Round(time.Millisecond), counts)
	if counts[http.StatusTooManyRequests] < 1900 || counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != 2000 {
		t.Errorf("answers to 2,000 wrong tokens from one source: %v, want at least 1,900 × 429 and the rest 401", counts)
	}
	if retryAfter == "" {
		t.Errorf("429 without Retry-After")
	}
	status, _, err := statusOf(t.Context(), peer, s.URL(), tokAlice)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK {
		t.Errorf("alice's correct token from another source: status %d, want 200", status)
	}
	fams := scrape(t, peer, s, "")
	if got := value(t, fams, "gateway_auth_failures_total", "reason", "throttled"); got != float64(counts[http.StatusTooManyRequests]) {
		t.Errorf(`gateway_auth_failures_total{reason="throttled"} = %v, want %d`, got, counts[http.StatusTooManyRequests])
	}
}

// TestAdminTokenGuessesThrottled: wrong admin tokens on /admin/v1, /metrics and
// /debug/pprof count against their source like wrong peer tokens, so the admin token
// cannot be guessed at full speed there either (the console's bound would be moot);
// another source with the right token is served.
func TestAdminTokenGuessesThrottled(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.AdminToken = "admin-token-0001-abcdefghijkl"
	s := startServer(t, cfg)
	for i, path := range []string{"admin/v1/conversations", "metrics", "debug/pprof/"} {
		attacker, operator := clientFrom(t, fmt.Sprintf("127.0.1.%d", i+1)), clientFrom(t, fmt.Sprintf("127.0.2.%d", i+1))
		get := func(c *http.Client, token string) int {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		counts := map[int]int{}
		for n := range authFailMax + 5 {
			counts[get(attacker, fmt.Sprintf("guess-%04d", n))]++
		}
		if counts[http.StatusUnauthorized] != authFailMax || counts[http.StatusTooManyRequests] != 5 {
			t.Errorf("/%s: answers to %d wrong admin tokens: %v, want %d × 401 then 429", path, authFailMax+5, counts, authFailMax)
		}
		if got := get(attacker, cfg.AdminToken); got != http.StatusTooManyRequests {
			t.Errorf("/%s: the right token from the throttled source: %d, want 429 (not compared)", path, got)
		}
		if got := get(operator, cfg.AdminToken); got != http.StatusOK {
			t.Errorf("/%s: the right token from another source: %d, want 200", path, got)
		}
	}
}

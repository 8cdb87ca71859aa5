package server

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleMounted: the gateway serves the console with its security headers, the
// console's login page only without a session, and refuses a state-changing request
// without its CSRF token.
func TestConsoleMounted(t *testing.T) {
	cfg := testConfig(t)
	cfg.AdminToken = "console-mount-token"
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct {
		method, path string
		body         url.Values
		want         int
		location     string
	}{
		{http.MethodGet, "console", nil, http.StatusSeeOther, "/console/"},
		{http.MethodGet, "console/", nil, http.StatusSeeOther, "/console/login"},
		{http.MethodGet, "console/health", nil, http.StatusSeeOther, "/console/login"},
		{http.MethodGet, "console/login", nil, http.StatusOK, ""},
		{http.MethodGet, "console/static/live.js", nil, http.StatusOK, ""},
		{http.MethodPost, "console/login", url.Values{"token": {"console-mount-token"}}, http.StatusForbidden, ""}, // no CSRF token
		{http.MethodPost, "console/verify?id=x", url.Values{}, http.StatusUnauthorized, ""},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, s.URL()+tc.path, strings.NewReader(tc.body.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s /%s: %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.want, tc.location)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s /%s: CSP %q, X-Frame-Options %q", tc.method, tc.path, csp, resp.Header.Get("X-Frame-Options"))
		}
	}
}

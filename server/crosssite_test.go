package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Issue #15 item 7: cross-site requests and DNS rebinding in loopback mode.

const xsSendBody = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-xs","parts":[{"kind":"text","text":"run this"}]}}}`

// rawPost POSTs body to url with the given Content-Type ("" sends none) and Host ("" the
// URL's), and returns the status and body.
func rawPost(t *testing.T, c *http.Client, url, contentType, host, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestJSONRPCContentType: a JSON-RPC POST must say application/json (a browser can send
// text/plain, form or multipart bodies, or none at all, cross-site without a preflight);
// anything else is -32005 in a 200 envelope, the A2A TCK's expectation, and runs no turn.
// Before the fix text/plain ran a turn (a result with a completed task).
func TestJSONRPCContentType(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	tests := []struct {
		ct   string
		code int // 0: a result
	}{
		{"text/plain", -32005},
		{"text/plain;charset=UTF-8", -32005},
		{"application/x-www-form-urlencoded", -32005},
		{"multipart/form-data; boundary=x", -32005},
		{"", -32005},
		{"application/json", 0},
		{"application/json; charset=utf-8", 0},
		{"Application/JSON", 0},
		{"application/a2a+json", 0},
	}
	for _, tc := range tests {
		status, b := rawPost(t, c, s.URL(), tc.ct, "", xsSendBody)
		var res rpcResponse
		if err := json.Unmarshal(b, &res); err != nil || status != http.StatusOK {
			t.Errorf("Content-Type %q: status %d body %.200s, want 200 and a JSON-RPC response", tc.ct, status, b)
			continue
		}
		switch {
		case tc.code == 0 && res.Error != nil:
			t.Errorf("Content-Type %q: error %+v, want a result", tc.ct, res.Error)
		case tc.code != 0 && (res.Error == nil || res.Error.Code != tc.code || res.Result != nil):
			t.Errorf("Content-Type %q: %.200s, want error %d and no result (no turn)", tc.ct, b, tc.code)
		}
	}
}

// hostCase is one request with a chosen Host header and the status it must get.
type hostCase struct {
	method, path, host string
	want               int
}

// checkHosts runs cases against s and reports the mismatches.
func checkHosts(t *testing.T, s *Server, cases []hostCase) {
	t.Helper()
	c := newHTTPClient(t)
	for _, tc := range cases {
		var body io.Reader
		if tc.method == http.MethodPost {
			body = strings.NewReader(xsSendBody)
		}
		req, err := http.NewRequestWithContext(t.Context(), tc.method, "http://"+s.Addr()+tc.path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Host = tc.host
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s Host %q: %v", tc.method, tc.path, tc.host, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s with Host %q: status %d (%.120s), want %d", tc.method, tc.path, tc.host, resp.StatusCode, b, tc.want)
		}
		if tc.want == http.StatusMisdirectedRequest && !bytes.Contains(b, []byte("--allowed-hosts")) {
			t.Errorf("%s %s with Host %q: body %.120q does not name --allowed-hosts", tc.method, tc.path, tc.host, b)
		}
	}
}

// TestHostCheckLoopback: a loopback gateway serves its loopback names (with and without
// the port, any case) and refuses any other Host on every route with 421 naming the flag
// to set. Before the fix Host: evil.example got 200 on /, the admin API and the card.
func TestHostCheckLoopback(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	_, port, _ := net.SplitHostPort(s.Addr())
	var cases []hostCase
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "localhost", "127.0.0.1", "[::1]:" + port, "[::1]", "127.0.0.2:" + port} {
		cases = append(cases, hostCase{http.MethodPost, "/", h, http.StatusOK}, hostCase{http.MethodGet, "/admin/v1/conversations", h, http.StatusOK})
	}
	for _, h := range []string{"evil.example", "evil.example:" + port, "localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port} {
		for _, r := range [][2]string{{http.MethodPost, "/"}, {http.MethodPost, "/a2a"}, {http.MethodGet, "/admin/v1/conversations"}, {http.MethodGet, "/.well-known/agent-card.json"}, {http.MethodGet, "/metrics"}, {http.MethodGet, "/debug/pprof/"}, {http.MethodGet, "/healthz"}} {
			cases = append(cases, hostCase{r[0], r[1], h, http.StatusMisdirectedRequest})
		}
	}
	checkHosts(t, s, cases)
}

// TestHostCheckConfigured: --public-url's host and --allowed-hosts are served too; "*"
// serves any Host.
func TestHostCheckConfigured(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.PublicURL = "https://gw.example.com/a2a"
	cfg.AllowedHosts = "a2a.internal, Other.Example:8443"
	s := startServer(t, cfg)
	checkHosts(t, s, []hostCase{
		{http.MethodPost, "/", "gw.example.com", http.StatusOK},
		{http.MethodPost, "/", "GW.example.com:443", http.StatusOK},
		{http.MethodPost, "/", "a2a.internal:9900", http.StatusOK},
		{http.MethodPost, "/", "other.example:8443", http.StatusOK},
		{http.MethodPost, "/", "other.example", http.StatusMisdirectedRequest},
		{http.MethodPost, "/", "evil.example", http.StatusMisdirectedRequest},
		{http.MethodGet, "/admin/v1/conversations", "evil.example", http.StatusMisdirectedRequest},
	})
	cfg = testConfig(t)
	cfg.AllowedHosts = "*"
	checkHosts(t, startServer(t, cfg), []hostCase{{http.MethodPost, "/", "evil.example", http.StatusOK}})
}

// wsDialHost opens /ws on s with the given Host ("" the address) and Origin ("" none)
// and returns the handshake's status.
func wsDialHost(t *testing.T, s *Server, host, origin string) int {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	h := http.Header{}
	if host != "" {
		h.Set("Host", host)
	}
	if origin != "" {
		h.Set("Origin", origin)
	}
	ws, resp, err := d.Dial(wsURLOf(s), h)
	if ws != nil {
		ws.Close()
	}
	if resp == nil {
		t.Fatalf("Dial(Host %q, Origin %q) error = %v, want an HTTP response", host, origin, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestWebSocketHostAndOrigin: /ws refuses a foreign Host (a DNS rebinding page has Host
// = Origin = its own name: before the fix that was 101), compares Origins with the
// loopback origins and --public-url, never with the request's Host, and still lets
// clients without an Origin in.
func TestWebSocketHostAndOrigin(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.PublicURL = "https://gw.example.com/"
	s := startWSServer(t, cfg)
	_, port, _ := net.SplitHostPort(s.Addr())
	tests := []struct {
		host, origin string
		want         int
	}{
		{"", "", http.StatusSwitchingProtocols},
		{"", "http://127.0.0.1:" + port, http.StatusSwitchingProtocols},
		{"localhost:" + port, "http://localhost:" + port, http.StatusSwitchingProtocols},
		{"", "http://[::1]:" + port, http.StatusSwitchingProtocols},
		{"gw.example.com", "https://gw.example.com", http.StatusSwitchingProtocols},
		{"evil.example", "", http.StatusMisdirectedRequest},
		{"evil.example", "http://evil.example", http.StatusMisdirectedRequest},
		{"evil.example:" + port, "http://evil.example:" + port, http.StatusMisdirectedRequest},
		{"", "http://evil.example", http.StatusForbidden},
		{"", "http://127.0.0.1:1", http.StatusForbidden},
		{"gw.example.com", "http://gw.example.com", http.StatusForbidden},
	}
	for _, tc := range tests {
		if got := wsDialHost(t, s, tc.host, tc.origin); got != tc.want {
			t.Errorf("GET /ws Host %q Origin %q: status %d, want %d", tc.host, tc.origin, got, tc.want)
		}
	}
}

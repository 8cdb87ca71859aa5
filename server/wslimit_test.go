package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestWSConnsPerPeerLimit (issue 15 item 10c): with a limit of 16 (the default of
// --max-ws-conns-per-peer), one peer may hold 16 WebSocket connections; the 17th is
// refused at the upgrade with 429 and a body naming the limit, counted in gateway_limit_rejections_total{limit="ws_conns"}, while
// another peer still connects. There used to be no limit (40 of 40 accepted).
func TestWSConnsPerPeerLimit(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MaxWSConnsPerPeer = 16
	cfg.Peers = peersConfig(t).Peers
	s := startServer(t, cfg)
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	dial := func(token string) (int, string) {
		ws, resp, err := d.Dial(wsURLOf(s), http.Header{"Authorization": {"Bearer " + token}})
		if err == nil {
			resp.Body.Close()
			t.Cleanup(func() { ws.Close() })
			return http.StatusSwitchingProtocols, ""
		}
		if resp == nil {
			t.Fatalf("Dial: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const tries = 40
	accepted, refusal := 0, ""
	for range tries {
		status, body := dial(tokAlice)
		switch status {
		case http.StatusSwitchingProtocols:
			accepted++
		case http.StatusTooManyRequests:
			refusal = body
		default:
			t.Fatalf("Dial answered %d %q, want 101 or 429", status, body)
		}
	}
	if accepted != 16 || !strings.Contains(refusal, "too many WebSocket connections") {
		t.Errorf("%d of %d connections of one peer accepted (refusal %q), want 16 and a 429 naming the limit", accepted, tries, refusal)
	}
	if status, body := dial(tokBob); status != http.StatusSwitchingProtocols {
		t.Errorf("another peer's connection: %d %q, want 101", status, body)
	}
	if got := value(t, scrape(t, newHTTPClient(t), s, ""), "gateway_limit_rejections_total", "limit", "ws_conns"); got != tries-16 {
		t.Errorf(`gateway_limit_rejections_total{limit="ws_conns"} = %v, want %d`, got, tries-16)
	}
}

package streaming

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// byHeader names the peer of a request by its X-Peer header (the test's authentication).
func byHeader(r *http.Request) string { return r.Header.Get("X-Peer") }

func dialAs(t *testing.T, url, peer string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.Dial(url, http.Header{"X-Peer": {peer}})
	if ws != nil {
		t.Cleanup(func() { ws.Close() })
	}
	return ws, resp, err
}

// TestMaxConnsPerPeer (issue 15 item 10c): a peer at its connection limit is refused at
// the upgrade with 429, a Retry-After and a body naming the limit, counted by OnLimit;
// another peer still connects, and a closed connection frees its slot.
func TestMaxConnsPerPeer(t *testing.T) {
	t.Parallel()
	var refused atomic.Int64
	h, url := newServer(t, worldHandler(), newContextLog(), Config{
		MaxConnsPerPeer: 3, PeerOf: byHeader,
		OnLimit: func(limit string) {
			if limit == "ws_conns" {
				refused.Add(1)
			}
		},
	})
	var alice []*websocket.Conn
	for i := range 3 {
		ws, _, err := dialAs(t, url, "alice")
		if err != nil {
			t.Fatalf("alice connection %d: %v, want it accepted (limit 3)", i+1, err)
		}
		alice = append(alice, ws)
	}
	_, resp, err := dialAs(t, url, "alice")
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("alice connection 4: err %v, response %v, want 429", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "too many WebSocket connections") || !strings.Contains(string(body), "3 open, the limit") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("refusal: body %q, Retry-After %q; want the limit named and a Retry-After", body, resp.Header.Get("Retry-After"))
	}
	if got := refused.Load(); got != 1 {
		t.Errorf("OnLimit(ws_conns) called %d times, want 1", got)
	}
	if _, _, err := dialAs(t, url, "bob"); err != nil {
		t.Errorf("bob's first connection: %v, want it accepted", err)
	}
	alice[0].Close()
	// The peer's slot is released after the connection leaves Stats (the handler's
	// deferred releasePeer runs last): wait for the slot itself.
	waitFor(t, "alice's closed connection to free its slot", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.perPeer["alice"] == 2
	})
	if _, _, err := dialAs(t, url, "alice"); err != nil {
		t.Errorf("alice after closing one: %v, want it accepted", err)
	}
}

// TestMaxConnsPerPeerDefault: the zero Config limits a peer (the remote IP without PeerOf)
// to DefaultMaxConnsPerPeer; a negative limit turns it off.
func TestMaxConnsPerPeerDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		limit    int
		accepted int
	}{{"default", 0, DefaultMaxConnsPerPeer}, {"off", -1, DefaultMaxConnsPerPeer + 4}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, url := newServer(t, worldHandler(), newContextLog(), Config{MaxConnsPerPeer: tc.limit})
			n := 0
			for range DefaultMaxConnsPerPeer + 4 {
				if _, _, err := dialAs(t, url, ""); err != nil {
					break
				}
				n++
			}
			if n != tc.accepted {
				t.Errorf("%d of %d connections from one IP accepted, want %d", n, DefaultMaxConnsPerPeer+4, tc.accepted)
			}
		})
	}
}
